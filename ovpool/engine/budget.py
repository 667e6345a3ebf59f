"""The numpy executor's run against the memory budget: the tensors its plan holds live, step by step.

A run holds, at each step of the plan (``CompiledGraph.plan``, in order; ``PlanView``):

* what the session holds for its life: the model as loaded (``ModelProto.ByteSize``) and the
  constants of every graph and body (initializers, folded outputs), each array once;
* the inputs fed (the caller holds them for the whole run);
* the intermediates and outputs written so far and not yet freed (an intermediate is freed after
  its last use, an output never);
* the step's own outputs and its working memory, ``work_bytes``: its kernel's temporaries, by the
  rule of its operator (``Traits.work`` on its registration).

``plan_peak`` sums these along the plan with the sizes shape inference gives at the fed input
shapes and returns the largest, and where it is (an IR graph's, ``ir_peak``, with the sizes its
ports declare; each front end's ``Executor.peak``, ``ovpool.engine.session``); ``check_peak``
refuses a run whose peak is over the budget before its first step allocates anything, whichever
front end plans it. A tensor inference cannot size counts 0 there
(the peak found is then a lower bound) and the plan runs under a ``Guard``: before each step, the
bytes of the arrays then live (known exactly) plus the step's work are checked, and the kernels'
own checks of what they allocate (``ovpool.memory.check_tensor``) count those live bytes too. A
node whose output size neither inference nor its kernel knows is seen after it runs, by the check
before the next step. Loop, If and Scan bodies run under a ``Guard`` of their own, beside the bytes
the graph around them holds (``ovpool.memory.holding``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from ovpool import dtypes
from ovpool.engine.ir_layers import layer_traits_named, supported
from ovpool.engine.ops.base import Rule, deprecated_table, named_with, traits_named
from ovpool.engine.plan import Plan
from ovpool.engine.session import Executor
from ovpool.errors import OvpoolError
from ovpool.memory import budget, check_bytes, held, holding

if TYPE_CHECKING:  # the front ends read this module: their peaks are walked here
    from ovpool.engine.graph import CompiledGraph, GraphSession
    from ovpool.engine.ir_executor import IrGraph

# The working memory of a step is its operator's rule, ``Traits.work`` where the operator or IR
# layer is registered (``ovpool.engine.ops``, ``ovpool.engine.ir_layers``): a MaxPool's is
# ``Rule(1.5, 2)``, ``Rule(8, 2)`` when it writes indices too (``Traits.work_indices``). Every
# other operator: an input-sized and an output-sized temporary (an elementwise op's result in a
# wider type, LogSoftmax's shifted copy: 1.0 x input) and scratch of up to 4 x input or 2 MiB (Erf
# and Gelu go 64Ki elements at a time through float64 pieces: 4.3 x a 128 KiB input).
DEFAULT_WORK = Rule(1.0, 1.0, 4.0, 2 << 20)
# The rules are for elements of 4 bytes or more; narrower ones are computed wider (a float16
# AveragePool sums in float32), so the rule of a 2-byte tensor doubles, a 1-byte one's quadruples.
WIDEST_NARROW = 4


def work_bytes(op_type: str, inputs: Iterable[int], outputs: Iterable[int], itemsize: int = WIDEST_NARROW) -> int:
    """The working memory of one step by its operator's rule, its largest input's elements ``itemsize`` bytes:
    a MaxPool reading 4 MiB and writing 1 MiB needs 1.5 * 4 + 2 * 1 = 8 MiB beside them (16 MiB
    in float16); an unlisted op reading and writing 4 MiB 4 + 4 + min(16, 2) = 10 MiB."""
    outputs = list(outputs)
    return rule_bytes(rule_for(op_type, len(outputs)), inputs, outputs, itemsize)


def rule_for(op_type: str, outputs: int) -> Rule:
    """The rule of a step writing ``outputs`` outputs, by its operator's traits (an ONNX operator,
    else an IR layer of that name; a plan step knows only the type): ``work_indices`` for a MaxPool
    of 2, else ``work``, else ``DEFAULT_WORK``."""
    traits = traits_named(op_type)
    if traits.work is None and traits.work_indices is None:
        traits = layer_traits_named(op_type)
    if outputs > 1 and traits.work_indices is not None:
        return traits.work_indices
    return traits.work or DEFAULT_WORK


def __getattr__(name: str) -> Any:
    """``WORK``, ``WITH_INDICES`` and ``POOLING``, the tables the rules were once typed in: derived
    from the registrations (deprecated; read ``rule_for``)."""
    if name == "POOLING":
        return deprecated_table(__name__, name, traits_named("AveragePool").work)
    if name in ("WORK", "WITH_INDICES"):
        field = "work" if name == "WORK" else "work_indices"
        onnx = {op: getattr(traits_named(op), field) for op in named_with(lambda t: getattr(t, field) is not None)}
        ir = {layer: getattr(layer_traits_named(layer), field) for layer in supported()}
        return deprecated_table(__name__, name, {**{k: v for k, v in ir.items() if v is not None}, **onnx})
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def rule_bytes(rule: Rule, inputs: Iterable[int], outputs: Iterable[int], itemsize: int) -> int:
    """``work_bytes`` by a ``rule`` already looked up."""
    widen = max(1, WIDEST_NARROW // max(itemsize, 1))
    largest, written = max(inputs, default=0) * widen, sum(outputs) * widen
    return int(rule.a * largest + rule.b * written + min(rule.s * largest, rule.cap)) + rule.fixed


class Sizes(NamedTuple):
    """What the plan knows of its tensors, by name: bytes, and bytes per element."""

    bytes: dict[str, int]
    itemsize: dict[str, int]


def tensor_sizes(types: Mapping[str, tuple[str | None, tuple[int | None, ...] | None]]) -> Sizes:
    """Bytes of each tensor whose dtype and dims are known: ``{"y": ("float32", (2, 3))}`` gives
    ``{"y": 24}``, and its element size, 4; a dynamic dim or a string tensor leaves the name out
    of the bytes, an unknown type out of both."""
    sizes = Sizes({}, {})
    for name, (dtype, dims) in types.items():
        if dtype is None or dtype == dtypes.STRING:
            continue
        sizes.itemsize[name] = dtypes.itemsize(dtype)
        if dims is not None and all(d is not None and d >= 0 for d in dims):
            sizes.bytes[name] = math.prod(dims) * sizes.itemsize[name]  # type: ignore[arg-type]
    return sizes


def value_bytes(value: Any) -> int:
    """Bytes of a slot's value: an array's ``nbytes`` (a string tensor's ``dtypes.string_bytes``:
    its pointers and UTF-8 bytes), a sequence's arrays summed, else 0 (an empty optional's None)."""
    if isinstance(value, np.ndarray):
        return dtypes.string_bytes(value) if value.dtype == object else value.nbytes
    if isinstance(value, (list, tuple)):
        return sum(value_bytes(v) for v in value)
    return 0


class Planned(Protocol):
    """A graph with a plan: an ONNX ``CompiledGraph`` or an IR graph's top level."""

    @property
    def plan(self) -> Plan: ...


