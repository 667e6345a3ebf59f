"""Chains of element-wise nodes computed tile by tile.

HardSwish as paddle writes it is four nodes (``Add 3 -> Clip 0..6 -> Mul x -> Div 6``), SiLU two
(``Sigmoid -> Mul x``). Run node by node, each pass reads and writes the whole tensor: an 11 MB
tensor leaves the cache between passes. A *chain* is a sequence of steps of the plan, each an
element-wise kernel with a tile form (:class:`ovpool.runtime.ops.elementwise.InPlace`), each the
one reader of the output of the one before, which dies there. The chain runs as one step, where
its last node stood (exporters often list the Sigmoids of several branches before their Muls): for each
tile of ``TILE`` elements, every node's operation in order, on the tile (intermediates in one
tile-sized buffer), the last one writing the chain's output: the same operations on the same
values in the same order, so the same bits as node by node. It pays from about four tiles on:
(1, 96, 200, 152) float32 HardSwish in 0.77 of the time node by node, (1, 96, 100, 76) in 0.9.

A chain is tiled at run time only when every argument is a C-contiguous float32/float64 array of
one dtype, of one shape or of one element (a scalar constant), and the tensor holds at least four
tiles; otherwise its steps run one after the other as the plan had them. Its output is a new
array, or the buffer of an argument that dies in the chain and that the plan may give up
(``ovpool.runtime.inplace``): each tile of it is written after the chain's last read of it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence, Set
from typing import Any

import numpy as np

from ovpool.runtime.ops.base import Kernel
from ovpool.runtime.ops.compiled import CHAIN_CODES, chain_for
from ovpool.runtime.ops.elementwise import InPlace, type_limits

TILE = 1 << 16  # elements of a tile: 256 KiB of float32, in the L2 cache with its intermediate
# A chain whose every node has a compiled form (``InPlace.code``) runs compiled from this size on
# (one call, blocks of 256 positions in the first-level cache; below it, node by node is as quick).
COMPILED_LEAST = 1 << 10

PlanStep = tuple[Kernel, tuple[int, ...], tuple[int, ...], tuple[int, ...], str]

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

    def kernel(*args: Any) -> tuple[np.ndarray, ...]:
        compiled = None if program is None else _tiled_shape(args, COMPILED_LEAST)
        shape = compiled or _tiled_shape(args)
        if shape is None:
            return one_by_one(args)
        dtype = next(a.dtype for a in args if a is not None)
        out = next((args[p] for p in donors if args[p].shape == shape and args[p].flags.writeable), None)
        if out is None:
            out = np.empty(shape, dtype)
        chain = None if compiled is None else chain_for(dtype)
        if chain is not None:
            assert program is not None
            _run_compiled(chain, program, args, out)
        elif compiled is not None and _tiled_shape(args) is None:
            return one_by_one(args)
        else:
            _run_tiles(ops, args, out)
        return (out,)

    first, last = steps[0][4], steps[-1][4]
    return (kernel, tuple(external), steps[-1][2], frees, f"{first} .. {last} (a chain of {len(steps)} element-wise nodes)")


def _tile_of(kernel: Kernel) -> Callable[..., object]:
    assert isinstance(kernel, InPlace) and kernel.tile is not None
    return kernel.tile


def _tiled_shape(args: tuple[Any, ...], least: int | None = None) -> tuple[int, ...] | None:
    """The shape the chain is tiled over, or None when it is not: at least ``least`` elements
    (four tiles), every argument an array of one float32/float64 dtype, C-contiguous, of that
    shape or of one element (of no higher rank). The size is looked at first: a small tensor
    costs one comparison."""
    largest = max((a.size for a in args if type(a) is np.ndarray), default=0)
    if largest < (4 * TILE if least is None else least):
        return None
    shape, dtype = next((a.shape, a.dtype) for a in args if type(a) is np.ndarray and a.size == largest)
    for a in args:
        if a is None:
            continue
        if type(a) is not np.ndarray or a.dtype != dtype or dtype not in _FLOATS:
            return None
        if a.size == 1 and a.ndim <= len(shape):
            continue
        if a.shape != shape or not a.flags.c_contiguous:
            return None
    return shape


def _run_tiles(ops: Sequence[tuple[Callable[..., object], tuple[int, ...]]], args: tuple[Any, ...], out: np.ndarray) -> None:
    """Each op on each tile: sources are the arguments' tiles (a one-element argument as a 0-d
    array), then the previous op's result; intermediates in one buffer, the last op into ``out``."""
    flat_out = out.reshape(-1)
    size = flat_out.size
    flat = [None if a is None else (a.reshape(()) if a.size == 1 else a.reshape(-1)) for a in args]
    full = [a is not None and a.ndim == 1 for a in flat]
    scratch = np.empty(min(TILE, size), out.dtype)
    last = len(ops) - 1
    with np.errstate(all="ignore"):
        for start in range(0, size, TILE):
            stop = min(start + TILE, size)
            sources: list[Any] = [a[start:stop] if whole and a is not None else a for a, whole in zip(flat, full)]
            buffer = scratch[: stop - start]
            sources.append(buffer)
            for index, (tile, reads) in enumerate(ops):
                tile(flat_out[start:stop] if index == last else buffer, *[sources[r] for r in reads])


