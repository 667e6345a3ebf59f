"""Shape and layout IR layers: Concat, Reshape, Squeeze, Transpose, slicing, splitting, Gather,
Broadcast, Tile, Pad, Range.

- Reshape with ``special_zero="true"``: a 0 copies the input's dim (ONNX Reshape's 0); ``false``:
  a 0 is an empty dim (ONNX ``allowzero=1``).
- StridedSlice masks (one flag per entry of ``begin``): ``begin_mask``/``end_mask`` 1 ignores that
  begin or end (the axis's start or end is taken), ``new_axis_mask`` inserts an axis of 1,
  ``shrink_axis_mask`` takes the single index ``begin`` and drops the axis, ``ellipsis_mask``
  stands for every axis not named: (4, 5, 6) with begin [1, 0], end [3, 0], masks begin [0, 1],
  end [0, 1], shrink [0, 0] gives x[1:3, :] of shape (2, 5, 6). With a negative stride a begin
  before the axis starts at its first element (begin -6, end -6, stride -1 on 5 elements keeps
  element 0; numpy's slice keeps none).
- Gather's ``batch_dims`` leading axes of data and indices are walked together.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ovpool.engine.ir_layers.base import LayerNode, cached, int64, int64_input, ints_of, layer
from ovpool.engine.ops.base import NO_WORK, Kernel, Traits


@layer("Concat", 1)
def concat(node: LayerNode) -> Kernel:
    """Concat-1 along ``axis`` (negative counts from the end)."""
    return node.onnx("Concat", 13, {"axis": node.integer("axis")})


@layer("Reshape", 1, traits=Traits(work=NO_WORK))
def reshape(node: LayerNode) -> Kernel:
    """Reshape-1: ``special_zero="true"`` copies the input's dim for a 0 ((2, 3, 4) to [0, -1]:
    (2, 12)); ``"false"`` makes it an empty dim. One -1 takes what is left (for an input of no
    elements as OpenVINO infers it: ``_empty_target``)."""
    zero_copies = node.flag("special_zero", False)
    known = int64(node.constant(1))
    if known is not None and not zero_copies and {0, -1} <= set(known.tolist()):
        known = None  # ONNX refuses it outright; for an input of no elements it is _empty_target's
    kernel = node.onnx("Reshape", 14, {"allowzero": 0 if zero_copies else 1}, (None, known))

    def run(x: np.ndarray, shape: np.ndarray) -> tuple[np.ndarray, ...]:
        pattern = int64(shape)
        assert pattern is not None
        if x.size == 0 and -1 in pattern.tolist():
            return (x.reshape(_empty_target(node, x.shape, pattern.tolist(), zero_copies)),)
        return kernel(x, pattern)

    return run


def _empty_target(node: LayerNode, dims: tuple[int, ...], pattern: list[int], zero_copies: bool) -> tuple[int, ...]:
    """Reshape-1's target for an input of no elements, as OpenVINO infers it: a copied 0 cancels
    the input dim it copies; -1 is what is left of the input over the other output dims, and 1
    when those hold a 0 too. (0, 3) to [0, -1] with special_zero gives (0, 3); (0, 6) to
    [0, 2, -1] gives (0, 2, 3); (0, 3) to [0, -1] without special_zero gives (0, 1)."""
    target, left, others = [], list(dims), 1
    for i, value in enumerate(pattern):
        if value == 0 and zero_copies:
            if i >= len(dims):
                raise node.fail(f"a 0 at {i} copies no dim of the rank-{len(dims)} input", "special_zero")
            target.append(dims[i])
            left[i] = 1
        else:
            target.append(value)
            others *= value if value != -1 else 1
    if pattern.count(-1) > 1:
        raise node.fail(f"the target {pattern} has more than one -1")
    rest = math.prod(left)
    if others and rest % others:
        raise node.fail(f"{list(dims)} cannot be reshaped to {pattern}")
    target[target.index(-1)] = rest // others if others else 1
    return tuple(target)


@layer("Squeeze", 1, 15, traits=Traits(work=NO_WORK))
def squeeze(node: LayerNode) -> Kernel:
    """Squeeze-1/15: drop the axes of length 1 named by the optional ``axes`` input (all of them
    when absent); Squeeze-15 with ``allow_axis_skip`` passes over a named axis that is not 1."""
    skip = node.layer.version == "opset15" and node.flag("allow_axis_skip", False)
    kernel = node.onnx("Squeeze", 13, {}, (None, None if skip else int64(node.constant(1))))

    def run(x: np.ndarray, axes: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        chosen = int64(axes)
        if skip and chosen is not None:
            chosen = np.array([a for a in chosen if -x.ndim <= a < x.ndim and x.shape[a] == 1], np.int64)
            if not chosen.size:
                return (x,)
        return kernel(x, chosen)

    return run


@layer("Unsqueeze", 1, traits=Traits(work=NO_WORK))
def unsqueeze(node: LayerNode) -> Kernel:
    """Unsqueeze-1: insert axes of length 1 at the positions of the output named by ``axes``."""
    known, of_axes = int64_input(node, 1)
    kernel = node.onnx("Unsqueeze", 13, {}, (None, known))
    return lambda x, axes: kernel(x, of_axes(axes))


@layer("Transpose", 1)
def transpose(node: LayerNode) -> Kernel:
    """Transpose-1: output axis i is input axis ``order[i]``; an empty order reverses the axes."""
    by_order = cached(lambda perm: node.onnx("Transpose", 13, {"perm": list(perm)}))

    def kernel(x: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, ...]:
        perm = ints_of(order) or tuple(range(x.ndim - 1, -1, -1))
        return by_order(perm)(x)

    return kernel


def _space_blocks(node: LayerNode, x: np.ndarray, block: int) -> tuple[int, int]:
    """Spatial rank and block count of a DepthToSpace/SpaceToDepth input ``[N, C, D1, ...]``."""
    if x.ndim < 3:
        raise node.fail(f"input {list(x.shape)} needs N, C and a spatial axis")
    if block < 1:
        raise node.fail(f"{block} is below 1", "block_size")
    return x.ndim - 2, block ** (x.ndim - 2)


@layer("DepthToSpace", 1)
def depth_to_space(node: LayerNode) -> Kernel:
    """DepthToSpace-1: ``[N, C * b^k, D1, ...]`` to ``[N, C, D1 * b, ...]``, the channel read as
    ``[b, ..., b, C]`` (``blocks_first``) or ``[C, b, ..., b]`` (``depth_first``): 4 channels of 1x1
    with b=2 become a 2x2 plane, channel 0 top left, 1 top right, 2 bottom left."""
    block = node.integer("block_size", 1)
    first = node.choice("mode", "blocks_first", ("blocks_first", "depth_first")) == "blocks_first"

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        k, blocks = _space_blocks(node, x, block)
        n, c, dims = x.shape[0], x.shape[1], x.shape[2:]
        if c % blocks:
            raise node.fail(f"{c} channels do not split into {blocks} blocks of block_size {block}")
        depth = c // blocks
        if first:
            y = x.reshape((n,) + (block,) * k + (depth,) + dims)
            order = [0, k + 1] + [a for i in range(k) for a in (k + 2 + i, 1 + i)]
        else:
            y = x.reshape((n, depth) + (block,) * k + dims)
            order = [0, 1] + [a for i in range(k) for a in (2 + k + i, 2 + i)]
        return (y.transpose(order).reshape((n, depth) + tuple(d * block for d in dims)),)

    return kernel


@layer("SpaceToDepth", 1)
def space_to_depth(node: LayerNode) -> Kernel:
    """SpaceToDepth-1, the inverse of DepthToSpace: ``[N, C, D1 * b, ...]`` to ``[N, C * b^k, D1, ...]``."""
    block = node.integer("block_size", 1)
    first = node.choice("mode", "blocks_first", ("blocks_first", "depth_first")) == "blocks_first"

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        k, blocks = _space_blocks(node, x, block)
        n, c = x.shape[:2]
        if any(d % block for d in x.shape[2:]):
            raise node.fail(f"spatial dims {list(x.shape[2:])} are not multiples of block_size {block}")
        dims = tuple(d // block for d in x.shape[2:])
        y = x.reshape((n, c) + tuple(v for d in dims for v in (d, block)))
        blocks_axes = [3 + 2 * i for i in range(k)]
        dim_axes = [2 + 2 * i for i in range(k)]
        order = [0] + (blocks_axes + [1] if first else [1] + blocks_axes) + dim_axes
        return (y.transpose(order).reshape((n, c * blocks) + dims),)

    return kernel


@layer("StridedSlice", 1)
def strided_slice(node: LayerNode) -> Kernel:
    """StridedSlice-1: numpy's basic indexing with OpenVINO's masks (see the module text)."""
    masks = {
        name: node.ints(name, ()) for name in ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")
    }
    if sum(masks["ellipsis_mask"]) > 1:
        raise node.fail(f"{list(masks['ellipsis_mask'])} sets more than one ellipsis", "ellipsis_mask")

    def bit(name: str, i: int) -> bool:
        return i < len(masks[name]) and masks[name][i] != 0

    def kernel(x: np.ndarray, begin: np.ndarray, end: np.ndarray, stride: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        b, e = ints_of(begin), ints_of(end)
        s = ints_of(stride) if stride is not None else (1,) * len(b)
        if not len(b) == len(e) == len(s):
            raise node.fail(f"begin {list(b)}, end {list(e)} and stride {list(s)} differ in length")
        if 0 in s:
            raise node.fail(f"stride {list(s)} holds 0")
        consumed = sum(1 for i in range(len(b)) if not bit("new_axis_mask", i) and not bit("ellipsis_mask", i))
        items: list[Any] = []
        axis = 0
        for i in range(len(b)):
            if bit("ellipsis_mask", i):
                items.append(Ellipsis)
                axis += x.ndim - consumed
            elif bit("new_axis_mask", i):
                items.append(None)
            elif bit("shrink_axis_mask", i):
                items.append((0 if s[i] > 0 else -1) if bit("begin_mask", i) else b[i])
                axis += 1
            else:
                start = None if bit("begin_mask", i) else b[i]
                if start is not None and s[i] < 0 and axis < x.ndim:
                    dim = x.shape[axis]  # a negative stride starts inside the axis: begin -6 of 5 is 0, not empty
                    start = min(max(start + dim if start < 0 else start, 0), dim - 1)
                items.append(slice(start, None if bit("end_mask", i) else e[i], s[i]))
                axis += 1
        try:
            return (np.asarray(x[tuple(items)]),)
        except IndexError as exc:
            raise node.fail(f"begin {list(b)} on shape {list(x.shape)}: {exc}") from None

    return kernel


@layer("Slice", 8)
def slice_(node: LayerNode) -> Kernel:
    """Slice-8 (data, start, stop, step, axes): ONNX Slice-13 (data, starts, ends, axes, steps)."""
    (starts, of_start), (ends, of_stop), (steps, of_step), (axes_, of_axes) = (int64_input(node, i) for i in range(1, 5))
    kernel = node.onnx("Slice", 13, {}, (None, starts, ends, axes_, steps))

    def run(
        x: np.ndarray, start: np.ndarray, stop: np.ndarray, step: np.ndarray, axes: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        return kernel(x, of_start(start), of_stop(stop), of_axes(axes), of_step(step))

    return run


@layer("Split", 1)
def split(node: LayerNode) -> Kernel:
    """Split-1: ``num_splits`` equal parts along the ``axis`` input ((6, 4) in 3 along 0: three (2, 4))."""
    parts = node.integer("num_splits")
    by_axis = cached(lambda axis: node.onnx("Split", 13, {"axis": axis}, n_outputs=parts))

    def kernel(x: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
        return by_axis(ints_of(axis)[0])(x)

    return kernel


@layer("VariadicSplit", 1)
def variadic_split(node: LayerNode) -> Kernel:
    """VariadicSplit-1: parts of ``split_lengths`` along ``axis``, one -1 taking the rest:
    lengths [2, -1] of 5 give 2 and 3."""
    by_axis = cached(lambda axis, n: node.onnx("Split", 13, {"axis": axis}, n_outputs=n))

    def kernel(x: np.ndarray, axis: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, ...]:
        a = ints_of(axis)[0]
        sizes = list(ints_of(lengths))
        if not -x.ndim <= a < x.ndim:
            raise node.fail(f"axis {a} is outside a rank-{x.ndim} input")
        d = x.shape[a]
        if sizes.count(-1) > 1:
            raise node.fail(f"split_lengths {sizes} has more than one -1")
        if -1 in sizes:
            sizes[sizes.index(-1)] = d - sum(v for v in sizes if v != -1)
        if any(v < 0 for v in sizes) or sum(sizes) != d:
            raise node.fail(f"split_lengths {list(ints_of(lengths))} do not add up to axis {a} of length {d}")
        return by_axis(a, len(sizes))(x, np.array(sizes, np.int64))

    return kernel


@layer("Gather", 1, 7, 8)
def gather(node: LayerNode) -> Kernel:
    """Gather-1/7/8 along the ``axis`` input, negative indices counting from the end; ``batch_dims``
    (7, 8) leading axes of data and indices are walked together: data (2, 3, 4), indices (2, 5),
    axis 1, batch_dims 1 give (2, 5, 4) with out[b, i] = data[b, indices[b, i]]."""
    batch_dims = node.integer("batch_dims", 0) if node.layer.version != "opset1" else 0
    by_axis = cached(lambda axis: node.onnx("Gather", 13, {"axis": axis}))

    def kernel(data: np.ndarray, indices: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
        a = ints_of(axis)[0]
        a = a + data.ndim if a < 0 else a
        b = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
        if not 0 <= b <= min(a, indices.ndim) or a >= data.ndim:
            raise node.fail(
                f"axis {a} and batch_dims {batch_dims} do not fit data {list(data.shape)}, indices {list(indices.shape)}"
            )
        if b == 0:
            return by_axis(a)(data, indices)
        if data.shape[:b] != indices.shape[:b]:
            raise node.fail(f"the first {b} dims of data {list(data.shape)} and indices {list(indices.shape)} differ")
        lead = data.shape[:b]
        flat_data = data.reshape((-1,) + data.shape[b:])
        flat_indices = indices.reshape((-1,) + indices.shape[b:])
        gather_axis = by_axis(a - b)
        parts = [gather_axis(d, i)[0] for d, i in zip(flat_data, flat_indices)]
        out_shape = data.shape[b:a] + indices.shape[b:] + data.shape[a + 1 :]
        stacked = np.stack(parts) if parts else np.zeros((0,) + out_shape, data.dtype)
        return (stacked.reshape(lead + out_shape),)

    return kernel


@layer("ShapeOf", 1, 3, traits=Traits(work=NO_WORK))
def shape_of(node: LayerNode) -> Kernel:
    """ShapeOf-1 (i64) and -3 (``output_type`` i64 or i32): the input's dims."""
    dtype = node.element_type("output_type", "i64") if node.layer.version == "opset3" else np.dtype(np.int64)
    return lambda x: (np.array(x.shape, dtype),)


