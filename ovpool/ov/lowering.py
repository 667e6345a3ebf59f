"""PoolSpec -> OpenVINO opset nodes that compute exactly what the spec says.

Every spec gets the lowest IR op version that expresses it:

* max pool: MaxPool-1; MaxPool-8 when it has dilations or indices (axis 0, i64: ONNX's layout);
  MaxPool-14 ``ceil_torch`` when ceil rounding adds a window (ONNX ceil_mode is the drop rule).
* average pool: AvgPool-1; AvgPool-14 ``ceil_torch`` for a ceil that adds a window; AvgPool-16
  for dilations. OpenVINO's ``exclude-pad="false"`` divides by the whole kernel whenever a pad is
  non-zero, overhang included, which is ONNX ``count_include_pad=1`` only when no window reaches
  past the end pad. Where one does (ceil, pads > 0, include-pad), the input is zero-padded by an
  explicit Pad and pooled with ``exclude-pad="true"``: the padded zeros count, the overhang does not.
  4x4, k3 s2 p1, ceil: the last window sums 2 input cells over 6 taps (ONNX, PyTorch), where a
  single OpenVINO AvgPool would divide by 9.
* global pools: ReduceMean / ReduceMax over the spatial axes (any spatial dims).
* Lp pool: Abs, Power by p, the window sums, then Sqrt or Power by 1/p (``_window_sums``: an
  AvgPool that divides every window by the whole kernel, times the kernel's taps; a ceil that adds
  a window pads the powers with zeros first). GlobalLpPool: ReduceSum. A window with no input cell
  is 0, not refused.
* max unpool: zeros of the output size, ScatterElementsUpdate of the flat values at the flat
  indices, Reshape. ``output_shape`` is the third input when given (a constant or computed at run
  time, as PyTorch exports SegNet), else the shape engine's inferred size (on dynamic dims computed
  at run time from ``shape.unpool_output_affine``).

Static spatial dims let the shape engine decide more (SAME pads resolved to explicit ones, a ceil
that adds no window lowered as floor). Dynamic dims keep ``auto_pad`` (OpenVINO's SAME includes
dilation, as ONNX's does) and ``ceil_torch``.

What OpenVINO cannot do exactly is refused with ``UnsupportedError`` naming the node:
float64 (the CPU plugin pools in float32: 1+2**-40 becomes 1), bfloat16 with indices (the CPU
plugin has no kernel), more than 3 spatial axes, and on dynamic spatial dims two index cases:
``storage_order=1`` indices (the column-major multipliers come from ``shape.index_strides`` and
need the dims) and SAME auto_pad with indices (the CPU plugin's dynamic-shape MaxPool with indices
pads them wrongly: 39 of 123 SAME_UPPER and all SAME_LOWER cases measured). A window with no input cell (dilation stepping over a
small input) is a ``SpecError`` on static dims; on dynamic dims OpenVINO decides (-FLT_MAX or NaN).

Behaviour that differs from the numpy executor, by design of the runtime: a NaN in a max window is
skipped by OpenVINO (the window's largest number wins; all-NaN gives -FLT_MAX); MaxUnpool indices
outside the output are dropped (their values are not written anywhere), and repeated indices keep
one of their values (OpenVINO leaves the order unspecified).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from openvino import Output, Type, opset1, opset3, opset8, opset14, opset16

from ovpool import dtypes, kernels, shape
from ovpool.errors import UnsupportedError
from ovpool.ir.adapter import layer_from_spec
from ovpool.spec import Divisor, IndexOrder, Indices, Padding, PoolKind, PoolSpec, Rounding

Dim = int | None

# Data types the OpenVINO CPU plugin pools exactly (f16 is computed in f32 and rounded once).
EXACT_DTYPES = frozenset({"float32", "float16", "bfloat16", "int8", "uint8"})

# Spatial axes OpenVINO's AvgPool and MaxPool take (3-D to 5-D tensors).
SPATIAL_RANKS = (1, 2, 3)

_ROUNDING = {Rounding.FLOOR: "floor", Rounding.CEIL: "ceil_torch", Rounding.CEIL_NO_DROP: "ceil"}


@dataclass(frozen=True)
class Lowered:
    """The OpenVINO outputs standing for one pooling node: ``outputs[0]`` the values (or the
    unpooled tensor), ``outputs[1]`` the indices when the spec has them. ``shape_given``: a
    MaxUnpool whose output shape is its ``output_shape`` input, not the inferred one."""

    spec: PoolSpec
    data: Output
    outputs: tuple[Output, ...]
    shape_given: bool = False


def dtype_of(output: Output, where: str) -> str:
    """ovpool's dtype name of an OpenVINO output: f32 -> "float32" (``where`` names the node in
    the error for any other type)."""
    dtype = dtypes.from_ov_type(output.get_element_type())
    if dtype is None or dtype == "bool":
        raise UnsupportedError(f"{where}: element type {output.get_element_type().get_type_name()} is not a pooling data type")
    return dtype


def check_exact(spec: PoolSpec) -> None:
    """Refuse data types OpenVINO would not pool exactly (see the module docstring)."""
    where = f"node '{spec.name}'"
    if spec.dtype is not None and spec.dtype not in EXACT_DTYPES:
        raise UnsupportedError(
            f"{where}: data type {spec.dtype} is not pooled exactly by OpenVINO (the CPU plugin computes "
            "float64 in float32); use the numpy executor or convert the model to float32"
        )
    if spec.dtype == "bfloat16" and spec.indices is not None:
        raise UnsupportedError(f"{where}: OpenVINO has no bfloat16 MaxPool with indices; use float32 or float16")


def spatial_dims(output: Output, spec: PoolSpec) -> tuple[Dim, ...]:
    """The spatial dims of the (N, C, *spatial) input of ``spec``'s node, None where dynamic."""
    pshape = output.get_partial_shape()
    if pshape.rank.is_dynamic:
        raise UnsupportedError(f"node '{spec.name}': its input has a dynamic rank; OpenVINO pooling needs a known rank")
    shape.check_input_rank(spec, pshape.rank.get_length())
    return tuple(d.get_length() if d.is_static else None for d in list(pshape)[2:])


