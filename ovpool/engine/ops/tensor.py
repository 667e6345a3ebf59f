"""Shape and layout operators: Concat, Reshape, Flatten, Transpose, Slice, Split, Squeeze,
Unsqueeze, Expand, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu, Range, EyeLike, ReverseSequence,
CenterCropPad, Col2Im.

Each since-version keeps its own form: attributes before inputs (Slice-1 ``starts``/``ends``,
Split-2 ``split``, Squeeze/Unsqueeze-1/11 ``axes``, Pad-2 ``pads``/``value``), negative axes only
from the version that allows them (Concat-4 refuses ``axis=-1``, Concat-11 reads it as the last
axis), later additions (Reshape-14 ``allowzero``, Split-18 ``num_outputs``, Pad-18 ``axes``,
Pad-19 ``wrap``). Inputs known when the session is prepared (shapes, pads, axes) are parsed once
in the factory; the kernels only index. Outputs of Reshape, Flatten, Transpose, Squeeze,
Unsqueeze, Slice and Split may be views of their input (no copy), as numpy's own reshapes are.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ovpool.dtypes import from_onnx, np_dtype
from ovpool.engine.memo import ShapeMemo, dtype_name
from ovpool.engine.ops.base import NO_WORK, SHAPE_VALUE, Kernel, OpNode, Traits, normalize_axes, normalize_axis, outputs, register
from ovpool.engine.ops.checks import check_type, int_attr, type_guard
from ovpool.engine.ops.precision import narrow, wide
from ovpool.errors import UnsupportedError
from ovpool.memory import check_tensor, fits
from ovpool.shape import axis_output
from ovpool.spec import Rounding

P = TypeVar("P")


def _constant(node: OpNode, index: int) -> np.ndarray | None:
    """Input ``index`` when the session knows it before any run, else None."""
    return node.constants[index] if index < len(node.constants) else None


def _prepared(node: OpNode, index: int, parse: Callable[[np.ndarray], P]) -> Callable[[np.ndarray], P]:
    """``parse`` of input ``index``: done once now when the input is a constant, else on each run."""
    value = _constant(node, index)
    if value is None:
        return parse
    parsed = parse(value)
    return lambda _: parsed


def _int_list(node: OpNode, value: Any, what: str) -> list[int]:
    """Input ``what``, a 1-D integer tensor, as Python ints (no int64 overflow in later sums)."""
    array = np.asarray(value)
    if array.ndim > 1 or (array.size and array.dtype.kind not in "iu"):
        raise node.fail(f"input '{what}' must be a 1-D integer tensor, got {array.dtype} of shape {array.shape}")
    values: list[int] = array.reshape(-1).tolist()
    return values


def _list_input(node: OpNode, index: int, name: str) -> Callable[[np.ndarray], list[int]]:
    """Input ``index``, a 1-D integer tensor called ``name``, as a list of ints (parsed once if constant)."""
    return _prepared(node, index, lambda a: _int_list(node, a, name))


def _list_source(node: OpNode, name: str, index: int, is_input: bool) -> Callable[[np.ndarray | None], list[int] | None]:
    """The integer list ``name`` (Squeeze ``axes``, Split ``split``): the attribute of that name in
    the versions where it is one, else input ``index``; None when absent."""
    if not is_input:
        given = node.attr(name)
        static = None if given is None else [int(v) for v in given]

        def from_attribute(_: np.ndarray | None) -> list[int] | None:
            return static

        return from_attribute
    parse = _list_input(node, index, name)

    def from_input(value: np.ndarray | None) -> list[int] | None:
        return None if value is None else parse(value)

    return from_input


def _static_list(node: OpNode, name: str, index: int, is_input: bool) -> tuple[bool, tuple[int, ...] | None]:
    """(known at prepare time, value) of the integer list ``name``: the attribute in the versions
    where it is one, input ``index`` when it is a constant; any other input (known only at run
    time, or omitted: an IR layer calling this kernel lists no inputs here) gives ``(False, None)``.
    Squeeze-13 with a constant axes input [0]: ``(True, (0,))``."""
    if not is_input:
        given = node.attr(name)
        return True, None if given is None else tuple(int(v) for v in given)
    value = _constant(node, index)
    if value is None:
        return False, None
    return True, tuple(_int_list(node, value, name))


def _int_scalar(node: OpNode, value: Any, what: str) -> int:
    """Input ``what``, one integer (0-D, or 1-D of one value), as a Python int."""
    array = np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "iu":
        raise node.fail(f"input '{what}' must hold one integer, got {array.dtype} of shape {array.shape}")
    return int(array.reshape(-1)[0])


def _axis(node: OpNode, axis: int, rank: int, negative: bool, attribute: str = "axis") -> int:
    """``axis`` normalised; before the version that allows negative axes, -1 is the node's error."""
    if axis < 0 and not negative:
        raise node.fail(f"{axis} is negative; {node.op_type}-{node.since} accepts only [0, {rank})", attribute)
    return normalize_axis(node, axis, rank, attribute)


def _axes(node: OpNode, axes: Sequence[int], rank: int, negative: bool, attribute: str = "axes") -> tuple[int, ...]:
    if not negative and any(a < 0 for a in axes):
        raise node.fail(f"{list(axes)} has a negative axis; {node.op_type}-{node.since} accepts only [0, {rank})", attribute)
    return normalize_axes(node, axes, rank, attribute)


# ---------------------------------------------------------------------------------------------
# Concat


