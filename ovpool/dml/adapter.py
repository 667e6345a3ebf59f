"""DirectML operator descriptors (ovpool's DirectML JSON) <-> PoolSpec.

An operator is a dict mirroring directml.h: ``{"name", "type": "DML_OPERATOR_MAX_POOLING1",
"min_feature_level": "DML_FEATURE_LEVEL_5_0", "inputs", "outputs", "desc": {member: value}}``,
desc members in the struct's order, tensors as ``{"DataType": "DML_TENSOR_DATA_TYPE_FLOAT32",
"Sizes": [...]}``, BOOL as true/false, a null pointer as null.

Emission picks, per pooling spec, the operator with the lowest feature level that says it exactly
(``ovpool.dml.levels`` is the only feature-level table, and parses ``--feature-level``) and legalises:
- a 1-D pool gets a unit spatial axis (``shape.unit_axis_spec``): DimensionCount 2, 4-D tensor
  descs over the same buffers (a 1x3x8 tensor is bound as 1x3x1x8; flat indices are unchanged);
- ceil rounding is the OutputTensor size (DirectML has no rounding field; windows start at
  ``i*Strides - StartPadding`` and the size says how many there are); padding is never changed;
- an average that counts pads (IncludePadding) and whose last window overhangs the end pad becomes
  DML_OPERATOR_PADDING with zeros (``<name>/pad``) then an unpadded average with
  IncludePadding=FALSE: DirectML's divisor for such a window is undocumented, the zeros' is not.
  OpenVINO's full-kernel divisor pads the overhang too, so every window counts its whole kernel.
Everything else DirectML cannot say exactly is refused with the node and the reason.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict, cast

import numpy as np

from ovpool import dtypes, shape
from ovpool.axis import unpool_window_for
from ovpool.dml.levels import DML_FEATURE_LEVELS, DML_OPERATORS, DmlOperatorLevel, Need, choose, describe, level_name, row_at

# the feature-level names this module held before 0.2.0 (``ovpool.dml.levels`` holds them now)
from ovpool.dml.levels import DML_LEVELS as DML_LEVELS
from ovpool.dml.levels import FeatureLevelError as FeatureLevelError
from ovpool.dml.levels import level_text as level_text
from ovpool.dml.levels import parse_feature_level as parse_feature_level
from ovpool.errors import InputFileError, ModelError, SpecError, UnsupportedError
from ovpool.files import parse_json
from ovpool.spec import Divisor, IndexOrder, Indices, Padding, PoolKind, PoolSpec

FORMAT = "ovpool-dml"
FORMAT_VERSION = 1
PADDING_OP = "DML_OPERATOR_PADDING"


# Index dtypes of ONNX/OpenVINO -> the DirectML index type with the same bits: indices are >= 0.
INDEX_TYPES: dict[str, str] = {"int64": "uint64", "int32": "uint32"}


MAX_SIZE = 2**32 - 1  # a DML_BUFFER_TENSOR_DESC's Sizes are UINT32


def window_members(explicit: PoolSpec, include: bool) -> dict[str, object]:
    """The window members every pooling desc shares, of a spec with explicit pads: kernel 3,
    stride 2, pads 1/1 give ``WindowSize [3, 3]``, ``Strides [2, 2]``, ``StartPadding [1, 1]``..."""
    return {
        "DimensionCount": len(explicit.kernel),
        "Strides": list(explicit.strides),
        "WindowSize": list(explicit.kernel),
        "StartPadding": list(explicit.pads_begin),
        "EndPadding": list(explicit.pads_end),
        "Dilations": list(explicit.dilations),
        "IncludePadding": include,
    }


def tensor_desc(dtype: str, sizes: Sequence[int], strides: Sequence[int] | None = None) -> dict:
    """A buffer tensor desc as the JSON holds it; ``strides`` (in elements) only for a tensor that is
    not packed row-major (a channels-last view: ``channels_last_strides``)."""
    desc: dict = {"DataType": dtypes.dml_type(dtype), "Sizes": [int(v) for v in sizes]}
    if strides is not None:
        desc["Strides"] = [int(v) for v in strides]
    return desc


def channels_last_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Element strides that view a packed channels-last tensor (N, *spatial, C) as the desc Sizes
    (N, C, *spatial) DirectML pools: a 1x4x4x3 NHWC buffer seen as 1x3x4x4 has strides
    (48, 1, 12, 3). A unit axis of a 1-D pool (1x3x1x8) gets the stride its size-1 place would have."""
    n, c, *spatial = (int(v) for v in sizes)
    steps = [c * math.prod(spatial[i + 1 :]) for i in range(len(spatial))]
    return (c * math.prod(spatial), 1, *steps)


def numpy_type(dml_type: object, where: str) -> str:
    """``"DML_TENSOR_DATA_TYPE_FLOAT16"`` -> ``"float16"``; anything else is a ModelError."""
    dtype = dtypes.from_dml(dml_type) if isinstance(dml_type, str) else None
    if dtype is None:
        raise ModelError(f"{where}: DataType {shown(dml_type)} is not a DML_TENSOR_DATA_TYPE ovpool knows")
    return dtype