def lower(
    spec: PoolSpec,
    data: Output,
    indices: Output | None = None,
    output_shape: Output | None = None,
    dequantized: bool = False,
) -> Lowered:
    """OpenVINO nodes computing ``spec`` on ``data`` (``indices``/``output_shape``: MaxUnpool's).
    ``dequantized``: ``data`` is a dequantized tensor, which OpenVINO's low-precision execution
    pools on the integers (see ``_counted_avg_pool``)."""
    check_exact(spec)
    if spec.kind is PoolKind.UNPOOL:
        if indices is None:
            raise UnsupportedError(f"node '{spec.name}': MaxUnpool needs its indices input")
        return Lowered(spec, data, (_unpool(spec, data, indices, output_shape),), output_shape is not None)
    if spec.is_global and dequantized and _static_spatial(data):
        # OpenVINO's low-precision ReduceMean and ReduceMax take the per-channel scales of a 3-D
        # tensor along the batch axis (up to 95 steps off); its AvgPool and MaxPool do not
        window = spec.resolve_global(tuple(d.get_length() for d in list(data.get_partial_shape())[2:]))
        return lower(window, data, dequantized=dequantized)
    if spec.kind is PoolKind.GLOBAL_LP:
        axes = opset1.constant(np.arange(2, data.get_partial_shape().rank.get_length(), dtype=np.int64))
        return Lowered(spec, data, (_root(spec, opset1.reduce_sum(_powers(spec, data), axes, True).output(0)),))
    if spec.is_global:
        axes = opset1.constant(np.arange(2, data.get_partial_shape().rank.get_length(), dtype=np.int64))
        reduce = opset1.reduce_mean if spec.kind is PoolKind.GLOBAL_AVERAGE else opset1.reduce_max
        return Lowered(spec, data, (reduce(data, axes, True).output(0),))
    spatial = spatial_dims(data, spec)
    if len(spatial) not in SPATIAL_RANKS:
        raise UnsupportedError(f"node '{spec.name}': OpenVINO pools 1 to 3 spatial axes; the input has {len(spatial)}")
    shape.output_spatial(spec, spatial)  # raises a SpecError naming the node for a too-small input
    if spec.kind is not PoolKind.LP:  # an Lp window with no input cell is 0, its sum of nothing
        _check_windows(spec, spatial)
    window = shape.simplest_form(spec, spatial)
    if window.kind is PoolKind.MAX:
        return Lowered(spec, data, _max_pool(window, data, spatial))
    if window.kind is PoolKind.LP:
        return Lowered(spec, data, (_root(spec, _window_sums(window, _powers(spec, data), spatial)),))
    return Lowered(spec, data, (_avg_pool(window, data, spatial, dequantized),))


