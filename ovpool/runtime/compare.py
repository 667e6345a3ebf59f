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
  tensors (indices, shapes, masks) must be equal.

With ``per_layer`` the intermediate tensors of both sides are compared in the reference's
execution order: ONNX models by ONNX tensor name (OpenVINO keeps them on the ports that compute
them; ports of OpenVINO's own decompositions and constant-folded nodes have none and are not
compared), IR models by ``ovpool.names.port_tensor_name``. On OpenVINO every such port becomes an
extra output of a second compile of the model; that can stop the plugin fusing layers, so those
figures can differ slightly from the per-output ones, which come from the model compiled as is.
The first step beyond tolerance is reported with its type, its inputs' differences (within
tolerance, or not compared, since every step before it was) and its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ovpool.errors import UsageError
from ovpool.runtime import devices
from ovpool.runtime.policy import (
    DEFAULT_PRECISION,
    PRECISIONS,
    Model,
    NumpySession,
    Opened,
    OpenVINOSession,
    Session,
    Step,
    StepObserver,
    _port_name,
    open_session,
    openvino_session,
)

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

    def record(self) -> dict[str, object]:
        """The ``--json`` form: infinities and NaN become strings (``_json_number``; JSON has none)."""
        return {
            "name": self.name,
            "shape": None if self.shape is None else list(self.shape),
            "max_abs": _json_number(self.max_abs),
            "max_rel": _json_number(self.max_rel),
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

    @property
    def within(self) -> bool:
        return all(d.within for d in self.outputs)

    def record(self) -> dict[str, object]:
        return {
            "index": self.index,
            "name": self.step.name,
            "type": self.step.type,
            "inputs": [d.record() for d in self.inputs],
            "outputs": [d.record() for d in self.outputs],
            "within": self.within,
        }


@dataclass(frozen=True)
class Comparison:
    """The result of ``compare``: the sides (``device`` and ``reference`` as they ran, e.g.
    ``"CPU"``, ``"numpy"``; ``precision`` the device's reported inference precision, "" on numpy),
    the tolerance, each output's difference, and with per-layer comparison every step compared
    (``layers``; ``steps`` how many steps the reference executed)."""

    model: str
    device: str
    precision: str
    reference: str
    rtol: float
    atol: float
    outputs: tuple[Difference, ...]
    layers: tuple[LayerDifference, ...] | None = None
    steps: int = 0

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
                "layers": [layer.record() for layer in self.layers],
            },
        }


def difference(name: str, got: Any, want: Any, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> Difference:
    """``got`` (the device's) against ``want`` (the reference's), by the rule in the module's
    docstring: [1.0, 2.5] against [1.0, 2.0] gives max_abs 0.5, max_rel 0.25, beyond tolerance."""
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
    return Difference(name, shape, max_abs, max_rel, max_abs <= allowed)


class TracedOpenVINOSession(OpenVINOSession):
    """An ``OpenVINOSession`` whose model has every intermediate tensor as an extra output, so a
    run reports each step: the ONNX nodes (ONNX models) or the layers (IR) in OpenVINO's order."""

    def _read_model(self, model: Model, core) -> tuple[Any, set[str]]:
        ov_model, preferred = super()._read_model(model, core)
        ops = [op for op in ov_model.get_ordered_ops() if op.get_type_name() not in _UNTRACED]
        fed = {_source_key(result.input(0).get_source_output()) for result in ov_model.get_results()}
        ports: list[Any] = []
        self._keys: list[tuple[str, ...]] = []
        if model.format == "onnx":
            assert model.proto is not None  # an ONNX Model always has its proto (open_model)
            self.steps = _onnx_steps(model.proto.graph.node, ops)
            known = {name for step in self.steps for name in step.outputs}
            for op in ops:
                for port in op.outputs():
                    keys = tuple(sorted(port.get_names() & known))
                    if keys and _source_key(port) not in fed:
                        ports.append(port)
                        self._keys.append(keys)
        else:
            self.steps = tuple(_ov_step(op) for op in ops)
            for op, step in zip(ops, self.steps):
                for port, key in zip(op.outputs(), step.outputs):
                    if _source_key(port) not in fed:
                        ports.append(port)
                        self._keys.append((key,))
        if ports:
            ov_model.add_outputs(ports)
        return ov_model, preferred

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
) -> tuple[Opened, Session]:
    """The device's session (``open_session``: its fallback notices in ``Opened``) and the
    reference's: numpy, or OpenVINO CPU at f32, traced when ``per_layer`` (no fallback: a reference
    elsewhere is no reference)."""
    reference = check_reference(reference)
    opened = open_session(model, device, precision, fallback, cache)
    if reference == devices.NUMPY:
        return opened, NumpySession(model)
    kind = TracedOpenVINOSession if per_layer else OpenVINOSession
    return opened, openvino_session(model, reference, DEFAULT_PRECISION, cache, kind)


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
) -> Comparison:
    """Run both sessions on ``inputs`` and compare (module docstring); ``per_layer`` also traces
    both sides (OpenVINO sessions are compiled again with every intermediate as an output)."""
    check_tolerances(rtol, atol)
    advance = progress(f"{device.device}: outputs", 1)
    got = device.infer(inputs)
    advance()
    layers: list[LayerDifference] | None = None
    steps = 0
    if per_layer:
        traced = _device_values(model, device, inputs, cache, progress)
        layers = []
        diffs: dict[str, Difference] = {}
        count = [0]
        tracer = _traceable(model, reference, cache)
        advance = progress(f"{reference.device}: comparing layers", _step_count(tracer))

        def visit(step: Step, outputs: tuple[Any, ...]) -> None:
            count[0] += 1
            advance()
            own = [
                difference(name, traced[name], value, rtol, atol)
                for name, value in zip(step.outputs, outputs)
                if name and value is not None and traced.get(name) is not None
            ]
            if own:
                read = tuple(_input_difference(name, diffs, inputs) for name in step.inputs if name)
                layers.append(LayerDifference(count[0] - 1, step, read, tuple(own)))
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
        reference.device,
        rtol,
        atol,
        outputs,
        None if layers is None else tuple(layers),
        steps,
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
                    lines.append(f"  {kind:<6} {d.name:<32} {_shape(d):<20} {figures}{d.note or _yes(d)}")
    lines.append("within tolerance" if c.within else "beyond tolerance")
    return "\n".join(lines)


def _device_values(
    model: Model, device: Session, inputs: Mapping[str, np.ndarray], cache: bool, progress: Progress
) -> dict[str, Any]:
    """Every tensor the device's trace reports, by name."""
    values: dict[str, Any] = dict(inputs)
    advance = progress(f"{device.device}: tracing layers", None)

    def keep(step: Step, outputs: tuple[Any, ...]) -> None:
        advance()
        values.update((name, value) for name, value in zip(step.outputs, outputs) if name and value is not None)

    _traceable(model, device, cache).trace(inputs, keep)
    return values


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
