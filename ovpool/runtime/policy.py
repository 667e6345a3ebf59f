"""Running a model on a device, and the fallback policy of ``ovpool run``.

Devices are OpenVINO's (``CPU``, ``GPU``, ``NPU``, ``AUTO``, ``GPU.1``, ...) or ``numpy``, ovpool's
exact executor. The default is ``CPU``: present wherever OpenVINO is, and deterministic (``AUTO``
may pick another device from one run to the next).

* ONNX models reach OpenVINO through ovpool's own conversion (``ovpool.ov.from_onnx``: OpenVINO's
  frontend with ovpool's pooling rules), IR models through ``Core.read_model``.
* OpenVINO devices compile with ``INFERENCE_PRECISION_HINT=f32`` (``precision="f32"``), because
  this tool exists to check results and the CPU plugin here would otherwise run bf16;
  ``precision="default"`` leaves the device's own choice, ``"bf16"``/``"f16"`` ask for those.
* Fallback: when OpenVINO cannot be imported, the device is not present, or OpenVINO cannot convert,
  read or compile the model for it, the model runs on numpy and the reason is reported
  (``Opened.notice``). With ``fallback=False`` that is a ``DeviceError`` naming the device and the
  devices available.
* Compiled models are cached in OpenVINO's CACHE_DIR (``cache_dir()``), so the second run of a
  model on a device loads the compiled blob instead of compiling again.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from onnx import ModelProto

from ovpool import dtypes, shape
from ovpool.dtypes import np_dtype
from ovpool.errors import InputFileError, ModelError, OvpoolError, UnsupportedError, UsageError
from ovpool.ir.reader import read_ir, weights_file
from ovpool.names import port_tensor_name
from ovpool.memory import check_tensor
from ovpool.onnx.model import inferred_types, load
from ovpool.runtime import devices
from ovpool.runtime.graph import GraphSession
from ovpool.runtime.ir_executor import IrGraph
from ovpool.runtime.tensors import TensorDecl, check_inputs

DEFAULT_DEVICE = "CPU"
# --precision value -> INFERENCE_PRECISION_HINT (None: leave the device's default).
PRECISIONS: dict[str, str | None] = {"f32": "f32", "bf16": "bf16", "f16": "f16", "default": None}
DEFAULT_PRECISION = "f32"
CACHE_ENV = "OVPOOL_CACHE_DIR"


class DeviceError(OvpoolError):
    """The requested device cannot run the model and fallback is off (exit 1)."""


class FallbackWarning(UserWarning):
    """``ovpool.run`` ran on numpy instead of the requested OpenVINO device."""


@dataclass(frozen=True)
class Model:
    """A model to run: ``format`` "onnx" or "ir", ``label`` for messages, the IR or ONNX path and
    the ONNX proto. A proto read from a file holds no external data (OpenVINO and onnxruntime read
    the file themselves); ``onnx_with_data()`` loads it for the numpy executor."""

    format: str
    label: str
    path: Path | None = None
    proto: ModelProto | None = None

    def onnx_with_data(self) -> ModelProto:
        """The ONNX proto with its external data loaded (the proto itself when it has none)."""
        return load(self.path) if self.path is not None else self.proto


class Session(Protocol):
    """A model ready to run on one device; ``infer`` may be called many times."""

    device: str
    inputs: tuple[TensorDecl, ...]

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...


@dataclass(frozen=True)
class Opened:
    """A session and, when it is not on the device asked for, why (``notice``)."""

    session: Session
    notice: str | None = None


def open_model(model: str | os.PathLike | ModelProto) -> Model:
    """Classify a model by its extension (.onnx, .xml) and check it can be read: an ONNX file is
    loaded, an IR file parsed by ovpool's safe XML reader, so a broken file (or an entity bomb) is
    an ``InputFileError`` naming it whatever the device, before OpenVINO opens anything."""
    if isinstance(model, ModelProto):
        return Model("onnx", model.graph.name or "model", proto=model)
    path = Path(model)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        return Model("onnx", str(path), path=path, proto=load(path, load_data=False))
    if suffix == ".xml":
        read_ir(path)
        weights_file(path)
        return Model("ir", str(path), path=path)
    raise InputFileError.in_file(path, "unknown model format (expected .onnx or OpenVINO IR .xml)")


def cache_dir() -> Path:
    """Where compiled models are cached: ``$OVPOOL_CACHE_DIR``, else ``$XDG_CACHE_HOME/ovpool/openvino``,
    else ``~/.cache/ovpool/openvino``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ovpool" / "openvino"


def check_precision(precision: str) -> None:
    """Refuse a precision with no INFERENCE_PRECISION_HINT (``"f64"``): a ``UsageError``, exit 2."""
    if precision not in PRECISIONS:
        raise UsageError(f"precision '{precision}': expected one of {', '.join(PRECISIONS)}")