class PlanView(NamedTuple):
    """What the accounting reads of a graph's plan (``CompiledGraph.plan``): its steps, each step's
    operator type and the bodies it runs (those of the node writing its first named output: a
    chain of element-wise nodes is its last node, a Conv with a BatchNormalization folded in is the
    Conv), the name of each slot, the slots the caller holds (inputs and outer values) and the
    constants a run starts from."""

    steps: tuple[Any, ...]
    ops: tuple[tuple[str, tuple[CompiledGraph, ...]], ...]
    names: tuple[str, ...]
    inputs: tuple[int, ...]
    caller: frozenset[int]
    constants: tuple[Any, ...]


def plan_view(graph: Planned) -> PlanView:
    """``graph``'s plan (an ONNX ``CompiledGraph``'s or an IR graph's) as ``PlanView``: a step's
    operator type is the one the model states of the node or layer writing its first named output
    (``Conv``, ``Convolution``; ``ShapeValues`` for a group of shape values)."""
    plan = graph.plan
    ops = []
    for step in plan.steps:
        entry = next((plan.producers[s] for s in step.outputs if s in plan.producers), None)
        ops.append(("", ()) if entry is None else (entry.kind or entry.op.op_type, tuple(entry.op.subgraphs.values())))
    caller = frozenset(plan.input_slots + plan.outer_slots)
    constants = tuple(value for value in plan.initial if value is not None)
    return PlanView(plan.steps, tuple(ops), plan.slot_names, plan.input_slots, caller, constants)