# np.broadcast_shapes remembered by its (hashable) shapes: 3 us a call, a dict lookup after the first
_broadcast_shapes = functools.lru_cache(maxsize=256)(np.broadcast_shapes)


@layer("Broadcast", 1, 3)
def broadcast(node: LayerNode) -> Kernel:
    """Broadcast-1/3 to ``target_shape``: ``numpy`` (the input's dims line up with the target's
    trailing ones), ``bidirectional`` (3; the result is the broadcast of both shapes: (3, 1) to
    [2, 1, 4] gives (2, 3, 4)), ``explicit`` (input axis i goes to output axis ``axes_mapping[i]``)."""
    modes = ("numpy", "explicit", "none") + (("bidirectional",) if node.layer.version == "opset3" else ())
    mode = node.choice("mode", "numpy", modes)
    mode = "explicit" if mode == "none" else mode  # Broadcast-1 writes explicit as "none"

    def kernel(x: np.ndarray, target: np.ndarray, axes_mapping: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        shape = ints_of(target)
        if mode == "explicit":
            if axes_mapping is None:
                raise node.fail("mode explicit needs the axes_mapping input")
            axes = ints_of(axes_mapping)
            if len(axes) != x.ndim or any(not 0 <= a < len(shape) for a in axes) or list(axes) != sorted(axes):
                raise node.fail(f"axes_mapping {list(axes)} does not place a rank-{x.ndim} input in {list(shape)}")
            placed = [1] * len(shape)
            for a, dim in zip(axes, x.shape):
                placed[a] = dim
            x = x.reshape(placed)
        elif mode == "bidirectional":
            try:
                shape = _broadcast_shapes(x.shape, shape)
            except ValueError:
                raise node.fail(f"input {list(x.shape)} and target {list(shape)} do not broadcast") from None
        try:
            return (np.broadcast_to(x, shape).copy(),)
        except ValueError:
            raise node.fail(f"input {list(x.shape)} does not broadcast to {list(shape)} (mode {mode})") from None

    return kernel


@layer("Tile", 1)
def tile(node: LayerNode) -> Kernel:
    """Tile-1: ``repeats`` copies along each axis, the shorter of rank and ``repeats`` padded with
    leading ones: (2, 3) by [2] gives (2, 6), by [2, 1, 1] (2, 2, 3)."""

    def kernel(x: np.ndarray, repeats: np.ndarray) -> tuple[np.ndarray, ...]:
        counts = ints_of(repeats)
        if any(c < 0 for c in counts):
            raise node.fail(f"repeats {list(counts)} has a negative count")
        return (np.tile(x, counts),)

    return kernel


_NUMPY_PAD_MODES: dict[str, Any] = {"edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


@layer("Pad", 1, 12)
def pad(node: LayerNode) -> Kernel:
    """Pad-1/12: ``pads_begin``/``pads_end`` per axis (negative ones crop), ``pad_mode`` constant
    (``pad_value``, 0 when absent), edge, reflect (the edge not repeated) or symmetric (repeated):
    [1, 2, 3] padded 2 at the start gives [0, 0, 1, 2, 3], [1, 1, 1, 2, 3], [3, 2, 1, 2, 3], [2, 1, 1, 2, 3].
    Constant, edge and reflect run ONNX Pad-11's kernel (the same copies: crop, then pad; its
    layout worked out once per shape), symmetric numpy's pad."""
    mode = node.choice("pad_mode", "constant", ("constant", "edge", "reflect", "symmetric"))
    begin_constant, end_constant = node.constant(1), node.constant(2)
    fixed = None
    if begin_constant is not None and end_constant is not None:
        fixed = (ints_of(begin_constant), ints_of(end_constant))
    general = fixed_pad = None
    if mode != "symmetric":
        general = node.onnx("Pad", 11, {"mode": mode})
        if fixed is not None:
            fixed_pad = node.onnx("Pad", 11, {"mode": mode}, (None, np.array(fixed[0] + fixed[1], np.int64)))

    def kernel(x: np.ndarray, begin: np.ndarray, end: np.ndarray, value: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        constant = fixed is not None and begin is begin_constant and end is end_constant
        pb, pe = fixed if fixed is not None and constant else (ints_of(begin), ints_of(end))
        if len(pb) != x.ndim or len(pe) != x.ndim:
            raise node.fail(f"pads_begin {list(pb)} and pads_end {list(pe)} need {x.ndim} values for {list(x.shape)}")
        kept = [d - max(0, -b) - max(0, -e) for b, e, d in zip(pb, pe, x.shape)]
        if mode in ("reflect", "symmetric"):
            for b, e, d in zip(pb, pe, kept):
                if max(b, e, 0) > d - (mode == "reflect"):
                    raise node.fail(f"pads {list(pb)}, {list(pe)} reach beyond {list(x.shape)} in mode {mode}")
        fill = None if value is None or mode != "constant" else value.reshape(()).astype(x.dtype)
        if fixed_pad is not None and constant:
            return fixed_pad(x, begin, fill)  # its pads parsed once from the constants
        if general is not None:
            return general(x, np.array(pb + pe, np.int64), fill)
        crop = tuple(slice(max(0, -b), d - max(0, -e)) for b, e, d in zip(pb, pe, x.shape))
        widths = [(max(0, b), max(0, e)) for b, e in zip(pb, pe)]
        return (np.pad(x[crop], widths, mode=_NUMPY_PAD_MODES[mode]),)

    return kernel


@layer("Range", 1, 4)
def range_(node: LayerNode) -> Kernel:
    """Range-1/4: ``ceil((stop - start) / step)`` values start + i * step, of the inputs' type (1)
    or ``output_type`` (4); an integer output rounds them half to even: start 0.5, stop 5.5, step
    0.75 in i32 give [0, 1, 2, 3, 4, 4, 5]."""
    given = node.element_type("output_type") if node.layer.version == "opset4" else None

    def kernel(start: np.ndarray, stop: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, ...]:
        dtype = given if given is not None else start.dtype
        first, last, delta = (float(v.reshape(())) for v in (start, stop, step))
        if delta == 0:
            raise node.fail("step is 0")
        count = max(0, math.ceil((last - first) / delta))
        values = first + np.arange(count) * delta
        return ((np.rint(values) if dtype.kind in "iu" else values).astype(dtype),)

    return kernel


@layer("Identity", 16, traits=Traits(work=NO_WORK))
def identity(node: LayerNode) -> Kernel:
    return lambda x: (x,)