def _static_spatial(data: Output) -> bool:
    pshape = data.get_partial_shape()
    return pshape.rank.is_static and all(d.is_static for d in list(pshape)[2:])


def _check_windows(spec: PoolSpec, spatial: Sequence[Dim]) -> None:
    """Refuse, on static dims, a window with no input cell (dilation stepping over a small input):
    OpenVINO would give -FLT_MAX or NaN where ONNX has no defined value."""
    if not shape.is_static(spatial):
        return
    error = shape.empty_window_error(spec, spatial)
    if error is not None:
        raise error


# The OpenVINO op of each IR version; which version a spec gets is the IR templates' rule.
_MAX_POOL = {"opset8": opset8.max_pool, "opset14": opset14.max_pool}
_AVG_POOL = {"opset1": opset1.avg_pool, "opset14": opset14.avg_pool}


def ir_version(spec: PoolSpec) -> str:
    """The IR op version a pooling spec is lowered to: the oldest whose template can say it
    (``ovpool.ir.adapter.layer_from_spec``, the rule the IR emitter uses too): MaxPool with
    dilations or indices ``opset8``, ``ceil_torch`` rounding ``opset14``, AvgPool dilations ``opset16``."""
    return layer_from_spec(spec).version


def _auto_pad(spec: PoolSpec) -> str:
    return "explicit" if spec.padding is Padding.EXPLICIT else spec.padding.value


def _max_pool(spec: PoolSpec, data: Output, spatial: Sequence[Dim]) -> tuple[Output, ...]:
    args = (list(spec.strides),)
    window = (list(spec.pads_begin), list(spec.pads_end), list(spec.kernel))
    rounding, auto_pad = _ROUNDING[spec.rounding], _auto_pad(spec)
    if spec.indices is not None and spec.padding is not Padding.EXPLICIT:
        raise UnsupportedError(
            f"node '{spec.name}': auto_pad {spec.padding.value.upper()} with indices needs static spatial dims "
            f"(they are {list(spatial)}): OpenVINO 2026.4 CPU pads such a MaxPool wrongly on dynamic shapes"
        )
    indices = Indices(IndexOrder.ROW_MAJOR, axis=0, dtype="int64") if spec.indices is not None else None
    version = ir_version(spec.with_(indices=indices))
    if version == "opset1":
        return (opset1.max_pool(data, *args, *window, rounding, auto_pad).output(0),)
    node = _MAX_POOL[version](data, *args, list(spec.dilations), *window, rounding, auto_pad, "i64", 0)
    if spec.indices is None:
        return (node.output(0),)
    return node.output(0), _index_layout(spec, node.output(1), data, spatial)


def _index_layout(spec: PoolSpec, flat: Output, data: Output, spatial: Sequence[Dim]) -> Output:
    """Row-major axis-0 indices -> the spec's layout. Column-major (ONNX storage_order=1) splits
    each index into its plane offset and spatial coordinates and recombines them with the
    column-major multipliers of ``shape.index_strides``: on 1x1x4x5, row-major 13 = (h 2, w 3)
    becomes 2 + 3*4 = 14."""
    assert spec.indices is not None  # called for a max pool with indices only
    if spec.indices.order is IndexOrder.ROW_MAJOR:
        return flat
    if not shape.is_static(spatial):
        raise UnsupportedError(f"node '{spec.name}': storage_order=1 indices need static spatial dims (they are {list(spatial)})")
    layout = (0, 0) + tuple(spatial)  # N and C: not read by the axis-1 strides
    _, plane, rows = shape.index_strides(layout, Indices(IndexOrder.ROW_MAJOR, axis=1))
    _, _, columns = shape.index_strides(layout, Indices(IndexOrder.COLUMN_MAJOR, axis=1))
    offset = opset1.floor_mod(flat, _i64(plane))
    result = opset1.subtract(flat, offset)
    for length, row, column in zip(spatial, rows, columns):
        coordinate = opset1.floor_mod(opset1.divide(offset, _i64(row)), _i64(length))
        result = opset1.add(result, opset1.multiply(coordinate, _i64(column)))
    return result.output(0)


