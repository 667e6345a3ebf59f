"""Per-layer values from OpenVINO: ``TracedOpenVINOSession`` compiles a model with its
intermediate tensors as extra outputs ("taps") and reports each step (ONNX node or IR layer) in
OpenVINO's order; for a low-precision model (FakeQuantize) only the tensors its runtime graph
computes anyway (``placement``), with each quantized tensor's step (``quanta``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ovpool.engine.quanta import DEQUANTIZE
from ovpool.execution import devices
from ovpool.execution.fallback import DeviceError
from ovpool.execution.model import Model, Step, StepObserver
from ovpool.execution.ov_tensors import port_name
from ovpool.execution.sessions import DEFAULT_PRECISION, OpenVINOSession, compile_config

# OpenVINO ops that compute nothing worth comparing.
_UNTRACED = ("Parameter", "Constant", "Result")


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
        if len(readers) != 1 or readers[0].get_node().get_type_name() not in DEQUANTIZE:
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
            return min(port.get_names() & known, default="") or port_name(port, set())

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
    inputs = tuple(port_name(port.get_source_output(), set()) for port in op.inputs())
    return Step(op.get_friendly_name(), op.get_type_name(), inputs, tuple(port_name(port, set()) for port in op.outputs()))


def _source_key(port: Any) -> tuple[str, int]:
    """An OpenVINO output port as a hashable key: its op's friendly name and its index."""
    return port.get_node().get_friendly_name(), port.get_index()
