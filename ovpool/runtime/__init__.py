"""Running models: devices, the fallback policy, inputs and outputs, bench, and the numpy executor.

Modules: ``policy`` (open a model, choose the device, fall back, ``run``), ``devices`` (OpenVINO's
devices and the numpy one), ``tensors`` (declared inputs, input files, outputs), ``bench``,
``graph`` (the numpy executor's session) with its operator library ``ops``, ``reference`` (the
onnx.reference fallback and its known defects), ``ir_executor`` (IR graphs on numpy) with its
layer table ``ir_layers``.

The names below are ``policy``'s, imported when first used: ``import ovpool.runtime.tensors`` (as
``ovpool convert`` does) then costs no import of the executor and its ~60 modules (~0.09 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ovpool.runtime.policy import (
        CACHE_ENV,
        DEFAULT_DEVICE,
        DEFAULT_FALLBACK,
        DEFAULT_PRECISION,
        FALLBACKS,
        PRECISIONS,
        DeviceError,
        FallbackWarning,
        Model,
        NumpySession,
        Opened,
        OpenVINOSession,
        Session,
        cache_dir,
        check_precision,
        compile_config,
        fallback_chain,
        fallback_level,
        open_model,
        open_session,
        openvino_session,
        run,
    )


__all__ = [
    "CACHE_ENV",
    "DEFAULT_DEVICE",
    "DEFAULT_FALLBACK",
    "DEFAULT_PRECISION",
    "FALLBACKS",
    "PRECISIONS",
    "DeviceError",
    "FallbackWarning",
    "Model",
    "NumpySession",
    "OpenVINOSession",
    "Opened",
    "Session",
    "cache_dir",
    "check_precision",
    "compile_config",
    "fallback_chain",
    "fallback_level",
    "open_model",
    "open_session",
    "openvino_session",
    "run",
]


def __getattr__(name: str) -> Any:
    """``policy``'s public names, imported on first use: ``ovpool.runtime.open_model`` is
    ``ovpool.runtime.policy.open_model``; any other name is no attribute (a submodule is then
    imported by ``from ovpool.runtime import devices``)."""
    if name in __all__:
        return getattr(importlib.import_module("ovpool.runtime.policy"), name)
    raise AttributeError(f"module 'ovpool.runtime' has no attribute {name!r}")