# A compiled chain: its rows (code, a, b, c) and the constants it appends to the arguments, each a
# number or "low"/"high" (the dtype's limits, worked out per call).
Program = tuple[tuple[tuple[int, int, int, int], ...], tuple[Any, ...]]


def _program(codes: Sequence[tuple[Any, ...] | None], reads: Sequence[tuple[int, ...]], arguments: int) -> Program | None:
    """The compiled form of a chain (``ovpool.runtime.ops.compiled``), or None when a node has
    none. ``reads`` are each node's sources as ``_chain`` numbers them (argument positions, -1
    the previous node's result); the constants follow the ``arguments``, the type's lowest and
    highest first when a node clips. HardSwish of x with constants 3, 0, 6, 6 (arguments 0-4):
    rows (1, 0, 1, 0) x + 3, (5, -1, 2, 3) clip, (3, 0, -1, 0) times x, (4, -1, 4, 0) over 6;
    Relu of x + b (arguments 0, 1): (1, 0, 1, 0), (5, -1, 4, 5) with constants lowest, highest,
    0.0 and inf."""
    if any(code is None for code in codes):
        return None
    rows: list[tuple[int, int, int, int]] = []
    constants: list[Any] = ["low", "high"] if any(code[0] == "clip" for code in codes if code) else []

    def constant(value: Any) -> int:
        constants.append(value)
        return arguments + len(constants) - 1

    for code, sources in zip(codes, reads):
        assert code is not None
        if code[0] != "clip":
            rows.append((CHAIN_CODES[code[0]], sources[0], sources[1], 0))
            continue
        bounds = []
        for place, bound in enumerate(code[1:], start=1):
            if bound is None and len(sources) > place:
                bounds.append(sources[place])  # an absent input is None at run time: the limit then
            elif bound is None or bound == "type":
                bounds.append(arguments + place - 1)
            else:
                bounds.append(constant(bound))
        rows.append((CHAIN_CODES["clip"], sources[0], bounds[0], bounds[1]))
    return tuple(rows), tuple(constants)


def _run_compiled(chain: Callable[..., None], program: Program, args: tuple[Any, ...], out: np.ndarray) -> None:
    """The compiled chain over ``out``'s positions: the arguments (a one-element one as one
    value), then the program's constants in ``out``'s dtype."""
    n = out.size
    absent = tuple(k for k, a in enumerate(args) if a is None)
    values, table, held = _compiled_tables(program, out.dtype, len(args), absent)
    given = [out if a is None else a for a in args]  # an absent argument is never read
    addresses = np.array([a.ctypes.data for a in given] + held, dtype=np.int64)
    sizes = np.array([1 if a.size == 1 else n for a in given] + [1] * len(values), dtype=np.int64)
    chain(n, addresses.ctypes.data, sizes.ctypes.data, len(table), table.ctypes.data, out.ctypes.data)


@functools.lru_cache(maxsize=256)
def _compiled_tables(
    program: Program, dtype: np.dtype, arguments: int, absent: tuple[int, ...]
) -> tuple[list[np.ndarray], np.ndarray, list[int]]:
    """A program's constants in ``dtype``, its rows as int64 and the constants' addresses, worked
    out once per dtype; a Clip bound read from an ``absent`` argument (Clip-11 without that input)
    reads the type's limit instead (the constants start with both)."""
    rows, constants = program
    low, high = type_limits(dtype)
    values = [np.asarray(low if c == "low" else high if c == "high" else c, dtype).reshape(1) for c in constants]
    table = np.array(rows, dtype=np.int64).reshape(-1, 4)
    if absent:
        clips = table[:, 0] == CHAIN_CODES["clip"]
        for column, limit in ((2, arguments), (3, arguments + 1)):
            table[clips & np.isin(table[:, column], absent), column] = limit
    return values, table, [value.ctypes.data for value in values]