def make_operator(
    name: str, row: DmlOperatorLevel, level: int, inputs: Sequence[str], outputs: Sequence[str], values: Mapping[str, object]
) -> dict:
    return {
        "name": name,
        "type": row.op_type,
        "min_feature_level": level_name(level),
        "inputs": list(inputs),
        "outputs": list(outputs),
        "desc": {member: values[member] for member in row.members},
    }


@dataclass(frozen=True)
class Lowered:
    """Operators for one source node, and ``tensors``: the logical (source graph) DataType and
    Sizes of each tensor they read or write. A 1-D pool's descs add a unit axis to these.
    ``constants``: the tensors whose values the operators need (a quantized pool's scales and zero
    points), ``{name: {DataType, Sizes, Values}}``."""

    operators: list[dict]
    tensors: dict[str, dict]
    constants: dict[str, dict] = field(default_factory=dict)


def operators_from_spec(
    spec: PoolSpec,
    input_shape: Sequence[int | None],
    inputs: Sequence[str],
    outputs: Sequence[str],
    cap: int | None = None,
    index_dtype: str | None = None,
    output_shape: Sequence[int] | None = None,
    pad_tensor: str | None = None,
    where: str | None = None,
) -> Lowered:
    """The DirectML operators computing ``spec`` on an ``input_shape`` tensor, in execution order,
    with the logical shape of every tensor they touch.

    ``inputs``/``outputs`` are tensor names (X[, I] / Y[, Indices]). ``index_dtype`` is the dtype
    of an unpool's indices input; ``output_shape`` an unpool's known output shape. ``pad_tensor``
    names the intermediate of a PADDING decomposition (default ``<name>/pad``). ``where`` names
    the source in errors (default ``node '<name>'``; an IR source says ``layer ...``).
    """
    where = where or f"node '{spec.name}'"
    try:
        return _lower(spec, input_shape, inputs, outputs, cap, index_dtype, output_shape, pad_tensor, where)
    except SpecError as exc:
        raise exc.at(where) from None


def _lower(spec, input_shape, inputs, outputs, cap, index_dtype, output_shape, pad_tensor, where) -> Lowered:
    cap = DML_FEATURE_LEVELS[-1] if cap is None else cap
    if spec.dtype is None:
        raise UnsupportedError(f"{where}: its input's data type is unknown; DirectML tensor descs need one")
    if spec.dtype not in dtypes.DML_NAMES:
        raise UnsupportedError(f"{where}: DirectML has no {spec.dtype} tensor data type (DML_TENSOR_DATA_TYPE)")
    input_shape = static_input(spec, input_shape, where)
    if spec.p is not None and not spec.p.is_integer():
        raise UnsupportedError(f"{where}: p={spec.p:g} is not an integer; DirectML's LP_POOLING takes a UINT P")
    if spec.kind is PoolKind.UNPOOL:
        return _unpool_operator(spec, input_shape, inputs, outputs, cap, index_dtype, output_shape, where)
    spatial = input_shape[2:]
    window = spec.resolve_global(spatial)
    if spec.indices is not None:
        # column-major indices are DirectML's row-major ones when the index steps agree on every
        # spatial axis longer than 1 (a 1-D pool, or 1x7 planes)
        row_major = Indices(IndexOrder.ROW_MAJOR, spec.indices.axis, spec.indices.dtype)
        steps, row_steps = shape.index_strides(input_shape, spec.indices)[2], shape.index_strides(input_shape, row_major)[2]
        if any(a != b for a, b, length in zip(steps, row_steps, spatial) if length > 1):
            raise UnsupportedError(
                f"{where}: storage_order=1 (column-major indices) has no DirectML form on an input with "
                "two spatial axes longer than 1; OutputIndicesTensor is row-major over the whole tensor"
            )
        if spec.indices.axis != 0:
            raise UnsupportedError(
                f"{where}: indices counted from axis {spec.indices.axis} have no DirectML form; "
                "OutputIndicesTensor counts over the whole tensor (axis 0)"
            )
    refuse_empty_windows(window, spatial, where)
    out_shape = shape.output_shape(spec, input_shape)
    pads_begin, pads_end = shape.resolved_pads(window, spatial)
    explicit = window.with_(padding=Padding.EXPLICIT, pads_begin=pads_begin, pads_end=pads_end)
    operators: list[dict] = []
    tensors = {inputs[0]: tensor_desc(spec.dtype, input_shape), outputs[0]: tensor_desc(spec.dtype, out_shape)}
    if spec.indices is not None:
        tensors[outputs[1]] = tensor_desc(spec.indices.dtype, out_shape)
    source, in_shape = inputs[0], input_shape
    include = False
    if explicit.kind is PoolKind.AVERAGE and any(pads_begin + pads_end) and explicit.divisor is not Divisor.EXCLUDE_PAD:
        full_end = shape.floor_end_pads(window, spatial)
        if tuple(full_end) == tuple(pads_end):
            include = True
        else:
            end = pads_end if explicit.divisor is Divisor.INCLUDE_PAD else full_end
            pad_name = pad_tensor or f"{spec.name}/pad"
            pad_op, in_shape = padding_operator(spec, input_shape, pads_begin, end, source, pad_name, cap, where)
            operators.append(pad_op)
            tensors[pad_name] = tensor_desc(spec.dtype, in_shape)
            source = pad_name
            zeros = (0,) * len(spatial)
            explicit = explicit.with_(pads_begin=zeros, pads_end=zeros, divisor=Divisor.EXCLUDE_PAD)
    if len(spatial) == 1:
        explicit = shape.unit_axis_spec(explicit)
        in_shape, out_shape = shape.unit_axis_shape(in_shape), shape.unit_axis_shape(out_shape)
    kind = {PoolKind.AVERAGE: "average pooling", PoolKind.MAX: "max pooling"}.get(explicit.kind, "lp pooling")
    dilated = explicit.dilations != (1,) * len(explicit.kernel)
    index_type = None
    if spec.indices is not None:
        index_type = INDEX_TYPES[spec.indices.dtype]
    members = {"Dilations"} if dilated else set()
    if index_type is not None:
        members.add("OutputIndicesTensor")
    extras = (["dilations"] if dilated else []) + ([f"{spec.indices.dtype} indices"] if spec.indices else [])
    need = Need(
        explicit.kind,
        frozenset(members),
        explicit.dtype,
        len(in_shape),
        index_type,
        describe(kind, explicit.dtype, len(in_shape), extras),
    )
    row, level = choose(need, cap, where)
    values = {
        "InputTensor": tensor_desc(spec.dtype, in_shape),
        "OutputTensor": tensor_desc(spec.dtype, out_shape),
        "OutputIndicesTensor": tensor_desc(index_type, out_shape) if index_type else None,
        **window_members(explicit, include),
        "P": None if spec.p is None else int(spec.p),
    }
    operators.append(make_operator(spec.name, row, level, [source], outputs, values))
    return Lowered(operators, tensors)


