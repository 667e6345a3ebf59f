"""Chains of element-wise nodes computed tile by tile.

HardSwish as paddle writes it is four nodes (``Add 3 -> Clip 0..6 -> Mul x -> Div 6``), SiLU two
(``Sigmoid -> Mul x``). Run node by node, each pass reads and writes the whole tensor: an 11 MB
tensor leaves the cache between passes. A *chain* is a sequence of steps of the plan, each an
element-wise kernel with a tile form (:class:`ovpool.engine.inplace.InPlace`), each the
one reader of the output of the one before, which dies there. The chain runs as one step, where
its last node stood (exporters often list the Sigmoids of several branches before their Muls): for each
tile of ``TILE`` elements, every node's operation in order, on the tile (intermediates in one
tile-sized buffer), the last one writing the chain's output: the same operations on the same
values in the same order, so the same bits as node by node. It pays from about four tiles on:
(1, 96, 200, 152) float32 HardSwish in 0.77 of the time node by node, (1, 96, 100, 76) in 0.9.

A chain is tiled at run time only when every argument is a C-contiguous float32/float64 array of
one dtype, of one shape, of one element (a scalar constant) or constant over planes (a (1, C, 1, 1)
scale: the tiles are then whole planes, and the ops before the first that reads the whole tensor,
such as a squeeze-excite gate's HardSigmoid, run once on the small values), and the tensor holds at
least four tiles; otherwise its steps run one after the other as the plan had them. Its output is a new
array, or the buffer of an argument that dies in the chain and that the plan may give up
(``ovpool.engine.inplace``): each tile of it is written after the chain's last read of it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence, Set
from typing import Any

import numpy as np

from ovpool.engine.native.chain_ops import CHAIN_CODES
from ovpool.engine.native.compiled import chain_for
from ovpool.engine.ops.base import Kernel
from ovpool.engine.ops.donated import InPlace
from ovpool.engine.ops.elementwise.clip import type_limits

TILE = 1 << 16  # elements of a tile: 256 KiB of float32, in the L2 cache with its intermediate
# A chain whose every node has a compiled form (``InPlace.code``) runs compiled at any size (one
# call, blocks of 256 positions in the first-level cache): the call costs about 3.5 us, a numpy
# node 1.5-2 us, so a chain of two 256-value nodes takes 3.5 us compiled, 4.1 node by node.
COMPILED_LEAST = 1
# With values constant over planes, from planes of this size on (blocks end at plane boundaries).
COMPILED_PLANE = 64

PlanStep = tuple[Kernel, tuple[int, ...], tuple[int, ...], tuple[int, ...], str]
# A tiled chain's shape, its plane size (0: no value constant over planes) and its dtype.
Layout = tuple[tuple[int, ...], int, np.dtype]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def chain_steps(steps: Sequence[PlanStep], prepared: Sequence[Kernel], outside: Set[int], owned: Set[int]) -> list[PlanStep]:
    """``steps`` (kernel, input slots, output slots, slots freed after, label) with each chain of two
    or more made one step, at the place of its last node (an earlier node's inputs then live until
    there: the frees move with it). ``prepared[i]`` is step ``i``'s kernel as its factory made it
    (the tile form comes from there; ``steps[i]``'s kernel, possibly writing in place, is what runs
    when the chain is not tiled); ``outside`` the slots never written (inputs, constants, outputs),
    ``owned`` the slots whose buffer the plan may give up."""
    reader: dict[int, int] = {}
    readers: dict[int, int] = {}
    for index, step in enumerate(steps):
        for s in set(step[1]):
            readers[s] = readers.get(s, 0) + 1
            reader[s] = index
    # a node's next in a chain: the one reader of its output, where that output dies; a node with
    # several such predecessors continues the nearest one
    previous: dict[int, int] = {}
    for index, step in enumerate(steps):
        if not _tileable(prepared[index], step):
            continue
        (produced,) = step[2]
        following = reader.get(produced)
        if produced in outside or readers.get(produced) != 1 or following is None:
            continue
        if _tileable(prepared[following], steps[following]) and produced in steps[following][3]:
            previous[following] = max(previous.get(following, -1), index)
    following_of = {index: following for following, index in previous.items()}
    freed_at = {s: index for index, step in enumerate(steps) for s in step[3]}

    def movable(chain: list[int]) -> bool:
        """Whether the chain's nodes can run at the last one's place: no input of an earlier node
        is freed (or written in place) by a step between them and there."""
        internal = {steps[i][2][0] for i in chain[:-1]}
        return all(
            freed_at.get(s, chain[-1]) in chain or freed_at.get(s, chain[-1]) >= chain[-1]
            for i in chain[:-1]
            for s in steps[i][1]
            if s not in internal
        )

    members: dict[int, list[int]] = {}  # last node of a chain -> its nodes
    for index in range(len(steps)):
        if index in previous or index not in following_of:
            continue
        chain = [index]
        while chain[-1] in following_of:
            following = following_of[chain[-1]]
            if movable([*chain, following]):
                chain.append(following)
                continue
            if len(chain) > 1:
                members[chain[-1]] = chain
            chain = [following]
        if len(chain) > 1:
            members[chain[-1]] = chain
    inside = {index for chain in members.values() for index in chain[:-1]}
    # a node of several operations (HardSwish, HardSigmoid) alone runs compiled as a chain of one
    for index, step in enumerate(steps):
        code = getattr(prepared[index], "code", None)
        if (
            index not in members
            and index not in inside
            and code is not None
            and len(code) > 1
            and _tileable(prepared[index], step)
        ):
            members[index] = [index]
    result: list[PlanStep] = []
    for index, step in enumerate(steps):
        if index in members:
            chain = members[index]
            result.append(_chain([steps[i] for i in chain], [prepared[i] for i in chain], outside, owned))
        elif index not in inside:
            result.append(step)
    return result


def _tileable(kernel: Kernel, step: PlanStep) -> bool:
    return isinstance(kernel, InPlace) and kernel.tile is not None and len(step[2]) == 1


def _chain(steps: Sequence[PlanStep], prepared: Sequence[Kernel], outside: Set[int], owned: Set[int]) -> PlanStep:
    internal = {step[2][0] for step in steps[:-1]}
    external: list[int] = []
    for step in steps:
        external += [s for s in step[1] if s not in internal and s not in external]
    frees = tuple(s for step in steps for s in step[3] if s not in internal)
    donors = [position for position, s in enumerate(external) if s in frees and s not in outside and s in owned]
    # each op reads sources: the external arguments' tiles, then the previous op's result (index -1)
    where = {s: position for position, s in enumerate(external)}
    ops = [(_tile_of(kernel), tuple(-1 if s in internal else where[s] for s in step[1])) for kernel, step in zip(prepared, steps)]
    # node by node, each kernel reads positions of a list: the external arguments, then the
    # outputs of the nodes before it (the chain's step i writes position len(external) + i)
    position = {s: p for p, s in enumerate(external)} | {step[2][0]: len(external) + i for i, step in enumerate(steps)}
    runs = [(step[0], [position[s] for s in step[1]]) for step in steps]
    program = _program([getattr(kernel, "code", None) for kernel in prepared], [reads for _, reads in ops], len(external))

    def one_by_one(args: tuple[Any, ...]) -> tuple[np.ndarray, ...]:
        values = list(args)
        result: tuple[np.ndarray, ...] = ()
        for kernel, reads in runs:
            result = kernel(*[values[p] for p in reads])
            values.append(result[0])
        return result

    def output(args: tuple[Any, ...], layout: Layout) -> np.ndarray:
        """The chain's output: a dying argument's buffer the plan gives up, else a new array."""
        shape = layout[0]
        for p in donors:
            if args[p].shape == shape and args[p].flags.writeable:
                out: np.ndarray = args[p]
                return out
        return np.empty(shape, layout[2])

    def kernel(*args: Any) -> tuple[np.ndarray, ...]:
        if program is not None:
            layout = _tiled_layout(args, COMPILED_LEAST)
            if layout is not None and (not layout[1] or layout[1] >= COMPILED_PLANE):
                chain = chain_for(layout[2])
                if chain is not None:
                    out = output(args, layout)
                    _run_compiled(chain, program, args, out, layout[1])
                    return (out,)
        layout = _tiled_layout(args)
        if layout is None:
            return one_by_one(args)
        out = output(args, layout)
        _run_tiles(ops, args, out, layout[1])
        return (out,)

    first, last = steps[0][4], steps[-1][4]
    label = first if len(steps) == 1 else f"{first} .. {last} (a chain of {len(steps)} element-wise nodes)"
    return (kernel, tuple(external), steps[-1][2], frees, label)


def _tile_of(kernel: Kernel) -> Callable[..., object]:
    assert isinstance(kernel, InPlace) and kernel.tile is not None
    return kernel.tile


def _tiled_layout(args: tuple[Any, ...], least: int | None = None) -> Layout | None:
    """The shape the chain is tiled over, its plane size and dtype, or None when it is not tiled:
    at least ``least`` elements (four tiles), every argument an array of one float32/float64 dtype,
    C-contiguous, of that shape, of one element (of no higher rank), or constant over planes: its
    dims (right-aligned) the shape's up to some axis and 1 after it, the same axis for all such
    arguments. The plane size is the elements of one such constant value (0 when there is none):
    a (1, 96, 1, 1) scale of a (1, 96, 80, 80) tensor has planes of 6400. The size is looked at
    first: a small tensor costs one pass over the arguments."""
    largest, widest = 0, None
    for a in args:
        if type(a) is np.ndarray and a.size > largest:
            largest, widest = a.size, a
    if widest is None or largest < (4 * TILE if least is None else least):
        return None
    shape, dtype = widest.shape, widest.dtype
    if dtype not in _FLOATS:
        return None
    block = 0
    for a in args:
        if a is None:
            continue
        if type(a) is not np.ndarray or a.dtype != dtype or not a.flags.c_contiguous:
            return None
        if a.shape == shape or (a.size == 1 and a.ndim <= len(shape)):
            continue
        plane = _plane_of(a.shape, shape)
        if plane is None or block not in (0, plane):
            return None
        block = plane
    return shape, block, dtype


def _plane_of(dims: tuple[int, ...], shape: tuple[int, ...]) -> int | None:
    """The elements over which a value of ``dims`` broadcast to ``shape`` is constant, when its
    dims (right-aligned, 1 where absent) equal the shape's up to an axis and are 1 after it:
    (96, 1, 1) in (1, 96, 80, 80) gives 6400; (2, 1) in (2, 3) gives 3; (1, 96, 1, 1) in
    (2, 96, 80, 80) gives None (the batch axis differs)."""
    if len(dims) > len(shape):
        return None
    aligned = (1,) * (len(shape) - len(dims)) + dims
    axis = len(shape)
    while axis > 0 and aligned[axis - 1] == 1 and shape[axis - 1] != 1:
        axis -= 1
    if aligned[:axis] != shape[:axis] or any(d != 1 for d in aligned[axis:]):
        return None
    return math.prod(shape[axis:])


def _run_tiles(
    ops: Sequence[tuple[Callable[..., object], tuple[int, ...]]], args: tuple[Any, ...], out: np.ndarray, block: int
) -> None:
    """Each op on each tile: sources are the arguments' tiles (a one-element argument as a 0-d
    array), then the previous op's result; intermediates in one buffer, the last op into ``out``.
    With planes of ``block`` elements (``_tiled_layout``) a tile is whole planes, seen as (planes,
    block), and an argument constant over planes as (planes, 1): each op broadcasts as the node
    does, on the same values. The ops before the first that reads a whole-tensor argument read
    only such small values: they run once, over (planes, 1), before the tiles, and the first op
    after them reads their result's rows: the SE block's HardSigmoid of a (1, 96, 1, 1) tensor
    is computed on 96 values, not once per cell."""
    target: np.ndarray
    if block:
        rows, width = out.size // block, block
        step = max(1, TILE // block)
        target = out.reshape(rows, block)
    else:
        rows, width, step = out.size, 0, TILE
        target = out.reshape(-1)
    views = [_tile_view(a, rows, width) for a in args]
    split = [a is not None and a.ndim > 0 for a in views]
    ahead = _constant_prefix(ops, views, rows, out.dtype) if block else None
    skip = 0 if ahead is None else ahead[0]
    scratch = np.empty((min(step, rows),) + target.shape[1:], out.dtype)
    last = len(ops) - 1
    with np.errstate(all="ignore"):
        for start in range(0, rows, step):
            stop = min(start + step, rows)
            sources: list[Any] = [a[start:stop] if whole else a for a, whole in zip(views, split)]
            buffer = scratch[: stop - start]
            sources.append(buffer if ahead is None else ahead[1][start:stop])
            for index in range(skip, len(ops)):
                tile, reads = ops[index]
                tile(target[start:stop] if index == last else buffer, *[sources[r] for r in reads])
                sources[-1] = buffer


def _tile_view(a: Any, rows: int, width: int) -> Any:
    """An argument as ``_run_tiles`` slices it: None, a 0-d array (one element), the whole tensor
    as (rows, width) or flat when ``width`` is 0, or a value constant over planes as (rows, 1)."""
    if a is None:
        return None
    if a.size == 1:
        return a.reshape(())
    if not width:
        return a.reshape(-1)
    return a.reshape(rows, width if a.size == rows * width else 1)


def _constant_prefix(
    ops: Sequence[tuple[Callable[..., object], tuple[int, ...]]], views: Sequence[Any], rows: int, dtype: np.dtype
) -> tuple[int, np.ndarray] | None:
    """How many leading ops read no whole-tensor argument, and their result over (rows, 1),
    computed once; None when the first op reads one."""
    count = 0
    for _, reads in ops:
        if any(r >= 0 and views[r] is not None and views[r].ndim == 2 and views[r].shape[1] != 1 for r in reads):
            break
        count += 1
    if count == 0:
        return None
    values = np.empty((rows, 1), dtype)
    with np.errstate(all="ignore"):
        for tile, reads in ops[:count]:
            tile(values, *[values if r < 0 else views[r] for r in reads])
    return count, values


# A compiled chain: its rows (code, a, b, c) and the constants it appends to the arguments, each a
# number or "low"/"high" (the dtype's limits, worked out per call).
Program = tuple[tuple[tuple[int, int, int, int], ...], tuple[Any, ...]]


def _program(codes: Sequence[tuple[Any, ...] | None], reads: Sequence[tuple[int, ...]], arguments: int) -> Program | None:
    """The compiled form of a chain (``ovpool.engine.native.compiled``), or None when a node has
    none. ``codes`` are the nodes' rows (``InPlace.code``), ``reads`` each node's sources as
    ``_chain`` numbers them (argument positions, -1 the previous node's result); the constants
    follow the ``arguments``, the type's lowest and highest first. Paddle's HardSwish of x with
    constants 3, 0, 6, 6 (arguments 0-4): rows (1, 0, 1, 0) x + 3, (5, -1, 2, 3) clip, (3, 0, -1,
    0) times x, (4, -1, 4, 0) over 6. A node whose later rows read its input again when that is
    the previous node's result saves it first: Add then HardSwish, (6, -1, 0, 0) before the
    HardSwish rows, whose last reads -2."""
    if any(code is None for code in codes):
        return None
    rows: list[tuple[int, int, int, int]] = []
    constants: list[Any] = ["low", "high"]

    def operand(value: Any, sources: tuple[int, ...], later: bool, place: int) -> int:
        if value == "prev":
            return -1
        if value in ("low", "high"):
            return arguments + (value == "high")
        if isinstance(value, int) and not isinstance(value, bool):
            if value >= len(sources):  # an omitted trailing clip bound: the type's limit
                return arguments + (place == 3)
            source = sources[value]
            return -2 if source == -1 and later else source
        constants.append(value)
        return arguments + len(constants) - 1

    for code, sources in zip(codes, reads):
        assert code is not None
        again = any(isinstance(v, int) and v < len(sources) and sources[v] == -1 for row in code[1:] for v in row[1:])
        if again:
            rows.append((CHAIN_CODES["save"], -1, 0, 0))
        for index, (name, *values) in enumerate(code):
            refs = [operand(value, sources, again and index > 0, place) for place, value in enumerate(values, start=1)]
            rows.append((CHAIN_CODES[name], *refs, *([0] * (3 - len(refs)))))  # type: ignore[arg-type]
    return tuple(rows), tuple(constants)


def _run_compiled(chain: Callable[..., None], program: Program, args: tuple[Any, ...], out: np.ndarray, plane: int) -> None:
    """The compiled chain over ``out``'s positions: the arguments (a one-element one as one
    value, one constant over planes of ``plane`` positions as one value per plane), then the
    program's constants in ``out``'s dtype. An absent argument is never read (``out`` stands in)."""
    absent = tuple(k for k, a in enumerate(args) if a is None)
    table, values = _compiled_tables(program, out.dtype, len(args), absent)
    chain(out, plane, table, *[out if a is None else a for a in args], *values)


@functools.lru_cache(maxsize=256)
def _compiled_tables(
    program: Program, dtype: np.dtype, arguments: int, absent: tuple[int, ...]
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """A program's rows as int64 and its constants in ``dtype``, worked out once per dtype; a Clip
    bound read from an ``absent`` argument (Clip-11 without that input) reads the type's limit
    instead (the constants start with both)."""
    rows, constants = program
    low, high = type_limits(dtype)
    with np.errstate(over="ignore"):  # a Clip-6 bound beyond the type becomes its infinity, as the node has it
        values = tuple(np.asarray(low if c == "low" else high if c == "high" else c, dtype).reshape(1) for c in constants)
    table = np.array(rows, dtype=np.int64).reshape(-1, 4)
    if absent:
        clips = table[:, 0] == CHAIN_CODES["clip"]
        for column, limit in ((2, arguments), (3, arguments + 1)):
            table[clips & np.isin(table[:, column], absent), column] = limit
    return table, values