def compile_config(precision: str, cache: bool) -> dict[str, str]:
    """The ``compile_model`` properties: ``{"INFERENCE_PRECISION_HINT": "f32", "CACHE_DIR": ...}``."""
    check_precision(precision)
    config = {}
    if PRECISIONS[precision] is not None:
        config["INFERENCE_PRECISION_HINT"] = PRECISIONS[precision]
    if cache:
        folder = cache_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            config["CACHE_DIR"] = str(folder)
        except OSError:
            pass  # an unwritable cache folder only costs compile time
    return config


class NumpySession:
    """The exact numpy executor: whole ONNX models (prepared once), or IR models of pooling layers."""

    device = devices.NUMPY

    def __init__(self, model: Model) -> None:
        if model.format == "onnx":
            proto = model.onnx_with_data()
            _check_onnx_budget(proto, model.label)
            session = GraphSession(proto)
            self.inputs = session.inputs
            self._run = session.run
        else:
            graph = IrGraph.read(model.path)
            self.inputs = graph.inputs
            self._run = graph.run

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._run(inputs)


class OpenVINOSession:
    """One compiled model and one infer request on an OpenVINO device, reused by every ``infer``."""

    def __init__(self, model: Model, device: str, precision: str = DEFAULT_PRECISION, cache: bool = True, core=None) -> None:
        core = core if core is not None else devices.new_core()
        self.device = device
        if model.format == "onnx":
            from ovpool.ov.from_onnx import onnx_to_ov_model

            ov_model = onnx_to_ov_model(model.path if model.path is not None else model.proto)
            preferred = {o.name for o in model.proto.graph.output} | {i.name for i in model.proto.graph.input}
        else:
            ov_model = core.read_model(str(model.path))
            preferred = set()
        _check_ov_budget(ov_model, model.label)
        self.compiled = core.compile_model(ov_model, device, compile_config(precision, cache))
        self.request = self.compiled.create_infer_request()
        # Names come from the model as read: the compiled model's nodes have the plugin's names.
        self.inputs = tuple(
            TensorDecl(_port_name(named, preferred), _ov_dtype(p.get_element_type()), _ov_shape(p.get_partial_shape()))
            for named, p in zip(ov_model.inputs, self.compiled.inputs)
        )
        self.output_names = tuple(_port_name(p, preferred) for p in ov_model.outputs)
        self._bf16_inputs = {d.name for d in self.inputs if d.dtype == "bfloat16"}
        self._bf16_outputs = {
            name for name, p in zip(self.output_names, self.compiled.outputs) if _ov_dtype(p.get_element_type()) == "bfloat16"
        }

    @property
    def loaded_from_cache(self) -> bool:
        try:
            return bool(self.compiled.get_property("LOADED_FROM_CACHE"))
        except Exception:  # a plugin without the property never loads from cache
            return False

    @property
    def precision(self) -> str:
        """The inference precision the device reports after compiling ("f32", "bf16"), or "" if it does not say."""
        try:
            return self.compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        except Exception:  # AUTO and some plugins do not report it
            return ""

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Outputs by name. bfloat16 crosses as raw bits: OpenVINO's Python layer would read an
        ml_dtypes bfloat16 array, and show a bf16 tensor, as float16 (1.25 would come back 1.906)."""
        if self._bf16_inputs:
            inputs = {k: _bf16_tensor(v) if k in self._bf16_inputs else v for k, v in inputs.items()}
        # to_tuple() is in compiled-output order; indexing the OVDict by port costs ~5 us per output
        try:
            results = self.request.infer(inputs).to_tuple()
        except Exception as exc:  # OpenVINO raises RuntimeError and its own classes for inputs it cannot take
            raise ModelError(f"OpenVINO cannot run the model on {self.device}: {devices.openvino_reason(exc)}") from None
        return {
            name: value.view(np.uint16).view(np_dtype("bfloat16")) if name in self._bf16_outputs else value
            for name, value in zip(self.output_names, results)
        }


def open_session(
    model: Model,
    device: str = DEFAULT_DEVICE,
    precision: str = DEFAULT_PRECISION,
    fallback: bool = True,
    cache: bool = True,
) -> Opened:
    """A session on ``device``, or on numpy with the reason when the device cannot run the model
    (``fallback=False``: ``DeviceError`` instead)."""
    check_precision(precision)
    if device.lower() == devices.NUMPY:
        if precision not in ("f32", "default"):
            raise UsageError(f"precision '{precision}' applies to OpenVINO devices; numpy computes in the model's own types")
        return Opened(NumpySession(model))
    try:
        return Opened(openvino_session(model, device, precision, cache))
    except DeviceError as exc:
        reason = str(exc)
    available = devices.describe_available()
    if not fallback:
        raise DeviceError(f"{reason}; not falling back (--no-fallback). Devices available: {available}")
    try:
        session = NumpySession(model)
    except OvpoolError as exc:
        error = DeviceError(f"{reason}; the numpy fallback cannot run it either: {exc}")
        error.exit_code = exc.exit_code
        raise error from exc
    return Opened(session, f"{reason}; running on numpy instead (devices available: {available})")


def openvino_session(model: Model, device: str, precision: str = DEFAULT_PRECISION, cache: bool = True) -> OpenVINOSession:
    """The model compiled on an OpenVINO device, or ``DeviceError`` saying why not: OpenVINO missing,
    device not present, conversion or compile failure."""
    check_precision(precision)
    if devices.openvino() is None:
        raise DeviceError(devices.openvino_status())
    core = devices.new_core()
    if not devices.is_present(device, devices.openvino_device_names(core)):
        raise DeviceError(f"device '{device}' is not present")
    try:
        return OpenVINOSession(model, device, precision, cache, core=core)
    except OvpoolError as exc:
        raise DeviceError(f"OpenVINO cannot take {exc.located(model.label)}") from exc
    except Exception as exc:  # OpenVINO raises RuntimeError, OpConversionFailure, GeneralFailure (not RuntimeError)
        raise DeviceError(f"device '{device}' cannot compile {model.label}: {devices.openvino_reason(exc)}") from exc


def run(
    model: str | os.PathLike | ModelProto,
    inputs: Mapping[str, np.ndarray],
    device: str = DEFAULT_DEVICE,
    precision: str = DEFAULT_PRECISION,
    fallback: bool = True,
    cache: bool = True,
) -> dict[str, np.ndarray]:
    """Run a model once: ``{output name: array}``. A fallback to numpy is a ``FallbackWarning``."""
    opened = open_session(open_model(model), device, precision, fallback, cache)
    if opened.notice:
        warnings.warn(opened.notice, FallbackWarning, stacklevel=2)
    arrays = {k: np.asarray(v) for k, v in inputs.items()}
    check_inputs(_label(model), opened.session.inputs, arrays)
    return opened.session.infer(arrays)


def _check_onnx_budget(proto: ModelProto, label: str) -> None:
    """Every tensor of the model whose dims shape inference makes static (initializers, inputs,
    intermediate values) within the memory budget, before the numpy executor allocates any."""
    for name, (dtype, dims) in inferred_types(proto).items():
        if dtype is not None and dims is not None and shape.is_static(dims) and min(dims, default=0) >= 0:
            try:
                check_tensor(f"tensor '{name}'", dims, dtype)
            except OvpoolError as exc:
                raise exc.located(label) from None


def _check_ov_budget(ov_model, label: str) -> None:
    """Every static output of the converted or read model within the memory budget, before OpenVINO
    compiles it (its CPU plugin allocates static tensors when it compiles)."""
    for op in ov_model.get_ordered_ops():
        for index in range(op.get_output_size()):
            partial = op.get_output_partial_shape(index)
            dtype = dtypes.from_ov_type(op.get_output_element_type(index))
            if dtype is None or not partial.is_static:
                continue
            names = op.output(index).get_names()
            what = f"tensor '{min(names) if names else op.get_friendly_name()}'"
            try:
                check_tensor(what, [d.get_length() for d in partial], dtype)
            except OvpoolError as exc:
                raise exc.located(label) from None


def _label(model: str | os.PathLike | ModelProto) -> str:
    return model.graph.name or "model" if isinstance(model, ModelProto) else str(model)


def _port_name(port, preferred: set[str]) -> str:
    """An OpenVINO port's name: the ONNX tensor name when it has one, else the IR rule
    (``ovpool.names.port_tensor_name``: its smallest name, else the producing layer's name, with
    ``:<IR port id>`` for any output but the layer's first)."""
    names = port.get_names()
    chosen = sorted(names & preferred)
    if chosen:
        return chosen[0]
    node, index = port.get_node(), 0
    if node.get_type_name() == "Result":
        source = node.input(0).get_source_output()
        node, index = source.get_node(), source.get_index()
    return port_tensor_name(names, node.get_friendly_name(), str(node.get_input_size() + index), index == 0)


def _bf16_tensor(value: np.ndarray):
    import openvino as ov

    bits = np.ascontiguousarray(value).view(np.uint16)
    return ov.Tensor(bits, bits.shape, ov.Type.bf16)


def _ov_dtype(element_type) -> str:
    """OpenVINO element type -> numpy dtype name (bf16 is ml_dtypes' bfloat16, not float16)."""
    dtype = dtypes.from_ov_type(element_type)
    if dtype is None:
        raise UnsupportedError(f"OpenVINO element type {element_type.get_type_name()} has no numpy form ovpool handles")
    return dtype


def _ov_shape(partial_shape) -> tuple[int | None, ...] | None:
    if partial_shape.rank.is_dynamic:
        return None
    return tuple(d.get_length() if d.is_static else None for d in partial_shape)
