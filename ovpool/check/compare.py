"""``ovpool compare``: where a device's results leave a reference's, per output and per layer.

The model runs on the device (OpenVINO at the device's own default precision unless asked, or
numpy) and on the reference (ovpool's numpy executor, or OpenVINO CPU at f32), with the same
inputs. Each tensor compared gives a ``Difference``:

* ``max_abs``: the largest ``|device - reference|`` over its elements (NaN against NaN and equal
  infinities count 0; NaN against a number, or a shape mismatch, is infinite);
* ``max_rel``: ``max_abs`` over the reference's largest finite magnitude, the scale the tensor
  lives on (a probability map whose largest value is 0.8, off by 0.004 somewhere: 0.005);
* within tolerance when ``max_abs <= atol + rtol * max|reference|``: with the defaults rtol 1e-4,
  atol 1e-6 and a reference whose largest magnitude is 10, up to 0.001001. Integer and boolean
  tensors (indices, shapes, masks) must be equal;
* ``steps``, for a quantized tensor: the largest difference in its quantization steps (0.024 off
  with a step of 0.024 is 1 step).

With ``per_layer`` the intermediate tensors of both sides are compared in the reference's
execution order: ONNX models by ONNX tensor name (OpenVINO keeps them on the ports that compute
them; ports of OpenVINO's own decompositions and constant-folded nodes have none and are not
compared), IR models by ``ovpool.names.port_tensor_name``. On OpenVINO every such port becomes an
extra output of a second compile of the model; that can stop the plugin fusing layers, so those
figures can differ slightly from the per-output ones, which come from the model compiled as is.
The first step beyond tolerance is reported with its type, its inputs' differences (within
tolerance, or not compared, since every step before it was) and its own.

A low-precision model (FakeQuantize; INT8) is traced where its runtime graph computes anyway
(``TracedOpenVINOSession``): a layer fused into another runtime node, or gone from the runtime
graph, has no value on the device and is reported with the reason, not compared. With
``every_layer`` the comparison keeps a row for every step, compared or not (``Comparison.every``;
``compare_plot`` draws it). With a ``reference_model`` (the float model a quantized one was made
from) tensors are matched by name, a float tensor against the quantized model's real-valued copy
of it (``quantized_views``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ovpool.engine.ir_executor import IrGraph
from ovpool.errors import UsageError
from ovpool.execution import devices
from ovpool.execution.policy import (
    DEFAULT_PRECISION,
    PRECISIONS,
    DeviceError,
    Model,
    NumpySession,
    Opened,
    OpenVINOSession,
    Session,
    Step,
    StepObserver,
    _port_name,
    compile_config,
    open_session,
    openvino_session,
)
from ovpool.ir.reader import Layer

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-6
REFERENCES = (devices.NUMPY, "CPU")
# The device's own precision unless --precision says otherwise: what a deployment gets.
COMPARE_PRECISION = "default"
# OpenVINO ops that compute nothing worth comparing.
_UNTRACED = ("Parameter", "Constant", "Result")
# start(label, total or None) -> advance(): a progress display, told of each stage and step.
Progress = Callable[[str, int | None], Callable[[], None]]


@dataclass(frozen=True)
class Difference:
    """One tensor compared: the reference's shape, ``max_abs`` and ``max_rel`` (None when the
    tensor was not compared: a model input, a constant), whether it is within tolerance, a note."""

    name: str
    shape: tuple[int, ...] | None
    max_abs: float | None
    max_rel: float | None
    within: bool
    note: str = ""
    steps: float | None = None

    def record(self) -> dict[str, object]:
        """The ``--json`` form: infinities and NaN become strings (``_json_number``; JSON has none)."""
        return {
            "name": self.name,
            "shape": None if self.shape is None else list(self.shape),
            "max_abs": _json_number(self.max_abs),
            "max_rel": _json_number(self.max_rel),
            "steps": _json_number(self.steps),
            "within": self.within,
            "note": self.note,
        }


@dataclass(frozen=True)
class LayerDifference:
    """A step (ONNX node or IR layer) compared: ``index`` its position in the reference's execution
    order (0-based), its inputs' and its outputs' differences."""

    index: int
    step: Step
    inputs: tuple[Difference, ...]
    outputs: tuple[Difference, ...]
    note: str = ""

    @property
    def within(self) -> bool:
        return all(d.within for d in self.outputs)

    @property
    def worst(self) -> Difference | None:
        """The output furthest from the reference (by ``max_rel``), None when none was compared."""
        return max(self.outputs, key=lambda d: -1.0 if d.max_rel is None else d.max_rel, default=None)

    def record(self) -> dict[str, object]:
        return {
            "index": self.index,
            "name": self.step.name,
            "type": self.step.type,
            "inputs": [d.record() for d in self.inputs],
            "outputs": [d.record() for d in self.outputs],
            "within": self.within,
            "note": self.note,
        }


@dataclass(frozen=True)
class Comparison:
    """The result of ``compare``: the sides (``device`` and ``reference`` as they ran, e.g.
    ``"CPU"``, ``"numpy"``; ``precision`` the device's reported inference precision, "" on numpy),
    the tolerance, each output's difference, and with per-layer comparison every step compared
    (``layers``; ``steps`` how many steps the reference executed), every step with or without a
    comparison when asked (``every``), and ``trace_note`` when the per-layer run's outputs are
    not the device's own run's (the taps changed how the device computes)."""

    model: str
    device: str
    precision: str
    reference: str
    rtol: float
    atol: float
    outputs: tuple[Difference, ...]
    layers: tuple[LayerDifference, ...] | None = None
    steps: int = 0
    every: tuple[LayerDifference, ...] | None = None
    trace_note: str = ""

    @property
    def first_beyond(self) -> LayerDifference | None:
        """The first step in execution order with an output beyond tolerance."""
        return next((layer for layer in self.layers or () if not layer.within), None)

    @property
    def within(self) -> bool:
        """Every output, and every step compared, within tolerance: exit 0."""
        return all(d.within for d in self.outputs) and self.first_beyond is None

    def record(self) -> dict[str, object]:
        """The ``--json`` document (README, "Comparing a device with a reference"). It is strict
        JSON: a NaN is the string ``"nan"`` and an infinity ``"inf"`` (``_json_number``), never the
        ``NaN``/``Infinity`` tokens, so ``json.dumps(record, allow_nan=False)`` (what the CLI
        prints) holds."""
        first = self.first_beyond
        return {
            "model": self.model,
            "device": self.device,
            "precision": self.precision,
            "reference": self.reference,
            "rtol": _json_number(self.rtol),
            "atol": _json_number(self.atol),
            "within": self.within,
            "outputs": [d.record() for d in self.outputs],
            "per_layer": None
            if self.layers is None
            else {
                "steps": self.steps,
                "compared": len(self.layers),
                "first_beyond": None if first is None else first.record(),
                "note": self.trace_note,
                "layers": [layer.record() for layer in self.layers],
                **({} if self.every is None else {"every_layer": [layer.record() for layer in self.every]}),
            },
        }


def difference(
    name: str, got: Any, want: Any, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL, quantum: Any = None
) -> Difference:
    """``got`` (the device's) against ``want`` (the reference's), by the rule in the module's
    docstring: [1.0, 2.5] against [1.0, 2.0] gives max_abs 0.5, max_rel 0.25, beyond tolerance.
    With ``quantum``, the quantization step of the tensor (per tensor, or broadcasting per channel),
    ``steps`` is the largest difference in steps: off by 0.5 with a step of 0.25 is 2 steps."""
    device, reference = np.asarray(got), np.asarray(want)
    shape = tuple(int(d) for d in reference.shape)
    if device.shape != reference.shape:
        note = f"shape {list(device.shape)} on the device, {list(reference.shape)} on the reference"
        return Difference(name, shape, float("inf"), float("inf"), False, note)
    exact = all(np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_ for a in (device, reference))
    if device.dtype.kind in "OSU" or reference.dtype.kind in "OSU":
        same = bool(np.array_equal(device, reference))
        return Difference(name, shape, 0.0 if same else float("inf"), 0.0 if same else float("inf"), same)
    a, b = device.astype(np.float64), reference.astype(np.float64)
    with np.errstate(invalid="ignore"):
        gap = np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, np.abs(a - b))
    gap = np.where(np.isnan(gap), np.inf, gap)
    max_abs = float(gap.max()) if gap.size else 0.0
    finite = np.abs(b[np.isfinite(b)])
    scale = float(finite.max()) if finite.size else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    allowed = 0.0 if exact else atol + rtol * scale
    return Difference(name, shape, max_abs, max_rel, max_abs <= allowed, steps=_steps(gap, quantum))


def _steps(gap: np.ndarray, quantum: Any) -> float | None:
    """The largest of ``gap / quantum`` (None without a quantum, or one that does not fit)."""
    if quantum is None:
        return None
    step = np.abs(np.asarray(quantum, np.float64))
    try:
        if np.broadcast_shapes(step.shape, gap.shape) != gap.shape:
            return None
    except ValueError:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(gap == 0, 0.0, gap / step)
    return float(ratio.max()) if ratio.size else 0.0


@dataclass(frozen=True)
class Placement:
    """Where the ops of an ``openvino.Model`` went in a device's compiled (runtime) graph, read
    from each runtime node's ``originalLayersNames``: ``kept`` the ops whose output a runtime node
    computes (the last of its group in the model's order: a Convolution node holding ``conv1``,
    ``bias`` and the FakeQuantize ``q1`` computes ``q1``'s output), ``fused`` the other ops of a
    group, each with the node it went into (``conv1``: ``Convolution 'conv1'``). An op in neither
    is not computed at run time: folded into a constant, or removed by the plugin."""

    kept: frozenset[str]
    fused: Mapping[str, str]

    def note(self, op_name: str, device: str) -> str:
        """Why ``device`` reports no value for the op's output (none when it is kept)."""
        if op_name in self.kept:
            return ""
        if op_name in self.fused:
            return f"fused into {self.fused[op_name]} on {device}: no value of its own"
        return f"not in {device}'s runtime graph (folded into a constant, or rewritten by the plugin's transformations)"


def placement(ov_model: Any, compiled: Any) -> Placement:
    """The ``Placement`` of ``ov_model``'s ops in ``compiled`` (``compiled.get_runtime_model()``)."""
    order = {op.get_friendly_name(): i for i, op in enumerate(ov_model.get_ordered_ops())}
    kept: set[str] = set()
    fused: dict[str, str] = {}
    for node in compiled.get_runtime_model().get_ordered_ops():
        info = node.get_rt_info()
        names = [n for n in _rt_text(info, "originalLayersNames").split(",") if n in order]
        kind = _rt_text(info, "layerType")
        if not names or kind in ("Input", "Output", "Const"):
            continue
        last = max(names, key=order.__getitem__)
        kept.add(last)
        fused.update((n, f"{kind} '{node.get_friendly_name()}'") for n in names if n != last)
    return Placement(frozenset(kept), {n: where for n, where in fused.items() if n not in kept})


def _rt_text(info: Any, key: str) -> str:
    """A runtime-graph property as text ("" when absent)."""
    try:
        return str(info[key].astype(str))
    except (KeyError, RuntimeError, AttributeError):
        return ""


def _ov_quantum(op: Any) -> np.ndarray | None:
    """The quantization step of an OpenVINO op's output, by the rules of ``IrGraph.quanta``: a
    FakeQuantize with a constant output range, the integers a Convert makes of one, a Multiply by a
    constant scale of a Convert from integers (after a Subtract), else None."""
    kind = op.get_type_name()
    inputs = [op.input_value(i).get_node() for i in range(op.get_input_size())]
    if kind == "FakeQuantize" and all(r.get_type_name() == "Constant" for r in inputs[3:5]):
        low, high = (np.asarray(r.get_data(), np.float64) for r in inputs[3:5])
        return np.abs(high - low) / (op.get_levels() - 1)
    if kind == "Convert" and op.get_output_element_type(0).is_integral() and inputs[0].get_type_name() == "FakeQuantize":
        return np.ones(())
    if kind == "Multiply" and len(inputs) == 2:
        for scale, other in ((inputs[1], inputs[0]), (inputs[0], inputs[1])):
            if other.get_type_name() == "Subtract":
                other = other.input_value(0).get_node()
            converts = other.get_type_name() == "Convert" and other.get_input_element_type(0).is_integral()
            if scale.get_type_name() == "Constant" and converts:
                return np.abs(np.asarray(scale.get_data(), np.float64))
    return None


_DEQUANTIZE = ("Convert", "Subtract", "Multiply")


def _dequantized(op: Any) -> Any | None:
    """The op whose output is a FakeQuantize's output as reals: the Multiply ending a chain of
    single readers Convert, Subtract, Multiply (FakeQuantize -> Convert u8 -> Convert f32 ->
    Subtract -> Multiply, as the ONNX frontend writes QuantizeLinear -> DequantizeLinear), the
    FakeQuantize itself when no such chain follows it (it maps to the reals directly), or None when
    the chain ends without a Multiply (the reals are never formed: ``ovpool convert``'s exact forms
    scale after pooling the integers)."""
    chain = [op]
    while True:
        readers = list(chain[-1].output(0).get_target_inputs())
        if len(readers) != 1 or readers[0].get_node().get_type_name() not in _DEQUANTIZE:
            break
        chain.append(readers[0].get_node())
    if len(chain) == 1:
        return op
    return chain[-1] if chain[-1].get_type_name() == "Multiply" else None


def is_low_precision(ov_model: Any) -> bool:
    """Whether the model holds FakeQuantize, which OpenVINO's plugins run in low precision."""
    return any(op.get_type_name() == "FakeQuantize" for op in ov_model.get_ordered_ops())


class TracedOpenVINOSession(OpenVINOSession):
    """An ``OpenVINOSession`` whose model has intermediate tensors as extra outputs, so a run
    reports each step: the ONNX nodes (ONNX models) or the layers (IR) in OpenVINO's order.

    A float model has every intermediate tensor tapped (that can stop the plugin fusing a
    Convolution with its activation, which changes little). A low-precision model (one holding
    FakeQuantize) is first compiled as it is and only the tensors its runtime graph computes
    anyway are tapped: a tap on every tensor would change which layers run in INT8 (on a small
    INT8 CNN it moved a convolution's output by 64% of a quantization step, where tapping only
    the runtime graph's tensors leaves every output bit for bit as the untapped model gives it).
    The other steps are in ``untapped``, tensor name -> why the device reports no value for it;
    ``quanta`` holds each FakeQuantize output's quantization step and ``quantized`` maps the
    tensor a FakeQuantize reads to the one it writes (``r1`` -> ``r1_DequantizeLinear_Output``)."""

    def __init__(
        self, model: Model, device: str, precision: str = DEFAULT_PRECISION, cache: bool = True, core: Any = None
    ) -> None:
        self._precision = precision
        self._config = compile_config(precision, cache)
        self.untapped: dict[str, str] = {}
        self._trial: tuple[Any, Any] | None = None  # (model, compiled) of the taps that compiled
        super().__init__(model, device, precision, cache, core)

    def _read_model(self, model: Model, core) -> tuple[Any, set[str]]:
        ov_model, preferred = super()._read_model(model, core)
        ops = [op for op in ov_model.get_ordered_ops() if op.get_type_name() not in _UNTRACED]
        fed = {_source_key(result.input(0).get_source_output()) for result in ov_model.get_results()}
        where: Placement | None = None
        if is_low_precision(ov_model):
            where = placement(ov_model, core.compile_model(ov_model, self.device, compile_config(self._precision, False)))
        taps: list[tuple[tuple[str, int], tuple[str, ...], bool]] = []  # (op, output index), names, integer
        self.aliases: dict[str, tuple[str, ...]] = {}
        self.quanta: dict[str, np.ndarray] = {}
        self.quantized: dict[str, str] = {}
        known: set[str] = set()

        def name_of(port: Any) -> str:
            return min(port.get_names() & known, default="") or _port_name(port, set())

        def tap(port: Any, keys: tuple[str, ...]) -> None:
            for key in keys:
                self.aliases[key] = tuple(k for k in keys if k != key)
            op = port.get_node()
            quantum = _ov_quantum(op)
            if quantum is not None:
                self.quanta.update(dict.fromkeys(keys, quantum))
            real = _dequantized(op) if op.get_type_name() == "FakeQuantize" else None
            if real is not None:
                self.quantized.update(dict.fromkeys(op.input_value(0).get_names(), name_of(real.output(0))))
            note = "" if where is None else where.note(op.get_friendly_name(), self.device)
            if note:
                self.untapped.update(dict.fromkeys(keys, note))
            elif _source_key(port) not in fed:
                taps.append((_source_key(port), keys, port.get_element_type().is_integral()))

        if model.format == "onnx":
            assert model.proto is not None  # an ONNX Model always has its proto (open_model)
            self.steps = _onnx_steps(model.proto.graph.node, ops)
            known.update(name for step in self.steps for name in step.outputs)
            for op in ops:
                for port in op.outputs():
                    keys = tuple(sorted(port.get_names() & known))
                    if keys:
                        tap(port, keys)
        else:
            self.steps = tuple(_ov_step(op) for op in ops)
            for op, step in zip(ops, self.steps):
                for port, key in zip(op.outputs(), step.outputs):
                    tap(port, tuple(dict.fromkeys((key, *sorted(port.get_names())))))
        chosen = self._taps_that_compile(model, core, taps)
        self._keys = [keys for _, keys, _ in chosen]
        assert self._trial is not None  # _taps_that_compile leaves the model that compiled
        return self._trial[0], preferred

    def _taps_that_compile(
        self, model: Model, core: Any, taps: list[tuple[tuple[str, int], tuple[str, ...], bool]]
    ) -> list[tuple[tuple[str, int], tuple[str, ...], bool]]:
        """The taps the device compiles the model with. A plugin may refuse a model with some
        tensors as outputs (OpenVINO 2026.4.1's CPU plugin at bf16 finds "no suitable
        implementations" for an i8 tensor of an INT8 model): then the integer tensors are left
        out first, then added back, halving each group the device refuses until the ones it
        refuses are found (at most 16 compiles; what is left when they are spent is left out); a
        tap left out is in ``untapped`` with the plugin's reason."""
        budget = [16]
        why: list[str] = []
        compiled_with: list[tuple[str, int]] = []  # the taps of the model in self._trial

        def attempt(subset: list[tuple[tuple[str, int], tuple[str, ...], bool]]) -> bool:
            budget[0] -= 1
            trial, _ = OpenVINOSession._read_model(self, model, core)
            ops = {op.get_friendly_name(): op for op in trial.get_ordered_ops()}
            if subset:
                trial.add_outputs([ops[name].output(index) for (name, index), _, _ in subset])
            try:
                self._trial = (trial, core.compile_model(trial, self.device, dict(self._config)))
            except Exception as exc:  # OpenVINO raises RuntimeError and its own classes
                why[:] = [devices.openvino_reason(exc)]
                return False
            compiled_with[:] = [port for port, _, _ in subset]
            return True

        def leave_out(group: list[tuple[tuple[str, int], tuple[str, ...], bool]]) -> None:
            note = f"not tapped: {self.device} cannot compile the model with it as an output ({why[0] if why else 'no reason given'})"
            for _, keys, _ in group:
                self.untapped.update(dict.fromkeys(keys, note))

        if attempt(taps):
            return taps
        floats = [t for t in taps if not t[2]]
        integers = [t for t in taps if t[2]]
        accepted: list[tuple[tuple[str, int], tuple[str, ...], bool]] = []

        def search(group: list[tuple[tuple[str, int], tuple[str, ...], bool]]) -> None:
            if budget[0] <= 0 or len(group) == 1:
                leave_out(group)
                return
            half = len(group) // 2
            for part in (group[:half], group[half:]):
                if part and attempt(accepted + part):
                    accepted.extend(part)
                elif part:
                    search(part)

        if integers and floats and attempt(floats):
            accepted.extend(floats)
        elif floats:
            search(floats)
        if integers:
            search(integers)
        if compiled_with != [port for port, _, _ in accepted] and not attempt(accepted):
            raise DeviceError(f"device '{self.device}' cannot compile {model.label}: {why[0] if why else 'no reason given'}")
        return accepted

    def _compile(self, core, ov_model: Any, config: Mapping[str, str]) -> Any:
        if self._trial is not None and self._trial[0] is ov_model:
            return self._trial[1]
        return super()._compile(core, ov_model, config)

    def trace(self, inputs: Mapping[str, np.ndarray], observe: StepObserver) -> dict[str, np.ndarray]:
        """The model's outputs; ``observe(step, outputs)`` is called for every step after the run
        (an output not traced is None)."""
        results = self.infer(inputs)
        names = self.output_names
        own = len(names) - len(self._keys)
        values = {name: results[name] for name in names[:own]}
        for name, keys in zip(names[own:], self._keys):
            values.update(dict.fromkeys(keys, results[name]))
        values.update(inputs)
        for step in self.steps:
            observe(step, tuple(values.get(name) for name in step.outputs))
        return {name: results[name] for name in names[:own]}


def check_reference(reference: str) -> str:
    """``"numpy"`` or ``"CPU"`` (any case); anything else is a ``UsageError`` (exit 2)."""
    for known in REFERENCES:
        if reference.lower() == known.lower():
            return known
    raise UsageError(f"reference '{reference}': expected one of {', '.join(REFERENCES)}")


def open_sides(
    model: Model,
    device: str,
    reference: str = devices.NUMPY,
    precision: str = COMPARE_PRECISION,
    fallback: str | bool = "none",
    cache: bool = True,
    per_layer: bool = False,
    reference_model: Model | None = None,
) -> tuple[Opened, Session]:
    """The device's session (``open_session``: its fallback notices in ``Opened``) and the
    reference's: numpy, or OpenVINO CPU at f32, traced when ``per_layer`` (no fallback: a reference
    elsewhere is no reference), running ``reference_model`` when given, else ``model``."""
    reference = check_reference(reference)
    opened = open_session(model, device, precision, fallback, cache)
    source = reference_model or model
    if reference == devices.NUMPY:
        return opened, NumpySession(source)
    kind = TracedOpenVINOSession if per_layer else OpenVINOSession
    return opened, openvino_session(source, reference, DEFAULT_PRECISION, cache, kind)


def check_tolerances(rtol: float, atol: float) -> None:
    """``rtol`` and ``atol`` are finite numbers >= 0, else a ``UsageError`` naming the flag: a NaN
    tolerance would put every tensor beyond it (``max_abs <= nan`` is false) and an infinite one
    every tensor within. ``check_tolerances(float("nan"), 1e-6)`` raises ``--rtol nan: must be a
    finite number >= 0``."""
    for flag, value in (("--rtol", rtol), ("--atol", atol)):
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"{flag} {value}: must be a finite number >= 0")


def compare(
    model: Model,
    device: Session,
    reference: Session,
    inputs: Mapping[str, np.ndarray],
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    per_layer: bool = False,
    cache: bool = True,
    progress: Progress = lambda label, total: lambda: None,
    every_layer: bool = False,
    reference_model: Model | None = None,
) -> Comparison:
    """Run both sessions on ``inputs`` and compare (module docstring); ``per_layer`` also traces
    both sides (OpenVINO sessions are compiled again with intermediates as outputs), and
    ``every_layer`` keeps a row for every step, compared or not (``Comparison.every``, with the
    reason a step was not compared). ``reference`` runs ``reference_model`` when given (the float
    model an INT8 model was quantized from): tensors are matched by name."""
    check_tolerances(rtol, atol)
    advance = progress(f"{device.device}: outputs", 1)
    got = device.infer(inputs)
    advance()
    layers: list[LayerDifference] | None = None
    every: list[LayerDifference] = []
    steps = 0
    trace_note = ""
    if per_layer:
        traced, untapped, device_side, traced_outputs = _device_values(model, device, inputs, cache, progress)
        trace_note = _tap_shift(traced_outputs, got)
        layers = []
        diffs: dict[str, Difference] = {}
        count = [0]
        tracer = _traceable(reference_model or model, reference, cache)
        quanta = _quanta(tracer)
        views: Mapping[str, str] = {}
        if reference_model is not None:  # a float tensor is compared with the quantized model's quantized copy of it
            views, quanta = quantized_views(device_side), _quanta(device_side)
        advance = progress(f"{reference.device}: comparing layers", _step_count(tracer))

        def visit(step: Step, outputs: tuple[Any, ...]) -> None:
            count[0] += 1
            advance()
            own: list[Difference] = []
            notes: list[str] = []
            for name, value in zip(step.outputs, outputs):
                if not name:
                    continue
                if value is None:
                    notes.append(getattr(tracer, "untapped", {}).get(name, "not reported by the reference"))
                    continue
                seen = views[name] if traced.get(views.get(name, "")) is not None else name
                if traced.get(seen) is None:
                    why = untapped.get(views.get(name, name)) or untapped.get(name)
                    notes.append(why or "not reported by the device (a constant, or a tensor it does not keep)")
                else:
                    found = difference(name, traced[seen], value, rtol, atol, quanta.get(seen))
                    own.append(dataclasses.replace(found, note=f"the device's {seen}") if seen != name else found)
            read = tuple(_input_difference(name, diffs, inputs) for name in step.inputs if name)
            entry = LayerDifference(count[0] - 1, step, read, tuple(own), "; ".join(dict.fromkeys(notes)))
            if own:
                layers.append(entry)
            if every_layer:
                every.append(entry)
            diffs.update((d.name, d) for d in own)

        want = tracer.trace(inputs, visit)
        steps = count[0]
    else:
        advance = progress(f"{reference.device}: outputs", 1)
        want = reference.infer(inputs)
        advance()
    outputs = tuple(_output_difference(name, got, want, rtol, atol) for name in want)
    return Comparison(
        model.label,
        device.device,
        getattr(device, "precision", ""),
        reference.device if reference_model is None else f"{reference.device} running {reference_model.label}",
        rtol,
        atol,
        outputs,
        None if layers is None else tuple(layers),
        steps,
        tuple(every) if per_layer and every_layer else None,
        trace_note,
    )


def report(comparison: Comparison) -> str:
    """The text ``ovpool compare`` prints: a line per output, then the first step beyond tolerance."""
    c = comparison
    precision = f" at {c.precision}" if c.precision else ""
    lines = [f"{c.model}: {c.device}{precision} against {c.reference}, rtol {c.rtol:g}, atol {c.atol:g}"]
    lines.append(f"{'output':<24} {'shape':<20} {'max abs':>10} {'max rel':>10}  within")
    for d in c.outputs:
        lines.append(f"{d.name:<24} {_shape(d):<20} {_number(d.max_abs):>10} {_number(d.max_rel):>10}  {_yes(d)}")
        if d.note:
            lines.append(f"  {d.note}")
    if c.layers is not None:
        first = c.first_beyond
        lines.append(f"per layer: {len(c.layers)} of {c.steps} steps compared")
        if c.trace_note:
            lines.append(f"note: {c.trace_note}")
        if first is None:
            lines.append("every step compared is within tolerance")
        else:
            compared = c.layers.index(first)
            lines.append(
                f"first beyond tolerance: {first.step.type} '{first.step.name}' (step {first.index + 1} of {c.steps} in "
                f"execution order; {compared} compared step(s) before it within tolerance)"
            )
            for kind, group in (("input", first.inputs), ("output", first.outputs)):
                for d in group:
                    figures = "" if d.max_abs is None else f"max abs {_number(d.max_abs)}  max rel {_number(d.max_rel)}  "
                    steps = "" if d.steps is None else f"steps {_number(d.steps)}  "
                    lines.append(f"  {kind:<6} {d.name:<32} {_shape(d):<20} {figures}{steps}{d.note or _yes(d)}")
    if c.every is not None:
        lines.extend(every_layer_table(c))
    lines.append("within tolerance" if c.within else "beyond tolerance")
    return "\n".join(lines)


def every_layer_table(comparison: Comparison) -> list[str]:
    """Every step in execution order, one line each: its worst output's max abs, max rel and
    error in quantization steps (for a quantized tensor), and whether it is within tolerance, or
    why it was not compared (``fused into Convolution 'conv1' on CPU: no value of its own``)."""
    every = comparison.every or ()
    width = max((len(e.step.name) for e in every), default=4)
    lines = [
        "every layer, in execution order (steps: the error in quantization steps of a quantized tensor):",
        f"{'#':>5}  {'type':<18} {'name':<{width}} {'max abs':>10} {'max rel':>10} {'steps':>8}  within",
    ]
    for entry in every:
        worst = entry.worst
        head = f"{entry.index + 1:>5}  {entry.step.type:<18} {entry.step.name:<{width}}"
        if worst is None:
            lines.append(f"{head} {'-':>10} {'-':>10} {'-':>8}  {entry.note or 'no output compared'}")
        else:
            steps = "-" if worst.steps is None else f"{worst.steps:.3g}"
            lines.append(
                f"{head} {_number(worst.max_abs):>10} {_number(worst.max_rel):>10} {steps:>8}  {'yes' if entry.within else 'NO'}"
            )
    return lines


class _Trace(NamedTuple):
    """What tracing the device gave: every tensor it reports by name (a tensor with several names
    under each), why it reports no value for the others it knows, the session that traced, and the
    model's outputs from that traced run."""

    values: dict[str, Any]
    untapped: Mapping[str, str]
    session: NumpySession | TracedOpenVINOSession
    outputs: Mapping[str, Any]


def _device_values(model: Model, device: Session, inputs: Mapping[str, np.ndarray], cache: bool, progress: Progress) -> _Trace:
    """The device's ``_Trace`` on ``inputs``."""
    values: dict[str, Any] = dict(inputs)
    advance = progress(f"{device.device}: tracing layers", None)
    traceable = _traceable(model, device, cache)
    aliases = getattr(traceable, "aliases", {})

    def keep(step: Step, outputs: tuple[Any, ...]) -> None:
        advance()
        for name, value in zip(step.outputs, outputs):
            if name and value is not None:
                values.update(dict.fromkeys((name, *aliases.get(name, ())), value))

    outputs = traceable.trace(inputs, keep)
    return _Trace(values, getattr(traceable, "untapped", {}), traceable, outputs)


def quantized_views(session: NumpySession | TracedOpenVINOSession) -> dict[str, str]:
    """Each tensor a model quantizes, mapped to its quantized copy: the output of the FakeQuantize
    reading it (IR, or an ONNX model on OpenVINO), or of the DequantizeLinear after the
    QuantizeLinear reading it (ONNX on numpy): ``r1`` -> ``r1_DequantizeLinear_Output``. This is
    how a quantized model carries its float source's tensor ``r1``."""
    if isinstance(session, TracedOpenVINOSession):
        return session.quantized
    graph = session.graph
    views: dict[str, str] = {}
    if isinstance(graph, IrGraph):
        document = graph.document
        producers = document.producers()
        readers: dict[tuple[str, str], list[Layer]] = {}
        for link in document.edges:
            if link.to_layer in document.layers:
                readers.setdefault((link.from_layer, link.from_port), []).append(document.layers[link.to_layer])
        for layer in document.layers.values():
            edge = producers.get((layer.id, layer.inputs[0].id)) if layer.type == "FakeQuantize" and layer.inputs else None
            if edge is None or edge.from_layer not in document.layers or not layer.outputs:
                continue
            source = document.layers[edge.from_layer]
            port = next((p for p in source.outputs if p.id == edge.from_port), None)
            names = [n.strip() for n in (port.names if port else "").split(",") if n.strip()]
            chain = [layer]
            while (
                len(after := readers.get((chain[-1].id, chain[-1].outputs[0].id), [])) == 1
                and after[0].type in _DEQUANTIZE
                and after[0].outputs
            ):
                chain.append(after[0])
            if len(chain) > 1 and chain[-1].type != "Multiply":
                continue  # the reals are never formed (see _dequantized)
            target = document.tensor_name(chain[-1], chain[-1].outputs[0].id)
            views.update(dict.fromkeys((*names, document.tensor_name(source, edge.from_port)), target))
        return views
    nodes = graph.proto.graph.node
    dequantizers = {node.input[0]: node for node in nodes if node.op_type == "DequantizeLinear" and node.input}
    for node in nodes:
        if node.op_type == "QuantizeLinear" and node.input and node.output and node.output[0] in dequantizers:
            views[node.input[0]] = dequantizers[node.output[0]].output[0]
    return views


def _quanta(session: NumpySession | TracedOpenVINOSession) -> Mapping[str, np.ndarray]:
    """The quantization step of each quantized tensor the reference reports, by name: FakeQuantize
    outputs (IR on numpy or OpenVINO) and DequantizeLinear outputs (ONNX on numpy)."""
    if isinstance(session, TracedOpenVINOSession):
        return session.quanta
    graph = session.graph
    if isinstance(graph, IrGraph):
        return graph.quanta
    return onnx_quanta(graph.proto)


def onnx_quanta(proto: Any) -> dict[str, np.ndarray]:
    """The step of each QuantizeLinear output (1: integers) and of each DequantizeLinear output
    whose scale is an initializer: the scale, along
    ``axis`` (default 1) when per axis, as a shape that broadcasts against a rank-``r`` output
    when the output's rank is known from the graph (a scale of 4 along axis 1 of a 4-D output:
    shape (1, 4, 1, 1)); a per-axis scale of unknown rank is left out (blocked scales too)."""
    from onnx import numpy_helper

    initializers = {t.name: t for t in proto.graph.initializer}
    ranks = {
        info.name: len(info.type.tensor_type.shape.dim)
        for info in (*proto.graph.value_info, *proto.graph.output, *proto.graph.input)
        if info.type.tensor_type.HasField("shape")
    }
    quanta: dict[str, np.ndarray] = {}
    for node in proto.graph.node:
        if node.op_type == "QuantizeLinear" and node.domain in ("", "ai.onnx") and node.output:
            quanta[node.output[0]] = np.ones(())  # integers: a step is 1
        if node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx") or len(node.input) < 2:
            continue
        scale = initializers.get(node.input[1])
        if scale is None or any(a.name == "block_size" and a.i > 0 for a in node.attribute):
            continue
        value = np.abs(numpy_helper.to_array(scale).astype(np.float64))
        if value.size > 1 or value.ndim == 1:
            rank = ranks.get(node.output[0])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            if rank is None or value.ndim != 1 or not -rank <= axis < rank:
                continue
            shape = [1] * rank
            shape[axis % rank] = value.size
            value = value.reshape(shape)
        quanta[node.output[0]] = value
    return quanta


def _traceable(model: Model, session: Session, cache: bool) -> NumpySession | TracedOpenVINOSession:
    """A session that can trace on the same device: numpy itself, or OpenVINO compiled again at
    the precision the device reported."""
    if isinstance(session, (NumpySession, TracedOpenVINOSession)):
        return session
    if isinstance(session, OpenVINOSession):
        precision = session.precision if session.precision in PRECISIONS else COMPARE_PRECISION
        traced = openvino_session(model, session.device, precision, cache, TracedOpenVINOSession)
        assert isinstance(traced, TracedOpenVINOSession)  # openvino_session makes a `kind`
        return traced
    raise UsageError(f"per-layer comparison needs an OpenVINO or numpy session, not {type(session).__name__}")


def _step_count(session: NumpySession | TracedOpenVINOSession) -> int | None:
    """How many steps a trace reports (an ONNX graph's top-level nodes on numpy); None when unknown."""
    if isinstance(session, TracedOpenVINOSession):
        return len(session.steps)
    proto = getattr(session.graph, "proto", None)
    return len(proto.graph.node) if proto is not None else None


def _input_difference(name: str, diffs: Mapping[str, Difference], inputs: Mapping[str, np.ndarray]) -> Difference:
    """What a step read: a tensor compared before it, a model input (the same on both sides), or
    something not compared (a constant, a tensor one side does not report)."""
    if name in diffs:
        return diffs[name]
    if name in inputs:
        return Difference(name, tuple(np.shape(inputs[name])), 0.0, 0.0, True, "model input")
    return Difference(name, None, None, None, True, "not compared (constant, or not reported by both sides)")


def _output_difference(name: str, got: Mapping[str, Any], want: Mapping[str, Any], rtol: float, atol: float) -> Difference:
    if name not in got:
        return Difference(name, None, float("inf"), float("inf"), False, f"the device gives no output '{name}'")
    return difference(name, got[name], want[name], rtol, atol)


def _tap_shift(traced: Mapping[str, Any], got: Mapping[str, Any]) -> str:
    """A note when the traced run's outputs are not the device's own run's: the taps changed how
    the device computes the model (by how much), else ""."""
    shift = 0.0
    for name, value in traced.items():
        if name in got and np.shape(value) == np.shape(got[name]):
            a, b = np.asarray(value), np.asarray(got[name])
            if a.dtype.kind in "fiub" and b.dtype.kind in "fiub":
                with np.errstate(invalid="ignore"):
                    gap = np.abs(a.astype(np.float64) - b.astype(np.float64))
                shift = max(shift, float(np.nanmax(gap, initial=0.0)))
    if shift == 0:
        return ""
    return f"the traced run's outputs differ from the device's own run by up to {shift:.3g}: the taps changed how it computes"


def _onnx_steps(nodes: Sequence[Any], ops: Sequence[Any]) -> tuple[Step, ...]:
    """The ONNX nodes whose outputs OpenVINO computes, in the order OpenVINO first computes one."""
    producer = {name: node for node in nodes for name in node.output if name}
    order: dict[int, Step] = {}
    for op in ops:
        for port in op.outputs():
            for name in sorted(port.get_names()):
                node = producer.get(name)
                if node is not None and id(node) not in order:
                    order[id(node)] = Step(node.name or node.output[0], node.op_type, tuple(node.input), tuple(node.output))
    return tuple(order.values())


def _ov_step(op: Any) -> Step:
    """An OpenVINO op read from IR as a step: tensors named as ``ovpool run`` names IR ports."""
    inputs = tuple(_port_name(port.get_source_output(), set()) for port in op.inputs())
    return Step(op.get_friendly_name(), op.get_type_name(), inputs, tuple(_port_name(port, set()) for port in op.outputs()))


def _source_key(port: Any) -> tuple[str, int]:
    """An OpenVINO output port as a hashable key: its op's friendly name and its index."""
    return port.get_node().get_friendly_name(), port.get_index()


def _json_number(value: float | None) -> float | str | None:
    """A number as ``--json`` writes it, which JSON can hold: infinities are the string ``"inf"``
    (``"-inf"`` below zero) and NaN the string ``"nan"``, so the document is valid JSON
    (``json.dumps(..., allow_nan=False)`` would refuse a NaN or infinite float); 0.5 stays 0.5."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _shape(d: Difference) -> str:
    return "?" if d.shape is None else "[" + ", ".join(map(str, d.shape)) + "]"


def _yes(d: Difference) -> str:
    return "yes" if d.within else "NO"