@register("Concat", 1, traits=SHAPE_VALUE)
def concat(node: OpNode) -> Kernel:
    """Concat: the inputs joined along ``axis`` (Concat-1: default 1; from 4 required); negative
    from 11. (2,3) and (2,5) with axis=1 (or -1 from Concat-11) give (2,8)."""
    if "axis" not in node.attrs and node.since >= 4:
        raise node.fail("is required", "axis")
    axis = int(node.attr("axis", 1))
    negative = node.since >= 11

    def derive(shapes: tuple[tuple[int, ...], ...]) -> int:
        if not shapes:
            raise node.fail("needs at least one input")
        rank = len(shapes[0])
        a = _axis(node, axis, rank, negative)
        reference = shapes[0]
        for dims in shapes[1:]:
            if len(dims) != rank or any(d != r for i, (d, r) in enumerate(zip(dims, reference)) if i != a):
                raise node.fail(f"input shapes {list(shapes)} differ off axis {a}")
        return a

    axis_of = ShapeMemo(derive)

    def kernel(*xs: np.ndarray) -> tuple[np.ndarray, ...]:
        arrays = [np.asarray(x) for x in xs if x is not None]
        return (np.concatenate(arrays, axis=axis_of(tuple(x.shape for x in arrays))),)

    return kernel


# ---------------------------------------------------------------------------------------------
# Reshape, Flatten, Transpose, Squeeze, Unsqueeze


@register("Reshape", 5, traits=Traits(work=NO_WORK, shape_value=True))
def reshape(node: OpNode) -> Kernel:
    """Reshape-5/13 (and 14+ with ``allowzero``): 0 copies the input's dim at that position, one
    -1 takes what is left. (2,3,4) with shape [0,-1] gives (2,12); with allowzero=1 (Reshape-14+)
    a 0 is a zero-length dim, and 0 with -1 together is an error."""
    allowzero = bool(node.attr("allowzero", 0)) if node.since >= 14 else False

    def parse(shape: np.ndarray) -> list[int]:
        values = _int_list(node, shape, "shape")
        if any(v < -1 for v in values):
            raise node.fail(f"shape {values} has a value below -1")
        if values.count(-1) > 1:
            raise node.fail(f"shape {values} has more than one -1")
        if allowzero and 0 in values and -1 in values:
            raise node.fail(f"shape {values} has both 0 and -1 with allowzero=1")
        return values

    target = _prepared(node, 1, lambda s: tuple(parse(s)))

    def derive(key: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[int, ...]:
        dims, requested = key
        values = list(requested)
        size = math.prod(dims)
        for i, v in enumerate(values):
            if v == 0 and not allowzero:
                if i >= len(dims):
                    raise node.fail(f"shape {values}: 0 at position {i} copies a dim the rank-{len(dims)} input lacks")
                values[i] = dims[i]
        known = math.prod(v for v in values if v != -1)
        if -1 in values:
            if known == 0 or size % known:
                raise node.fail(f"shape {values}: -1 cannot be inferred for {size} elements of {dims}")
            values[values.index(-1)] = size // known
        elif known != size:
            raise node.fail(f"shape {values} holds {known} elements, the input {dims} has {size}")
        return tuple(values)

    out_shape = ShapeMemo(derive)

    def kernel(x: np.ndarray, shape: np.ndarray) -> tuple[np.ndarray, ...]:
        return (x.reshape(out_shape((x.shape, target(shape)))),)

    return kernel


@register("Flatten", 1, traits=Traits(work=NO_WORK))
def flatten(node: OpNode) -> Kernel:
    """Flatten: (d0*...*d(axis-1), d(axis)*...*dn); axis in [0, r] before 11, [-r, r] from 11.
    (2,3,4,5) with axis=2 gives (6,20); axis=0 gives (1,120); axis=-1 (Flatten-11+) gives (24,5)."""
    axis = int(node.attr("axis", 1))
    negative = node.since >= 11

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        rank = x.ndim
        if not (-rank if negative else 0) <= axis <= rank:
            raise node.fail(f"{axis} is outside [{-rank if negative else 0}, {rank}] for a rank-{rank} input", "axis")
        a = axis + rank if axis < 0 else axis
        outer = math.prod(x.shape[:a])
        return (x.reshape(outer, math.prod(x.shape[a:])),)

    return kernel


@register("Transpose", 1)
def transpose(node: OpNode) -> Kernel:
    """Transpose: output axis i is input axis perm[i]; without perm the axes reverse.
    (2,3,4) with perm=[1,0,2] gives (3,2,4); without perm (4,3,2)."""
    perm = node.attr("perm")
    perm = None if perm is None else [int(p) for p in perm]
    rank = len(perm) if perm is not None and sorted(perm) == list(range(len(perm))) else -1

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if perm is None:
            return (np.transpose(x),)
        if x.ndim != rank:
            raise node.fail(f"{perm} is not a permutation of the {x.ndim} axes of {x.shape}", "perm")
        return (np.transpose(x, perm),)

    return kernel


@register("Squeeze", 1, traits=Traits(work=NO_WORK, shape_value=True))
def squeeze(node: OpNode) -> Kernel:
    """Squeeze: drops the listed size-1 axes, or every size-1 axis when ``axes`` is absent.
    ``axes`` is an attribute before 13 (negative from 11) and an optional input from 13. (1,3,1,2)
    with axes=[0] gives (3,1,2), without axes (3,2). An empty ``axes`` input drops nothing."""
    negative = node.since >= 11
    static, fixed = _static_list(node, "axes", 1, node.since >= 13)
    axes_of = _list_source(node, "axes", 1, node.since >= 13)

    def derive(key: tuple[tuple[int, ...], tuple[int, ...] | None]) -> tuple[int, ...]:
        dims, axes = key
        if axes is None:
            return tuple(d for d in dims if d != 1)
        chosen = _axes(node, axes, len(dims), negative)
        if any(dims[a] != 1 for a in chosen):
            raise node.fail(f"{list(axes)} names an axis of {dims} whose size is not 1", "axes")
        return tuple(d for i, d in enumerate(dims) if i not in chosen)

    return _reshaping_by_axes(static, fixed, axes_of, derive)


def _reshaping_by_axes(
    static: bool,
    fixed: tuple[int, ...] | None,
    axes_of: Callable[[np.ndarray | None], list[int] | None],
    derive: Callable[[tuple[tuple[int, ...], tuple[int, ...] | None]], tuple[int, ...]],
) -> Kernel:
    """Squeeze's and Unsqueeze's kernel: ``x`` reshaped to ``derive((x.shape, axes))``, worked out
    once per input shape and axes (``fixed`` when the axes are an attribute or a constant input)."""
    out_shape = ShapeMemo(derive)

    def kernel(x: np.ndarray, axes_input: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        if static:
            return (x.reshape(out_shape((x.shape, fixed))),)
        axes = axes_of(axes_input)
        return (x.reshape(out_shape((x.shape, None if axes is None else tuple(axes)))),)

    return kernel


@register("Unsqueeze", 1, traits=Traits(work=NO_WORK, shape_value=True))
def unsqueeze(node: OpNode) -> Kernel:
    """Unsqueeze: inserts size-1 axes at the listed positions of the OUTPUT (rank r + len(axes)).
    ``axes`` is a required attribute before 13 (negative from 11), a required input from 13.
    (3,4,5) with axes=[0,4] gives (1,3,4,5,1); axes=[-1] (11+) gives (3,4,5,1)."""
    negative = node.since >= 11
    if node.since < 13 and node.attr("axes") is None:
        raise node.fail("is required", "axes")
    static, fixed = _static_list(node, "axes", 1, node.since >= 13)
    axes_of = _list_source(node, "axes", 1, node.since >= 13)

    def derive(key: tuple[tuple[int, ...], tuple[int, ...] | None]) -> tuple[int, ...]:
        shape, axes = key
        if axes is None:
            raise node.fail("input 'axes' is required")
        rank = len(shape) + len(axes)
        chosen = set(_axes(node, axes, rank, negative))
        dims = iter(shape)
        return tuple(1 if i in chosen else next(dims) for i in range(rank))

    return _reshaping_by_axes(static, fixed, axes_of, derive)


# ---------------------------------------------------------------------------------------------
# Slice


def _slices(
    node: OpNode,
    shape: tuple[int, ...],
    starts: list[int],
    ends: list[int],
    axes: list[int] | None,
    steps: list[int] | None,
    negative_axes: bool,
) -> tuple[slice, ...]:
    """The per-axis slices of the Slice rule (ONNX Slice-13 text, which states what 1 and 10 meant):
    negative starts/ends count from the end; then, for a positive step, start and end are clamped
    to [0, d]; for a negative step start to [0, d-1] and end to [-1, d-1], where -1 means "through
    index 0". On d=5: starts=[-2], ends=[INT64_MAX] gives indices 3,4; starts=[INT64_MAX],
    ends=[INT64_MIN], steps=[-1] gives 4,3,2,1,0."""
    if len(starts) != len(ends):
        raise node.fail(f"starts {starts} and ends {ends} differ in length")
    sliced = _sliced_axes(
        node, (shape, len(starts), None if axes is None else tuple(axes), None if steps is None else tuple(steps), negative_axes)
    )
    return _clamped(shape, sliced, starts, ends)


def _sliced_axes(
    node: OpNode, key: tuple[tuple[int, ...], int, tuple[int, ...] | None, tuple[int, ...] | None, bool]
) -> tuple[tuple[int, int, int], ...]:
    """``(axis, dim, step)`` of each sliced axis for ``(shape, count of starts, axes, steps,
    negative axes allowed)``, checked: what a Slice whose starts and ends change at every run (a
    Loop's counter) derives once per shape, axes and steps."""
    shape, count, axes, steps = key[:4]
    if axes is None:
        axes = tuple(range(count))
    if steps is None:
        steps = (1,) * count
    if not len(axes) == len(steps) == count:
        raise node.fail(f"{count} starts and ends, axes {list(axes)} and steps {list(steps)} differ in length")
    chosen = _axes(node, list(axes), len(shape), key[4])
    if 0 in steps:
        raise node.fail(f"steps {list(steps)} has a 0")
    return tuple((axis, shape[axis], step) for axis, step in zip(chosen, steps))


def _clamped(
    shape: tuple[int, ...], sliced: tuple[tuple[int, int, int], ...], starts: Sequence[int], ends: Sequence[int]
) -> tuple[slice, ...]:
    """The index of ``_slices`` from the checked axes and the starts and ends."""
    result = [slice(None)] * len(shape)
    for (axis, d, step), start, end in zip(sliced, starts, ends):
        start = start + d if start < 0 else start
        end = end + d if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), d), min(max(end, 0), d)
        else:
            start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
        result[axis] = slice(start, None if end < 0 else end, step)
    return tuple(result)


