"""The numpy executor's plan, whatever the model's format: steps over slots, run many times.

A front end (:mod:`ovpool.engine.graph` for ONNX graphs, :mod:`ovpool.engine.ir_executor` for
OpenVINO IR documents) turns each node or layer into a :class:`Prepared` entry: its kernel, the
keys of the values it reads and writes (tensor names, or IR ``(layer id, port id)`` pairs), and
whether it was run when prepared (``folded``: every input a constant). :func:`build_plan` makes of
the entries one flat :class:`Plan`: a slot per key (slot 0 an omitted input, always None; slot 1
where an unnamed output is written), the folded entries left out, each intermediate freed after
its last use. A run is one list of values indexed by slot (:func:`execute`); an observed run
(:func:`execute_observed`) shows every node or layer its own outputs, folded ones where they stand.

With ``donate``, the plan is rewritten where the bits are kept, by what each step computes (its
``op``, an ONNX operator: the IR front end names the operator whose kernel a layer runs):

* values of shapes only become one step per group (:mod:`ovpool.engine.shapevalues`);
* an element-wise step may write into an input dying there (:mod:`ovpool.engine.inplace`);
* a chain of element-wise steps runs tile by tile (:mod:`ovpool.engine.chains`).

A chain of three nodes ``Add -> Clip -> Mul`` on a dying Conv output is then one step writing into
the Conv's buffer. The rewrites that change rounding (Conv + BatchNormalization, ``fusion``) are
the front end's, before the plan is built.
"""

from __future__ import annotations

import contextvars
import operator
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from ovpool.engine.chains import chain_steps
from ovpool.engine.inplace import donating_kernels, owned_slots
from ovpool.engine.ops.base import Kernel, OpNode
from ovpool.engine.ops.donated import InPlace
from ovpool.engine.shapevalues import Entry, group_shape_values
from ovpool.errors import ModelError, OvpoolError
from ovpool.memory import kernel_failure

# Called after each node or layer of an observed run with what the model states (an ONNX
# NodeProto, an IR Layer) and its outputs.
Observer = Callable[[Any, tuple[Any, ...]], None]

NONE, DISCARD = 0, 1  # slot of an omitted input (always None); slot an unnamed output is written to


class Prepared(NamedTuple):
    """One node or layer after preparing: ``node`` what the model states (a NodeProto, an IR
    Layer: what an observer is shown), ``op`` the ONNX operator the kernel computes (an IR layer
    whose kernel is no ONNX operator's has the domain ``IR_DOMAIN`` and its layer type), the
    names (or IR ports) it is called with (own inputs, then its subgraphs' outer names), the ones
    it writes, whether it was run at prepare time, ``label`` how errors name it (``node 'c1'
    (Conv)``) and ``kind`` the operator type the model states (``Conv``, ``Convolution``)."""

    node: Any
    op: OpNode
    kernel: Kernel
    inputs: tuple[Any, ...]  # names (str) or IR ports ((layer id, port id)): Hashable
    outputs: tuple[Any, ...]
    folded: bool
    label: str = ""
    kind: str = ""


# The domain of a step computed by an IR layer's own kernel: no ONNX operator's rule applies to it.
IR_DOMAIN = "org.openvinotoolkit.layer"


class Step(NamedTuple):
    """One node of the plan: a tuple, so the run loop unpacks it in one go. ``fetch(values)`` reads
    the inputs from the slot values, in C: the one value of a one-input step (``single``), else a
    tuple (half the loop's cost of a list comprehension: 0.24 us a step instead of 0.47)."""

    kernel: Kernel
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    frees: tuple[int, ...]
    label: str
    fetch: Callable[[Sequence[Any]], Any]
    single: bool


def make_step(kernel: Kernel, inputs: tuple[int, ...], outputs: tuple[int, ...], frees: tuple[int, ...], label: str) -> Step:
    """A plan step with its ``fetch``: ``operator.itemgetter`` of the input slots (of none: ``()``)."""
    fetch: Callable[[Sequence[Any]], Any] = operator.itemgetter(*inputs) if inputs else _no_inputs
    return Step(kernel, inputs, outputs, frees, label, fetch, len(inputs) == 1)


def _no_inputs(values: Sequence[Any]) -> tuple[()]:
    return ()