def _avg_pool(spec: PoolSpec, data: Output, spatial: Sequence[Dim], dequantized: bool = False) -> Output:
    padded = any(spec.pads_begin + spec.pads_end) or spec.padding in (Padding.SAME_UPPER, Padding.SAME_LOWER)
    if spec.divisor is Divisor.INCLUDE_PAD and padded and dequantized:
        return _counted_avg_pool(spec, data, spatial)
    if spec.divisor is Divisor.INCLUDE_PAD and spec.rounding is not Rounding.FLOOR and padded:
        return _padded_avg_pool(spec, data, spatial)
    exclude = spec.divisor is Divisor.EXCLUDE_PAD
    return _avg_node(spec, data, spec.pads_begin, spec.pads_end, exclude, spec.rounding)


def _avg_node(
    spec: PoolSpec, data: Output, begin: Sequence[int], end: Sequence[int], exclude: bool, rounding: Rounding
) -> Output:
    args = (data, list(spec.strides), list(begin), list(end), list(spec.kernel), exclude, _ROUNDING[rounding], _auto_pad(spec))
    divisor = Divisor.EXCLUDE_PAD if exclude else Divisor.FULL_KERNEL_IF_PADDED
    version = ir_version(spec.with_(pads_begin=tuple(begin), pads_end=tuple(end), divisor=divisor, rounding=rounding))
    if version == "opset16":
        return opset16.avg_pool(*args, dilations=list(spec.dilations)).output(0)
    return _AVG_POOL[version](*args).output(0)


def _counted_avg_pool(spec: PoolSpec, data: Output, spatial: Sequence[Dim]) -> Output:
    """Include-pad average of a dequantized tensor: the exclude-pad average times the ratio of
    in-input taps to counted taps, so that no padding value is ever read.

    OpenVINO's low-precision execution moves a dequantization (subtract the zero point, multiply
    by the scale) past an AvgPool and pools the integers, padding them with integer 0 where ONNX
    pads the reals with 0.0, the zero point (a zero point of 0 too: on a processor without AMX an
    int8 tensor a Convolution reads is made uint8 at zero point 128): uint8 at zero point 128 and scale 0.05, a corner window
    of 3x3 over 4 cells of 2.0 gives (4*168 + 5*0)/9 - 128 = -53.3 steps, -2.67, where ONNX gives
    8.0/9 = 0.89. An exclude-pad AvgPool reads no padding and pools the integers exactly; its result
    times ``n_in / n_counted`` (4/9 at that corner, a constant of ``kernels.average_pool`` over
    ones) is the include-pad average, within float32 rounding. Dynamic dims: the ratio is the exact
    include-pad average of a ones tensor the input's spatial size, computed in the graph."""
    exclude = spec.with_(divisor=Divisor.EXCLUDE_PAD)
    pooled = _avg_pool(exclude, data, spatial)
    float_type = data.get_element_type()
    if shape.is_static(spatial):
        ones = np.ones((1, 1, *spatial), dtype=np.float32)
        ratio = opset1.constant(
            kernels.average_pool(ones, spec).astype(dtypes.np_dtype(dtypes.from_ov_type(float_type) or "float32"))
        )
    else:
        dims = opset8.gather(opset3.shape_of(data, "i64"), _i64(list(range(2, 2 + len(spatial)))), _i64(0))
        ones_shape = opset1.concat([_i64([1, 1]), dims], 0)
        ones = opset3.broadcast(opset1.constant(1, float_type), ones_shape)
        ratio = opset1.convert(_avg_pool(spec, ones.output(0), spatial), float_type)
    return opset1.multiply(pooled, ratio).output(0)


