"""Running models: devices, the fallback policy, inputs and outputs, bench, and the numpy executor.

Modules: ``policy`` (open a model, choose the device, fall back, ``run``), ``devices`` (OpenVINO's
devices and the numpy one), ``tensors`` (declared inputs, input files, outputs), ``bench``,
``graph`` (the numpy executor's session) with its operator library ``ops``, ``reference`` (the
onnx.reference fallback and its known defects), ``ir_executor`` (IR graphs on numpy) with its
layer table ``ir_layers``.
"""

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
