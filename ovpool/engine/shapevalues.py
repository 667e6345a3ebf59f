"""Values of a plan that depend only on the shapes of run-time tensors, computed once per shape.

``Shape(x) -> Gather(axis 0, index 0) -> Equal(1)`` gives the same values for every ``x`` of one
shape: silero VAD runs about twenty such nodes per call (1 to 3 us each) to pick If branches and
state shapes. The plan makes each *group* of them one step (:class:`ShapeValues`). A group is one
or more ``Shape`` or ``Size`` nodes of run-time tensors (its *sources*) and the nodes of
operators of the ``shape_value`` trait (``ovpool.engine.ops.base.Traits``) that read only the group's values and constants, joined where one reads
another's output. The step takes the sources and gives the values read outside the group
(*exports*); the first time the sources have given shapes it runs the group's kernels in plan
order, and it gives back the values kept for those shapes after: a group ``Shape(x) -> Gather ->
Equal`` run on ``x`` of shape (1, 64) computes ``[True]`` once and returns that array for every
``x`` of shape (1, 64).

The kept arrays are handed to the steps after at every run, so nothing may write into them: a
group's step is not one of the kernels whose outputs the plan may give up (``ovpool.engine.inplace``
donates only what Conv, BatchNormalization and element-wise kernels made), and each kept value is
a read-only view, which ``GraphSession.run`` copies where one reaches the caller (an If branch's
output, a Transpose of it). The step runs at the place of the group's last source; a group
whose values are read before that place, or of one node, stays as it is. Values over
``KEPT_BYTES`` are computed at every run, not kept; at most ``KEYS`` shape sets are kept (a model
whose shapes change at every run starts again from empty).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, deprecated_table, named_with, traits_named
from ovpool.errors import ModelError, OvpoolError
from ovpool.memory import kernel_failure

if TYPE_CHECKING:
    from ovpool.engine.plan import Prepared

# nodes whose values are their input's shape
SOURCES = frozenset({"Shape", "Size"})
KEPT_BYTES = 1 << 16
KEYS = 16

# the operator type of a group's step (what ovpool.engine.budget and the plan read of it)
OP_TYPE = "ShapeValues"

Entry = tuple["Prepared", tuple[int, ...], tuple[int, ...], str]  # a plan entry: node, input and output slots, label


class _Member(NamedTuple):
    kernel: Kernel
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    label: str


class ShapeValues:
    """A group's step: ``step(*sources)`` gives the exports' values for the sources' shapes, kept
    (as read-only views) from the first run with those shapes. ``members`` run in order on a table
    of slot values (``constants`` first, the sources at ``source_slots``)."""

    __slots__ = ("members", "constants", "source_slots", "exports", "kept")

    def __init__(
        self,
        members: Sequence[_Member],
        constants: Mapping[int, Any],
        source_slots: tuple[int, ...],
        exports: tuple[int, ...],
    ) -> None:
        self.members = tuple(members)
        self.constants = dict(constants)
        self.source_slots = source_slots
        self.exports = exports
        self.kept: dict[Any, tuple[Any, ...]] = {}  # by the shape of one source, the tuple of shapes of several

    def __call__(self, *sources: Any) -> tuple[Any, ...]:
        if len(sources) == 1:  # most groups: key on the one shape, without a generator
            if type(sources[0]) is not np.ndarray:
                return self._computed(sources)  # a sequence or an absent optional: no shape to key on
            key: Any = sources[0].shape
        elif all(type(s) is np.ndarray for s in sources):
            key = tuple(s.shape for s in sources)
        else:
            return self._computed(sources)
        values = self.kept.get(key)
        if values is None:
            values = self._computed(sources)
            if sum(getattr(v, "nbytes", 0) for v in values) <= KEPT_BYTES:
                values = tuple(_read_only(v) for v in values)
                if len(self.kept) >= KEYS:
                    self.kept.clear()
                self.kept[key] = values
        return values

    def _computed(self, sources: Sequence[Any]) -> tuple[Any, ...]:
        """The members run on the sources, in plan order; a failure is said of its node."""
        values = dict(self.constants)
        values.update(zip(self.source_slots, sources))
        for kernel, inputs, outputs, label in self.members:
            try:
                results = kernel(*[values.get(s) for s in inputs])
            except OvpoolError:
                raise
            except Exception as exc:
                raise kernel_failure(label, exc) from exc
            if len(results) < len(outputs):
                raise ModelError(f"{label}: gave {len(results)} outputs, the node names {len(outputs)}")
            values.update(zip(outputs, results))
        return tuple(values[s] for s in self.exports)


def derived(op_type: str) -> bool:
    """Whether a node of ``op_type`` reading only shape values and constants gives a shape value
    (its ``shape_value`` trait, ``ovpool.engine.ops.base.Traits``, or a ``SOURCES`` operator:
    Size(Shape(x)) is one)."""
    return traits_named(op_type).shape_value or op_type in SOURCES


def is_source(op_type: str) -> bool:
    """Whether ``op_type`` gives the shape of its input (``SOURCES``)."""
    return op_type in SOURCES


def group_shape_values(
    entries: Sequence[Entry], constants: Mapping[int, Any], graph_outputs: Set[int], never: Set[int]
) -> tuple[list[Entry], int]:
    """``entries`` (in plan order) with each group of shape values made one ``ShapeValues`` entry
    at the place of its last source, and how many groups were made. ``constants`` are the slots a
    run starts with, ``graph_outputs`` the graph's output slots, ``never`` slots that are no value
    (an omitted input, a discarded output)."""
    shaped: dict[int, int] = {}  # slot -> index of the entry that computes it from shapes
    parent: dict[int, int] = {}
    sourced: set[int] = set()  # the entries reading a run-time tensor's shape

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    for index, (entry, ins, outs, _) in enumerate(entries):
        op = entry.op
        if op.domain or op.subgraphs or len(outs) != 1:
            continue
        linked = [shaped[s] for s in ins if s in shaped]
        if linked and all(s in shaped or s in constants or s in never for s in ins):
            if not derived(op.op_type):
                continue
        elif not is_source(op.op_type) or len(ins) != 1 or ins[0] in constants:
            continue
        else:
            sourced.add(index)
        parent[index] = index
        for other in linked:
            parent[root(other)] = index
        shaped[outs[0]] = index

    groups: dict[int, list[int]] = {}
    for index in parent:
        groups.setdefault(root(index), []).append(index)
    readers: dict[int, list[int]] = {}
    for index, (_, ins, _, _) in enumerate(entries):
        for s in ins:
            readers.setdefault(s, []).append(index)

    replaced: dict[int, Entry] = {}
    dropped: set[int] = set()
    for members in groups.values():
        members.sort()
        if len(members) < 2:
            continue
        inside = set(members)
        sources = [i for i in members if i in sourced]
        place = sources[-1]
        made = [entries[i][2][0] for i in members]
        exports = tuple(s for s in made if s in graph_outputs or any(r not in inside for r in readers.get(s, ())))
        if not exports or any(r <= place for s in exports for r in readers.get(s, ()) if r not in inside):
            continue  # read before the last source's place
        source_slots = tuple(dict.fromkeys(entries[i][1][0] for i in sources))
        step = ShapeValues(
            [_Member(entries[i][0].kernel, entries[i][1], entries[i][2], entries[i][3]) for i in members],
            {s: constants[s] for i in members for s in entries[i][1] if s in constants},
            source_slots,
            exports,
        )
        first, last = entries[members[0]], entries[members[-1]]
        label = f"{first[3]} .. {last[3]} (shape values of {len(members)} nodes)"
        replaced[place] = (_group_entry(first[0], step), source_slots, exports, label)
        dropped.update(i for i in members if i != place)
    grouped = [replaced.get(index, entry) for index, entry in enumerate(entries) if index not in dropped]
    return grouped, len(replaced)


def _read_only(value: Any) -> Any:
    """An array as a read-only view of its data (the array itself stays as it was); other values as they are."""
    if not isinstance(value, np.ndarray):
        return value
    view = value.view()
    view.flags.writeable = False
    return view


def _group_entry(first: Prepared, step: ShapeValues) -> Prepared:
    """The plan entry of a group: its first node (for where the model states it), the step as kernel."""
    op = OpNode(name=first.op.name, op_type=OP_TYPE, since=1, opset=first.op.opset, n_outputs=len(step.exports))
    return first._replace(op=op, kernel=step, inputs=(), outputs=(), folded=False, kind=OP_TYPE)


def __getattr__(name: str) -> Any:
    """``DERIVED``, the operators a group may hold, once typed here: derived from the registrations
    (deprecated; read ``Traits.shape_value``)."""
    if name == "DERIVED":
        return deprecated_table(__name__, name, named_with(lambda t: t.shape_value))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
