"""Running a model on a device, and the fallback policy of ``ovpool run``.

Devices are OpenVINO's (``CPU``, ``GPU``, ``NPU``, ``AUTO``, ``GPU.1``, ...) or ``numpy``, ovpool's
exact executor. The default is ``CPU``: present wherever OpenVINO is, and deterministic (``AUTO``
may pick another device from one run to the next).

* ONNX models reach OpenVINO through ovpool's own conversion (``ovpool.ov.from_onnx``: OpenVINO's
  frontend with ovpool's pooling rules), IR models through ``Core.read_model``.
* OpenVINO devices compile with ``INFERENCE_PRECISION_HINT=f32`` (``precision="f32"``), because
  this tool exists to check results and the CPU plugin here would otherwise run bf16;
  ``precision="default"`` leaves the device's own choice, ``"bf16"``/``"f16"`` ask for those.
* Fallback chain: when OpenVINO cannot be imported, the device is not present, or OpenVINO cannot
  convert, read or compile the model for it, the next device of the chain is tried: the device
  asked, then OpenVINO ``CPU``, then numpy (``GPU`` -> ``CPU`` -> ``numpy``; ``CPU`` -> ``numpy``).
  ``fallback`` says how far it may go: ``"numpy"`` (the whole chain, the default; ``True``),
  ``"cpu"`` (stop at OpenVINO CPU) or ``"none"`` (``False``: the device asked only). Every step
  taken is one line of ``Opened.notices`` naming the device given up and why; when no device of
  the chain can run the model it is a ``DeviceError`` naming each and the devices available.
* Compiled models are cached in OpenVINO's CACHE_DIR (``cache_dir()``), so the second run of a
  model on a device loads the compiled blob instead of compiling again.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
from onnx import ModelProto, NodeProto

from ovpool import dtypes
from ovpool.dtypes import np_dtype
from ovpool.engine import budget
from ovpool.engine.graph import GraphSession
from ovpool.engine.ir_executor import IrGraph
from ovpool.errors import InputFileError, ModelError, OvpoolError, UnsupportedError, UsageError
from ovpool.execution import devices, limits
from ovpool.ir.reader import IRDocument, Layer, read_ir, weights_file
from ovpool.names import port_tensor_name
from ovpool.onnx.model import load
from ovpool.tensors import TensorDecl, check_inputs, fed_values, stand_in

DEFAULT_DEVICE = "CPU"
# --precision value -> INFERENCE_PRECISION_HINT (None: leave the device's default).
PRECISIONS: dict[str, str | None] = {"f32": "f32", "bf16": "bf16", "f16": "f16", "default": None}
DEFAULT_PRECISION = "f32"
CACHE_ENV = "OVPOOL_CACHE_DIR"
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
class Model:
    """A model to run: ``format`` "onnx" or "ir", ``label`` for messages, the IR or ONNX path and
    the ONNX proto. A proto read from a file holds no external data (OpenVINO and onnxruntime read
    the file themselves); ``onnx_with_data()`` loads it for the numpy executor."""

    format: str
    label: str
    path: Path | None = None
    proto: ModelProto | None = None

    @property
    def folder(self) -> Path | None:
        """The folder of the model's file, where its external data lies (None for a proto)."""
        return self.path.parent if self.path is not None else None

    def onnx_with_data(self) -> ModelProto:
        """The ONNX proto with its external data loaded (the proto itself when it has none)."""
        if self.path is not None:
            return load(self.path)
        assert self.proto is not None  # a Model without a path is made from a proto (open_model)
        return self.proto


@dataclass(frozen=True)
class Step:
    """One node or layer as a session executes it: ``name``, ``type`` (``Conv``, ``Convolution``),
    the tensors it reads and writes (ONNX tensor names; for IR ``ovpool.names.port_tensor_name``)."""

    name: str
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


# observe(step, outputs): called after each step of a traced run, its outputs in ``step.outputs`` order.
StepObserver = Callable[[Step, tuple[Any, ...]], None]


def budget_checks(*sessions: Any) -> tuple[Callable[[Mapping[str, np.ndarray]], None], ...]:
    """The ``check_budget`` of each session that has one (numpy's and OpenVINO's; onnxruntime's has
    none): what ``tensors.random_inputs`` calls before it draws inputs for them."""
    return tuple(check for session in sessions if (check := getattr(session, "check_budget", None)) is not None)