def static_input(spec: PoolSpec, input_shape: Sequence[int | None], where: str) -> tuple[int, ...]:
    """The input shape as DirectML tensor descs take it: static, UINT32 sizes, 1 to 3 spatial axes
    (a 1-D pool gets its unit axis later); else an ``UnsupportedError`` naming ``where``."""
    if any(d is None for d in input_shape):
        raise UnsupportedError(f"{where}: input shape {list(input_shape)} is not static; DirectML tensor descs need sizes")
    static = tuple(int(cast("int", d)) for d in input_shape)
    shape.check_input_rank(spec, len(static))
    if max(static) > MAX_SIZE:
        raise UnsupportedError(f"{where}: input shape {list(static)}: DirectML tensor sizes are UINT32 (at most {MAX_SIZE})")
    if not 3 <= len(static) <= 5:
        raise UnsupportedError(
            f"{where}: a rank-{len(static)} input has {len(static) - 2} spatial axes; "
            "DirectML pools 1 to 3 (4-D or 5-D tensors, 1-D via a unit axis)"
        )
    return static


def padding_operator(
    spec: PoolSpec,
    input_shape: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    source: str,
    target: str,
    cap: int,
    where: str,
    value: int = 0,
) -> tuple[dict, tuple[int, ...]]:
    """DML_OPERATOR_PADDING with ``value`` (0; a quantized pool's input zero point, the real 0):
    pads on the spatial axes only, as 4-D/5-D tensors of ``spec.dtype``."""
    dtype = spec.dtype
    assert dtype is not None  # the pooling operators check their spec's dtype first
    full_begin, full_end = (0, 0) + tuple(begin), (0, 0) + tuple(end)
    padded = shape.padded_shape(input_shape, full_begin, full_end)
    in_sizes, out_sizes = input_shape, padded
    if len(input_shape) == 3:
        in_sizes, out_sizes = shape.unit_axis_shape(input_shape), shape.unit_axis_shape(padded)
        full_begin, full_end = (0, 0, 0) + tuple(begin), (0, 0, 0) + tuple(end)
    need = Need(
        None,
        frozenset(),
        dtype,
        len(in_sizes),
        None,
        describe(f"padding with {value} (for an include-pad average)", dtype, len(in_sizes), []),
    )
    row, level = choose(need, cap, where)
    values = {
        "InputTensor": tensor_desc(dtype, in_sizes),
        "OutputTensor": tensor_desc(dtype, out_sizes),
        "PaddingMode": "DML_PADDING_MODE_CONSTANT",
        "PaddingValue": float(value),
        "DimensionCount": len(in_sizes),
        "StartPadding": list(full_begin),
        "EndPadding": list(full_end),
    }
    return make_operator(f"{spec.name}/pad", row, level, [source], [target], values), padded


