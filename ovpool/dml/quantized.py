"""DirectML's quantized average pooling <-> ``ovpool.quant.QuantizedPool``.

``DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC`` (feature level 6.2, DirectML 1.13) averages
an INT8/UINT8 tensor between a dequantize and a quantize: FLOAT32 scales and INT8/UINT8 zero points
(optional, 0 when null), each per tensor (Sizes ``{1, 1, 1, 1}``) or per channel (``{1, C, 1, 1}``;
5 dims for 5-D data), and AVERAGE_POOLING1's window members (Dilations, IncludePadding). Its page
calls it "mathematically equivalent to dequantizing the inputs, then performing average pooling,
and then quantizing the output", which is ``ovpool.quant``'s meaning: uint8 cells 130 and 131 at
zero point 128 and scale 0.5 average to 1.25, which the output scale 0.5 and zero point 128
quantize to 128 + round(2.5) = 130 (ties to even).

The scales and zero points are tensors DirectML reads at run time; ovpool writes their values in
the document's ``constants`` (``{name: {"DataType", "Sizes", "Values"}}``, named
``<node>/input_scale`` ...) and lists them in the operator's ``inputs`` after the data tensor, in
member order. Emission follows the float descriptors: ceil rounding is OutputTensor's size, a 1-D
pool gets a unit axis (scales ``{1, C, 1, 1}`` over the 1x C x1xL view), and an include-pad average
whose last window overhangs the end pad becomes DML_OPERATOR_PADDING with the input zero point
(the real 0) and then IncludePadding=FALSE, because DirectML documents no divisor for that window.
onnxruntime's ``channels_last=1`` is the desc's Strides viewing the NHWC buffers as NCHW, as
onnxruntime's DirectML execution provider binds them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np

from ovpool import shape
from ovpool.dml.adapter import (
    QUANTIZED_INPUTS,
    Lowered,
    Operator,
    channels_last_strides,
    make_operator,
    padding_operator,
    refuse_empty_windows,
    shown,
    spec_from_operator,
    static_input,
    tensor_desc,
    window_members,
)
from ovpool.dml.levels import DML_FEATURE_LEVELS, Need, choose, describe
from ovpool.errors import ModelError, SpecError, UnsupportedError
from ovpool.names import FreshNames
from ovpool.quant import Quantization, QuantizedPool
from ovpool.spec import Divisor, Padding, PoolKind

OP_TYPE = "DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING"


def nchw_shape(shape_: Sequence[int]) -> tuple[int, ...]:
    """A channels-last shape in the channels-first order DirectML pools: (1, 5, 6, 3) -> (1, 3, 5, 6)."""
    return (shape_[0], shape_[-1], *shape_[1:-1])


def nhwc_shape(shape_: Sequence[int]) -> tuple[int, ...]:
    """The inverse of ``nchw_shape``: (1, 3, 5, 6) -> (1, 5, 6, 3)."""
    return (shape_[0], *shape_[2:], shape_[1])


def operators_from_quantized(
    pool: QuantizedPool,
    input_shape: Sequence[int | None],
    source: str,
    target: str,
    names: FreshNames,
    cap: int | None = None,
    channels_last: bool = False,
    where: str | None = None,
) -> Lowered:
    """The DirectML operators computing the quantized average ``pool`` of the ``input_shape`` tensor
    ``source`` into ``target`` (N, C, *spatial; N, *spatial, C with ``channels_last``), with the
    logical shape of every tensor they touch and the constants they read. ``names`` gives the
    constants and a PADDING's intermediate fresh names. Anything DirectML cannot say exactly is an
    ``UnsupportedError`` naming ``where`` (default ``node '<name>'``) and the reason."""
    where = where or f"node '{pool.spec.name}'"
    try:
        return _lower(pool, input_shape, source, target, names, cap, channels_last, where)
    except SpecError as exc:
        raise exc.at(where) from None


def _lower(pool, input_shape, source, target, names, cap, channels_last, where) -> Lowered:
    cap = DML_FEATURE_LEVELS[-1] if cap is None else cap
    spec = pool.spec
    if spec.kind not in (PoolKind.AVERAGE, PoolKind.GLOBAL_AVERAGE):
        raise UnsupportedError(
            f"{where}: DirectML's quantized pooling averages; a quantized {spec.kind.value} pool has no such form"
        )
    in_type, out_type = pool.input.dtype, pool.output.dtype
    logical = static_input(spec, input_shape, where)
    data = nchw_shape(logical) if channels_last else logical
    for quantization in (pool.input, pool.output):
        quantization.check_rank(data)
        if not quantization.per_tensor and (quantization.axis or 0) % len(data) != 1:
            raise UnsupportedError(
                f"{quantization.where}: quantized along axis {quantization.axis}; DirectML's scales are per tensor or per channel (axis 1)"
            )
    spatial = data[2:]
    window = spec.resolve_global(spatial)
    refuse_empty_windows(window, spatial, where)
    out_data = shape.output_shape(window, data)
    pads_begin, pads_end = shape.resolved_pads(window, spatial)
    explicit = window.with_(padding=Padding.EXPLICIT, pads_begin=pads_begin, pads_end=pads_end, dtype=in_type)
    operators: list[dict] = []
    tensors = {
        source: tensor_desc(in_type, logical),
        target: tensor_desc(out_type, nhwc_shape(out_data) if channels_last else out_data),
    }
    reads, in_sizes = source, data
    include = False
    if any(pads_begin + pads_end) and explicit.divisor is Divisor.INCLUDE_PAD:
        if tuple(shape.floor_end_pads(window, spatial)) == tuple(pads_end):
            include = True
        else:
            reads, in_sizes = _pad_with_zero_point(pool, explicit, data, source, names, cap, channels_last, where, operators)
            tensors[reads] = tensor_desc(in_type, in_sizes)
            zeros = (0,) * len(spatial)
            explicit = explicit.with_(pads_begin=zeros, pads_end=zeros, divisor=Divisor.EXCLUDE_PAD)
    out_sizes = out_data
    if len(spatial) == 1:
        explicit = shape.unit_axis_spec(explicit)
        in_sizes, out_sizes = shape.unit_axis_shape(in_sizes), shape.unit_axis_shape(out_sizes)
    rank = len(in_sizes)
    dilated = explicit.dilations != (1,) * len(explicit.kernel)
    need = Need(
        PoolKind.AVERAGE,
        frozenset({"Dilations"} if dilated else ()),
        in_type,
        rank,
        None,
        describe("quantized average pooling", in_type, rank, ["dilations"] if dilated else []),
        quantized=True,
    )
    row, level = choose(need, cap, where)
    if out_type not in row.data_types:
        raise UnsupportedError(f"{where}: the output is {out_type}; {row.op_type} writes {'/'.join(row.data_types)}")
    constants: dict[str, dict] = {}
    values = {
        "InputTensor": tensor_desc(in_type, in_sizes, channels_last_strides(in_sizes) if channels_last else None),
        "OutputTensor": tensor_desc(out_type, out_sizes, channels_last_strides(out_sizes) if channels_last else None),
        **window_members(explicit, include),
    }
    inputs = [reads]
    for side, quantization in (("Input", pool.input), ("Output", pool.output)):
        sizes = [1] * rank
        if not quantization.per_tensor:
            sizes[1] = in_sizes[1]
        for part, dtype, numbers in (
            ("Scale", row.scale_types[0], [float(np.float32(v)) for v in quantization.scale]),
            ("ZeroPoint", quantization.dtype, list(quantization.zero_point)),
        ):
            name = names.fresh(f"{spec.name}/{side.lower()}_{'scale' if part == 'Scale' else 'zero_point'}")
            values[f"{side}{part}Tensor"] = tensor_desc(dtype, sizes)
            constants[name] = {**tensor_desc(dtype, sizes), "Values": numbers}
            inputs.append(name)
    operators.append(make_operator(spec.name, row, level, inputs, [target], values))
    return Lowered(operators, tensors, constants)


def _pad_with_zero_point(
    pool, explicit, data, source, names, cap, channels_last, where, operators
) -> tuple[str, tuple[int, ...]]:
    """DML_OPERATOR_PADDING of the pads with the input zero point (the real 0 an include-pad
    average counts), appended to ``operators``; returns the padded tensor and its sizes."""
    zero_points = set(pool.input.zero_point)
    if channels_last:
        raise UnsupportedError(
            f"{where}: channels_last with count_include_pad=1 and a window past the end pad: DirectML's divisor "
            "for that window is undocumented and ovpool pads channels-first tensors only"
        )
    if len(zero_points) != 1:
        raise UnsupportedError(
            f"{where}: count_include_pad=1 with a window past the end pad needs the pads filled with the input "
            f"zero point (DirectML's divisor for that window is undocumented), and one PaddingValue cannot hold "
            f"the per-channel zero points {list(pool.input.zero_point)}"
        )
    pad_name = names.fresh(f"{explicit.name}/pad")
    pad_op, padded = padding_operator(
        explicit, data, explicit.pads_begin, explicit.pads_end, source, pad_name, cap, where, value=zero_points.pop()
    )
    operators.append(pad_op)
    return pad_name, padded


def quantized_pool_from_operator(op: Operator, constants: Mapping[str, object]) -> QuantizedPool:
    """The meaning of a checked QUANTIZED_LINEAR_AVERAGE_POOLING operator on its desc's own sizes
    (4-D/5-D, channels first): ``spec_from_operator``'s window, and the quantizations read from
    the document's ``constants``. A scale or zero point without a constant, or whose entry is not
    its desc's tensor, is a ``ModelError`` naming the operator and the member; a zero scale or a
    zero point outside its type is refused by ``Quantization``."""
    where = f"operator '{op.name}'"
    present = [member for member in QUANTIZED_INPUTS if op.desc.get(member) is not None]
    tensor_of = dict(zip(present, op.inputs))
    spec = spec_from_operator(op)
    input_q = _quantization(op, "Input", op.dtype, tensor_of, constants, where)
    output_q = _quantization(op, "Output", op.output_dtype, tensor_of, constants, where)
    return QuantizedPool(spec, input_q, output_q)


def _quantization(
    op: Operator, side: str, dtype: str, tensor_of: Mapping[str, str], constants: Mapping[str, object], where: str
) -> Quantization:
    scale_member, zero_member = f"{side}ScaleTensor", f"{side}ZeroPointTensor"
    scales = _constant(op, scale_member, tensor_of, constants, where, integers=False)
    zeros = _constant(op, zero_member, tensor_of, constants, where, integers=True) if zero_member in tensor_of else [0]
    if len(scales) == 1 and len(zeros) > 1:
        scales = scales * len(zeros)
    axis = 1 if max(len(scales), len(zeros)) > 1 else None
    return Quantization(tuple(scales), tuple(int(z) for z in zeros), dtype, axis, f"{where}: {scale_member}/{zero_member}")


def _constant(
    op: Operator, member: str, tensor_of: Mapping[str, str], constants: Mapping[str, object], where: str, integers: bool
) -> list[float]:
    """The values of the constant a desc member reads: its entry must have the member's DataType
    and Sizes and one number per element (integers for a zero point)."""
    name = tensor_of[member]
    entry = constants.get(name)
    desc = cast("Mapping[str, object]", op.desc[member])
    if not isinstance(entry, dict):
        raise ModelError(
            f"{where}: {member} reads '{name}', which has no 'constants' entry; ovpool needs a quantized "
            "pool's scales and zero points as constants"
        )
    for key in ("DataType", "Sizes"):
        if entry.get(key) != desc[key]:
            raise ModelError(f"{where}: constant '{name}' has {key} {shown(entry.get(key))} but {member} says {shown(desc[key])}")
    numbers = entry.get("Values")
    count = math.prod(cast("list[int]", desc["Sizes"]))
    kinds = (int,) if integers else (int, float)
    if (
        not isinstance(numbers, list)
        or len(numbers) != count
        or not all(isinstance(v, kinds) and not isinstance(v, bool) for v in numbers)
    ):
        what = "integers" if integers else "numbers"
        raise ModelError(
            f"{where}: constant '{name}' ({member}) must have Values: a list of {count} {what}, got {shown(numbers)}"
        )
    if integers:
        return [float(v) for v in numbers]
    with np.errstate(over="ignore"):  # a scale past float32 is inf, which Quantization refuses
        return [float(np.float32(v)) for v in numbers]
