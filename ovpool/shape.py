"""The shape engine: the only place in ovpool where a pooling size formula lives.

Per spatial axis: input length ``L``, kernel ``k``, stride ``s``, dilation ``d``, pads ``pb``/``pe``
and the window extent ``kd = d*(k-1)+1``. Converters, validators, executors and transforms ask these
functions; none of them repeats a formula. A dim of ``None`` is dynamic and stays ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeGuard, cast, overload

from ovpool.axis import ceil_div, tap_counts, window_extent
from ovpool.errors import SpecError
from ovpool.spec import MAX_WINDOW, Divisor, IndexOrder, Indices, Padding, PoolSpec, Rounding

if TYPE_CHECKING:  # numpy is imported by the functions that use it: size questions need none
    import numpy as np

Dim = int | None

# A pad may be longer than the input only up to this many cells: a window reaching further into
# padding than both the input's length and this reads next to nothing at great cost (OpenVINO's CPU
# plugin walks every tap: kernel 2**31-1 over 5 cells takes 13 s).
MAX_OVERHANG = 4096

# The longest dim a model may declare and ovpool read, and ``--input``/``--shape`` take: 2**31-1,
# what OpenVINO's CPU plugin holds a pooled axis in. ONNX's int64 dims and IR's text dims can say
# more (an IR dim of 2**63 is no int64 at all); every reader refuses them with ``dim_problem``.
MAX_DIM = MAX_WINDOW


def dim_problem(value: int, axis: int) -> str | None:
    """Why a declared dim is not one ovpool reads, or None: ``dim_problem(2**63, 2)`` is ``dim
    9223372036854775808 on axis 2 is over 2147483647 (2**31-1), the longest dim ovpool takes``."""
    if value > MAX_DIM:
        return f"dim {value} on axis {axis} is over {MAX_DIM} (2**31-1), the longest dim ovpool takes"
    return None


def is_static(dims: Sequence[Dim]) -> TypeGuard[Sequence[int]]:
    """Whether every dim is known: (1, 3, 4) is static, (1, None, 4) is not."""
    return all(d is not None for d in dims)


def auto_pads(length: int, kernel: int, stride: int, dilation: int, padding: Padding) -> tuple[int, int]:
    """Pads (begin, end) that ONNX auto_pad / OpenVINO auto_pad choose for one axis.

    SAME_*: the output is ``ceil(L/s)`` and the total pad ``max(0, (out-1)*s + kd - L)``, with
    dilation inside ``kd``; the odd cell goes to the end for SAME_UPPER, to the start for SAME_LOWER.
    L=5, k=3, d=2, s=2: out 3, kd 5, total (3-1)*2+5-5 = 4, pads (2, 2); with d=1 total 2, (1, 1).
    VALID and EXPLICIT: (0, 0) here (explicit pads come from the spec).
    """
    if padding not in (Padding.SAME_UPPER, Padding.SAME_LOWER):
        return 0, 0
    out = ceil_div(length, stride)
    total = max(0, (out - 1) * stride + window_extent(kernel, dilation) - length)
    small, large = total // 2, total - total // 2
    return (small, large) if padding is Padding.SAME_UPPER else (large, small)


@overload
def resolved_pads(spec: PoolSpec, spatial: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]: ...
@overload
def resolved_pads(spec: PoolSpec, spatial: Sequence[Dim]) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]: ...
def resolved_pads(spec: PoolSpec, spatial: Sequence[Dim]) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
    """Explicit (pads_begin, pads_end) of ``spec`` on an input with these spatial dims.

    Explicit pads are returned as given; SAME_* pads depend on ``L`` and are None where it is dynamic.
    """
    if spec.padding is Padding.EXPLICIT:
        return spec.pads_begin, spec.pads_end
    begin: list[Dim] = []
    end: list[Dim] = []
    for axis, length in enumerate(spatial):
        if length is None and spec.padding is not Padding.VALID:
            begin.append(None)
            end.append(None)
            continue
        pb, pe = auto_pads(length or 0, spec.kernel[axis], spec.strides[axis], spec.dilations[axis], spec.padding)
        begin.append(pb)
        end.append(pe)
    return tuple(begin), tuple(end)


def axis_output(length: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int, rounding: Rounding) -> int:
    """Number of windows along one axis with explicit pads.

    FLOOR: ``floor((L+pb+pe-kd)/s)+1``. CEIL_NO_DROP: ``ceil(...)+1``. CEIL: the same, minus one
    when the last window would start at or after ``L+pb`` (in the end padding).
    L=4, k=3, s=2, pb=pe=1: floor 2, ceil 2. L=5, k=2, s=2, no pads: floor 2, ceil 3 (the third
    window starts at 4 < 5 and keeps one input cell). L=4, k=1, s=2, pe=1: ceil gives 3 before the
    drop, whose last window starts at 4 >= 4, so CEIL gives 2 and CEIL_NO_DROP 3.
    Can be < 1 when the input is smaller than the window; callers check (``output_spatial``).
    """
    span = length + pad_begin + pad_end - window_extent(kernel, dilation)
    if rounding is Rounding.FLOOR:
        return span // stride + 1
    out = ceil_div(span, stride) + 1
    if rounding is Rounding.CEIL and last_window_in_end_pad(out, stride, length, pad_begin):
        out -= 1
    return out


def last_window_in_end_pad(windows: int, stride: int, length: int, pad_begin: int) -> bool:
    """Whether the last of ``windows`` windows starts at or after ``length + pad_begin``, in the end
    padding: the ONNX ceil rule (OpenVINO's ``ceil_torch``) drops it, ``CEIL_NO_DROP`` (OpenVINO's
    ``ceil``) keeps it. 4 windows of stride 3 over 7 cells with 1 pad at the begin: the fourth starts
    at 9 >= 8, dropped."""
    return (windows - 1) * stride >= length + pad_begin


@overload
def output_spatial(spec: PoolSpec, spatial: Sequence[int]) -> tuple[int, ...]: ...
@overload
def output_spatial(spec: PoolSpec, spatial: Sequence[Dim]) -> tuple[Dim, ...]: ...
def output_spatial(spec: PoolSpec, spatial: Sequence[Dim]) -> tuple[Dim, ...]:
    """Output spatial dims of a windowed or global pool (not unpool: see ``unpool_output_spatial``).

    SAME_*: ``ceil(L/s)`` whatever the rounding (ONNX allows ceil_mode with auto_pad; the sizes equal
    floor's). VALID: ``floor((L-kd)/s)+1`` (ceil gives the same count). Explicit: ``axis_output``.
    """
    if spec.is_global:
        return tuple(1 for _ in spatial)
    if len(spatial) != len(spec.kernel):
        _check_rank(spec, spatial)
    padding, rounding = spec.padding, spec.rounding
    pads_begin: tuple[Dim, ...]
    pads_end: tuple[Dim, ...]
    if padding is Padding.EXPLICIT:  # pads as given: no need to resolve them (validating IR asks ~20,000 times)
        pads_begin, pads_end = spec.pads_begin, spec.pads_end
    else:
        pads_begin, pads_end = resolved_pads(spec, spatial)
    out: list[Dim] = []
    for axis, (length, k, s, d) in enumerate(zip(spatial, spec.kernel, spec.strides, spec.dilations)):
        if length is None:
            out.append(None)
            continue
        _check_input_axis(spec, axis, length, pads_begin[axis] or 0, pads_end[axis] or 0)
        if padding in (Padding.SAME_UPPER, Padding.SAME_LOWER):
            n = ceil_div(length, s)
        elif padding is Padding.VALID:
            n = axis_output(length, k, s, d, 0, 0, Rounding.FLOOR)
        else:
            n = axis_output(length, k, s, d, pads_begin[axis] or 0, pads_end[axis] or 0, rounding)
        if n < 1:
            raise SpecError(
                spec.name,
                "kernel_shape",
                spec.kernel,
                f"axis {axis}: input length {length} plus pads is smaller than the window extent {window_extent(k, d)}",
            )
        out.append(n)
    return tuple(out)


def _check_input_axis(spec: PoolSpec, axis: int, length: int, pad_begin: int, pad_end: int) -> None:
    """One axis of the input against the spec: the padded length ``L + pb + pe`` at most
    ``MAX_WINDOW`` (OpenVINO's CPU plugin pools in 32-bit integers), and no pad longer than both
    ``L`` and ``MAX_OVERHANG`` (L=5: pads up to 4096; L=10000: pads up to 10000)."""
    if length + pad_begin + pad_end > MAX_WINDOW:
        raise SpecError(
            spec.name,
            "pads",
            (pad_begin, pad_end),
            f"axis {axis}: input length {length} plus pads is {length + pad_begin + pad_end}, over 2**31-1 "
            "(OpenVINO's CPU plugin pools in 32-bit integers)",
        )
    if max(pad_begin, pad_end) > max(length, MAX_OVERHANG):
        how = "" if spec.padding is Padding.EXPLICIT else f" (auto_pad {spec.padding.value.upper()} on input length {length})"
        raise SpecError(
            spec.name,
            "pads",
            (pad_begin, pad_end),
            f"axis {axis}: a pad of {max(pad_begin, pad_end)}{how} is longer than both the input ({length}) and "
            f"{MAX_OVERHANG} cells: its windows would be almost all padding",
        )


def tensor_bytes(dims: Sequence[int], itemsize: int) -> int:
    """Bytes of a dense tensor with dims >= 0: elements times element size (1x3x224x224 float32:
    602,112); a zero dim gives 0."""
    return math.prod(int(d) for d in dims) * itemsize


@overload
def output_shape(spec: PoolSpec, input_shape: Sequence[int]) -> tuple[int, ...]: ...
@overload
def output_shape(spec: PoolSpec, input_shape: Sequence[Dim]) -> tuple[Dim, ...]: ...
def output_shape(spec: PoolSpec, input_shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """Full output shape ``(N, C, *spatial)`` of a pool on an ``(N, C, *spatial)`` input."""
    check_input_rank(spec, len(input_shape))
    return tuple(input_shape[:2]) + output_spatial(spec, input_shape[2:])


def check_input_rank(spec: PoolSpec, rank: int) -> None:
    """Pooling reads its input as ``(N, C, *spatial)``: a rank below 3 is a ``SpecError`` naming
    the node (``input rank 2 < 3: pooling needs N, C and a spatial axis``; a scalar is rank 0)."""
    if rank < 3:
        raise SpecError(spec.name, None, None, f"input rank {rank} < 3: pooling needs N, C and a spatial axis")


@overload
def unpool_output_spatial(spec: PoolSpec, spatial: Sequence[int]) -> tuple[int, ...]: ...
@overload
def unpool_output_spatial(spec: PoolSpec, spatial: Sequence[Dim]) -> tuple[Dim, ...]: ...
def unpool_output_spatial(spec: PoolSpec, spatial: Sequence[Dim]) -> tuple[Dim, ...]:
    """MaxUnpool's inferred output dims: ``(in-1)*s + k - pb - pe`` per axis (the inverse of the
    floor rule). in=2, k=2, s=2, no pads: 4; in=3, k=3, s=2, pads (1, 1): 5."""
    _check_rank(spec, spatial)
    out: list[Dim] = []
    for axis, (length, (scale, offset)) in enumerate(zip(spatial, unpool_output_affine(spec))):
        if length is None:
            out.append(None)
            continue
        n = length * scale + offset
        if n < 1:
            raise SpecError(spec.name, "pads", spec.pads_begin + spec.pads_end, f"axis {axis}: gives output length {n} < 1")
        out.append(n)
    return tuple(out)


def unpool_output_affine(spec: PoolSpec) -> tuple[tuple[int, int], ...]:
    """MaxUnpool's inferred output per axis as ``in*scale + offset``, for a graph that computes it
    from a dynamic input length at run time: ``(in-1)*s + k - pb - pe`` is scale ``s`` and offset
    ``k - pb - pe - s``. k=3, s=2, pads (1, 1): (2, -1), so in=3 gives 5."""
    return tuple((s, k - pb - pe - s) for k, s, pb, pe in zip(spec.kernel, spec.strides, spec.pads_begin, spec.pads_end))


def divisor_counts(spec: PoolSpec, spatial: Sequence[int]) -> list[np.ndarray]:
    """Per axis, the divisor factor of each output position; an average divides by their product.

    The tap set of a window is a box and so is the counted region, so the count factorises by axis.
    EXCLUDE_PAD counts taps in ``[0, L)``; INCLUDE_PAD in ``[-pb, L+pe)``, not the ceil overhang.
    L=4, k=3, s=2, pads 1/1, ceil: 3 windows, the last over cells 3, 4, 5; INCLUDE_PAD counts
    [3, 3, 2] (cell 5 is overhang), EXCLUDE_PAD [2, 3, 1].
    FULL_KERNEL_IF_PADDED: ``k`` everywhere when any pad is non-zero, else EXCLUDE_PAD.
    """
    import numpy as np

    window = spec.resolve_global(tuple(spatial))
    pads_begin, pads_end = resolved_pads(window, spatial)
    out = output_spatial(window, spatial)
    padded = any(p for p in pads_begin + pads_end)
    counts = []
    for axis, length in enumerate(spatial):
        k, s, d = window.kernel[axis], window.strides[axis], window.dilations[axis]
        pb, pe = pads_begin[axis], pads_end[axis]
        if window.divisor is Divisor.FULL_KERNEL_IF_PADDED and padded:
            counts.append(np.full(out[axis], k, dtype=np.int64))
            continue
        low, high = (-pb, length + pe) if window.divisor is Divisor.INCLUDE_PAD else (0, length)
        counts.append(tap_counts(length, out[axis], k, s, d, pb, low, high))
    return counts


def empty_windows(spec: PoolSpec, spatial: Sequence[int]) -> list[tuple[int, int]]:
    """(axis, output index) of every window with no tap inside the input, e.g. OpenVINO ``ceil``
    without the drop rule: L=4, k=1, s=2, pe=1 has a third window at 4, wholly in padding."""
    import numpy as np

    window = spec.resolve_global(tuple(spatial))
    pads_begin, _ = resolved_pads(window, spatial)
    out = output_spatial(window, spatial)
    found: list[tuple[int, int]] = []
    for axis, length in enumerate(spatial):
        counts = tap_counts(
            length, out[axis], window.kernel[axis], window.strides[axis], window.dilations[axis], pads_begin[axis], 0, length
        )
        found.extend((axis, int(i)) for i in np.flatnonzero(counts == 0))
    return found


def empty_window_error(spec: PoolSpec, spatial: Sequence[int]) -> SpecError | None:
    """The error for the first window with no input cell (``empty_windows``), or None when every
    window reads the input: L=4, k=1, s=2, pe=1 with OpenVINO ``ceil`` gives
    ``attribute 'pads' = [0, 1]: output 2 of axis 0 has no input cell in its window``."""
    empty = empty_windows(spec, spatial)
    if not empty:
        return None
    axis, index = empty[0]
    return SpecError(
        spec.name, "pads", spec.pads_begin + spec.pads_end, f"output {index} of axis {axis} has no input cell in its window"
    )


def simplest_form(spec: PoolSpec, spatial: Sequence[Dim]) -> PoolSpec:
    """The same windows, in the form with the fewest features: SAME/VALID pads made explicit when
    the dims are known (floor: auto padding never rounds), a ceil that adds no window made floor.
    L=6, k=2, s=2 with ceil: 3 windows either way, so floor (IR ``rounding_type="floor"``, opset1)."""
    static = all(d is not None for d in spatial)
    if spec.padding is not Padding.EXPLICIT:
        if not static and spec.padding is not Padding.VALID:
            return spec.with_(rounding=Rounding.FLOOR)
        # Static dims, or VALID (pads 0 whatever the length): no pad is None.
        begin, end = cast("tuple[tuple[int, ...], tuple[int, ...]]", resolved_pads(spec, spatial))
        spec = spec.with_(padding=Padding.EXPLICIT, pads_begin=begin, pads_end=end, rounding=Rounding.FLOOR)
    if static and spec.rounding is not Rounding.FLOOR:
        if output_spatial(spec, spatial) == output_spatial(spec.with_(rounding=Rounding.FLOOR), spatial):
            spec = spec.with_(rounding=Rounding.FLOOR)
    return spec


def ceil_overhang(spec: PoolSpec, spatial: Sequence[int], out: Sequence[int] | None = None) -> tuple[int, ...]:
    """Per axis, how many cells the last window reaches past the end pad (ceil rounding only).
    ``out`` overrides the window counts (a DirectML OutputTensor's spatial sizes).

    ``(out-1)*s + kd - (L+pb+pe)``, at least 0. L=4, k=3, s=2, pads 1/1, ceil: 3 windows, the last
    over padded cells 4..6 of a padded length 6, so overhang 1; floor never overhangs (0).
    """
    window = spec.resolve_global(tuple(spatial))
    pads_begin, pads_end = resolved_pads(window, spatial)
    out = output_spatial(window, spatial) if out is None else tuple(out)
    extent = window.dilated_kernel
    return tuple(
        max(0, (out[a] - 1) * window.strides[a] + extent[a] - (length + pads_begin[a] + pads_end[a]))
        for a, length in enumerate(spatial)
    )


# A dim as (lower, upper) bounds, upper None unbounded: ``7`` is (7, 7), ``?`` (0, None), ``1..10``
# (1, 10). The IR reader reads them from IR text, ``ovpool.inputs`` from ``--input``.
Bound = tuple[int, int | None]


def format_bound(bound: Bound) -> str:
    """The IR spelling of a dim: (6, 6) -> "6", (0, None) -> "?", (1, 10) -> "1..10", (2, None) -> "2.."."""
    low, high = bound
    if low == high:
        return str(low)
    if high is None:
        return "?" if low == 0 else f"{low}.."
    return f"{low}..{high}" if low else f"..{high}"


def output_spatial_bounds(spec: PoolSpec, bounds: Sequence[Bound]) -> tuple[Bound, ...]:
    """Output (lower, upper) per spatial axis for inputs known only within bounds (IR ``1..10``).

    The window count grows with ``L``, so each bound maps through ``output_spatial``; a lower bound
    too small for one window gives 1 (as OpenVINO infers), an upper bound of None stays None.
    k=3, s=2, pads 1/0, floor: input 1..10 gives 1..5; input 4.. gives 2.. .
    Static bounds, (6, 6), are the plain ``output_spatial`` of the lengths (one call for all axes).
    """
    lengths = [low for low, high in bounds if low == high]
    if len(lengths) == len(bounds):
        return tuple([(n, n) for n in output_spatial(spec, lengths)])
    result: list[Bound] = []
    for axis, (low, high) in enumerate(bounds):
        result.append((_axis_count(spec, len(bounds), axis, low, floor_at_one=True), _axis_count(spec, len(bounds), axis, high)))
    return tuple(result)


@overload
def _axis_count(spec: PoolSpec, rank: int, axis: int, length: int, floor_at_one: bool = False) -> int: ...
@overload
def _axis_count(spec: PoolSpec, rank: int, axis: int, length: int | None, floor_at_one: bool = False) -> int | None: ...
def _axis_count(spec: PoolSpec, rank: int, axis: int, length: int | None, floor_at_one: bool = False) -> int | None:
    """Output length of ``axis`` for input ``length`` there (the other axes dynamic): an int for an
    int length (only dynamic inputs give dynamic outputs), None for None."""
    if length is None:
        return None
    spatial: list[Dim] = [None] * rank
    spatial[axis] = length
    try:
        return output_spatial(spec, spatial)[axis]
    except SpecError:
        if floor_at_one:
            return 1
        raise


def index_strides(shape: Sequence[int], indices: Indices) -> tuple[int, int, tuple[int, ...]]:
    """Multipliers (n, c, per spatial axis) that turn coordinates into a flat max index.

    For 1x2x4x4, row-major, axis 0: (32, 16, (4, 1)); column-major (ONNX storage_order=1):
    (32, 16, (1, 4)), so (h=2, w=3) is 2 + 3*4 = 14; axis 2: (0, 0, (4, 1)).
    """
    channels, spatial = shape[1], tuple(shape[2:])
    plane = int(math.prod(spatial))
    if indices.order is IndexOrder.ROW_MAJOR:
        steps = tuple(int(math.prod(spatial[a + 1 :])) for a in range(len(spatial)))
    else:
        steps = tuple(int(math.prod(spatial[:a])) for a in range(len(spatial)))
    n_step = channels * plane if indices.axis == 0 else 0
    c_step = plane if indices.axis <= 1 else 0
    return n_step, c_step, steps


def _check_rank(spec: PoolSpec, spatial: Sequence[Dim]) -> None:
    """One kernel axis per spatial axis of the input: kernel [3] on a 1x1x5x5 input is refused as
    ``has 1 axis but the input has 2 spatial axes``."""
    if not spec.is_global and len(spatial) != spec.rank:
        kernel_axes = f"{spec.rank} axis" if spec.rank == 1 else f"{spec.rank} axes"
        input_axes = f"{len(spatial)} spatial axis" if len(spatial) == 1 else f"{len(spatial)} spatial axes"
        raise SpecError(spec.name, "kernel_shape", spec.kernel, f"has {kernel_axes} but the input has {input_axes}")


def floor_end_pads(spec: PoolSpec, spatial: Sequence[int], out: Sequence[int] | None = None) -> tuple[int, ...]:
    """End pads under which FLOOR rounding gives exactly the windows of ``spec``'s rounding
    (or ``out`` windows per axis when given).

    A window starts at ``i*s - pb`` whatever the rounding; rounding only decides how many there
    are. FLOOR keeps the last window iff it ends inside the padded input, so the end pad must grow
    by the ceil overhang: ``pe' = pe + ceil_overhang``. L=4, k=3, s=2, pads (1, 1), CEIL: 3
    windows, the last over cells 3..5, so ``pe' = 1 + 1 = 2``; with FLOOR there are 2 and ``pe'``
    stays 1. The extra cells are never read by a max or an exclude-pad average; an include-pad
    average must not count them. Under the drop rule the last window starts before ``L``, so
    ``pe' < kd``.
    """
    _, pads_end = resolved_pads(spec, spatial)
    return tuple(pe + extra for pe, extra in zip(pads_end, ceil_overhang(spec, spatial, out)))


@overload
def padded_shape(shape: Sequence[int], pads_begin: Sequence[int], pads_end: Sequence[int]) -> tuple[int, ...]: ...
@overload
def padded_shape(shape: Sequence[Dim], pads_begin: Sequence[int], pads_end: Sequence[int]) -> tuple[Dim, ...]: ...
def padded_shape(shape: Sequence[Dim], pads_begin: Sequence[int], pads_end: Sequence[int]) -> tuple[Dim, ...]:
    """Shape after padding every axis: ``d + b + e`` (1x3x4x4 padded by (0,0,1,1)/(0,0,1,2) is
    1x3x6x7); a dynamic dim (None) stays None. ``pads_*`` cover every axis, N and C included
    (DirectML PADDING, ONNX Pad, OpenVINO Pad)."""
    if not len(shape) == len(pads_begin) == len(pads_end):
        raise SpecError("", "pads", list(pads_begin) + list(pads_end), f"need one begin and end pad per axis of {list(shape)}")
    return tuple(None if d is None else int(d) + int(b) + int(e) for d, b, e in zip(shape, pads_begin, pads_end))


@overload
def unit_axis_shape(shape: Sequence[int]) -> tuple[int, ...]: ...
@overload
def unit_axis_shape(shape: Sequence[Dim]) -> tuple[Dim, ...]: ...
def unit_axis_shape(shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """A 1-D pooling tensor as 2-D: a unit axis before the one spatial axis (1x3x8 -> 1x3x1x8).
    The element order, hence every flat index, is unchanged."""
    return tuple(shape[:2]) + (1,) + tuple(shape[2:])


def unit_axis_spec(spec: PoolSpec) -> PoolSpec:
    """A 1-D pool as the 2-D pool it equals on ``unit_axis_shape`` inputs: the new leading axis
    has kernel 1, stride 1, dilation 1 and no pads (kernel (3,), stride (2,) -> (1, 3), (1, 2))."""
    if spec.is_global or spec.rank != 1:
        return spec
    return spec.with_(
        kernel=(1,) + spec.kernel,
        strides=(1,) + spec.strides,
        dilations=(1,) + spec.dilations,
        pads_begin=(0,) + spec.pads_begin,
        pads_end=(0,) + spec.pads_end,
    )


def drop_unit_axis(spec: PoolSpec) -> PoolSpec:
    """The inverse of ``unit_axis_spec``: a 2-D pool whose first axis is kernel 1, stride 1,
    dilation 1 and unpadded, as the 1-D pool it equals ((1, 3) -> (3,)). Anything else raises."""
    trivial = (spec.kernel[0], spec.strides[0], spec.dilations[0], spec.pads_begin[0], spec.pads_end[0])
    if spec.rank != 2 or trivial != (1, 1, 1, 0, 0):
        raise SpecError(spec.name, "kernel_shape", spec.kernel, "is not a 1-D pool with a unit leading axis")
    return spec.with_(
        kernel=spec.kernel[1:],
        strides=spec.strides[1:],
        dilations=spec.dilations[1:],
        pads_begin=spec.pads_begin[1:],
        pads_end=spec.pads_end[1:],
    )


def rounding_for(spec: PoolSpec, spatial: Sequence[int], out_spatial: Sequence[int]) -> Rounding | None:
    """Which rounding of ``spec`` gives exactly these output dims (explicit pads), preferring
    FLOOR, then CEIL, then CEIL_NO_DROP; None if none does. L=5, k=2, s=2: out 2 is FLOOR, out 3
    is CEIL, out 4 is none. This is how a DirectML OutputTensor size is read as a rounding."""
    for rounding in (Rounding.FLOOR, Rounding.CEIL, Rounding.CEIL_NO_DROP):
        candidate = spec.with_(rounding=rounding)
        try:
            if tuple(output_spatial(candidate, spatial)) == tuple(out_spatial):
                return rounding
        except SpecError:
            continue
    return None


def index_span(shape: Sequence[int], axis: int) -> int:
    """How many positions a max index counted from ``axis`` ranges over: the product of the dims
    from ``axis`` on (1x2x4x4: axis 0 32, axis 1 32, axis 2 16). An ONNX (axis 0) index modulo
    this span is the OpenVINO MaxPool-8 index for that ``axis``."""
    return math.prod(int(d) for d in tuple(shape)[axis:])


def buffer_bytes(sizes: Sequence[int], itemsize: int, alignment: int = 4, strides: Sequence[int] | None = None) -> int:
    """Bytes of a tensor buffer: elements times element size, rounded up to ``alignment``
    (DirectML's DMLCalcBufferTensorSize binds DWORD-aligned buffers): 1x3x5 float16 is 15*2 = 30
    -> 32 bytes. With element ``strides`` the buffer reaches the last element's offset plus one,
    ``1 + sum((size - 1) * stride)``: 1x3x2x2 uint8 viewed channels-last (12, 1, 6, 3) is 12 -> 12."""
    if strides is None:
        elements = math.prod(int(d) for d in sizes)
    else:
        elements = 1 + sum((int(d) - 1) * int(s) for d, s in zip(sizes, strides))
    return ceil_div(elements * itemsize, alignment) * alignment
