"""The names of ``ovpool.execution``'s running modules as one module, as they were before 0.2.0 split it:
``model`` (``Model``, ``open_model``, ``Step``), ``sessions`` (``Session``, ``NumpySession``,
``OpenVINOSession``, ``compile_config``, precisions and the compile cache), ``fallback`` (the
chain, ``open_session``, ``openvino_session``, ``run``, ``DeviceError``, ``FallbackWarning``) and
``ov_tensors`` (OpenVINO's dtypes, shapes, port names and raw-bit tensors). New code imports from
those modules (or ``ovpool.execution``); every name this module had still works.
"""

from __future__ import annotations

from ovpool.execution import fallback, model, ov_tensors
from ovpool.execution.fallback import (
    DEFAULT_DEVICE,
    DEFAULT_FALLBACK,
    FALLBACK_DEVICE,
    FALLBACKS,
    DeviceError,
    FallbackWarning,
    Opened,
    fallback_chain,
    fallback_level,
    open_session,
    openvino_session,
    run,
    warn_fallbacks,
)
from ovpool.execution.model import Model, Step, StepObserver, open_model
from ovpool.execution.sessions import (
    CACHE_ENV,
    DEFAULT_PRECISION,
    PRECISIONS,
    NumpySession,
    OpenVINOSession,
    Session,
    budget_checks,
    cache_dir,
    check_precision,
    compile_config,
)

__all__ = [
    "CACHE_ENV",
    "DEFAULT_DEVICE",
    "DEFAULT_FALLBACK",
    "DEFAULT_PRECISION",
    "FALLBACKS",
    "FALLBACK_DEVICE",
    "PRECISIONS",
    "DeviceError",
    "FallbackWarning",
    "Model",
    "NumpySession",
    "OpenVINOSession",
    "Opened",
    "Session",
    "Step",
    "StepObserver",
    "budget_checks",
    "cache_dir",
    "check_precision",
    "compile_config",
    "fallback_chain",
    "fallback_level",
    "open_model",
    "open_session",
    "openvino_session",
    "run",
    "warn_fallbacks",
]

# the private names it had, for code that reached into it
_label = fallback._label
_notices = fallback._notices
_ir_step = model.ir_step
_onnx_step = model.onnx_step
_ov_dtype = ov_tensors.ov_dtype
_ov_shape = ov_tensors.ov_shape
_port_name = ov_tensors.port_name
_raw_tensor = ov_tensors.raw_tensor
_raw_value = ov_tensors.raw_value
_reshaped = ov_tensors.reshaped