def session_bytes(session: GraphSession) -> int:
    """What a session holds for its life: the model as loaded and every constant of its graph and
    bodies, each array once (an initializer 1000x1000 float32 is held twice: 4 MB of proto and 4 MB
    of array)."""
    seen: dict[int, int] = {}
    for graph in _graphs(session.compiled):
        for value in plan_view(graph).constants:
            seen.setdefault(id(value), value_bytes(value))
    return session.proto.ByteSize() + sum(seen.values())


def _graphs(graph: CompiledGraph) -> Iterable[CompiledGraph]:
    yield graph
    for _, bodies in plan_view(graph).ops:
        for body in bodies:
            yield from _graphs(body)


@dataclass(frozen=True)
class Peak:
    """The most a plan holds at once: ``bytes``, the step (or ``"the inputs"``) where, and whether
    every size was known (``exact``; else ``bytes`` is a lower bound)."""

    bytes: int
    where: str
    exact: bool


class PlanStep(NamedTuple):
    """One step as ``walk`` sums it: its operator type and label, its input, output and freed
    slots, and the bytes of any body it runs (counted as work)."""

    op_type: str
    label: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    frees: tuple[int, ...]
    bodies: int = 0


def walk(steps: Iterable[PlanStep], size: Callable[[int], int | None], itemsize: Callable[[int], int], live: int) -> Peak:
    """The peak of a plan starting with ``live`` bytes: before each step, what is live, its outputs
    and its work (``work_bytes``, the widest input's ``itemsize``); after it, its outputs are live
    and its frees are not. ``size(slot)`` is None where unknown (0 is summed, and the peak is not
    ``exact``)."""
    exact = True

    def known(slot: int) -> int:
        nonlocal exact
        found = size(slot)
        if found is None:
            exact = False
        return found or 0

    peak = Peak(live, "the inputs", True)
    for step in steps:
        outputs = [known(s) for s in step.outputs]
        inputs = [known(s) for s in step.inputs]
        widest = max(range(len(inputs)), key=inputs.__getitem__, default=None)
        wide = itemsize(step.inputs[widest]) if widest is not None else WIDEST_NARROW
        need = live + sum(outputs) + work_bytes(step.op_type, inputs, outputs, wide) + step.bodies
        if need > peak.bytes:
            peak = Peak(need, step.label, True)
        live += sum(outputs) - sum(known(s) for s in step.frees)
    return Peak(peak.bytes, peak.where, exact)


def plan_walk(
    graph: Planned,
    size: Callable[[int], int | None],
    itemsize: Callable[[int], int],
    held: int,
    body_bytes: Callable[[Any], int] = lambda body: 0,
) -> Peak:
    """The peak of one plan, ONNX or IR (``walk``), beside ``held`` bytes, with the inputs fed
    (``size`` of each input slot) live throughout; a step running bodies counts ``body_bytes`` of
    the largest as work, and makes the peak a lower bound (its bodies are checked as they run)."""
    view = plan_view(graph)
    steps = [
        PlanStep(
            op_type,
            step.label,
            step.inputs,
            step.outputs,
            tuple(s for s in step.frees if s not in view.caller),
            max((body_bytes(body) for body in bodies), default=0),
        )
        for step, (op_type, bodies) in zip(view.steps, view.ops)
    ]
    inputs = sum(size(s) or 0 for s in view.inputs)
    peak = walk(steps, size, itemsize, held + inputs)
    return Peak(peak.bytes, peak.where, peak.exact and not any(bodies for _, bodies in view.ops))