class Plan:
    """What a run follows: the steps, the values a run starts from (constants in their slots) and
    where inputs, outer values and outputs sit; ``order`` and ``folded`` say what an observer is
    shown: ``(node, folded outputs or None, step index)`` per node, and the folded values;
    ``donating`` counts the steps that write into a dying input; ``slot_names`` the key (name or
    IR port) of each slot and ``producers`` the entry that writes each named slot (for ``ovpool.engine.budget``);
    ``quiet`` whether a step runs a quiet element-wise kernel (``InPlace.quiet``), which needs the
    run under ``np.errstate(all="ignore")`` (an If branch of one Squeeze does not); ``grouped``
    counts the steps that each compute a group of shape values (``ovpool.engine.shapevalues``)."""

    def __init__(
        self,
        steps: tuple[Step, ...],
        initial: list[Any],
        slots: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
        constant_outputs: tuple[bool, ...],
        order: list[tuple[Any, tuple[Any, ...] | None, int]],
        folded: dict[Any, Any],
        donating: int,
        slot_names: tuple[Any, ...] = (),
        producers: Mapping[int, Prepared] | None = None,
        quiet: bool = True,
        grouped: int = 0,
    ) -> None:
        self.steps = steps
        self.quiet = quiet
        self.grouped = grouped
        self.slot_names = slot_names
        self.producers = producers or {}
        self.donating = donating
        self.initial = initial
        self.input_slots, self.outer_slots, self.output_slots = slots
        self.constant_outputs = constant_outputs
        self.order = order
        self.folded = folded


def filled(plan: Plan, inputs: Sequence[Any], outer: Sequence[Any]) -> list[Any]:
    """The slot values a run of ``plan`` starts from: its constants, ``inputs`` and ``outer``."""
    values = plan.initial.copy()
    for s, value in zip(plan.input_slots, inputs):
        values[s] = value
    for s, value in zip(plan.outer_slots, outer):
        values[s] = value
    return values


class Names(NamedTuple):
    """The keys a plan is built for: those of a graph (``CompiledGraph`` has these three
    attributes too), or of a part of it; for an IR graph, the ports of its Parameters and of
    what its Results read."""

    input_names: tuple[Any, ...]
    outer_names: tuple[Any, ...]
    output_names: tuple[Any, ...]


class Keys(Protocol):
    """What ``build_plan`` reads of the graph it plans: ``Names``, or a ``CompiledGraph``."""

    @property
    def input_names(self) -> Sequence[Hashable]: ...
    @property
    def outer_names(self) -> Sequence[Hashable]: ...
    @property
    def output_names(self) -> Sequence[Hashable]: ...