def _unpool_operator(spec, input_shape, inputs, outputs, cap, index_dtype, output_shape, where) -> Lowered:
    if output_shape is None:
        output_shape = tuple(input_shape[:2]) + shape.unpool_output_spatial(spec, input_shape[2:])
    output_shape = tuple(int(d) for d in output_shape)
    if len(output_shape) != len(input_shape) or output_shape[:2] != tuple(input_shape[:2]) or min(output_shape) < 1:
        raise UnsupportedError(
            f"{where}: output_shape {list(output_shape)} must keep the input's rank, N and C ({list(input_shape)}) "
            "with every dim >= 1"
        )
    if index_dtype not in INDEX_TYPES:
        raise UnsupportedError(f"{where}: indices of type {index_dtype} have no DirectML index type (uint32/uint64)")
    index_type = INDEX_TYPES[index_dtype]
    in_sizes, out_sizes = input_shape, output_shape
    if len(input_shape) == 3:
        in_sizes, out_sizes = shape.unit_axis_shape(input_shape), shape.unit_axis_shape(output_shape)
    need = Need(
        PoolKind.UNPOOL,
        frozenset(),
        spec.dtype,
        len(in_sizes),
        index_type,
        describe("max unpooling", spec.dtype, len(in_sizes), [f"{index_dtype} indices"]),
    )
    row, level = choose(need, cap, where)
    values = {
        "InputTensor": tensor_desc(spec.dtype, in_sizes),
        "IndicesTensor": tensor_desc(index_type, in_sizes),
        "OutputTensor": tensor_desc(spec.dtype, out_sizes),
    }
    tensors = {
        inputs[0]: tensor_desc(spec.dtype, input_shape),
        inputs[1]: tensor_desc(index_dtype, input_shape),
        outputs[0]: tensor_desc(spec.dtype, output_shape),
    }
    return Lowered([make_operator(spec.name, row, level, inputs[:2], outputs[:1], values)], tensors)


@dataclass(frozen=True)
class Operator:
    """A checked operator of a DirectML document: its levels row and desc values.

    ``input_sizes``/``output_sizes`` are the desc's InputTensor/OutputTensor Sizes; ``dtype`` the
    InputTensor's data type as a numpy name; ``index_type`` the indices tensor's (or None).
    ``output_dtype`` is the OutputTensor's (a quantized pool may write uint8 from int8; every other
    operator writes its input's type). ``channels_last``: the InputTensor and OutputTensor Strides
    view channels-last tensors (``channels_last_strides``), which only a quantized pool may do.
    ``inputs`` name the tensors of the desc's non-null input members, in member order.
    """

    name: str
    row: DmlOperatorLevel
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    desc: Mapping[str, object]
    dtype: str
    input_sizes: tuple[int, ...]
    output_sizes: tuple[int, ...]
    index_type: str | None
    output_dtype: str = ""
    channels_last: bool = False

    def __post_init__(self) -> None:
        if not self.output_dtype:
            object.__setattr__(self, "output_dtype", self.dtype)