def _padded_avg_pool(spec: PoolSpec, data: Output, spatial: Sequence[Dim]) -> Output:
    """Include-pad average whose windows reach past the end pad: explicit zero Pad, then an
    exclude-pad AvgPool, so the pads count and the overhang does not.

    Static dims: the overhang (``shape.ceil_overhang``) becomes the AvgPool's own end pad under
    floor rounding, giving exactly the spec's windows. Dynamic dims: ``ceil_torch`` on the padded
    tensor may keep a last window that starts in the end pad, which the drop rule removes; the
    result is sliced to the window count of the spec's own pool (OpenVINO's ``ceil_torch`` shape
    of a one-channel slice of the input)."""
    zeros = [0] * len(spec.kernel)
    pad = opset1.pad(data, _i64([0, 0, *spec.pads_begin]), _i64([0, 0, *spec.pads_end]), "constant", _zero(data))
    if shape.is_static(spatial):
        overhang = shape.ceil_overhang(spec, spatial)
        return _avg_node(spec, pad.output(0), zeros, overhang, True, Rounding.FLOOR)
    pooled = _avg_node(spec, pad.output(0), zeros, zeros, True, Rounding.CEIL)
    return _slice_to_windows(spec, data, pooled)


def _powers(spec: PoolSpec, data: Output) -> Output:
    """``|x| ** p`` (Abs, then Power unless p is 1)."""
    assert spec.p is not None  # an Lp spec has its p
    magnitude = opset1.abs(data).output(0)
    if spec.p == 1:
        return magnitude
    return opset1.power(magnitude, opset1.constant(spec.p, data.get_element_type())).output(0)


def _root(spec: PoolSpec, sums: Output) -> Output:
    """``sums ** (1/p)``: Sqrt for p=2, Power for other p, nothing for p=1."""
    assert spec.p is not None  # an Lp spec has its p
    if spec.p == 1:
        return sums
    if spec.p == 2:
        return opset1.sqrt(sums).output(0)
    return opset1.power(sums, opset1.constant(1 / spec.p, sums.get_element_type())).output(0)


def _window_sums(spec: PoolSpec, powers: Output, spatial: Sequence[Dim]) -> Output:
    """The sum of each window of an Lp pool (``spec`` in ``shape.simplest_form``): an AvgPool whose
    divisor is the whole kernel at every window, times the kernel's tap count.

    Under floor rounding no window reaches past the pads, so OpenVINO's ``exclude-pad="false"``
    divides every window by the whole kernel (pads or SAME padding, static or dynamic dims; with no
    pad every window is inside the input). Under ceil rounding (a ceil that adds a window, explicit
    pads) the windows are made floor windows of a zero-padded tensor: an explicit Pad by the pads
    plus the overhang (``shape.ceil_overhang``, static dims) or plus ``stride - 1`` cells (dynamic
    dims: ``floor((L + pads + s - 1 - kd) / s) + 1`` is the ceil count before the drop rule), then a
    pad-free floor AvgPool, every window inside the padded tensor, so that it divides by the whole
    kernel whatever its exclude-pad (OpenVINO's own LpPool decomposition, a ``ceil_torch`` AvgPool
    of the unpadded tensor, divides the overhang windows by their taps inside: k 2x2, s 2, ceil on
    7x6 gives the last row of windows twice ONNX's). On dynamic dims the result is sliced to the
    spec's window count, as ``_padded_avg_pool`` does. k 2x2, s 2, ceil on 7x6: 4x3 windows, the
    last row of windows over one input row and one overhang row of zeros, summed as
    (a + b + 0 + 0) / 4 * 4. The sum is exact up to float32 rounding of the division and the
    product (a relative 1e-7)."""
    taps = float(np.prod(spec.kernel))
    average = spec.with_(kind=PoolKind.AVERAGE, p=None, divisor=Divisor.FULL_KERNEL_IF_PADDED)
    zeros = [0] * len(spec.kernel)
    if spec.rounding is Rounding.FLOOR:
        pooled = _avg_node(average, powers, spec.pads_begin, spec.pads_end, False, Rounding.FLOOR)
    else:
        if shape.is_static(spatial):
            extra = shape.ceil_overhang(spec, spatial)
        else:
            extra = tuple(s - 1 for s in spec.strides)
        end = [pe + e for pe, e in zip(spec.pads_end, extra)]
        padded = opset1.pad(powers, _i64([0, 0, *spec.pads_begin]), _i64([0, 0, *end]), "constant", _zero(powers))
        unpadded = average.with_(padding=Padding.EXPLICIT, pads_begin=(), pads_end=(), divisor=Divisor.EXCLUDE_PAD)
        pooled = _avg_node(unpadded, padded.output(0), zeros, zeros, True, Rounding.FLOOR)
        if not shape.is_static(spatial):
            pooled = _slice_to_windows(spec, powers, pooled)
    return opset1.multiply(pooled, opset1.constant(taps, powers.get_element_type())).output(0)