def build_plan(prepared: Sequence[Prepared], known: Mapping[Any, Any], graph: Keys, donate: bool) -> Plan:
    """The flat plan of ``prepared``: a slot per key (an ONNX name, an IR port; the empty name
    of an omitted input or output has none), the folded entries left out, each intermediate
    freed after its last use; with ``donate``, nodes computing values of shapes only become one
    step per group (``ovpool.engine.shapevalues``), steps that may write into an input dying there
    (``ovpool.engine.inplace``) get the kernel that does, and chains of element-wise steps become
    one step computed tile by tile (``ovpool.engine.chains``)."""
    slots: dict[Hashable, int] = {}

    def slot(name: Hashable) -> int:
        if not name:
            return NONE
        return slots.setdefault(name, len(slots) + 2)

    input_slots = tuple(slot(n) for n in graph.input_names)
    outer_slots = tuple(slot(n) for n in graph.outer_names)
    runtime: list[Entry] = []
    order: list[tuple[Any, tuple[Any, ...] | None, int]] = []
    for entry in prepared:
        if entry.folded:
            order.append((entry.node, entry.outputs, -1))
            continue
        order.append((entry.node, None, len(runtime)))
        ins, outs = tuple(slot(n) for n in entry.inputs), tuple(slot(n) if n else DISCARD for n in entry.outputs)
        runtime.append((entry, ins, outs, entry.label))
    output_slots = tuple(slot(n) for n in graph.output_names)
    constant_slots = {slots[name] for name in known if name in slots}
    grouped = 0
    if donate:
        constant_values = {slots[name]: known[name] for name in known if name in slots}
        runtime, grouped = group_shape_values(runtime, constant_values, set(output_slots), {NONE, DISCARD})
    # what observe reports for folded nodes (initializers only they read are not kept)
    folded = {name: known[name] for entry in prepared if entry.folded for name in entry.outputs if name}
    kept = constant_slots | set(output_slots) | {NONE, DISCARD}
    last_use: dict[int, int] = {}
    for index, (_, ins, outs, _) in enumerate(runtime):
        for s in outs:
            last_use.setdefault(s, index)
        for s in ins:
            last_use[s] = index
    frees: dict[int, list[int]] = {}
    for s, index in last_use.items():
        if s not in kept:
            frees.setdefault(index, []).append(s)
    outside = kept | set(input_slots) | set(outer_slots)
    typed = [
        (f"{e.op.domain}.{e.op.op_type}" if e.op.domain else e.op.op_type, e.kernel, ins, outs) for e, ins, outs, _ in runtime
    ]
    kernels, donating = donating_kernels(typed, frees, outside, donate)
    planned = [
        (kernel, ins, outs, tuple(frees.get(index, ())), label)
        for index, (kernel, (_, ins, outs, label)) in enumerate(zip(kernels, runtime))
    ]
    if donate:
        planned = chain_steps(planned, [entry.kernel for entry, _, _, _ in runtime], outside, owned_slots(typed) - outside)
    steps = tuple(make_step(*step) for step in planned)
    initial: list[Any] = [None] * (len(slots) + 2)
    for name, s in slots.items():
        if name in known:
            initial[s] = value = known[name]
            if isinstance(value, np.ndarray):
                # the plan's own array, read-only in place (a view would fail the kernels' ``is``
                # tests of their node's constants): an If or Loop passing it on hands out a copy
                value.flags.writeable = False
    constant_outputs = tuple(s in constant_slots for s in output_slots)
    producers = {s: entry for entry, _, outs, _ in runtime for s in outs if s > DISCARD}
    slot_names = ("", "", *slots)
    quiet = any(isinstance(entry.kernel, InPlace) and entry.kernel.quiet is not None for entry, _, _, _ in runtime)
    return Plan(
        steps,
        initial,
        (input_slots, outer_slots, output_slots),
        constant_outputs,
        order,
        folded,
        donating,
        slot_names,
        producers,
        quiet,
        grouped,
    )


def execute(values: list[Any], steps: Sequence[Step], label: str, free: bool = True, quiet: bool = True) -> None:
    """Run ``steps`` on the slot values; with ``quiet``, under one ``np.errstate(all="ignore")``,
    which the plan's quiet element-wise kernels (``InPlace.quiet``) leave to it instead of
    entering their own. A Loop or If body run from a quiet plan is already under it (``QUIET``):
    it does not enter it again (1.5 us a body call)."""
    if quiet and not QUIET.get():
        with np.errstate(all="ignore"):
            token = QUIET.set(True)
            try:
                run_steps(values, steps, free, label)
            finally:
                QUIET.reset(token)
    else:
        run_steps(values, steps, free, label)


QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("ovpool_quiet", default=False)


def run_steps(values: list[Any], steps: Sequence[Step], free: bool, label: str) -> None:
    """``execute``'s loop; a failure is said of the step's node (``label`` until the first)."""
    try:
        for kernel, _, outputs, frees, label, fetch, single in steps:
            results = kernel(fetch(values)) if single else kernel(*fetch(values))
            if len(outputs) == 1 and results:  # most nodes: 0.2 us a step less than the loop below
                values[outputs[0]] = results[0]
            else:
                if len(results) < len(outputs):
                    raise ModelError(f"{label}: gave {len(results)} outputs, the node names {len(outputs)}")
                for s, value in zip(outputs, results):
                    values[s] = value
            if frees and free:
                for s in frees:
                    values[s] = None
    except OvpoolError:
        raise
    except Exception as exc:  # numpy on inputs the node cannot take: said of the node
        raise kernel_failure(label, exc) from exc


def execute_observed(plan: Plan, values: list[Any], observe: Observer, label: str) -> None:
    """As ``execute``, calling ``observe(node, outputs)`` after every node in plan order; a folded
    node is reported with its constant outputs where it stands in that order."""
    for node, folded, index in plan.order:
        if folded is not None:
            observe(node, tuple(plan.folded.get(name) if name else None for name in folded))
            continue
        step = plan.steps[index]
        execute(values, (step,), label, free=False)
        observe(node, tuple(values[s] if s != DISCARD else None for s in step.outputs))
        for s in step.frees:
            values[s] = None