def shown(value: object, limit: int = 80) -> str:
    """A value of the document as JSON spells it, for messages: ``True`` -> ``true``, ``None`` ->
    ``null``, ``"3"`` -> ``"3"`` (quoted, unlike the number 3); past ``limit`` characters cut with
    ``...``."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_operator(op: object, position: int) -> Operator:
    """Validate one operator dict: known type, exactly its struct's members, consistent sizes and
    data types, tensor names for every input and output. Errors name the operator."""
    if not isinstance(op, dict):
        raise ModelError(f"operator {position}: expected an object, got {shown(op)}")
    name = op.get("name", f"#{position}")
    if not isinstance(name, str) or not name:
        raise ModelError(f"operator {position}: 'name' must be a non-empty string, got {shown(name)}")
    where = f"operator '{name}'"
    op_type = op.get("type")
    if op_type not in DML_OPERATORS:
        raise UnsupportedError(
            f"{where}: type {shown(op_type)} is not a DirectML operator ovpool handles ({', '.join(DML_OPERATORS)})"
        )
    row = row_at(op_type, DML_FEATURE_LEVELS[-1])
    assert row is not None  # every operator of DML_OPERATORS exists at the newest level
    level = op.get("min_feature_level")
    if level is not None and (not isinstance(level, str) or level not in {level_name(v) for v in DML_FEATURE_LEVELS}):
        raise ModelError(f"{where}: min_feature_level {shown(level)} is not a DML_FEATURE_LEVEL_X_Y ovpool knows")
    desc = op.get("desc")
    if not isinstance(desc, dict):
        raise ModelError(f"{where}: 'desc' must be an object with the members of {struct_name(op_type)}")
    missing = [m for m in row.members if m not in desc]
    unknown = [m for m in desc if m not in row.members]
    if missing or unknown:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unknown {', '.join(unknown)}"] if unknown else [])
        raise ModelError(f"{where}: desc of {struct_name(op_type)}: {'; '.join(parts)}")
    inputs, outputs = _names(op.get("inputs"), "inputs", where), _names(op.get("outputs"), "outputs", where)
    x = _tensor(desc, "InputTensor", where)
    y = _tensor(desc, "OutputTensor", where)
    channels_last = _check_strides(row, desc, where)
    if row.quantized:
        return _check_quantized(op_type, row, str(name), inputs, outputs, desc, x, y, channels_last, where)
    if x[0] != y[0]:
        raise ModelError(f"{where}: InputTensor is {x[0]} but OutputTensor is {y[0]}; DirectML needs the same DataType")
    if len(x[1]) != len(y[1]):
        raise ModelError(f"{where}: InputTensor and OutputTensor Sizes differ in rank ({list(x[1])} vs {list(y[1])})")
    index_type = None
    index_member = "IndicesTensor" if "IndicesTensor" in row.members else "OutputIndicesTensor"
    if row.kind is PoolKind.UNPOOL and desc.get(index_member) is None:
        raise ModelError(f"{where}: {op_type} needs its IndicesTensor")
    if desc.get(index_member) is not None:
        index_type, index_sizes = _tensor(desc, index_member, where)
        if index_type not in row.index_types:
            raise ModelError(
                f"{where}: {index_member} DataType must be {' or '.join(str(dtypes.dml_type(t)) for t in row.index_types)}"
            )
        expected = x[1] if index_member == "IndicesTensor" else y[1]
        if index_sizes != expected:
            raise ModelError(f"{where}: {index_member} Sizes {list(index_sizes)} must equal {list(expected)}")
    wanted_inputs = 2 if row.kind is PoolKind.UNPOOL else 1
    wanted_outputs = 2 if index_member == "OutputIndicesTensor" and index_type else 1
    if len(inputs) != wanted_inputs or len(outputs) != wanted_outputs:
        raise ModelError(
            f"{where}: {op_type} with this desc takes {wanted_inputs} input(s) and {wanted_outputs} output(s), "
            f"the operator lists {len(inputs)} and {len(outputs)}"
        )
    if "DimensionCount" in row.members:
        count = desc["DimensionCount"]
        expected_count = len(x[1]) if row.kind is None else len(x[1]) - 2
        if type(count) is not int or count != expected_count:
            raise ModelError(
                f"{where}: DimensionCount {shown(count)} must be the integer {expected_count} for {len(x[1])}-D tensors"
            )
        for member in row.members:
            if member in ("Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations"):
                _uints(desc[member], count, member, where)
    if "IncludePadding" in row.members and not isinstance(desc["IncludePadding"], bool):
        raise ModelError(f"{where}: IncludePadding must be true or false, got {shown(desc['IncludePadding'])}")
    if "P" in row.members and (type(desc["P"]) is not int or not 1 <= desc["P"] <= MAX_SIZE):
        raise ModelError(f"{where}: P must be an unsigned integer >= 1 (the norm's exponent), got {shown(desc['P'])}")
    return Operator(str(name), row, tuple(inputs), tuple(outputs), desc, x[0], x[1], y[1], index_type)


QUANTIZED_INPUTS = ("InputTensor", "InputScaleTensor", "InputZeroPointTensor", "OutputScaleTensor", "OutputZeroPointTensor")
QUANTIZATION_MEMBERS = QUANTIZED_INPUTS[1:]
_OPTIONAL_INPUTS = ("InputZeroPointTensor", "OutputZeroPointTensor")


def _check_quantized(
    op_type: str,
    row: DmlOperatorLevel,
    name: str,
    inputs: list[str],
    outputs: list[str],
    desc: Mapping[str, object],
    x: tuple[str, tuple[int, ...]],
    y: tuple[str, tuple[int, ...]],
    channels_last: bool,
    where: str,
) -> Operator:
    """The member checks of DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC (its page's Tensor
    constraints and support): INT8/UINT8 InputTensor and OutputTensor of 4 or 5 dims, each zero
    point of its data tensor's type, FLOAT32 scales, and every scale or zero point of Sizes
    ``{1, 1, 1, 1}`` (per tensor) or ``{1, ChannelCount, 1, 1}`` (per channel; 5 dims for 5-D data).
    The zero points may be null; ``inputs`` list the non-null input members in order."""
    for member, (dtype, sizes) in (("InputTensor", x), ("OutputTensor", y)):
        if dtype not in row.data_types:
            allowed = " or ".join(str(dtypes.dml_type(t)) for t in row.data_types)
            raise ModelError(f"{where}: {member} DataType must be {allowed}, got {dtypes.dml_type(dtype)}")
        if len(sizes) not in row.tensor_ranks:
            raise ModelError(f"{where}: {member} has {len(sizes)} dims; {op_type} takes 4 or 5")
    if len(x[1]) != len(y[1]):
        raise ModelError(f"{where}: InputTensor and OutputTensor Sizes differ in rank ({list(x[1])} vs {list(y[1])})")
    channels = x[1][1]
    per_tensor = [1] * len(x[1])
    per_channel = [1, channels] + [1] * (len(x[1]) - 2)
    for member in QUANTIZATION_MEMBERS:
        if desc.get(member) is None:
            if member in _OPTIONAL_INPUTS:
                continue
            raise ModelError(f"{where}: {member} must not be null")
        dtype, sizes = _tensor(desc, member, where)
        data = x[0] if member.startswith("Input") else y[0]
        wanted = row.scale_types if "Scale" in member else (data,)
        if dtype not in wanted:
            owner = "" if "Scale" in member else f" ({member.replace('ZeroPoint', '')}'s)"
            raise ModelError(
                f"{where}: {member} DataType must be {' or '.join(str(dtypes.dml_type(t)) for t in wanted)}{owner}, "
                f"got {dtypes.dml_type(dtype)}"
            )
        if list(sizes) not in (per_tensor, per_channel):
            raise ModelError(
                f"{where}: {member} Sizes {list(sizes)} must be {per_tensor} (per tensor) or {per_channel} (per channel)"
            )
    wanted_inputs = sum(1 for member in QUANTIZED_INPUTS if desc.get(member) is not None)
    if len(inputs) != wanted_inputs or len(outputs) != 1:
        raise ModelError(
            f"{where}: {op_type} with this desc takes {wanted_inputs} input(s) (its non-null input tensors in "
            f"member order) and 1 output, the operator lists {len(inputs)} and {len(outputs)}"
        )
    count = desc["DimensionCount"]
    if type(count) is not int or count != len(x[1]) - 2:
        raise ModelError(f"{where}: DimensionCount {shown(count)} must be the integer {len(x[1]) - 2} for {len(x[1])}-D tensors")
    for member in ("Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations"):
        _uints(desc[member], count, member, where)
    if not isinstance(desc["IncludePadding"], bool):
        raise ModelError(f"{where}: IncludePadding must be true or false, got {shown(desc['IncludePadding'])}")
    return Operator(name, row, tuple(inputs), tuple(outputs), desc, x[0], x[1], y[1], None, y[0], channels_last)


def _check_strides(row: DmlOperatorLevel, desc: Mapping[str, object], where: str) -> bool:
    """Whether the desc views channels-last tensors. ovpool writes packed tensors, and for a
    quantized pool's InputTensor and OutputTensor the channels-last view of ``channels_last_strides``
    (onnxruntime's QLinearAveragePool with channels_last=1); any other Strides, or a view on one of
    the two only, is refused."""
    strided = {}
    for member, value in desc.items():
        if isinstance(value, dict) and "Strides" in value:
            strided[member] = value["Strides"]
    if not strided:
        return False
    for member, strides in strided.items():
        sizes = cast("dict", desc[member]).get("Sizes")
        view = None
        if row.quantized and member in ("InputTensor", "OutputTensor") and isinstance(sizes, list) and len(sizes) >= 2:
            view = list(channels_last_strides(sizes))
        if view is None or not isinstance(strides, list) or [type(v) for v in strides] != [int] * len(view) or strides != view:
            expected = f" (the channels-last view of {shown(sizes)} is {view})" if view else ""
            raise ModelError(
                f"{where}: {member}.Strides {shown(strides)}: ovpool reads packed tensors, and channels-last views "
                f"of a quantized average pooling's InputTensor and OutputTensor{expected}"
            )
    if set(strided) != {"InputTensor", "OutputTensor"}:
        raise ModelError(f"{where}: InputTensor and OutputTensor must both view channels-last tensors, or neither")
    return True


def _names(names: object, key: str, where: str) -> list[str]:
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise ModelError(f"{where}: '{key}' must be a non-empty list of tensor names")
    return names


def _tensor(desc: Mapping[str, object], member: str, where: str) -> tuple[str, tuple[int, ...]]:
    value = desc.get(member)
    if not isinstance(value, dict) or "DataType" not in value or "Sizes" not in value:
        raise ModelError(f"{where}: {member} must be an object with DataType and Sizes")
    sizes = value["Sizes"]
    if (
        not isinstance(sizes, list)
        or not sizes
        or not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_SIZE for v in sizes)
    ):
        raise ModelError(f"{where}: {member}.Sizes must be a list of integers from 1 to {MAX_SIZE} (UINT32), got {shown(sizes)}")
    return numpy_type(value["DataType"], f"{where}: {member}"), tuple(sizes)


def _uints(values: object, count: int, member: str, where: str) -> None:
    if (
        not isinstance(values, list)
        or len(values) != count
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)
    ):
        raise ModelError(f"{where}: {member} must be {count} unsigned integers, got {shown(values)}")


def struct_name(op_type: str) -> str:
    """``"DML_OPERATOR_MAX_POOLING1"`` -> ``"DML_MAX_POOLING1_OPERATOR_DESC"``."""
    return "DML_" + op_type.removeprefix("DML_OPERATOR_") + "_OPERATOR_DESC"


def spec_from_operator(op: Operator) -> PoolSpec:
    """The PoolSpec a pooling or unpooling operator computes on its desc's own (4-D/5-D) sizes.

    The rounding is read from OutputTensor's sizes (``shape.rounding_for``); sizes that no rounding
    gives are refused, as is IncludePadding=TRUE where a window overhangs EndPadding (DirectML
    does not document that divisor).
    """
    where = f"operator '{op.name}'"
    desc = op.desc
    if op.row.kind is PoolKind.UNPOOL:
        windows = [unpool_window_for(n, out) for n, out in zip(op.input_sizes[2:], op.output_sizes[2:])]
        kernel, strides, pads_end = (tuple(w[i] for w in windows) for i in range(3))
        if op.input_sizes[:2] != op.output_sizes[:2]:
            raise ModelError(
                f"{where}: InputTensor and OutputTensor must share N and C ({list(op.input_sizes)} vs {list(op.output_sizes)})"
            )
        return PoolSpec(PoolKind.UNPOOL, kernel, strides, pads_end=pads_end, dtype=op.dtype, name=op.name)
    if op.row.kind is None:
        raise ModelError(f"{where}: {op.row.op_type} is not a pooling operator")
    include = bool(desc.get("IncludePadding", False))
    indices = Indices(dtype=_INDEX_DTYPE[op.index_type]) if op.index_type else None
    try:
        base = _window_spec(op, include, indices)
    except SpecError as exc:
        member = None if exc.attribute is None else _MEMBER_OF.get(exc.attribute, exc.attribute)
        raise SpecError(op.name, member, exc.value, exc.message, where) from None
    spatial, out_spatial = op.input_sizes[2:], op.output_sizes[2:]
    if op.input_sizes[:2] != op.output_sizes[:2]:
        raise ModelError(
            f"{where}: InputTensor and OutputTensor must share N and C ({list(op.input_sizes)} vs {list(op.output_sizes)})"
        )
    rounding = shape.rounding_for(base, spatial, out_spatial)
    if rounding is not None:
        spec = base.with_(rounding=rounding)
    else:
        spec = _floor_with_end_pads(base, spatial, out_spatial, where)
    refuse_empty_windows(spec, spatial, where)
    if include and tuple(shape.floor_end_pads(spec, spatial)) != spec.pads_end:
        raise UnsupportedError(
            f"{where}: IncludePadding=TRUE with a window overhanging EndPadding has an undocumented "
            "divisor in DirectML; write DML_OPERATOR_PADDING then IncludePadding=FALSE instead"
        )
    return spec


_INDEX_DTYPE = {dml: onnx for onnx, dml in INDEX_TYPES.items()}


def _window_spec(op: Operator, include: bool, indices: Indices | None) -> PoolSpec:
    """The desc's window fields as a PoolSpec (floor rounding until the sizes are read)."""
    desc = op.desc
    assert op.row.kind is not None  # spec_from_operator refuses PADDING, the one operator of no kind
    return PoolSpec(
        op.row.kind,
        kernel=_window_member(desc, "WindowSize"),
        strides=_window_member(desc, "Strides"),
        dilations=tuple(cast("list[int]", desc.get("Dilations") or ())),
        pads_begin=_window_member(desc, "StartPadding"),
        pads_end=_window_member(desc, "EndPadding"),
        divisor=Divisor.INCLUDE_PAD if include else Divisor.EXCLUDE_PAD,
        indices=indices,
        dtype=op.dtype,
        name=op.name,
        p=cast("int", desc["P"]) if "P" in desc else None,
    )


def _window_member(desc: Mapping[str, object], member: str) -> tuple[int, ...]:
    """Strides, WindowSize, StartPadding, EndPadding or Dilations of a checked desc: ``check_operator``
    has made sure (``_uints``) that it is a list of DimensionCount unsigned integers."""
    return tuple(cast("list[int]", desc[member]))


# PoolSpec's (ONNX) attribute names -> the desc members they come from, for errors.
_MEMBER_OF = {"kernel_shape": "WindowSize", "strides": "Strides", "dilations": "Dilations", "pads": "StartPadding/EndPadding"}


def _floor_with_end_pads(base: PoolSpec, spatial, out_spatial, where: str) -> PoolSpec:
    """Window counts that differ in rounding per axis (a PADDING decomposition moves the drop
    rule's threshold): FLOOR with end pads reaching each last window is the same computation for
    a max or an exclude-pad average, which never read or count pads."""
    refusal = UnsupportedError(
        f"{where}: OutputTensor spatial sizes {list(out_spatial)} match neither floor nor ceil rounding "
        f"of this window on {list(spatial)}"
    )
    if base.divisor is not Divisor.EXCLUDE_PAD:
        raise refusal
    try:
        spec = base.with_(pads_end=shape.floor_end_pads(base, spatial, out_spatial))
        if tuple(shape.output_spatial(spec, spatial)) == tuple(out_spatial):
            return spec
    except SpecError:
        pass
    raise refusal


def padding_of(op: Operator) -> tuple[tuple[int, ...], tuple[int, ...], float]:
    """(start pads, end pads, value) of a DML_OPERATOR_PADDING; only constant padding is taken."""
    where = f"operator '{op.name}'"
    desc = op.desc
    if desc["PaddingMode"] != "DML_PADDING_MODE_CONSTANT":
        raise UnsupportedError(f"{where}: PaddingMode {desc['PaddingMode']!r}: only DML_PADDING_MODE_CONSTANT is handled")
    value = desc["PaddingValue"]
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ModelError(f"{where}: PaddingValue must be a number, got {shown(value)}")
    kind = dtypes.np_dtype(op.dtype)
    if kind.kind in "iu":
        info = np.iinfo(kind)
        if not float(value).is_integer() or not info.min <= value <= info.max:
            raise ModelError(
                f"{where}: PaddingValue {shown(value)} is not a {op.dtype} value (an integer in [{info.min}, {info.max}])"
            )
    begin, end = _window_member(desc, "StartPadding"), _window_member(desc, "EndPadding")
    if shape.padded_shape(op.input_sizes, begin, end) != op.output_sizes:
        raise ModelError(
            f"{where}: OutputTensor Sizes {list(op.output_sizes)} are not InputTensor's padded by {list(begin)}/{list(end)}"
        )
    return begin, end, float(value)


class SkippedNode(TypedDict):
    """A source node a document does not express: ``{"name": "conv1", "op_type": "Conv"}``."""

    name: str
    op_type: str


class Document(TypedDict):
    """A DirectML document as ``new_document`` makes it (``loads`` returns whatever JSON object it
    read, checked only at the top level)."""

    format: str
    version: int
    operators: list[dict]
    tensors: dict[str, dict]
    constants: NotRequired[dict[str, dict]]
    skipped: list[SkippedNode]


def new_document(
    operators: list[dict],
    tensors: Mapping[str, dict],
    skipped: list[SkippedNode],
    constants: Mapping[str, dict] | None = None,
) -> Document:
    """The JSON document: operators in execution order, ``tensors`` the logical (source graph)
    DataType and Sizes of every tensor the operators read or write, ``constants`` the tensors
    whose values they need (a quantized pool's scales and zero points: ``{"DataType", "Sizes",
    "Values"}``, present only when some operator has them), ``skipped`` the source nodes that are
    not pooling (``{"name", "op_type"}``)."""
    document: Document = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "operators": operators,
        "tensors": dict(tensors),
        "skipped": skipped,
    }
    if constants:
        document["constants"] = dict(constants)
    return document