class Session(Protocol):
    """A model ready to run on one device; ``infer`` may be called many times."""

    device: str
    inputs: tuple[TensorDecl, ...]

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...


@dataclass(frozen=True)
class Opened:
    """A session and, when it is not on the device asked for, one line per device given up (``notices``)."""

    session: Session
    notices: tuple[str, ...] = ()

    @property
    def notice(self) -> str | None:
        """The notices as one text (a line each), or None when the session is on the device asked for."""
        return "\n".join(self.notices) or None


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
        read_ir(path).check_structure()
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
    config: dict[str, str] = {}
    hint = PRECISIONS[precision]
    if hint is not None:
        config["INFERENCE_PRECISION_HINT"] = hint
    if cache:
        folder = cache_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            config["CACHE_DIR"] = str(folder)
        except OSError:
            pass  # an unwritable cache folder only costs compile time
    return config


class NumpySession:
    """The exact numpy executor: whole ONNX models and whole IR models, each prepared once."""

    device = devices.NUMPY

    def __init__(self, model: Model) -> None:
        self.graph: GraphSession | IrGraph
        # deprecated, always empty: no node runs on onnx.reference
        self.reference_ops: tuple[str, ...] = ()
        self._budget = limits.RunBudget(None, model.label)
        if model.format == "onnx":
            proto = model.onnx_with_data()
            # static inputs: the sizes of the run itself, with data propagation (a Reshape fed by Shape arithmetic)
            static = not limits.dynamic_inputs(proto)
            types = limits.check_run_budget(proto, {}, model.label) if static else limits.check_onnx_budget(proto, model.label)
            session = GraphSession(proto)
            self._budget = limits.RunBudget(session.proto, model.label, session=session, types=types)
            self.inputs = session.inputs
            self.graph = session
        else:
            assert model.path is not None  # an IR Model is read from its file (open_model)
            graph = IrGraph.read(model.path)
            self.inputs = graph.inputs
            self.graph = graph
        self.label = model.label
        self._ir_checked: set[tuple[tuple[str, tuple[int, ...]], ...]] = set()
        if isinstance(self.graph, IrGraph) and all(d.shape is not None and None not in d.shape for d in self.inputs):
            self.check_budget({d.name: stand_in(d.dtype, cast("tuple[int, ...]", d.shape)) for d in self.inputs})

    def check_budget(self, inputs: Mapping[str, np.ndarray]) -> None:
        """The run of ``inputs`` (their shapes and dtypes: stand-ins do) within the memory budget:
        every tensor and the plan's peak (``limits.RunBudget``; ``budget.check_ir_plan`` for IR)."""
        self._budget.check(inputs)
        if isinstance(self.graph, IrGraph):
            key = tuple(sorted((name, np.shape(value)) for name, value in inputs.items()))
            if key not in self._ir_checked:
                budget.check_ir_plan(self.graph, inputs, self.label)
                self._ir_checked.add(key)

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.check_budget(inputs)
        return self.graph.run(inputs)

    def trace(self, inputs: Mapping[str, np.ndarray], observe: StepObserver) -> dict[str, np.ndarray]:
        """As ``infer``, calling ``observe(step, outputs)`` after each node of an ONNX graph (folded
        nodes with their constant outputs, where they stand) or each layer of an IR graph, in
        execution order. IR graphs are traced when the IR executor's ``run`` takes
        ``observe(layer, outputs)``; otherwise an ``UnsupportedError``."""
        graph = self.graph
        self.check_budget(inputs)
        if isinstance(graph, GraphSession):
            return graph.run(inputs, observe=lambda node, outputs: observe(_onnx_step(node), outputs))
        if "observe" not in inspect.signature(graph.run).parameters:
            raise UnsupportedError.in_file(
                self.label, "the numpy executor does not report the layers of IR models; compare per layer with --reference CPU"
            )
        document, producers = graph.document, graph.document.producers()
        run: Callable[..., dict[str, np.ndarray]] = graph.run
        return run(inputs, observe=lambda layer, outputs: observe(_ir_step(document, producers, layer), outputs))


