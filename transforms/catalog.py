"""The pass catalog: the one list of ovpool's graph passes, as the command line and
``ovpool.transform`` take them. ``ovpool transform --help`` and ``--list-passes`` print it and each
pass takes its name and summary from its row here (``framework.listed``), so a new pass is one row
here, its ``listed(...)`` in its family's module, and its test.

This module imports no pass (nor onnx) until one is asked for (``parse_pass``), so the command
line's help reads it without paying for onnx. ``parse_pass("no-ceil")`` is the pass in
``transforms/pads.py``; ``parse_pass("opset=11")`` the one ``opset.opset_pass(11)`` makes.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ovpool.errors import OvpoolError

if TYPE_CHECKING:
    from ovpool.transforms.framework import Pass


class UnknownPassError(OvpoolError):
    """A pass name that no pass has (a usage error: exit 2)."""

    exit_code = 2


@dataclass(frozen=True)
class PassEntry:
    """One row of the catalog: ``name`` as the command line takes it (``"no-ceil"``; a family of
    passes with a whole-number parameter is written with it, ``"opset=N"``), a one-line
    ``summary``, and where the pass is: ``attribute`` of the module ``ovpool.transforms.<module>``,
    a ``Pass`` (or, for a family, the function making the pass for one N)."""

    name: str
    summary: str
    module: str
    attribute: str

    @property
    def key(self) -> str:
        """What the command line matches: ``"no-ceil"``, ``"opset"`` for ``"opset=N"``."""
        return self.name.partition("=")[0]

    @property
    def parameter(self) -> str:
        """A family's parameter (``"N"`` of ``"opset=N"``), "" for a single pass."""
        return self.name.partition("=")[2]

    def named(self, value: int | None = None) -> tuple[str, str]:
        """The name and summary of the pass for ``value`` of a family's parameter: ``opset=N``
        with 11 is ``("opset=11", "retarget the default-domain opset to 11")``."""
        if not self.parameter:
            return self.name, self.summary
        text = str(value)
        return f"{self.key}={text}", re.sub(rf"\b{re.escape(self.parameter)}\b", text, self.summary)


PASSES: tuple[PassEntry, ...] = (
    PassEntry("explicit-pads", "auto_pad -> explicit pads (dilation included)", "pads", "EXPLICIT_PADS_PASS"),
    PassEntry("no-ceil", "ceil_mode=1 -> floor with the end pads that give the same windows", "pads", "NO_CEIL_PASS"),
    PassEntry("opset=N", "retarget the default-domain opset to N", "opset", "opset_pass"),
    PassEntry(
        "dml-legal",
        "1-D pools -> 2-D (Unsqueeze, pool, Squeeze); include-pad ceil overhangs -> Pad + exclude-pad",
        "dml",
        "DML_LEGAL_PASS",
    ),
    PassEntry(
        "expand-global",
        "GlobalAveragePool/GlobalMaxPool/GlobalLpPool -> AveragePool/MaxPool/LpPool with the full kernel",
        "global_pools",
        "EXPAND_GLOBAL_PASS",
    ),
)


def catalog() -> tuple[PassEntry, ...]:
    """Every pass, in the order ``ovpool transform --list-passes`` prints them."""
    return PASSES


def pass_names() -> list[str]:
    """``["explicit-pads", "no-ceil", "opset=N", "dml-legal", "expand-global"]``."""
    return [entry.name for entry in PASSES]


def listing() -> str:
    """The catalog as ``--list-passes`` prints it: a line a pass, its name then its summary."""
    width = max(len(entry.name) for entry in PASSES)
    return "\n".join(f"{entry.name:<{width}}  {entry.summary}" for entry in PASSES)


def entry(name: str) -> PassEntry:
    """The row named ``name`` (``"opset=N"`` for the opset family); a ``KeyError`` for no row."""
    for row in PASSES:
        if row.name == name:
            return row
    raise KeyError(name)


def parse_pass(name: str) -> Pass:
    """``"no-ceil"`` -> that pass; ``"opset=11"`` -> the opset pass for 11. N is ASCII digits
    (``"opset=²"`` is refused: ``str.isdigit`` takes superscripts, which ``int`` does not)."""
    text = name.strip()
    key, _, value = text.partition("=")
    for row in PASSES:
        if row.parameter and key.strip() == row.key:
            if not value.strip().isascii() or not value.strip().isdigit():
                raise UnknownPassError(f"pass '{name}': {row.parameter} in {row.name} must be a whole number (e.g. {row.key}=19)")
            make = getattr(importlib.import_module(f"ovpool.transforms.{row.module}"), row.attribute)
            return make(int(value))
        if not row.parameter and text == row.name:
            found: Pass = getattr(importlib.import_module(f"ovpool.transforms.{row.module}"), row.attribute)
            return found
    raise UnknownPassError(f"unknown pass '{name}' (known: {', '.join(pass_names())})")


def __getattr__(name: str) -> object:
    """``FIXED_PASSES`` (name -> pass, the passes without a parameter), as before the catalog
    was a list: built on first use, as it imports every pass module."""
    if name == "FIXED_PASSES":
        return {row.name: parse_pass(row.name) for row in PASSES if not row.parameter}
    raise AttributeError(f"module 'ovpool.transforms.catalog' has no attribute {name!r}")