def dumps(document: Mapping[str, object]) -> bytes:
    """JSON with two-space indents; number lists and objects of plain values stay on one line."""
    return (_dump(document, 0) + "\n").encode()


def _dump(value: object, depth: int) -> str:
    pad, inner = "  " * depth, "  " * (depth + 1)
    flat = isinstance(value, dict) and all(not isinstance(v, (dict, list)) or _scalars(v) for v in value.values())
    if isinstance(value, dict) and value and not flat:
        items = ",\n".join(f"{inner}{json.dumps(k)}: {_dump(v, depth + 1)}" for k, v in value.items())
        return "{\n" + items + "\n" + pad + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + _dump(v, depth + 1) for v in value) + "\n" + pad + "]"
    return json.dumps(value)


def _scalars(value: object) -> bool:
    return isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value)


def loads(data: bytes, source: str) -> dict:
    """Parse (``ovpool.files.parse_json``: bounded depth and integers) and check the top level of a
    DirectML document; per-operator checks are ``check_operator``'s. A document nests 6 deep and
    its sizes fit in 20 digits, well within the parser's bounds."""
    document = parse_json(data, source, "a DirectML document")
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InputFileError.in_file(source, f'not an ovpool DirectML document (expected "format": "{FORMAT}")')
    if document.get("version") != FORMAT_VERSION:
        raise InputFileError.in_file(
            source, f"DirectML document version {shown(document.get('version'))} is not {FORMAT_VERSION}"
        )
    if not isinstance(document.get("operators"), list) or not document["operators"]:
        raise ModelError.in_file(source, "'operators' must be a non-empty list")
    if not isinstance(document.get("tensors", {}), dict):
        raise ModelError.in_file(source, "'tensors' must be an object of tensor name -> {DataType, Sizes}")
    if not isinstance(document.get("constants", {}), dict):
        raise ModelError.in_file(source, "'constants' must be an object of tensor name -> {DataType, Sizes, Values}")
    return document


MAX_JSON_BYTES = 64 << 20


def refuse_empty_windows(spec: PoolSpec, spatial: Sequence[int], where: str) -> None:
    """DirectML documents no result for a window with no input cell (``shape.empty_window_error``)."""
    empty = shape.empty_window_error(spec, spatial)
    if empty is not None:
        raise UnsupportedError(f"{where}: {empty.message} (it lies wholly in padding); DirectML's result for it is undocumented")
