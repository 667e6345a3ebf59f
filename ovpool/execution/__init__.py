"""Running models on devices: open a model, choose the device, fall back along the chain, ``run``.

Modules: ``policy`` (the model, both sessions, ``open_model``, ``run`` and the fallback chain),
``devices`` (OpenVINO's devices and the numpy one), ``limits`` (what a model may ask of memory and
of OpenVINO's CPU plugin). The numpy executor is ``ovpool.engine``; checking one device against
another is ``ovpool.check``; declared inputs and tensor files are ``ovpool.tensors``.

The names below are ``policy``'s, imported when first used: ``import ovpool.execution.devices``
then costs no import of the executor and its ~60 modules (~0.09 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ovpool.execution.policy import (
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
    """``policy``'s public names, imported on first use: ``ovpool.execution.open_model`` is
    ``ovpool.execution.policy.open_model``; any other name is no attribute (a submodule is then
    imported by ``from ovpool.execution import devices``)."""
    if name in __all__:
        return getattr(importlib.import_module("ovpool.execution.policy"), name)
    raise AttributeError(f"module 'ovpool.execution' has no attribute {name!r}")
