"""The errors ovpool raises: each names where the problem is (file, node or layer, attribute).

The CLI turns these into one-line messages and exit codes; nothing in the library raises a bare
``ValueError`` for bad user input.
"""

from __future__ import annotations

import os
from typing import Self


class OvpoolError(Exception):
    """Base class. ``exit_code`` is what the command line returns for it (1: bad model/unsupported).

    ``file`` is the file (or model label) the error is in, kept apart from the message and shown
    first: ``ModelError.in_file("m.onnx", "node 'p': ...")`` reads ``m.onnx: node 'p': ...``. A
    caller that knows the file names it with ``located`` only if the error does not already.
    """

    exit_code: int = 1

    def __init__(self, message: str = "", file: str | os.PathLike[str] | None = None) -> None:
        super().__init__(message)
        self.file = str(file) if file is not None else None

    @classmethod
    def in_file(cls, file: str | os.PathLike[str], message: str) -> Self:
        """The error ``message`` in ``file``."""
        return cls(message, file=file)

    def located(self, file: str | os.PathLike[str]) -> Self:
        """This error, in ``file`` unless it already names its file."""
        if self.file is None:
            self.file = str(file)
        return self

    def __str__(self) -> str:
        text = super().__str__()
        return f"{self.file}: {text}" if self.file else text


class SpecError(OvpoolError):
    """An attribute value that no pooling operation can have, or that a target cannot express.

    ``SpecError("pool1", "strides", [0, 2], "must be >= 1")`` reads
    ``node 'pool1': attribute 'strides' = [0, 2]: must be >= 1``; ``where`` replaces the
    ``node '...'`` part for sources that are not ONNX nodes (``where="layer 3 'pool1' (AvgPool
    opset1)"``, ``where="operator 'pool1'"``).
    """

    def __init__(self, node: str, attribute: str | None, value: object, message: str, where: str | None = None) -> None:
        self.node = node
        self.attribute = attribute
        self.value = value
        self.message = message
        where = where or (f"node '{node}'" if node else "pooling spec")
        what = f": attribute '{attribute}' = {_show(value)}" if attribute else ""
        super().__init__(f"{where}{what}: {message}")

    def at(self, where: str) -> SpecError:
        """The same error said of ``where`` instead of the node (an IR layer, a DirectML operator)."""
        return SpecError(self.node, self.attribute, self.value, self.message, where)


class UnsupportedError(OvpoolError):
    """A node, layer, version or data type that ovpool has no exact rule for."""


class ModelError(OvpoolError):
    """A model or input that is malformed or inconsistent (bad indices, wrong input names, ...)."""


class VerifyError(OvpoolError):
    """A model ovpool was about to write does not compute what its source computes within
    tolerance, or could not be checked (``--verify``): exit 1, nothing written."""


class InputFileError(OvpoolError):
    """A file that cannot be read at all (missing, truncated, not the format its name says)."""

    exit_code = 2


class UsageError(OvpoolError):
    """An option value the command does not take (``--precision f64``, ``--to bogus``): exit 2."""

    exit_code = 2


def _show(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return repr(value) if isinstance(value, str) else str(value)


# How OpenVINO's message lines that say where an error was raised, not why, begin.
_OPENVINO_LOCATION_PREFIXES = ("Exception from", "Check '", "While validating")


def openvino_reason(exc: Exception) -> str:
    """The line of an OpenVINO exception that says why: its text first says where it was raised
    (``Exception from src/...``, ``Check '...' failed at ...``, ``While validating node ...``), the
    reason comes last. ``"Exception from src/inference/src/cpp/core.cpp:117:\nout of device memory"``
    gives ``"out of device memory"``."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(_OPENVINO_LOCATION_PREFIXES)]
    return (useful or lines or [type(exc).__name__])[-1]
