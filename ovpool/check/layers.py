"""The per-layer walk of ``ovpool compare``: the device traced first (every tensor it reports, by
name), then the reference traced step by step in its execution order, each step's outputs compared
with the device's tensors of the same names (``LayerDifference``); a quantized model's tensors
matched with its float source's (``quantized_views``) and measured in quantization steps
(``onnx_quanta``, ``IrGraph.quanta``, ``TracedOpenVINOSession.quanta``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ovpool.check.sides import traceable
from ovpool.check.taps import TracedOpenVINOSession
from ovpool.check.tolerance import Difference, difference
from ovpool.engine.quanta import onnx_quanta
from ovpool.execution.model import Model, Step
from ovpool.execution.sessions import NumpySession, Session

__all__ = ["LayerDifference", "LayerWalk", "Progress", "onnx_quanta", "quantized_views", "walk"]

# start(label, total or None) -> advance(): a progress display, told of each stage and step.
Progress = Callable[[str, int | None], Callable[[], None]]


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
    session = traceable(model, device, cache)
    aliases = getattr(session, "aliases", {})

    def keep(step: Step, outputs: tuple[Any, ...]) -> None:
        advance()
        for name, value in zip(step.outputs, outputs):
            if name and value is not None:
                values.update(dict.fromkeys((name, *aliases.get(name, ())), value))

    outputs = session.trace(inputs, keep)
    return _Trace(values, getattr(session, "untapped", {}), session, outputs)


def quantized_views(session: NumpySession | TracedOpenVINOSession) -> dict[str, str]:
    """Each tensor a model quantizes, mapped to its quantized copy: the output of the FakeQuantize
    reading it (IR, or an ONNX model on OpenVINO), or of the DequantizeLinear after the
    QuantizeLinear reading it (ONNX on numpy): ``r1`` -> ``r1_DequantizeLinear_Output``. This is
    how a quantized model carries its float source's tensor ``r1``."""
    if isinstance(session, TracedOpenVINOSession):
        return session.quantized
    return session.graph.quantized_views()


def _quanta(session: NumpySession | TracedOpenVINOSession) -> Mapping[str, np.ndarray]:
    """The quantization step of each quantized tensor the reference reports, by name: FakeQuantize
    outputs (IR on numpy or OpenVINO) and DequantizeLinear outputs (ONNX on numpy)."""
    if isinstance(session, TracedOpenVINOSession):
        return session.quanta
    return session.graph.quanta


def _step_count(session: NumpySession | TracedOpenVINOSession) -> int | None:
    """How many steps a trace reports (an ONNX graph's top-level nodes on numpy); None when unknown."""
    if isinstance(session, TracedOpenVINOSession):
        return len(session.steps)
    return session.graph.step_count


def _input_difference(name: str, diffs: Mapping[str, Difference], inputs: Mapping[str, np.ndarray]) -> Difference:
    """What a step read: a tensor compared before it, a model input (the same on both sides), or
    something not compared (a constant, a tensor one side does not report)."""
    if name in diffs:
        return diffs[name]
    if name in inputs:
        return Difference(name, tuple(np.shape(inputs[name])), 0.0, 0.0, True, "model input")
    return Difference(name, None, None, None, True, "not compared (constant, or not reported by both sides)")


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


class LayerWalk(NamedTuple):
    """What the per-layer walk gives ``compare``: the reference's outputs from its traced run,
    each step compared (``layers``), every step with or without a comparison (``every``, kept when
    asked), how many steps the reference executed, and a note when the device's traced run's
    outputs are not its own run's (``got``)."""

    outputs: Mapping[str, Any]
    layers: tuple[LayerDifference, ...]
    every: tuple[LayerDifference, ...]
    steps: int
    trace_note: str


def walk(
    model: Model,
    device: Session,
    reference: Session,
    inputs: Mapping[str, np.ndarray],
    got: Mapping[str, Any],
    rtol: float,
    atol: float,
    cache: bool,
    progress: Progress,
    every_layer: bool,
    reference_model: Model | None,
) -> LayerWalk:
    """Trace both sides on ``inputs`` and compare step by step (module docstring): a step of 3
    outputs of which the device reports 2 gives a ``LayerDifference`` of 2 differences and a note
    naming why the third has no value."""
    traced, untapped, device_side, traced_outputs = _device_values(model, device, inputs, cache, progress)
    trace_note = _tap_shift(traced_outputs, got)
    layers: list[LayerDifference] = []
    every: list[LayerDifference] = []
    diffs: dict[str, Difference] = {}
    count = [0]
    tracer = traceable(reference_model or model, reference, cache)
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
    return LayerWalk(want, tuple(layers), tuple(every), count[0], trace_note)