def plan_peak(graph: CompiledGraph, sizes: Sizes, held: int = 0) -> Peak:
    """The peak of an ONNX graph's plan (``plan_walk``; ``GraphSession.peak`` for a session's top-level graph) with tensor ``sizes`` by name beside
    ``held`` bytes: inputs [1, 16, 256, 256] float32 (4 MiB) into MaxPool k2 s2 (1 MiB, work 8 MiB)
    into Relu (1 MiB, work 1 + 1 + 2 MiB) peaks at the MaxPool, 4 + 1 + 8 = 13 MiB beside
    ``held``. A Loop, If or Scan counts its largest body's peak as work."""
    initial, names = graph.plan.initial, graph.plan.slot_names

    def size(slot: int) -> int | None:
        if slot == 0:
            return 0
        if initial[slot] is not None:  # a constant (a weight the plan made, too): its own bytes
            return value_bytes(initial[slot])
        return sizes.bytes.get(names[slot]) if slot > 1 else None

    def itemsize(slot: int) -> int:
        if initial[slot] is not None:
            return getattr(initial[slot], "itemsize", WIDEST_NARROW)
        return sizes.itemsize.get(names[slot], WIDEST_NARROW)

    return plan_walk(graph, size, itemsize, held, lambda body: plan_peak(body, sizes).bytes)


def ir_peak(graph: IrGraph, inputs: Mapping[str, Any]) -> Peak:
    """``IrGraph.peak``: the peak of an IR graph's plan on numpy (``plan_walk``) for the arrays fed: its constants
    (each array once), the inputs, then each layer's outputs at the dims and precision its ports
    declare (a dim that is not a number counts 0, and the peak is a lower bound). The bodies of
    If, Loop and TensorIterator layers are not counted: their tensors are held to the budget one
    at a time."""
    plan = graph.plan
    fed: dict[int, Any] = {s: inputs.get(decl.name) for s, decl in zip(plan.input_slots, graph.inputs)}
    constants: dict[int, int] = {}
    for value in plan.initial:
        if value is not None:
            constants.setdefault(id(value), value_bytes(value))
    ports = {(layer.id, port.id): port for layer in graph.document.layers.values() for port in layer.outputs}

    def size(slot: int) -> int | None:
        if slot in fed:
            return value_bytes(fed[slot]) if fed[slot] is not None else None
        if plan.initial[slot] is not None:
            return 0  # held by the session: counted once
        port = ports.get(plan.slot_names[slot])
        if port is None or port.dtype is None or not all(d.isdigit() for d in port.dims):
            return None
        return math.prod(int(d) for d in port.dims) * dtypes.itemsize(port.dtype)

    def itemsize(slot: int) -> int:
        value = fed.get(slot, plan.initial[slot])
        if value is not None:
            return getattr(value, "itemsize", WIDEST_NARROW)
        port = ports.get(plan.slot_names[slot])
        return dtypes.itemsize(port.dtype) if port is not None and port.dtype is not None else WIDEST_NARROW

    return plan_walk(graph, size, itemsize, sum(constants.values()))


def check_peak(executor: Executor, inputs: Mapping[str, Any], label: str, sizes: Sizes | None = None) -> Peak:
    """Refuse, before anything is run, a run of ``inputs`` whose peak (``executor.peak``, ONNX or
    IR alike) is over the budget: ``node 'p2' (MaxPool): the run's live tensors and working memory
    would need 1.3 GiB (...), over the memory budget of 1.0 GiB (...)``, in ``label``'s file.
    Returns the peak (``exact`` False: some size was unknown, and the peak is a lower bound)."""
    peak = executor.peak(inputs, sizes)
    try:
        check_bytes(f"{peak.where}: the run's live tensors and working memory would need", peak.bytes)
    except OvpoolError as exc:
        raise exc.located(label) from None
    return peak


def check_ir_plan(graph: IrGraph, inputs: Mapping[str, Any], label: str) -> None:
    """``check_peak`` of an IR graph (deprecated: call ``check_peak``, which takes either front end)."""
    warnings.warn("ovpool.engine.budget.check_ir_plan is deprecated: use check_peak", DeprecationWarning, stacklevel=2)
    check_peak(graph, inputs, label)


def check_plan(session: GraphSession, sizes: Sizes, label: str) -> Guard | None:
    """``check_peak`` of an ONNX session at the tensor ``sizes`` shape inference gave (its plan's
    peak, ``plan_peak``, beside ``session_bytes``). Returns the ``Guard`` to run with when a size
    was unknown, else None."""
    peak = check_peak(session, {}, label, sizes)
    return None if peak.exact else Guard(sizes.bytes, session_bytes(session))


