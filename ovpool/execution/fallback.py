"""The fallback chain of ``ovpool run`` and ``ovpool.run``: when OpenVINO cannot be imported, the
device is not present, or OpenVINO cannot convert, read or compile the model for it, the next
device of the chain is tried: the device asked, then OpenVINO ``CPU``, then numpy (``GPU`` ->
``CPU`` -> ``numpy``; ``CPU`` -> ``numpy``). ``fallback`` says how far it may go: ``"numpy"`` (the
whole chain, the default; ``True``), ``"cpu"`` (stop at OpenVINO CPU) or ``"none"`` (``False``:
the device asked only). Every step taken is one line of ``Opened.notices`` naming the device given
up and why (a ``FallbackWarning`` from ``run``); when no device of the chain can run the model it
is a ``DeviceError`` naming each and the devices available."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from onnx import ModelProto

from ovpool.errors import OvpoolError, UsageError
from ovpool.execution import devices
from ovpool.execution.model import Model, open_model
from ovpool.execution.sessions import DEFAULT_PRECISION, NumpySession, OpenVINOSession, Session, check_precision
from ovpool.tensors import check_inputs, fed_values

DEFAULT_DEVICE = "CPU"
# How far the fallback chain (asked device -> OpenVINO CPU -> numpy) may go, nearest first.
FALLBACKS = ("none", "cpu", "numpy")
DEFAULT_FALLBACK = "numpy"
FALLBACK_DEVICE = "CPU"


class DeviceError(OvpoolError):
    """The requested device cannot run the model and fallback is off (exit 1). ``every_device``:
    the reason holds for any OpenVINO device (OpenVINO missing, or ovpool's conversion refusing the
    model), so the fallback chain goes straight to numpy."""

    every_device = False


class FallbackWarning(UserWarning):
    """``ovpool.run`` gave up a device of the fallback chain: the message names it and why, and
    ``device`` is where the model ran (``"CPU"`` or ``"numpy"``)."""

    def __init__(self, message: str, device: str = "") -> None:
        super().__init__(message)
        self.device = device


@dataclass(frozen=True)
class Opened:
    """A session and, when it is not on the device asked for, one line per device given up (``notices``)."""

    session: Session
    notices: tuple[str, ...] = ()

    @property
    def notice(self) -> str | None:
        """The notices as one text (a line each), or None when the session is on the device asked for."""
        return "\n".join(self.notices) or None


def fallback_level(fallback: str | bool) -> str:
    """How far the chain may go, as a name of ``FALLBACKS``: ``True`` is ``"numpy"`` (the whole
    chain), ``False`` is ``"none"``; any other value is a ``UsageError`` (exit 2)."""
    if fallback is True or fallback is False:
        return DEFAULT_FALLBACK if fallback else "none"
    level = str(fallback).lower()
    if level not in FALLBACKS:
        raise UsageError(f"fallback '{fallback}': expected one of {', '.join(FALLBACKS)}")
    return level


def fallback_chain(device: str, fallback: str | bool = DEFAULT_FALLBACK) -> tuple[str, ...]:
    """The devices tried in order: the device asked, then OpenVINO ``CPU`` (unless it was asked:
    ``CPU.0`` is a CPU), then numpy, cut at ``fallback``. ``GPU`` gives (GPU, CPU, numpy), with
    ``fallback="cpu"`` (GPU, CPU); ``CPU`` gives (CPU, numpy); ``numpy`` and ``"none"`` the device alone."""
    level = FALLBACKS.index(fallback_level(fallback))
    if device.lower() == devices.NUMPY:
        return (device,)
    chain = [device]
    if level >= FALLBACKS.index("cpu") and device.split(".")[0].upper() != FALLBACK_DEVICE:
        chain.append(FALLBACK_DEVICE)
    if level >= FALLBACKS.index("numpy"):
        chain.append(devices.NUMPY)
    return tuple(chain)


def open_session(
    model: Model,
    device: str = DEFAULT_DEVICE,
    precision: str = DEFAULT_PRECISION,
    fallback: str | bool = DEFAULT_FALLBACK,
    cache: bool = True,
) -> Opened:
    """A session on the first device of ``fallback_chain(device, fallback)`` that runs the model,
    with a notice per device given up: ``GPU`` absent and CPU compiling gives a CPU session and
    ``device 'GPU' is not present; running on CPU instead (devices available: CPU, numpy)``. When
    none can, a ``DeviceError`` naming why each was given up (exit 1, or the numpy error's code)."""
    check_precision(precision)
    level = fallback_level(fallback)
    if device.lower() == devices.NUMPY:
        if precision not in ("f32", "default"):
            raise UsageError(f"precision '{precision}' applies to OpenVINO devices; numpy computes in the model's own types")
        return Opened(NumpySession(model))
    reasons: list[str] = []
    tried: list[str] = []
    every_device = False
    for candidate in fallback_chain(device, level):
        if candidate != devices.NUMPY and every_device:
            continue
        if candidate == devices.NUMPY:
            try:
                session: Session = NumpySession(model)
            except OvpoolError as exc:
                error = DeviceError(f"{'; '.join(reasons)}; the numpy fallback cannot run it either: {exc}")
                error.exit_code = exc.exit_code
                raise error from exc
        else:
            try:
                session = openvino_session(model, candidate, precision, cache)
            except DeviceError as exc:
                reasons.append(str(exc))
                tried.append(candidate)
                every_device = exc.every_device
                continue
        return Opened(session, _notices(reasons, tried, candidate))
    refusal = "not falling back" if level == "none" else "not falling back to numpy"
    raise DeviceError(f"{'; '.join(reasons)}; {refusal} (--fallback {level}). Devices available: {devices.describe_available()}")


def _notices(reasons: list[str], tried: list[str], used: str) -> tuple[str, ...]:
    """One line per device given up: why, and the next device (``trying CPU instead``); the last
    names where the model runs and the devices available."""
    if not reasons:
        return ()
    lines = [f"{reason}; trying {nxt} instead" for reason, nxt in zip(reasons[:-1], tried[1:])]
    lines.append(f"{reasons[-1]}; running on {used} instead (devices available: {devices.describe_available()})")
    return tuple(lines)


def openvino_session(
    model: Model,
    device: str,
    precision: str = DEFAULT_PRECISION,
    cache: bool = True,
    kind: type[OpenVINOSession] = OpenVINOSession,
) -> OpenVINOSession:
    """The model compiled on an OpenVINO device (as a ``kind``, an ``OpenVINOSession`` or a
    subclass), or ``DeviceError`` saying why not: OpenVINO missing, device not present, conversion
    or compile failure."""
    check_precision(precision)
    if devices.openvino() is None:
        missing = DeviceError(devices.openvino_status())
        missing.every_device = True
        raise missing
    core = devices.new_core()
    if not devices.is_present(device, devices.openvino_device_names(core)):
        raise DeviceError(f"device '{device}' is not present")
    try:
        return kind(model, device, precision, cache, core=core)
    except OvpoolError as exc:
        refused = DeviceError(f"OpenVINO cannot take {exc.located(model.label)}")
        refused.every_device = True
        raise refused from exc
    except Exception as exc:  # OpenVINO raises RuntimeError, OpConversionFailure, GeneralFailure (not RuntimeError)
        raise DeviceError(f"device '{device}' cannot compile {model.label}: {devices.openvino_reason(exc)}") from exc


def run(
    model: str | os.PathLike | ModelProto,
    inputs: Mapping[str, np.ndarray],
    device: str = DEFAULT_DEVICE,
    precision: str = DEFAULT_PRECISION,
    fallback: str | bool = DEFAULT_FALLBACK,
    cache: bool = True,
) -> dict[str, np.ndarray]:
    """Run a model once: ``{output name: array}``. Each device of the fallback chain given up is a
    ``FallbackWarning`` whose ``device`` is where the model ran (``open_session``). Inputs are
    arrays (or what ``np.asarray`` makes one of); on numpy a sequence input is a list of arrays,
    an empty optional None, a string tensor an array of ``str``, and a sequence or optional output
    comes back so (``tensors.fed_values``, ``tensors.check_inputs``)."""
    opened = open_session(open_model(model), device, precision, fallback, cache)
    warn_fallbacks(opened, stacklevel=3)
    arrays = fed_values(opened.session.inputs, inputs)
    check_inputs(_label(model), opened.session.inputs, arrays)
    return opened.session.infer(arrays)


def warn_fallbacks(opened: Opened, stacklevel: int = 2) -> None:
    """A ``FallbackWarning`` per notice of ``opened`` (each device given up), ``device`` where it ran."""
    for notice in opened.notices:
        warnings.warn(FallbackWarning(notice, opened.session.device), stacklevel=stacklevel + 1)


def _label(model: str | os.PathLike | ModelProto) -> str:
    return model.graph.name or "model" if isinstance(model, ModelProto) else str(model)