@register("Slice", 1, 9, traits=SHAPE_VALUE)
def slice_attributes(node: OpNode) -> Kernel:
    """Slice-1: ``starts``, ``ends`` (required) and ``axes`` (non-negative) attributes, step 1.
    [[1,2,3,4],[5,6,7,8]] with starts=[0,1], ends=[-1,1000] gives [[2,3,4]]."""
    if node.attr("starts") is None or node.attr("ends") is None:
        raise node.fail("needs both 'starts' and 'ends' attributes")
    starts = [int(v) for v in node.attrs["starts"]]
    ends = [int(v) for v in node.attrs["ends"]]
    axes = None if node.attr("axes") is None else [int(v) for v in node.attrs["axes"]]
    index: ShapeMemo[tuple[int, ...], tuple[slice, ...]] = ShapeMemo(
        lambda shape: _slices(node, shape, starts, ends, axes, None, False)
    )

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (x[index(x.shape)],)

    return kernel


@register("Slice", 10, traits=SHAPE_VALUE)
def slice_inputs(node: OpNode) -> Kernel:
    """Slice-10/11/13: starts, ends, axes (optional; negative from 11) and steps (optional, may be
    negative) are inputs. [1,2,3,4,5] with starts=[-1], ends=[INT64_MIN], steps=[-2] gives [5,3,1]."""
    negative_axes = node.since >= 11
    names = ("starts", "ends", "axes", "steps")
    starts_of, ends_of, axes_of, steps_of = (_list_input(node, i, name) for i, name in enumerate(names, 1))
    known = [_static_list(node, name, i, True) for i, name in enumerate(names, 1)]
    static = all(given for given, _ in known)
    fixed = tuple(value for _, value in known)

    sliced_axes = ShapeMemo(functools.partial(_sliced_axes, node))

    def derive(key: tuple[tuple[int, ...], tuple[tuple[int, ...] | None, ...]]) -> tuple[slice, ...]:
        """The index for a shape and the four lists; the axes checked once per shape, axes and
        steps (``_sliced_axes``): starts and ends from a Loop's counter change at every run."""
        shape, (starts, ends, axes, steps) = key
        if starts is None or ends is None:
            raise node.fail("inputs 'starts' and 'ends' are required")
        if len(starts) != len(ends):
            raise node.fail(f"starts {list(starts)} and ends {list(ends)} differ in length")
        return _clamped(shape, sliced_axes((shape, len(starts), axes, steps, negative_axes)), starts, ends)

    index = ShapeMemo(derive)

    def kernel(
        x: np.ndarray, starts: np.ndarray, ends: np.ndarray, axes: np.ndarray | None = None, steps: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        if static:
            return (x[index((x.shape, fixed))],)
        lists = (
            tuple(starts_of(starts)),
            tuple(ends_of(ends)),
            None if axes is None else tuple(axes_of(axes)),
            None if steps is None else tuple(steps_of(steps)),
        )
        return (x[index((x.shape, lists))],)

    return kernel


# ---------------------------------------------------------------------------------------------
# Split


@register("Split", 2)
def split(node: OpNode) -> Kernel:
    """Split into ``n`` outputs along ``axis`` (default 0; negative from 11). Sizes: the ``split``
    attribute (2-12) or input (13+); else equal parts, which must divide the axis (2-17); from 18
    either ``split`` or ``num_outputs`` (not both): chunks of ceil(d/n), the last one smaller.
    Split-18 of a length-5 axis with num_outputs=3 gives 2,2,1; of length 4 gives 2,2,0."""
    n = node.n_outputs
    axis = int(node.attr("axis", 0))
    negative = node.since >= 11
    num_outputs = node.attr("num_outputs") if node.since >= 18 else None
    if num_outputs is not None and int(num_outputs) != n:
        raise node.fail(f"{num_outputs} differs from the node's {n} outputs", "num_outputs")
    static, fixed = _static_list(node, "split", 1, node.since >= 13)
    sizes_of = _list_source(node, "split", 1, node.since >= 13)

    def derive(key: tuple[tuple[int, ...], tuple[int, ...] | None]) -> tuple[tuple[slice, ...], ...]:
        shape, given = key
        a = _axis(node, axis, len(shape), negative)
        d = shape[a]
        sizes = None if given is None else list(given)
        if sizes is not None:
            if num_outputs is not None:
                raise node.fail("has both a 'split' input and the 'num_outputs' attribute")
            if len(sizes) != n or any(s < 0 for s in sizes) or sum(sizes) != d:
                raise node.fail(f"{sizes} must be {n} sizes >= 0 that add up to {d}", "split")
        elif node.since >= 18:
            if num_outputs is None:
                raise node.fail("has neither a 'split' input nor the 'num_outputs' attribute")
            chunk = -(-d // n)
            sizes = [chunk] * (n - 1) + [d - chunk * (n - 1)]
            if sizes[-1] < 0:
                raise node.fail(f"{n} chunks of {chunk} overrun the axis of length {d}", "num_outputs")
        else:
            if d % n:
                raise node.fail(f"axis {a} of length {d} does not split into {n} equal parts")
            sizes = [d // n] * n
        bounds = np.cumsum([0, *sizes]).tolist()
        lead = (slice(None),) * a
        return tuple((*lead, slice(b, e)) for b, e in itertools.pairwise(bounds))

    parts = ShapeMemo(derive)

    def kernel(x: np.ndarray, split_input: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        if static:
            return tuple(x[part] for part in parts((x.shape, fixed)))
        sizes = sizes_of(split_input)
        return tuple(x[part] for part in parts((x.shape, None if sizes is None else tuple(sizes))))

    return kernel


# ---------------------------------------------------------------------------------------------
# Expand, Tile


@register("Expand", 8, traits=SHAPE_VALUE)
def expand(node: OpNode) -> Kernel:
    """Expand: bidirectional broadcast of the input with ``shape``. (3,1) with shape [2,1,6]
    gives (2,3,6): a 1 in ``shape`` keeps the input's dim. The output is held to the memory budget
    before it is allocated: shape [1, 40000, 40000] of a float32 input would need 6.0 GiB."""
    target = _prepared(node, 1, lambda s: tuple(_int_list(node, s, "shape")))

    def derive(key: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[int, ...]:
        try:
            return np.broadcast_shapes(*key)
        except ValueError:
            raise node.fail(f"input {key[0]} does not broadcast with shape {list(key[1])}") from None

    broadcast = ShapeMemo(derive)

    def kernel(x: np.ndarray, shape: np.ndarray) -> tuple[np.ndarray, ...]:
        out_shape = broadcast((x.shape, target(shape)))
        if not fits(math.prod(out_shape) * x.dtype.itemsize):  # the message is made only for a refusal
            check_tensor(f"{node.label}: output", out_shape, dtype_name(x.dtype), x.dtype.itemsize)
        result = np.empty(out_shape, dtype=x.dtype)
        result[...] = x
        return (result,)

    return kernel


@register("Tile", 6)
def tile(node: OpNode) -> Kernel:
    """Tile: axis i repeated repeats[i] times (one value per axis, each >= 0). (2,3) with
    repeats [2,1] gives (4,3): the rows 0,1,0,1. The output (dims times repeats) is held to the
    memory budget before it is allocated: (1,1) float32 with repeats [40000, 40000] would need 6.0 GiB."""
    parse = _list_input(node, 1, "repeats")

    def derive(key: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[list[int], tuple[int, ...], tuple[int, ...]]:
        """(output dims, the output seen as (repeat, dim) pairs, the input as (1, dim) pairs)."""
        shape, reps = key
        if len(reps) != len(shape) or any(r < 0 for r in reps):
            raise node.fail(f"repeats {list(reps)} must be {len(shape)} values >= 0 for the input {shape}")
        pairs = tuple(v for r, d in zip(reps, shape) for v in (r, d))
        ones = tuple(v for d in shape for v in (1, d))
        return [d * r for d, r in zip(shape, reps)], pairs, ones

    tiled = ShapeMemo(derive)

    def kernel(x: np.ndarray, repeats: np.ndarray) -> tuple[np.ndarray, ...]:
        out_dims, pairs, ones = tiled((x.shape, tuple(parse(repeats))))
        if not fits(math.prod(out_dims) * x.dtype.itemsize):  # the message is made only for a refusal
            check_tensor(f"{node.label}: output", out_dims, dtype_name(x.dtype), x.dtype.itemsize)
        result = np.empty(out_dims, dtype=x.dtype)
        result.reshape(pairs)[...] = x.reshape(ones)  # np.tile's copies, one broadcast assignment
        return (result,)

    return kernel


# ---------------------------------------------------------------------------------------------
# Pad


def _source_positions(mode: str, begin: int, end: int, d: int) -> np.ndarray:
    """For edge/reflect/wrap: the source index of each of the d+begin+end output positions along
    one axis (begin, end >= 0). d=4, begin=2: edge 0,0,0,1,2,3; reflect 2,1,0,1,2,3; wrap 2,3,0,1,2,3."""
    p = np.arange(-begin, d + end)
    if mode == "edge":
        return np.clip(p, 0, d - 1)
    if mode == "wrap":
        return p % d
    m = p % (2 * (d - 1))
    return np.where(m < d, m, 2 * (d - 1) - m)


def _run_of(positions: np.ndarray) -> slice | np.ndarray:
    """Border source positions as a basic slice where they are one position repeated (edge: read
    once, broadcast) or a run stepping by 1 or -1 (reflect, wrap): [4, 3, 2] -> slice(4, 1, -1),
    [0, 0, 0] -> slice(0, 1); other positions (a wrap border longer than the axis) as they are.
    A slice copies without the gather an index array costs (1 to 2 us a border)."""
    first, last = int(positions[0]), int(positions[-1])
    if (positions == first).all():
        return slice(first, first + 1)
    step = 1 if last > first else -1
    if last - first != step * (len(positions) - 1) or not (np.diff(positions) == step).all():
        return positions
    return slice(first, None if last + step < 0 else last + step, step)


class _PadLayout(NamedTuple):
    """What Pad derives from an input shape, pads, axes and mode: the output shape and bytes, the
    input cells kept (``source``, negative pads removed), where they go (``centre``), the border
    copies (a destination index and the centre index it gathers from, axis by axis) and the mode's
    refusal (raised after the memory check, as before the memo)."""

    out_shape: list[int]
    nbytes: int
    source: tuple[slice, ...]
    centre: tuple[slice, ...]
    borders: tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...]
    refusal: str | None


def _pad_layout(node: OpNode, key: tuple[tuple[int, ...], int, tuple[int, ...], tuple[int, ...] | None, str]) -> _PadLayout:
    """The layout of Pad for ``(shape, itemsize, pads, axes, mode)``: shape (5,), pads [-1, 2]
    gives output [6], source (slice(1, 5),) and centre (slice(0, 4),); reflect adds the border
    ``(slice(4, None),)`` gathered from centre positions [2, 1]."""
    shape, itemsize, pads, axes, mode = key
    rank = len(shape)
    chosen = list(range(rank)) if axes is None else list(normalize_axes(node, list(axes), rank))
    if len(pads) != 2 * len(chosen):
        raise node.fail(f"{list(pads)} must hold 2 x {len(chosen)} values (begins, then ends)", "pads")
    begins, ends = [0] * rank, [0] * rank
    for i, a in enumerate(chosen):
        begins[a], ends[a] = pads[i], pads[i + len(chosen)]
    out_shape = [d + b + e for d, b, e in zip(shape, begins, ends)]
    if any(s < 0 for s in out_shape):
        raise node.fail(f"{list(pads)} removes more than the input {shape} has", "pads")
    nbytes = math.prod(out_shape) * itemsize
    source = tuple(slice(max(-b, 0), d - max(-e, 0)) for d, b, e in zip(shape, begins, ends))
    if mode == "constant":
        centre = tuple(slice(max(b, 0), s - max(e, 0)) for s, b, e in zip(out_shape, begins, ends))
        empty = not all(s.start < s.stop for s in source)
        return _PadLayout(out_shape, nbytes, source, centre, (), "" if empty else None)
    kept = [s.stop - s.start for s in source]
    lows, highs = [max(b, 0) for b in begins], [max(e, 0) for e in ends]
    for a, (b, e, d) in enumerate(zip(lows, highs, kept)):
        if (b or e) and (d == 0 or (mode == "reflect" and (d < 2 or max(b, e) > d - 1))):
            message = f"{mode} padding of {b},{e} needs more than the {d} values left on axis {a}"
            return _PadLayout(out_shape, nbytes, source, (), (), message)
    borders: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = []
    for a, (b, e, d) in enumerate(zip(lows, highs, kept)):
        # Axis by axis, the borders are gathered from the centre of the result, whose earlier axes
        # are already padded: only border cells are written, the input is copied once.
        if not b and not e:
            continue
        lead: tuple[Any, ...] = (slice(None),) * a
        positions = _source_positions(mode, b, e, d) + b
        if b:
            borders.append(((*lead, slice(0, b)), (*lead, _run_of(positions[:b]))))
        if e:
            borders.append(((*lead, slice(b + d, None)), (*lead, _run_of(positions[b + d :]))))
    centre = tuple(slice(b, b + d) for b, d in zip(lows, kept))
    return _PadLayout(out_shape, nbytes, source, centre, tuple(borders), None)


class _Padder:
    """Pad of one node: ``_pad_layout`` worked out once per input shape, pads, axes and mode."""

    __slots__ = ("_node", "_layouts")

    def __init__(self, node: OpNode) -> None:
        self._node = node
        self._layouts: ShapeMemo[Any, _PadLayout] = ShapeMemo(functools.partial(_pad_layout, node))

    def __call__(self, x: np.ndarray, pads: Sequence[int], axes: list[int] | None, mode: str, value: Any) -> np.ndarray:
        """Pads ``x``; a negative pad removes that many values. Constant mode places input i at
        output i+begin (d=5, pads [-1, 2] with 0: [2,3,4,5,0,0]); edge/reflect/wrap crop first and
        pad the cropped axis (wrap of [1,2,3,4,5], pads [-1, 2]: [2,3,4,5,2,3]), as onnxruntime
        does. The output is held to the memory budget before it is allocated (pads 2**20 on both
        sides of a (1, 1) float32 input: 2097153 x 2097153, 16.0 TiB), whichever version the pads
        came from."""
        node = self._node
        key = (x.shape, x.dtype.itemsize, tuple(pads), None if axes is None else tuple(axes), mode)
        layout = self._layouts(key)
        if not fits(layout.nbytes):
            check_tensor(f"{node.label}: output", layout.out_shape, dtype_name(x.dtype), x.dtype.itemsize)
        if mode == "constant":
            result = np.full(layout.out_shape, value, dtype=x.dtype)
            if layout.refusal is None:
                result[layout.centre] = x[layout.source]
            return result
        if layout.refusal is not None:
            raise node.fail(layout.refusal, "pads")
        result = np.empty(layout.out_shape, dtype=x.dtype)
        result[layout.centre] = x[layout.source]
        for destination, gathered in layout.borders:
            result[destination] = result[gathered]
        return result


def _pad_mode(node: OpNode) -> str:
    mode = node.attr("mode", "constant")
    allowed = ("constant", "reflect", "edge", "wrap") if node.since >= 19 else ("constant", "reflect", "edge")
    if mode not in allowed:
        raise node.fail(f"'{mode}' is not one of {', '.join(allowed)} in {node.op_type}-{node.since}", "mode")
    return mode


@register("Pad", 2, 10)
def pad_attributes(node: OpNode) -> Kernel:
    """Pad-2: ``pads`` (required, [x1_begin, x2_begin, ..., x1_end, ...], negative removes) and
    ``value`` (float, default 0) attributes. [[1,2],[3,4]] with pads [0,2,0,0] gives
    [[0,0,1,2],[0,0,3,4]]."""
    mode = _pad_mode(node)
    if node.attr("pads") is None:
        raise node.fail("is required", "pads")
    pads = [int(p) for p in node.attrs["pads"]]
    value = float(node.attr("value", 0.0))
    pad = _Padder(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (pad(x, pads, None, mode, np.asarray(value).astype(x.dtype)),)

    return kernel


@register("Pad", 11)
def pad_inputs(node: OpNode) -> Kernel:
    """Pad-11+: ``pads`` and the optional scalar ``constant_value`` (default 0, False or '') are
    inputs; Pad-18 adds ``axes`` (pads then hold 2 values per listed axis); Pad-19 adds ``wrap``.
    A (2,3) input with pads [1,-1] and axes [1] (Pad-18) gives (2,3): one column added on the
    left, one removed on the right."""
    mode = _pad_mode(node)
    pads_of = _prepared(node, 1, lambda a: tuple(_int_list(node, a, "pads")))
    axes_of = _list_input(node, 3, "axes")
    pad = _Padder(node)

    def kernel(
        x: np.ndarray, pads: np.ndarray, constant_value: np.ndarray | None = None, axes: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        value: np.ndarray | None
        if constant_value is not None:
            value = np.asarray(constant_value)
            if value.size != 1:
                raise node.fail(f"input 'constant_value' must be one value, got shape {value.shape}")
            value = value.reshape(()).astype(x.dtype)
        else:  # edge, reflect and wrap pad with the input's own values
            value = np.zeros((), dtype=x.dtype) if mode == "constant" else None
        return (pad(x, pads_of(pads), None if axes is None else axes_of(axes), mode, value),)

    return kernel


# ---------------------------------------------------------------------------------------------
# DepthToSpace, SpaceToDepth


def _block(node: OpNode, x: np.ndarray) -> tuple[int, int, int, int, int]:
    blocksize = node.attr("blocksize")
    if blocksize is None or int(blocksize) < 1:
        raise node.fail(f"must be given and >= 1, got {blocksize}", "blocksize")
    if x.ndim != 4:
        raise node.fail(f"input must be (N, C, H, W), got shape {x.shape}")
    b, c, h, w = x.shape
    return int(blocksize), b, c, h, w


def _space_mode(node: OpNode) -> str:
    mode = node.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise node.fail(f"'{mode}' is neither DCR nor CRD", "mode")
    return mode


@register("DepthToSpace", 1)
def depth_to_space(node: OpNode) -> Kernel:
    """DepthToSpace: (N, C, H, W) -> (N, C/bs^2, H*bs, W*bs). DCR (the only mode before 11, the
    default after) reads channels as (bs, bs, C/bs^2); CRD (11+) as (C/bs^2, bs, bs). With bs=2 and
    C=4, DCR output pixel (0,1) of channel 0 comes from input channel 1, CRD's too; pixel (1,0) from
    channel 2 in both; with C=8, DCR's channel-1 block comes from channels 1,3,5,7, CRD's from 4..7."""
    mode = _space_mode(node) if node.since >= 11 else "DCR"

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        bs, b, c, h, w = _block(node, x)
        if c % (bs * bs):
            raise node.fail(f"{c} channels do not divide into blocks of {bs}x{bs}", "blocksize")
        if mode == "DCR":
            t = x.reshape(b, bs, bs, c // (bs * bs), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            t = x.reshape(b, c // (bs * bs), bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
        return (t.reshape(b, c // (bs * bs), h * bs, w * bs),)

    return kernel


@register("SpaceToDepth", 1)
def space_to_depth(node: OpNode) -> Kernel:
    """SpaceToDepth: (N, C, H, W) -> (N, C*bs^2, H/bs, W/bs), the inverse of DepthToSpace in the
    same mode (DCR only before 28, CRD from 28). With bs=2 and C=1, DCR output channels 0..3 are
    the pixels (0,0), (0,1), (1,0), (1,1) of each block."""
    mode = _space_mode(node) if node.since >= 28 else "DCR"

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        bs, b, c, h, w = _block(node, x)
        if h % bs or w % bs:
            raise node.fail(f"spatial size {h}x{w} does not divide into blocks of {bs}x{bs}", "blocksize")
        t = x.reshape(b, c, h // bs, bs, w // bs, bs)
        t = t.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else t.transpose(0, 1, 3, 5, 2, 4)
        return (t.reshape(b, c * bs * bs, h // bs, w // bs),)

    return kernel


# ---------------------------------------------------------------------------------------------
# Trilu, Range


@register("Trilu", 14)
def trilu(node: OpNode) -> Kernel:
    """Trilu-14: keeps element (i, j) of each trailing matrix where j - i >= k (upper=1, default)
    or j - i <= k (upper=0), zero elsewhere. A 3x3 of ones with upper=1, k=1 keeps (0,1), (0,2), (1,2)."""
    upper = bool(node.attr("upper", 1))
    k_of = _prepared(node, 1, lambda k: _int_scalar(node, k, "k"))

    def kernel(x: np.ndarray, k: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        if x.ndim < 2:
            raise node.fail(f"input must have rank >= 2, got shape {x.shape}")
        diagonal = 0 if k is None else k_of(k)
        offset = np.arange(x.shape[-1])[None, :] - np.arange(x.shape[-2])[:, None]
        keep = offset >= diagonal if upper else offset <= diagonal
        result = np.zeros_like(x)
        np.copyto(result, x, where=keep)
        return (result,)

    return kernel


@register("Range", 11, traits=SHAPE_VALUE)
def range_(node: OpNode) -> Kernel:
    """Range: max(ceil((limit - start) / delta), 0) values start + i*delta, computed in T (the count
    in exact arithmetic: float64 for floats, integers for ints). start=10, limit=4, delta=-2 gives
    [10, 8, 6]. Range-27 float16/bfloat16 work in float32 when stash_type=1 (the default). The
    count is held to the memory budget before any array exists: start 0, limit 2**31, delta 1 in
    float32 would need 8.0 GiB."""
    stash = int(node.attr("stash_type", 1)) if node.since >= 27 else 0

    def kernel(start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, ...]:
        values = (np.asarray(start), np.asarray(limit), np.asarray(delta))
        if values[0].size != 1 or values[1].size != 1 or values[2].size != 1:
            raise node.fail(f"start, limit and delta must be scalars, got shapes {[v.shape for v in values]}")
        dtype = values[0].dtype
        if dtype.kind in "iu":
            first, last, step = values[0].item(), values[1].item(), values[2].item()
            if step == 0:
                raise node.fail("delta is 0")
            count = max(-(-(last - first) // step), 0)
            if not fits(count * (dtype.itemsize + (8 if dtype.itemsize < 8 else 0))):  # messages only for a refusal
                check_tensor(f"{node.label}: output", [count], dtype_name(dtype), dtype.itemsize)
                if dtype.itemsize < 8:
                    # computed in int64 first: an int32 output within the budget may need twice the bytes
                    check_tensor(f"{node.label}: int64 work", [count], "int64", 8)
            return ((np.arange(count, dtype=np.int64) * step + first).astype(dtype, copy=False),)
        s, lim, d = (v.reshape(()) for v in values)
        if d == 0:
            raise node.fail("delta is 0")
        count = max(math.ceil((float(lim) - float(s)) / float(d)), 0)
        work = np.dtype(np.float32) if stash == 1 and dtype.name in ("float16", "bfloat16") else dtype
        check_tensor(f"{node.label}: output", [count], dtype_name(dtype), dtype.itemsize)
        if work.itemsize > dtype.itemsize:
            # The values are computed in a wider type first: a float16 output within the budget
            # may need twice the bytes on the way.
            check_tensor(f"{node.label}: {work.name} work", [count], work.name, work.itemsize)
        i = np.arange(count, dtype=work)
        return outputs((i * d.astype(work) + s.astype(work)).astype(dtype, copy=False))

    return kernel


# ---------------------------------------------------------------------------------------------
# EyeLike, ReverseSequence, CenterCropPad, Col2Im


@register("EyeLike", 9)
def eye_like(node: OpNode) -> Kernel:
    """EyeLike-9/22: a 2-D tensor of the input's shape with ones where ``j - i == k`` (default 0),
    zeros elsewhere, of type ``dtype`` (default: the input's): (3, 4) with k=1 has ones at (0, 1),
    (1, 2), (2, 3). EyeLike-22 adds bfloat16."""
    k = int_attr(node, "k", 0)
    target = None
    if "dtype" in node.attrs:
        try:
            target = np_dtype(from_onnx(int_attr(node, "dtype", 0)))
        except UnsupportedError as error:
            raise node.fail(str(error), "dtype") from None
        check_type(node, "T2", target, "dtype")
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        if x.ndim != 2:
            raise node.fail(f"input of shape {x.shape}: EyeLike takes a 2-D input")
        return (np.eye(x.shape[0], x.shape[1], k, dtype=target or x.dtype),)

    return kernel


@register("ReverseSequence", 10)
def reverse_sequence(node: OpNode) -> Kernel:
    """ReverseSequence-10/28: for each batch entry b (along ``batch_axis``, default 1) the first
    ``sequence_lens[b]`` steps along ``time_axis`` (default 0) reversed, the rest copied:
    [[0, 1, 2, 3]] with batch_axis=0, time_axis=1 and lens [3] gives [[2, 1, 0, 3]]. A length of
    0 or 1 copies the entry; beyond the number of steps is the node's error. ReverseSequence-28
    adds bfloat16."""
    time_axis = int_attr(node, "time_axis", 0, (0, 1))
    batch_axis = int_attr(node, "batch_axis", 1, (0, 1))
    if time_axis == batch_axis:
        raise node.fail(f"{batch_axis} is time_axis too; one must be 0 and the other 1", "batch_axis")
    check = type_guard(node)

    def kernel(x: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x, lens)
        if x.ndim < 2:
            raise node.fail(f"input of shape {x.shape}: it needs rank 2 or more")
        batch, steps = x.shape[batch_axis], x.shape[time_axis]
        if lens.shape != (batch,):
            raise node.fail(f"sequence_lens of shape {lens.shape}: it must be ({batch},), one per batch entry")
        y = x.copy()
        for b, length in enumerate(lens.tolist()):
            if not 0 <= length <= steps:
                raise node.fail(f"sequence_lens[{b}] = {length} is outside [0, {steps}]")
            target: list[Any] = [slice(None)] * x.ndim
            target[batch_axis] = b
            source = list(target)
            target[time_axis] = slice(0, length)
            source[time_axis] = slice(length - 1, None, -1) if length else slice(0, 0)
            y[tuple(target)] = x[tuple(source)]
        return (y,)

    return kernel


@register("CenterCropPad", 18)
def center_crop_pad(node: OpNode) -> Kernel:
    """CenterCropPad-18: each of ``axes`` (default all; negative from the end) cropped or padded to
    the ``shape`` input's length, centred: a crop starts at ``(in - out) // 2`` (10 -> 7 keeps
    1..7), a pad puts ``(out - in) // 2`` zeros before and the rest after (7 -> 10: 1 before, 2
    after). Strings pad with ""."""
    axes_attr = node.attr("axes")
    check = type_guard(node)

    def kernel(x: np.ndarray, shape: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x, shape)
        axes = normalize_axes(node, axes_attr, x.ndim) if axes_attr is not None else tuple(range(x.ndim))
        sizes = [int(v) for v in shape.reshape(-1).tolist()]
        if shape.ndim != 1 or len(sizes) != len(axes):
            raise node.fail(f"shape input of shape {shape.shape}: it must be 1-D, one length for each of {len(axes)} axes")
        if min(sizes, default=0) < 0:
            raise node.fail(f"shape input {sizes} holds a negative length")
        out_shape = list(x.shape)
        source: list[slice] = [slice(None)] * x.ndim
        target: list[slice] = [slice(None)] * x.ndim
        for axis, size in zip(axes, sizes):
            length = x.shape[axis]
            out_shape[axis] = size
            if length >= size:
                start = (length - size) // 2
                source[axis] = slice(start, start + size)
            else:
                start = (size - length) // 2
                target[axis] = slice(start, start + length)
        y = np.full(out_shape, "", dtype=object) if x.dtype == object else np.zeros(out_shape, x.dtype)
        y[tuple(target)] = x[tuple(source)]
        return (y,)

    return kernel


@register("Col2Im", 18)
def col2im(node: OpNode) -> Kernel:
    """Col2Im-18 (PyTorch's fold): input (N, C * prod(block_shape), L), the columns of L block
    positions, summed back into an (N, C, *image_shape) image: block position o along an axis
    covers image cells ``o * stride - pad_begin + j * dilation`` (cells in the padding are dropped)
    and L must be the product of the positions per axis, ``(image + pads - dilation * (block - 1)
    - 1) // stride + 1``: image 5, block 2, stride 1 gives 4, so a 5x5 image of 2x2 blocks has L =
    16. Numbers only (sums); integers wrap, float16 is summed in float32 and rounded once."""
    check = type_guard(node)

    def kernel(x: np.ndarray, image_shape: np.ndarray, block_shape: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x, image_shape, block_shape)
        if x.dtype.kind not in "iufV":
            raise node.fail(f"input of type {x.dtype}: ovpool's Col2Im sums numbers only")
        image = [int(v) for v in image_shape.reshape(-1).tolist()]
        block = [int(v) for v in block_shape.reshape(-1).tolist()]
        rank = len(image)
        if image_shape.ndim != 1 or block_shape.shape != image_shape.shape or rank == 0:
            raise node.fail(f"image_shape {image_shape.shape} and block_shape {block_shape.shape} must be 1-D of one length")
        if min(image + block) < 1:
            raise node.fail(f"image_shape {image} and block_shape {block} must be positive")
        strides = _spatial_attr(node, "strides", rank, [1] * rank)
        dilations = _spatial_attr(node, "dilations", rank, [1] * rank)
        pads = _spatial_attr(node, "pads", 2 * rank, [0] * (2 * rank), low=0)
        positions = [
            axis_output(image[i], block[i], strides[i], dilations[i], pads[i], pads[rank + i], Rounding.FLOOR)
            for i in range(rank)
        ]
        cells = math.prod(block)
        if x.ndim != 3 or x.shape[1] % cells or x.shape[2] != math.prod(positions) or min(positions) < 1:
            raise node.fail(
                f"input of shape {x.shape}: it must be (N, C * {cells}, {math.prod(positions)}) for blocks {block} "
                f"at {positions} positions in image {image}"
            )
        n, channels = x.shape[0], x.shape[1] // cells
        work = wide(x)
        columns = work.reshape(n, channels, *block, *positions)
        padded = np.zeros((n, channels, *(image[i] + pads[i] + pads[rank + i] for i in range(rank))), work.dtype)
        with np.errstate(over="ignore"):
            for offset in itertools.product(*(range(b) for b in block)):
                window = tuple(
                    slice(offset[i] * dilations[i], offset[i] * dilations[i] + (positions[i] - 1) * strides[i] + 1, strides[i])
                    for i in range(rank)
                )
                block_at: tuple[Any, ...] = (slice(None), slice(None), *offset)
                padded[(slice(None), slice(None), *window)] += columns[block_at]
        inside = tuple(slice(pads[i], pads[i] + image[i]) for i in range(rank))
        return (narrow(padded[(slice(None), slice(None), *inside)], x.dtype),)

    return kernel


def _spatial_attr(node: OpNode, name: str, length: int, default: list[int], low: int = 1) -> list[int]:
    """A list attribute of ``length`` ints, each at least ``low`` (Col2Im's strides, dilations, pads)."""
    values = node.attr(name, default)
    if not isinstance(values, list) or len(values) != length or any(not isinstance(v, int) or v < low for v in values):
        raise node.fail(f"{values!r} must be {length} integers of at least {low}", name)
    return [int(v) for v in values]
