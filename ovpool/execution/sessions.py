"""A model ready to run on one device: the ``Session`` protocol and its two devices,
``NumpySession`` (ovpool's exact executor, whole ONNX and IR models) and ``OpenVINOSession`` (one
compiled model and one infer request), with what they compile with: OpenVINO devices compile with
``INFERENCE_PRECISION_HINT=f32`` (``precision="f32"``, ``compile_config``), because this tool
exists to check results and the CPU plugin would otherwise run bf16; ``precision="default"``
leaves the device's own choice. Compiled models are cached in OpenVINO's CACHE_DIR
(``cache_dir()``), so the second run of a model on a device loads the compiled blob."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ovpool import dtypes
from ovpool.engine.graph import GraphSession
from ovpool.engine.ir_executor import IrGraph
from ovpool.engine.session import Executor
from ovpool.errors import ModelError, UsageError
from ovpool.execution import devices, limits
from ovpool.execution.model import Model, StepObserver
from ovpool.execution.ov_tensors import ov_dtype, ov_shape, port_name, raw_tensor, raw_value, reshaped
from ovpool.tensors import TensorDecl

# --precision value -> INFERENCE_PRECISION_HINT (None: leave the device's default).
PRECISIONS: dict[str, str | None] = {"f32": "f32", "bf16": "bf16", "f16": "f16", "default": None}
DEFAULT_PRECISION = "f32"
CACHE_ENV = "OVPOOL_CACHE_DIR"


def budget_checks(*sessions: Any) -> tuple[Callable[[Mapping[str, np.ndarray]], None], ...]:
    """The ``check_budget`` of each session that has one (numpy's and OpenVINO's; onnxruntime's has
    none): what ``tensors.random_inputs`` calls before it draws inputs for them."""
    return tuple(check for session in sessions if (check := getattr(session, "check_budget", None)) is not None)


class Session(Protocol):
    """A model ready to run on one device; ``infer`` may be called many times."""

    device: str
    inputs: tuple[TensorDecl, ...]

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...


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
        self.graph: Executor
        # deprecated, always empty: no node runs on onnx.reference
        self.reference_ops: tuple[str, ...] = ()
        self._budget: limits.RunBudget | limits.PlanBudget
        if model.format == "onnx":
            proto = model.onnx_with_data()
            # static inputs: the sizes of the run itself, with data propagation (a Reshape fed by Shape arithmetic)
            static = not limits.dynamic_inputs(proto)
            types = limits.check_run_budget(proto, {}, model.label) if static else limits.check_onnx_budget(proto, model.label)
            session = GraphSession(proto)
            self._budget = limits.RunBudget(session.proto, model.label, session=session, types=types)
            self.graph = session
        else:
            assert model.path is not None  # an IR Model is read from its file (open_model)
            graph = IrGraph.read(model.path)
            self._budget = limits.PlanBudget(graph, model.label)
            self.graph = graph
        self.inputs = self.graph.inputs
        self.label = model.label

    def check_budget(self, inputs: Mapping[str, np.ndarray]) -> None:
        """The run of ``inputs`` (their shapes and dtypes: stand-ins do) within the memory budget:
        every tensor and the plan's peak (``limits.RunBudget`` for ONNX, ``limits.PlanBudget`` for
        IR: ``budget.check_peak`` either way)."""
        self._budget.check(inputs)

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.check_budget(inputs)
        return self.graph.run(inputs)

    def trace(self, inputs: Mapping[str, np.ndarray], observe: StepObserver) -> dict[str, np.ndarray]:
        """As ``infer``, calling ``observe(step, outputs)`` after each node of an ONNX graph (folded
        nodes with their constant outputs, where they stand) or each layer of an IR graph, in
        execution order (``Executor.trace``)."""
        self.check_budget(inputs)
        return self.graph.trace(inputs, observe)


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
            TensorDecl(port_name(named, preferred), ov_dtype(p.get_element_type()), ov_shape(p.get_partial_shape()))
            for named, p in zip(ov_model.inputs, self.compiled.inputs)
        )
        held = {name for p in ov_model.inputs for name in p.get_names()}
        self.output_names = tuple(port_name(p, preferred - held or preferred, held) for p in ov_model.outputs)
        self._raw_inputs = {d.name for d in self.inputs if d.dtype in dtypes.ML_DTYPES}
        self._raw_outputs = {
            index: ov_dtype(p.get_element_type())
            for index, p in enumerate(self.compiled.outputs)
            if ov_dtype(p.get_element_type()) in dtypes.ML_DTYPES
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
            limits.check_ov_run(reshaped(self._ov_model, shapes), self._label, sum(np.asarray(v).nbytes for v in inputs.values()))
            self._ov_checked.add(shapes)

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Outputs by name. bfloat16 and the narrow types (``ovpool.dtypes.NARROW``: float8, 4-bit)
        cross as raw bits (``raw_tensor``, ``raw_value``): OpenVINO's Python layer would read an
        ml_dtypes bfloat16 array, and show a bf16 tensor, as float16 (1.25 would come back 1.906),
        and holds a 4-bit tensor of 5 elements as 3 bytes."""
        self.check_budget(inputs)
        if self._raw_inputs:
            inputs = {k: raw_tensor(v) if k in self._raw_inputs else v for k, v in inputs.items()}
        # to_tuple() is in compiled-output order; indexing the OVDict by port costs ~5 us per output
        try:
            results = self.request.infer(inputs).to_tuple()
        except Exception as exc:  # OpenVINO raises RuntimeError and its own classes for inputs it cannot take
            raise ModelError(f"OpenVINO cannot run the model on {self.device}: {devices.openvino_reason(exc)}") from None
        return {
            name: raw_value(self.request.get_output_tensor(index), self._raw_outputs[index])
            if index in self._raw_outputs
            else value
            for index, (name, value) in enumerate(zip(self.output_names, results))
        }