class OpenVINOSession:
    """One compiled model and one infer request on an OpenVINO device, reused by every ``infer``."""

    def __init__(self, model: Model, device: str, precision: str = DEFAULT_PRECISION, cache: bool = True, core=None) -> None:
        core = core if core is not None else devices.new_core()
        self.device = device
        ov_model, preferred = self._read_model(model, core)
        limits.check_ov_budget(ov_model, model.label)
        limits.check_ov_run(ov_model, model.label)
        self._ov_model = ov_model if any(not p.get_partial_shape().is_static for p in ov_model.inputs) else None
        self._label = model.label
        self._ov_checked: set[tuple[tuple[int, ...] | None, ...]] = set()
        limits.check_ov_windows(ov_model, model.label, model.proto if model.format == "onnx" else None)
        if "CPU" in device.upper() or device.upper().startswith(("AUTO", "MULTI", "HETERO")):
            limits.check_ov_cpu_crashes(ov_model, model.label, model.proto if model.format == "onnx" else None)
        self._budget = limits.RunBudget(model.proto if model.format == "onnx" else None, model.label, model.folder)
        self.compiled = self._compile(core, ov_model, compile_config(precision, cache))
        self.request = self.compiled.create_infer_request()
        # Names come from the model as read: the compiled model's nodes have the plugin's names.
        self.inputs = tuple(
            TensorDecl(_port_name(named, preferred), _ov_dtype(p.get_element_type()), _ov_shape(p.get_partial_shape()))
            for named, p in zip(ov_model.inputs, self.compiled.inputs)
        )
        held = {name for p in ov_model.inputs for name in p.get_names()}
        self.output_names = tuple(_port_name(p, preferred - held or preferred, held) for p in ov_model.outputs)
        self._raw_inputs = {d.name for d in self.inputs if d.dtype in dtypes.ML_DTYPES}
        self._raw_outputs = {
            index: _ov_dtype(p.get_element_type())
            for index, p in enumerate(self.compiled.outputs)
            if _ov_dtype(p.get_element_type()) in dtypes.ML_DTYPES
        }

    def _read_model(self, model: Model, core) -> tuple[Any, set[str]]:
        """The ``openvino.Model`` to compile and the tensor names its ports go by when they have
        several (an ONNX model's inputs and outputs); a subclass may add outputs here."""
        if model.format == "onnx":
            from ovpool.ov.from_onnx import onnx_to_ov_model

            assert model.proto is not None  # an ONNX Model always has its proto (open_model)
            ov_model = onnx_to_ov_model(model.path if model.path is not None else model.proto)
            return ov_model, {o.name for o in model.proto.graph.output} | {i.name for i in model.proto.graph.input}
        return core.read_model(str(model.path)), set()

    def _compile(self, core, ov_model: Any, config: Mapping[str, str]) -> Any:
        """``ov_model`` compiled on the session's device (a subclass may have compiled it already)."""
        return core.compile_model(ov_model, self.device, dict(config))

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

    def check_budget(self, inputs: Mapping[str, np.ndarray]) -> None:
        """The run of ``inputs`` (their shapes and dtypes: stand-ins do) within the memory budget:
        the tensors their shapes make static, and with dynamic inputs OpenVINO's copies of them
        (``limits.check_ov_run``)."""
        self._budget.check(inputs)
        if self._ov_model is None:
            return
        shapes = tuple(tuple(np.shape(inputs[d.name])) if d.name in inputs else None for d in self.inputs)
        if shapes not in self._ov_checked:
            limits.check_ov_run(
                _reshaped(self._ov_model, shapes), self._label, sum(np.asarray(v).nbytes for v in inputs.values())
            )
            self._ov_checked.add(shapes)

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Outputs by name. bfloat16 and the narrow types (``ovpool.dtypes.NARROW``: float8, 4-bit)
        cross as raw bits (``_raw_tensor``, ``_raw_value``): OpenVINO's Python layer would read an
        ml_dtypes bfloat16 array, and show a bf16 tensor, as float16 (1.25 would come back 1.906),
        and holds a 4-bit tensor of 5 elements as 3 bytes."""
        self.check_budget(inputs)
        if self._raw_inputs:
            inputs = {k: _raw_tensor(v) if k in self._raw_inputs else v for k, v in inputs.items()}
        # to_tuple() is in compiled-output order; indexing the OVDict by port costs ~5 us per output
        try:
            results = self.request.infer(inputs).to_tuple()
        except Exception as exc:  # OpenVINO raises RuntimeError and its own classes for inputs it cannot take
            raise ModelError(f"OpenVINO cannot run the model on {self.device}: {devices.openvino_reason(exc)}") from None
        return {
            name: _raw_value(self.request.get_output_tensor(index), self._raw_outputs[index])
            if index in self._raw_outputs
            else value
            for index, (name, value) in enumerate(zip(self.output_names, results))
        }


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


def _port_name(port, preferred: set[str], inputs: Collection[str] = ()) -> str:
    """An OpenVINO port's name (a Result's: its source port's): the ONNX tensor name when it has one, else the IR rule
    (``ovpool.names.port_tensor_name``: its smallest name not also one of the model's ``inputs``,
    else the producing layer's name, with ``:<IR port id>`` for any output but the layer's first)."""
    names = port.get_names()
    node, index = port.get_node(), port.get_index()
    if node.get_type_name() == "Result":  # its source's names: a Result's own may be stale in memory (not in a file)
        source = node.input(0).get_source_output()
        names, node, index = source.get_names() or names, source.get_node(), source.get_index()
    chosen = sorted(names & preferred)
    if chosen:
        return chosen[0]
    return port_tensor_name(names, node.get_friendly_name(), str(node.get_input_size() + index), index == 0, inputs)


def _onnx_step(node: NodeProto) -> Step:
    """An ONNX node as a step, named by its name or else its first output."""
    return Step(node.name or node.output[0], node.op_type, tuple(node.input), tuple(node.output))


def _ir_step(document: IRDocument, producers: Mapping[tuple[str, str], Any], layer: Layer) -> Step:
    """An IR layer as a step: its inputs are the tensors of the ports feeding it."""
    sources = [producers.get((layer.id, port.id)) for port in layer.inputs]
    inputs = tuple(
        document.tensor_name(document.layers[e.from_layer], e.from_port)
        if e is not None and e.from_layer in document.layers
        else ""
        for e in sources
    )
    return Step(layer.name, layer.type, inputs, tuple(document.tensor_name(layer, port.id) for port in layer.outputs))


def _reshaped(ov_model: Any, shapes: tuple[tuple[int, ...] | None, ...]) -> Any:
    """A copy of ``ov_model`` with its inputs set to ``shapes`` (in input order; None keeps one),
    so its intermediates and outputs have the sizes of a run; ``ov_model`` itself when OpenVINO
    cannot reshape it to them (the run then says why)."""
    import openvino as ov

    clone = ov_model.clone()
    try:
        clone.reshape({port: ov.PartialShape(list(dims)) for port, dims in zip(clone.inputs, shapes) if dims is not None})
    except Exception:  # OpenVINO raises RuntimeError and its own classes for shapes it cannot propagate
        return ov_model
    return clone


def _raw_tensor(value: np.ndarray) -> Any:
    """An ``openvino.Tensor`` of a bfloat16 or narrow array, its bits as OpenVINO holds them:
    bfloat16 [1.25] is the bf16 tensor of the bits 0x3FA0, uint4 [1, 2, 3] the u4 tensor of the
    bytes 0x21 0x03 (``dtypes.pack_narrow``)."""
    import openvino as ov

    tensor = ov.Tensor(getattr(ov.Type, dtypes.any_ir_type(value.dtype.name)), ov.Shape(list(value.shape)))
    if value.size:
        bits = np.ascontiguousarray(value).view(np.uint16) if value.dtype.name == "bfloat16" else dtypes.pack_narrow(value)
        tensor.data.reshape(-1).view(np.uint8)[...] = bits.reshape(-1).view(np.uint8)
    return tensor


def _raw_value(tensor: Any, dtype: str) -> np.ndarray:
    """The array of an output ``tensor`` of a bfloat16 or narrow type (``_raw_tensor`` reversed):
    a copy, as ml_dtypes' type of ``dtype``."""
    shape = tuple(tensor.shape)
    kind = np_dtype(dtype)
    data = np.asarray(tensor.data)
    if dtype == "bfloat16":
        return data.view(np.uint16).view(kind).reshape(shape).copy()
    return dtypes.unpack_narrow(data.view(np.uint8), int(np.prod(shape, dtype=np.int64)), kind).reshape(shape)


def _ov_dtype(element_type) -> str:
    """OpenVINO element type -> numpy dtype name (bf16 is ml_dtypes' bfloat16, not float16; u4 is
    ml_dtypes' uint4)."""
    dtype = dtypes.any_from_ov_type(element_type)
    if dtype is None:
        raise UnsupportedError(f"OpenVINO element type {element_type.get_type_name()} has no numpy form ovpool handles")
    return dtype


def _ov_shape(partial_shape) -> tuple[int | None, ...] | None:
    if partial_shape.rank.is_dynamic:
        return None
    return tuple(d.get_length() if d.is_static else None for d in partial_shape)