class Guard:
    """Runs a plan step by step, checking before each one the bytes then live (the arrays in the
    slots, each once) beside the step's outputs where ``sizes`` knows them and its work
    (``work_bytes``), and counting the live bytes while the kernel runs (``holding``), so its own
    checks and any Loop/If/Scan body it runs see them. A top-level graph's guard counts the
    session's constants (``base``); a body's counts what its inputs add."""

    def __init__(self, sizes: Mapping[str, int], base: int = 0) -> None:
        self.sizes = sizes
        self.base = base
        self._plans: dict[int, tuple[int, list[tuple[Any, Rule, list[int], tuple[int, ...]]], PlanView]] = {}

    def _plan(self, graph: CompiledGraph) -> tuple[int, list[tuple[Any, Rule, list[int], tuple[int, ...]]], PlanView]:
        """The first step that needs checking (one whose output has no known size, or that runs a
        body: the steps before it are within the peak ``check_plan`` found), and per step: the step,
        its rule, its outputs' known bytes, the slots it frees that the caller does not hold."""
        view = plan_view(graph)
        names = view.names
        plan = [
            (
                step,
                rule_for(op_type, len(step.outputs)),
                [self.sizes.get(names[s], 0) if s > 1 else 0 for s in step.outputs],
                tuple(s for s in step.frees if s not in view.caller),
            )
            for step, (op_type, _) in zip(view.steps, view.ops)
        ]
        unknown = (
            index
            for index, (step, (_, bodies)) in enumerate(zip(view.steps, view.ops))
            if bodies or any(s == 1 or names[s] not in self.sizes for s in step.outputs if s)
        )
        return next(unknown, len(plan)), plan, view

    def __call__(self, graph: CompiledGraph, values: list[Any]) -> None:
        found = self._plans.get(id(graph))
        if found is None:
            found = self._plans[id(graph)] = self._plan(graph)
        start, plan, view = found
        graph.execute_steps(values, view.steps[:start])
        ignored = {id(v) for v in view.constants}
        counted: dict[int, int] = {}

        def count(slots: Iterable[int]) -> int:
            added = 0
            for s in slots:
                value = values[s]
                if value is not None and id(value) not in ignored and id(value) not in counted:
                    counted[id(value)] = value_bytes(value)
                    added += counted[id(value)]
            return added

        limit = budget() - held()
        # what is live where checking starts, each array once; a body's outer values are the outer graph's
        live = self.base + count(s for s in range(len(values)) if view.names[s] not in graph.outer_names)
        for step, rule, outputs, frees in plan[start:]:
            arguments = [values[s] for s in step.inputs]
            inputs = [value_bytes(value) for value in arguments]
            widest = max(range(len(inputs)), key=inputs.__getitem__, default=None)
            itemsize = getattr(arguments[widest], "itemsize", WIDEST_NARROW) if widest is not None else WIDEST_NARROW
            need = live + sum(outputs) + rule_bytes(rule, inputs, outputs, itemsize)
            if need > limit:
                check_bytes(f"{step.label}: the run's live tensors and working memory would need", need)
            freed = [values[s] for s in frees]
            with holding(live):
                graph.execute_steps(values, (step,))
            live += count(step.outputs)
            for value in freed:
                if value is not None and not any(value is values[s] for s in step.outputs):
                    live -= counted.pop(id(value), 0)


def guard_bodies(session: GraphSession) -> None:
    """Every Loop, If and Scan body of the session runs under a ``Guard`` (its sizes are known
    only as it runs)."""
    for graph in _graphs(session.compiled):
        if graph is not session.compiled:
            graph.guard = Guard({})


def with_inputs(sizes: Sizes, names: Sequence[str], inputs: Mapping[str, Any]) -> Sizes:
    """``sizes`` with the fed inputs' bytes and element sizes, exactly: ``{"x": 768}`` and 4 for a
    (1, 3, 8, 8) float32; a sequence its tensors' bytes summed (``value_bytes``) and the element
    size of its first, an empty optional (None) 0 bytes."""
    for name in names:
        if name in inputs:
            value = inputs[name]
            first = value[0] if isinstance(value, (list, tuple)) and value else value
            sizes.bytes[name] = value_bytes(value if value is None or isinstance(value, (list, tuple)) else np.asarray(value))
            sizes.itemsize[name] = getattr(first, "itemsize", WIDEST_NARROW)
    return sizes
