"""Running models on devices: open a model, choose the device, fall back along the chain, ``run``.

Modules: ``model`` (``Model``, ``open_model``, the ``Step`` of a traced run), ``sessions`` (the
``Session`` protocol, ``NumpySession``, ``OpenVINOSession``, ``compile_config`` and the
precisions), ``fallback`` (the fallback chain, ``open_session``, ``openvino_session``, ``run``),
``ov_tensors`` (OpenVINO's dtypes, shapes, port names and raw-bit tensors), ``devices``
(OpenVINO's devices and the numpy one), ``limits`` (what a model may ask of memory and of
OpenVINO's CPU plugin); ``policy`` holds the first four's names as one module, as before 0.2.0. The numpy executor is ``ovpool.engine``; checking one device against
another is ``ovpool.check``; declared inputs and tensor files are ``ovpool.tensors``.

The names below are imported when first used: ``import ovpool.execution.devices``
then costs no import of the executor and its ~60 modules (~0.09 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ovpool.execution.fallback import (
        DEFAULT_DEVICE,
        DEFAULT_FALLBACK,
        FALLBACKS,
        DeviceError,
        FallbackWarning,
        Opened,
        fallback_chain,
        fallback_level,
        open_session,
        openvino_session,
        run,
    )
    from ovpool.execution.model import Model, open_model
    from ovpool.execution.sessions import (
        CACHE_ENV,
        DEFAULT_PRECISION,
        PRECISIONS,
        NumpySession,
        OpenVINOSession,
        Session,
        cache_dir,
        check_precision,
        compile_config,
    )

# the modules holding the lazy names, in the order they are looked in
_HOMES = ("model", "sessions", "fallback")


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
    """The public names of ``model``, ``sessions`` and ``fallback``, imported on first use:
    ``ovpool.execution.open_model`` is ``ovpool.execution.model.open_model``; any other name is no
    attribute (a submodule is then imported by ``from ovpool.execution import devices``)."""
    if name in __all__:
        return next(getattr(module, name) for module in map(_home, _HOMES) if hasattr(module, name))
    raise AttributeError(f"module 'ovpool.execution' has no attribute {name!r}")


def _home(module: str) -> Any:
    return importlib.import_module(f"ovpool.execution.{module}")