def _slice_to_windows(spec: PoolSpec, data: Output, pooled: Output) -> Output:
    """``pooled`` cut to the window count of ``spec`` on ``data``'s run-time shape (OpenVINO's
    ``ceil_torch`` MaxPool of a one-channel corner of ``data``, whose shape follows ONNX's ceil)."""
    rank = len(spec.kernel)
    corner = opset8.slice(data, _i64([0, 0]), _i64([1, 1]), _i64([1, 1]), _i64([0, 1]))
    reference = opset14.max_pool(
        corner,
        list(spec.strides),
        list(spec.dilations),
        list(spec.pads_begin),
        list(spec.pads_end),
        list(spec.kernel),
        "ceil_torch",
        "explicit",
        "i64",
        0,
    )
    stop = opset8.gather(opset3.shape_of(reference.output(0), "i64"), _i64(list(range(2, 2 + rank))), _i64(0))
    return opset8.slice(pooled, _i64([0] * rank), stop, _i64([1] * rank), _i64(list(range(2, 2 + rank)))).output(0)


def _unpool(spec: PoolSpec, data: Output, indices: Output, output_shape: Output | None) -> Output:
    """Zeros of the output size plus one spare cell, the values scattered at their flat indices
    (an index outside the output is redirected to the spare cell), the spare cell cut, reshaped."""
    if output_shape is None:
        output_shape = _unpool_shape(spec, data)
    elif output_shape.get_element_type() != Type.i64:
        output_shape = opset1.convert(output_shape, "i64").output(0)
    size = opset1.reduce_prod(output_shape, _i64([0]), True)
    flat_values = opset1.reshape(data, _i64([-1]), False)
    flat_indices = opset1.reshape(indices, _i64([-1]), False)
    if indices.get_element_type() != Type.i64:
        flat_indices = opset1.convert(flat_indices, "i64")
    inside = opset1.logical_and(opset1.greater_equal(flat_indices, _i64(0)), opset1.less(flat_indices, size))
    safe_indices = opset1.select(inside, flat_indices, opset1.broadcast(size, opset3.shape_of(flat_indices, "i64")))
    zeros = opset3.broadcast(_zero(data), opset1.add(size, _i64([1])))
    scattered = opset3.scatter_elements_update(zeros, safe_indices, flat_values, _i64(0))
    kept = opset8.slice(scattered, _i64([0]), size, _i64([1]), _i64([0]))
    return opset1.reshape(kept, output_shape, False).output(0)


def _unpool_shape(spec: PoolSpec, data: Output) -> Output:
    """MaxUnpool's inferred output shape (N, C, *spatial): constants from
    ``shape.unpool_output_spatial`` on static dims, else ``in*scale + offset`` per axis
    (``shape.unpool_output_affine``) on the run-time shape of ``data``."""
    spatial = spatial_dims(data, spec)
    dims = opset3.shape_of(data, "i64")
    batch_channels = opset8.gather(dims, _i64([0, 1]), _i64(0))
    if shape.is_static(spatial):
        return opset1.concat([batch_channels, _i64(shape.unpool_output_spatial(spec, spatial))], 0).output(0)
    scales, offsets = zip(*shape.unpool_output_affine(spec))
    lengths = opset8.gather(dims, _i64(list(range(2, 2 + len(spatial)))), _i64(0))
    sizes = opset1.add(opset1.multiply(lengths, _i64(list(scales))), _i64(list(offsets)))
    return opset1.concat([batch_channels, sizes], 0).output(0)


def _i64(values: int | Sequence[int]) -> Output:
    return opset1.constant(np.asarray(values, dtype=np.int64)).output(0)


def _zero(data: Output) -> Output:
    return opset1.constant(0, data.get_element_type()).output(0)
