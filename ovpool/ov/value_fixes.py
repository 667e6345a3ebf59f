"""The rows of ``ovpool.ov.translate.table.DEFECTS`` for OpenVINO CPU departures that show on some
data only (a NaN, a tie, an overflow, an empty axis) and that ovpool's conversion computes exactly:
their conditions, their lowerings, and the ``ConversionExtension`` converters of the
``ai.ovpool`` nodes the lowerings write (``CONVERTERS``), which build the OpenVINO operations
that give the ONNX meaning on the CPU plugin too.

A condition gives the node's text (``8-bit integers``) or None; one that needs the node's types
or dims gives None when they are not known (a node in a Loop body keeps OpenVINO's conversion and
its departure stays one of ``ovpool.ov.cpu_deviations``), and every lowering takes every node its
condition gives a text for, so that no node is refused for what its data might be.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import NodeProto, helper

from ovpool.ov import DOMAIN
from ovpool.ov import frontend_rewrites as rewrites
from ovpool.ov.node_facts import Facts, NodeBuilder, input_rank, node_attr, static_dims, tensor_dtype

Condition = Callable[[NodeProto, int, Facts], "str | None"]


def _in_domain(node: NodeProto, since: int, **extra: Any) -> NodeProto:
    """The node as ``ai.ovpool.<op>``, its attributes kept, ``since`` (the ONNX since-version) and
    ``extra`` added."""
    copy = helper.make_node(node.op_type, list(node.input), list(node.output), name=node.name, domain=DOMAIN, since=since)
    copy.attribute.extend(node.attribute)
    copy.attribute.extend(helper.make_attribute(key, value) for key, value in extra.items())
    return copy


def always(text: str) -> Condition:
    """The condition of a departure any data may show: ``text`` for every node."""

    def condition(node: NodeProto, since: int, facts: Facts) -> str | None:
        return text

    return condition


def input_kinds(kinds: str, text: str, sizes: tuple[int, ...] = (1, 2, 4, 8), unless: Condition | None = None) -> Condition:
    """The condition: the first input's dtype is known, of a numpy kind in ``kinds`` ("iu": the
    integers) and an itemsize in ``sizes``, and ``unless`` (a refused row's condition, left to
    that row) gives no text."""

    def condition(node: NodeProto, since: int, facts: Facts) -> str | None:
        dtype = tensor_dtype(node.input[0], facts) if node.input else None
        if dtype is None or dtype.kind not in kinds or dtype.itemsize not in sizes:
            return None
        if unless is not None and unless(node, since, facts) is not None:
            return None
        return f"{text} ({dtype.name})"

    return condition


def non_empty(text: str) -> Condition:
    """The condition: ``text`` unless the first input's static dims hold a 0 (nothing to choose from)."""

    def condition(node: NodeProto, since: int, facts: Facts) -> str | None:
        dims = static_dims(node.input[0], facts) if node.input else None
        return None if dims is not None and 0 in dims else text

    return condition


def as_ovpool(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node as ``ai.ovpool.<op>``, converted by ``CONVERTERS``."""
    return [_in_domain(node, since)]


# --- Greater, GreaterOrEqual with NaN ----------------------------------------------------------------


def swapped_comparison(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """Greater(a, b) as Less(b, a), GreaterOrEqual(a, b) as LessOrEqual(b, a): OpenVINO CPU's Less
    and LessEqual give False for NaN operands, as ONNX does (its Greater gives True for NaN > 1)."""
    less = "Less" if node.op_type == "Greater" else "LessOrEqual"
    return [helper.make_node(less, [node.input[1], node.input[0]], list(node.output), name=node.name)]


# --- Cast of floats to BOOL --------------------------------------------------------------------------


def float_to_bool(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Cast to BOOL (CastLike to a BOOL target) of a float input of known type. A Cast's target is
    read first: a model whose Casts go elsewhere needs no shape inference for them."""
    if node.op_type == "CastLike":
        target = tensor_dtype(node.input[1], facts) if len(node.input) > 1 else None
        to_bool = target is not None and target == np.bool_
    else:
        to_bool = int(node_attr(node, "to", 0)) == onnx.TensorProto.BOOL
    dtype = tensor_dtype(node.input[0], facts) if to_bool else None
    if dtype is None or dtype.kind != "f":
        return None
    return f"{dtype.name} to BOOL"


def not_equal_zero(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """Cast (CastLike) to BOOL as Not(Equal(x, 0)): NaN is not zero, so True (OpenVINO CPU's
    Convert gives False)."""
    dtype = tensor_dtype(node.input[0], facts)
    assert dtype is not None  # float_to_bool's condition
    nodes = NodeBuilder(node, facts)
    zero = nodes.add("Equal", [node.input[0], nodes.constant(np.zeros((), dtype), "zero")], "is_zero")
    return [*nodes.nodes, helper.make_node("Not", [zero], list(node.output), name=node.name)]


# --- Cast of floats to float 8 with saturate=1 ----------------------------------------------------


def _cast_target(node: NodeProto, facts: Facts) -> np.dtype | None:
    """The dtype a Cast (its ``to``) or CastLike (its second input's type) gives; None if unknown."""
    if node.op_type == "CastLike":
        return tensor_dtype(node.input[1], facts) if len(node.input) > 1 else None
    to = int(node_attr(node, "to", 0))
    return np.dtype(helper.tensor_dtype_to_np_dtype(to)) if to else None


# The float 8 types OpenVINO has whose Convert ignores ``saturate``: Convert gives NaN (E4M3FN) or
# +-inf (E5M2) beyond the largest finite value, where the Cast schema's table (saturate=1) gives it.
_SATURATED = ("float8_e4m3fn", "float8_e5m2")


def float8_saturation(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Cast (CastLike) of a float input to FLOAT8E4M3FN or FLOAT8E5M2 with saturate=1 (the default)."""
    if not int(node_attr(node, "saturate", 1)):
        return None
    target = _cast_target(node, facts)
    if target is None or target.name not in _SATURATED:
        return None
    dtype = tensor_dtype(node.input[0], facts)
    if dtype is None or not (dtype.kind == "f" or dtype.name == "bfloat16"):
        return None
    return f"{dtype.name} to {target.name}, saturate=1"


def clipped_to_float8(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The cast of ``Where(IsNaN(x), x, Clip(x, -max, max))``, ``max`` the target's largest finite
    value (448 for E4M3FN, 57344 for E5M2): +-inf and 1e6 become +-448 as the schema's table says,
    NaN stays NaN (OpenVINO CPU's Clamp makes NaN the lower bound, -448)."""
    import ml_dtypes

    dtype, target = tensor_dtype(node.input[0], facts), _cast_target(node, facts)
    assert dtype is not None and target is not None  # float8_saturation's condition
    largest = float(ml_dtypes.finfo(target).max)
    nodes = NodeBuilder(node, facts)
    low = nodes.constant(np.array(-largest, dtype), "lowest")
    high = nodes.constant(np.array(largest, dtype), "largest")
    clipped = nodes.add("Clip", [node.input[0], low, high], "clipped")
    nan = nodes.add("IsNaN", [node.input[0]], "is_nan")
    kept = nodes.add("Where", [nan, node.input[0], clipped], "saturated")
    cast = helper.make_node(node.op_type, [kept, *node.input[1:]], list(node.output), name=node.name)
    cast.attribute.extend(node.attribute)
    return [*nodes.nodes, cast]


# --- Cast of floats to FLOAT8E8M0: round_mode and saturate ------------------------------------------


def float8e8m0_rounding(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Cast (CastLike) of a float input to FLOAT8E8M0 (Cast-24+)."""
    target = _cast_target(node, facts)
    dtype = tensor_dtype(node.input[0], facts) if target is not None and target.name == "float8_e8m0fnu" else None
    if dtype is None or not (dtype.kind == "f" or dtype.name == "bfloat16"):
        return None
    mode = node_attr(node, "round_mode", "up")
    return f"{dtype.name} to FLOAT8E8M0, round_mode='{mode.decode() if isinstance(mode, bytes) else mode}'"


def powers_of_two(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The power of two the Cast schema's ``round_mode`` picks, in float32, then cast (exact):
    ``f``, the largest power of two <= |x| (from OpenVINO's Convert of |x| clipped to
    [2^-127, 2^127], one step either way, corrected by comparison), then ``up`` 2f unless |x| = f
    (1.1 -> 2), ``down`` f (1.9 -> 1), ``nearest`` 2f from 1.5 f on (1.5 -> 2, 1.4 -> 1). With
    saturate=1 the result is clipped to [2^-127, 2^127] (0 -> 2^-127, inf -> 2^127), without it
    NaN outside; NaN stays NaN. Negative values take their magnitude (the schema leaves them
    unspecified; ovpool's numpy Cast does so)."""
    dtype = tensor_dtype(node.input[0], facts)
    assert dtype is not None  # float8e8m0_rounding's condition
    if dtype == np.float64:
        return "a float32, float16 or bfloat16 input (float64 would round to float32 first)"
    mode = node_attr(node, "round_mode", "up")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("up", "down", "nearest"):
        return f"round_mode 'up', 'down' or 'nearest' (it is '{mode}')"
    nodes = NodeBuilder(node, facts)
    f32 = onnx.TensorProto.FLOAT

    def constant(value: float, part: str) -> str:
        return nodes.constant(np.array(value, np.float32), part)

    low, high, half, two = (
        constant(2.0**-127, "lowest"),
        constant(2.0**127, "highest"),
        constant(0.5, "half"),
        constant(2.0, "two"),
    )
    x = node.input[0] if dtype == np.float32 else nodes.add("Cast", [node.input[0]], "float32", to=f32)
    size = nodes.add("Abs", [x], "magnitude")
    inside = nodes.add("Clip", [size, low, high], "inside")
    estimate = nodes.add("Cast", [nodes.add("Cast", [inside], "estimate8", to=onnx.TensorProto.FLOAT8E8M0)], "estimate", to=f32)
    above = nodes.add("Greater", [estimate, size], "above")
    floor = nodes.add("Where", [above, nodes.add("Mul", [estimate, half], "halved"), estimate], "floor_once")
    doubled = nodes.add("Mul", [floor, two], "doubled")
    floor = nodes.add("Where", [nodes.add("LessOrEqual", [doubled, size], "below"), doubled, floor], "floor")
    doubled = nodes.add("Mul", [floor, two], "next")
    if mode == "down":
        rounded = floor
    else:
        threshold = floor if mode == "up" else nodes.add("Mul", [floor, constant(1.5, "three_halves")], "midpoint")
        compare = "Less" if mode == "up" else "LessOrEqual"
        rounded = nodes.add("Where", [nodes.add(compare, [threshold, size], "goes_up"), doubled, floor], "rounded")
    nan = constant(float("nan"), "nan")
    if int(node_attr(node, "saturate", 1)):
        rounded = nodes.add("Min", [nodes.add("Max", [rounded, low], "at_least"), high], "saturated")
    else:
        outside = nodes.add(
            "Or", [nodes.add("Less", [rounded, low], "under"), nodes.add("Greater", [rounded, high], "over")], "out"
        )
        rounded = nodes.add("Where", [outside, nan, rounded], "in_range")
    kept = nodes.add("Where", [nodes.add("IsNaN", [x], "is_nan"), nan, rounded], "result")
    cast = helper.make_node(node.op_type, [kept, *node.input[1:]], list(node.output), name=node.name)
    cast.attribute.extend(node.attribute)
    return [*nodes.nodes, cast]


# --- Sum and Mean of float16: one rounding ------------------------------------------------------------


def float16_chain(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Sum or Mean of three or more float16 inputs."""
    dtype = tensor_dtype(node.input[0], facts) if node.input else None
    return "float16, three or more inputs" if dtype == np.float16 and len(node.input) > 2 else None


def in_float32(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node on its inputs cast to float32, the result cast back: the IR then says what
    OpenVINO CPU computes at f32 (one rounding to float16 at the end, as onnxruntime gives:
    0.1 + 1000 - 1000 is 0.09998 where float16 partial sums give 0.0) and numpy runs it so."""
    nodes = NodeBuilder(node, facts)
    wide = [nodes.add("Cast", [name], f"float32_{i}", to=onnx.TensorProto.FLOAT) for i, name in enumerate(node.input)]
    total = nodes.add(node.op_type, wide, "float32")
    return [*nodes.nodes, helper.make_node("Cast", [total], list(node.output), name=node.name, to=onnx.TensorProto.FLOAT16)]


# --- integers computed in float and truncated: Shrink, ReduceLogSum, ReduceLogSumExp -----------------


def through_float32(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node on its input cast to float32 and the result cast back, which truncates (OpenVINO
    CPU's Convert does, as ONNX's Cast): Shrink of 5 with bias 1e-6 is trunc(4.999999) = 4, where
    OpenVINO's integer Shrink rounds to 5. A reduction whose axes are an attribute at opset 13..17
    takes them as an input (``frontend_rewrites.axes_as_input``), one without axes and
    noop_with_empty_axes=1 its elementwise step."""
    dtype = tensor_dtype(node.input[0], facts)
    assert dtype is not None  # input_kinds' condition
    nodes = NodeBuilder(node, facts)
    wide = nodes.add("Cast", [node.input[0]], "float32", to=onnx.TensorProto.FLOAT)
    result = facts.names.fresh(f"{nodes.base}/computed")
    inner = helper.make_node(node.op_type, [wide, *node.input[1:]], [result], name=facts.names.fresh(nodes.base))
    inner.attribute.extend(node.attribute)
    replaced: list[NodeProto] | str = [inner]
    if node.op_type.startswith("Reduce") and since == 13 and rewrites.axes_attribute(inner, since, facts):
        replaced = rewrites.axes_as_input(inner, since, facts)
    elif node.op_type.startswith("Reduce") and rewrites.noop_without_axes(inner, since, facts):
        replaced = rewrites.elementwise_step(inner, since, facts)
    assert isinstance(replaced, list)
    back = helper.make_node("Cast", [result], list(node.output), name=node.name, to=helper.np_dtype_to_tensor_dtype(dtype))
    return [*nodes.nodes, *replaced, back]


# --- ReduceMax, ReduceMin over an empty axis ---------------------------------------------------------


def empty_reduction(node: NodeProto, since: int, facts: Facts) -> str | None:
    """A static input with a zero dim whose static output is not empty (the reduced axes take
    every zero dim), of a float type or an integer type OpenVINO CPU holds whole (8 and 16 bits,
    int32: it computes a uint32 constant 2**32 - 1 as 2**31 - 1, an int64 one in int32)."""
    dims, out = static_dims(node.input[0], facts), static_dims(node.output[0], facts)
    dtype = tensor_dtype(node.input[0], facts)
    if dims is None or out is None or 0 not in dims or 0 in out or dtype is None:
        return None
    if dtype.kind not in "fiu" or (dtype.kind != "f" and (dtype.itemsize > 4 or dtype == np.uint32)):
        return None
    return f"an axis of length 0 in {list(dims)}"


def empty_fill(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The reduction of no values, a constant of the output's shape: -inf for ReduceMax of floats,
    the type's minimum for integers (int8: -128); +inf or the maximum for ReduceMin."""
    dtype = tensor_dtype(node.input[0], facts)
    out = static_dims(node.output[0], facts)
    assert dtype is not None and out is not None  # empty_reduction's condition
    low = node.op_type == "ReduceMax"
    if dtype.kind == "f":
        fill: Any = -np.inf if low else np.inf
    else:
        fill = np.iinfo(dtype).min if low else np.iinfo(dtype).max
    value = onnx.numpy_helper.from_array(np.full(out, fill, dtype), node.output[0])
    return [helper.make_node("Constant", [], [node.output[0]], name=node.name, value=value)]


# --- Flatten of an input with a zero dim -------------------------------------------------------------


def empty_flatten(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Flatten of a static input with a zero dim."""
    dims = static_dims(node.input[0], facts)
    if dims is None or 0 not in dims or not -len(dims) <= int(node_attr(node, "axis", 1)) <= len(dims):
        return None  # nothing to fix, or an axis OpenVINO's conversion refuses by itself
    return f"an input of shape {list(dims)}"


def flatten_to_static(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """``ai.ovpool.Flatten`` with the target ``[prod(dims[:axis]), prod(dims[axis:])]`` written out:
    [4, 0] for axis 2 of [4, 1, 2, 0], a Reshape without special_zero."""
    dims = static_dims(node.input[0], facts)
    assert dims is not None  # empty_flatten's condition
    axis = int(node_attr(node, "axis", 1))
    axis += len(dims) if axis < 0 else 0  # in [-rank, rank]: -1 of [2, 0, 3] is 2
    target = [int(np.prod(dims[:axis], dtype=np.int64)), int(np.prod(dims[axis:], dtype=np.int64))]
    return [_in_domain(node, since, target=target)]


# --- ReduceMax, ReduceMin of a row of infinities -----------------------------------------------------


def infinite_rows(node: NodeProto, since: int, facts: Facts) -> str | None:
    """ReduceMax (ReduceMin) of a float input at opset 11 or later (IsInf, float Equal): any
    reduced row may hold -inf (+inf) alone."""
    dtype = tensor_dtype(node.input[0], facts) if node.input else None
    if dtype is None or not (dtype.kind == "f" or dtype.name == "bfloat16") or facts.opset < 11:
        return None
    return f"{dtype.name} input, a reduced row of {'-inf' if node.op_type == 'ReduceMax' else '+inf'} only"


def infinity_kept(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """``Where(all, -inf, ReduceMax(x))``, ``all`` the same reduction of ``IsInf(x)`` (the negative
    ones) as 0/1 by ReduceMin: a row [-inf, -inf] gives -inf, not OpenVINO CPU's -FLT_MAX (the
    fully masked rows of Attention's function body, whose Equal(max, -inf) then misses them and
    gives NaN where ONNX gives 0). ReduceMin likewise with +inf."""
    dtype = tensor_dtype(node.input[0], facts)
    assert dtype is not None  # infinite_rows' condition
    low = node.op_type == "ReduceMax"
    nodes = NodeBuilder(node, facts)
    raw = nodes.facts.names.fresh(f"{nodes.base}/raw")
    reduction = helper.make_node(node.op_type, list(node.input), [raw], name=nodes.facts.names.fresh(f"{nodes.base}/raw"))
    reduction.attribute.extend(node.attribute)
    nodes.nodes.append(reduction)
    infinite = nodes.add("IsInf", [node.input[0]], "is_inf", detect_negative=int(low), detect_positive=int(not low))
    ones = nodes.add("Cast", [infinite], "as_float", to=onnx.TensorProto.FLOAT)
    every = helper.make_node("ReduceMin", [ones, *node.input[1:]], [nodes.facts.names.fresh(f"{nodes.base}/every")])
    every.name = nodes.facts.names.fresh(f"{nodes.base}/every")
    every.attribute.extend(node.attribute)
    nodes.nodes.append(every)
    flag = nodes.add("Cast", [every.output[0]], "all_infinite", to=onnx.TensorProto.BOOL)
    value = nodes.constant(np.array(-np.inf if low else np.inf, dtype), "infinity")
    return [*nodes.nodes, helper.make_node("Where", [flag, value, raw], list(node.output), name=node.name)]


# --- Expand to a rank-0 result -------------------------------------------------------------------------


def rank_0_expand(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Expand of a rank-0 input by an empty shape (static dims), whose result is rank 0."""
    shape = static_dims(node.input[1], facts) if len(node.input) > 1 else None
    return "a rank-0 input and an empty shape" if shape == (0,) and static_dims(node.input[0], facts) == () else None


def identity(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node as Identity: Expand of 3.0 (shape []) by [] is 3.0 of shape [] (OpenVINO CPU's
    Broadcast gives shape [1])."""
    return [helper.make_node("Identity", [node.input[0]], list(node.output), name=node.name)]


# --- QuantizeLinear with a scale or zero point computed at run time ------------------------------------

_QUANTIZED = ("int8", "uint8", "int16", "uint16")


def runtime_quantization(node: NodeProto, since: int, facts: Facts) -> str | None:
    """QuantizeLinear whose scale or zero point is not a constant (a graph input, or computed),
    of float32 x and scale to 8 or 16-bit integers, at opset 11 or later (Round), its scale a
    scalar or 1-D of static shape (the constant ones are ``ovpool.ov.quantized``'s)."""
    names = [name for name in node.input[1:3] if name]
    if all(name in facts.constants for name in names):
        return None
    x, scale = tensor_dtype(node.input[0], facts), tensor_dtype(node.input[1], facts)
    out = tensor_dtype(node.output[0], facts)
    if x != np.float32 or scale != np.float32 or out is None or out.name not in _QUANTIZED:
        return None
    if node_attr(node, "precision", 0) or int(node_attr(node, "block_size", 0)) or facts.opset < 11:
        return None  # the precision attribute, blocked scales and opset 10 (no Round) are left to OpenVINO
    scale_dims, rank = static_dims(node.input[1], facts), input_rank(node, facts)
    if scale_dims is None or len(scale_dims) > 1 or (len(scale_dims) == 1 and rank is None):
        return None  # a scale of unknown granularity
    source = "graph input" if any(name in facts.inputs for name in names) else "tensor computed"
    return f"a scale or zero point from a {source} ({out.name})"


def quantize_by_formula(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The schema's formula in exact float32 steps, ``min(max(round(x / s) + zp, lo), hi)`` cast
    to the type: round half to even first, then the zero point added (3.0 over scale 2 at uint16
    zero point 32767 is round(1.5) + 32767 = 32769; OpenVINO adds it before rounding, round(32768.5)
    = 32768). A 1-D scale (per axis) is reshaped to lie along ``axis``."""
    out, scale_dims, rank = tensor_dtype(node.output[0], facts), static_dims(node.input[1], facts), input_rank(node, facts)
    assert out is not None and scale_dims is not None  # runtime_quantization's condition
    nodes = NodeBuilder(node, facts)
    scale, zero = node.input[1], node.input[2] if len(node.input) > 2 else ""
    if len(scale_dims) == 1 and rank is not None and rank > 1:
        axis = int(node_attr(node, "axis", 1)) % rank
        along = nodes.constant(np.array([-1 if a == axis else 1 for a in range(rank)], np.int64), "along_axis")
        scale = nodes.add("Reshape", [scale, along], "scale_along_axis")
        zero = nodes.add("Reshape", [zero, along], "zero_point_along_axis") if zero else ""
    rounded = nodes.add("Round", [nodes.add("Div", [node.input[0], scale], "scaled")], "rounded")
    if zero:
        rounded = nodes.add("Add", [rounded, nodes.add("Cast", [zero], "zero_point", to=onnx.TensorProto.FLOAT)], "shifted")
    info = np.iinfo(out)
    low = nodes.add("Max", [rounded, nodes.constant(np.array(info.min, np.float32), "low")], "at_least_low")
    high = nodes.add("Min", [low, nodes.constant(np.array(info.max, np.float32), "high")], "saturated")
    return [
        *nodes.nodes,
        helper.make_node("Cast", [high], list(node.output), name=node.name, to=helper.np_dtype_to_tensor_dtype(out)),
    ]


# --- Tile with repeats known only at run time ----------------------------------------------------------


def runtime_repeats(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Tile-6+'s repeats when they are not a constant (a graph input, or computed: ``Shape`` of
    another input), of an input of known rank."""
    name = node.input[1] if len(node.input) > 1 else ""
    if not name or name in facts.constants or input_rank(node, facts) is None:
        return None
    return f"repeats from the graph input '{name}'" if name in facts.inputs else "repeats computed at run time"


def tile_by_broadcast(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node as ``ai.ovpool.Tile`` (``_tile``: Broadcast of the input with a unit axis before
    each of its axes, then Reshape)."""
    return [_in_domain(node, since)]


# --- the converters of the ai.ovpool nodes ------------------------------------------------------------


def _attr(context: Any, name: str, default: Any) -> Any:
    """The node's attribute ``name``, or ``default`` when it has none."""
    return context.get_attribute(name) if context.has_attribute(name) else default


def _top_k(context: Any) -> list:
    """TopK with ``stable`` and sorted by value, ties to the lower index (ONNX-11's rule; sorted=0
    leaves the order free, the selection not): zeros give indices 0, 1, 2. A K from an input is
    taken as max(K, 1) and the outputs sliced to K along ``axis`` (OpenVINO CPU refuses K = 0,
    where ONNX gives empty outputs: K = 0 on [2, 5] at axis 1 gives [2, 0])."""
    from openvino import opset1, opset8, opset11

    x = context.get_input(0)
    axis = int(_attr(context, "axis", -1))
    mode = "max" if int(_attr(context, "largest", 1)) else "min"
    if context.has_attribute("k"):  # TopK-1
        top = opset11.topk(x, opset1.constant(np.int64(context.get_attribute("k"))), axis, mode, "value", "i64", stable=True)
        return list(top.outputs())
    k = opset1.squeeze(context.get_input(1), opset1.constant(np.array([0], np.int64)))
    if context.get_input(1).get_node().get_type_name() == "Constant":  # K = 0 is frontend_rewrites.top_nothing's
        return list(opset11.topk(x, k, axis, mode, "value", "i64", stable=True).outputs())
    at_least_one = opset1.maximum(k, opset1.convert_like(opset1.constant(np.int64(1)), k))
    top = opset11.topk(x, at_least_one, axis, mode, "value", "i64", stable=True)
    bounds = [opset1.constant(np.array([0], np.int64)), opset1.reshape(k, opset1.constant(np.array([1], np.int64)), False)]
    step, axes = opset1.constant(np.array([1], np.int64)), opset1.constant(np.array([axis], np.int64))
    return [opset8.slice(output, bounds[0], bounds[1], step, axes).output(0) for output in top.outputs()]


def _hardmax(context: Any) -> list:
    """Hardmax as OneHot of the index of the first maximum (a stable TopK of 1), over the 2-D
    coercion at ``axis`` before version 13: [1, 3, 3, 2] gives [0, 1, 0, 0]."""
    from openvino import opset1, opset3, opset8, opset11

    x = context.get_input(0)
    since = int(context.get_attribute("since"))
    axis = int(_attr(context, "axis", 1 if since < 13 else -1))
    rank = x.get_partial_shape().rank
    if rank.is_static and not -rank.get_length() <= axis < rank.get_length():
        raise ValueError(f"axis {axis} is out of range for a rank-{rank.get_length()} input")
    shape = opset3.shape_of(x, "i64")
    value = x
    if since < 13:
        step = opset1.constant(np.array([1], np.int64))
        rows = opset8.slice(shape, opset1.constant(np.array([0], np.int64)), opset1.constant(np.array([axis], np.int64)), step)
        cols = opset8.slice(shape, opset1.constant(np.array([axis], np.int64)), opset1.constant(np.array([2**62])), step)
        flat = opset1.concat([opset1.reduce_prod(rows, 0, True), opset1.reduce_prod(cols, 0, True)], 0)
        value, axis = opset1.reshape(x, flat, False), 1
    indices = opset11.topk(value, opset1.constant(np.int64(1)), axis, "max", "value", "i64", stable=True).output(1)
    chosen = opset1.squeeze(indices, opset1.constant(np.array([axis], np.int64)))
    depth = opset8.gather(opset3.shape_of(value, "i64"), opset1.constant(np.int64(axis)), opset1.constant(np.int64(0)))
    one, zero = (opset1.convert_like(opset1.constant(np.float32(v)), x) for v in (1, 0))
    hot = opset1.one_hot(chosen, depth, one, zero, axis)
    return [opset1.reshape(hot, shape, False).output(0) if since < 13 else hot.output(0)]


def _flatten(context: Any) -> list:
    """Reshape to the ``target`` the lowering wrote, without special_zero (a 0 is a 0)."""
    from openvino import opset1

    target = opset1.constant(np.array(context.get_attribute("target"), np.int64))
    return [opset1.reshape(context.get_input(0), target, False).output(0)]


def _wrapped(op_type: str) -> Callable[[Any], list]:
    """Add, Sub or Mul of 8-bit integers (ONNX types them from version 14) in int32, wrapped to 8 bits as ONNX (and C) computes
    it, where OpenVINO CPU saturates: int8 100 * 3 = 300 = 44 + 256 gives 44, not 127; the wrap is
    floor_mod(v + 128, 256) - 128 for int8 and floor_mod(v, 256) for uint8."""

    def convert(context: Any) -> list:
        from openvino import opset1

        operation = {"Add": opset1.add, "Sub": opset1.subtract, "Mul": opset1.multiply}[op_type]
        first = context.get_input(0)
        signed = first.get_element_type().is_signed()
        total = operation(opset1.convert(first, "i32"), opset1.convert(context.get_input(1), "i32"))
        shift = opset1.constant(np.int32(128 if signed else 0))
        wrapped = opset1.floor_mod(opset1.add(total, shift), opset1.constant(np.int32(256)))
        return [opset1.convert(opset1.subtract(wrapped, shift), first.get_element_type()).output(0)]

    return convert


def _lp_normalization(context: Any) -> list:
    """x divided by its L1 or L2 norm along ``axis``, 0 where the norm is 0 (ONNX's and
    onnxruntime's rule, without the eps OpenVINO's frontend adds to the squared norm): [3, -4]
    at p=2 is [0.6, -0.8], a single -2 is -1."""
    from openvino import opset1

    x = context.get_input(0)
    axis = opset1.constant(np.array([int(_attr(context, "axis", -1))], np.int64))
    p = int(_attr(context, "p", 2))
    if p not in (1, 2):
        raise ValueError(f"p = {p}: LpNormalization takes 1 or 2")
    if p == 1:
        norm = opset1.reduce_sum(opset1.abs(x), axis, True)
    else:
        norm = opset1.sqrt(opset1.reduce_sum(opset1.multiply(x, x), axis, True))
    zero = opset1.convert_like(opset1.constant(np.float32(0)), x)
    empty = opset1.equal(norm, zero)
    return [
        opset1.select(
            empty, zero, opset1.divide(x, opset1.select(empty, opset1.convert_like(opset1.constant(np.float32(1)), x), norm))
        ).output(0)
    ]


def _bit_shift(context: Any) -> list:
    """BitShift in int32 with bitwise operations only (OpenVINO CPU computes Select, and the
    bitwise layers of uint32, through float32, and shifts uint32 right arithmetically).

    Unsigned (BitShift-11): 0 for a shift by the type's width or more (the bits shifted out are
    lost). The right shift is made logical by the mask ~((-1 << (31 - s)) << 1): uint32 2**31 + 4
    >> 1 is int32 (-2**31 + 4) >> 1 = -2**30 + 2, masked by 2**31 - 1 to 2**30 + 2; the left shift
    keeps the type's low bits: uint8 5 << 5 = 160, 200 << 1 = 144; uint32 7 >> 32 = 0.

    Signed (BitShift-28): the right shift is arithmetic, int8 -1 >> 1 = -1, and a shift that is
    negative or by the width or more is a shift by 31 of the sign-extended int32 (-8 >> 8 = -1,
    4 >> 9 = 0); the left shift keeps the type's low bits sign-extended, (v << (32 - w)) >> (32 - w):
    int8 64 << 1 = 128 is -128 (OpenVINO's own lowering saturates to 127), and is 0 out of range."""
    from openvino import opset1, opset13, opset15

    kind = context.get_input(0).get_element_type()
    width = kind.bitwidth
    x, shift = (opset1.convert(context.get_input(i), "i32") for i in (0, 1))

    def const(value: int) -> Any:
        return opset1.constant(np.int32(value))

    inside = opset1.logical_and(opset1.greater_equal(shift, const(0)), opset1.less(shift, const(width)))
    keep = opset1.subtract(const(0), opset1.convert(inside, "i32"))  # -1: every bit, or 0
    left = context.get_attribute("direction") == "LEFT"
    if kind.is_signed():
        if not left:  # the shift is small: Select is exact on it
            return [opset1.convert(opset15.bitwise_right_shift(x, opset1.select(inside, shift, const(31))), kind).output(0)]
        spare = const(32 - width)
        shifted = opset15.bitwise_right_shift(opset15.bitwise_left_shift(opset15.bitwise_left_shift(x, shift), spare), spare)
        return [opset1.convert(opset13.bitwise_and(shifted, keep), kind).output(0)]
    if left:
        shifted = opset15.bitwise_left_shift(x, shift)
    else:
        mask = opset15.bitwise_left_shift(opset15.bitwise_left_shift(const(-1), opset1.subtract(const(31), shift)), const(1))
        shifted = opset13.bitwise_and(opset15.bitwise_right_shift(x, shift), opset13.bitwise_not(mask))
    low = const(-1 if width == 32 else 2**width - 1)
    return [opset1.convert(opset13.bitwise_and(opset13.bitwise_and(shifted, keep), low), kind).output(0)]


def _tile(context: Any) -> list:
    """Tile as Broadcast and Reshape (OpenVINO CPU 2026.4.1's Tile of repeats known only at run
    time leaves larger outputs uninitialised): x of dims [d0, ..., dn] unsqueezed to [1, d0, ..., 1,
    dn] (a Reshape of a static empty input does not compile), broadcast to [r0, d0, ..., rn, dn]
    and reshaped to [r0 * d0, ..., rn * dn]. [2, 3] by repeats [2, 1]: [1, 2, 1, 3] broadcast to
    [2, 2, 1, 3], reshaped to [4, 3], the rows twice. A rank-0 input is itself (a Convert to its type)."""
    from openvino import opset1, opset3, opset8

    x = context.get_input(0)
    rank = x.get_partial_shape().rank
    if rank.is_dynamic:
        raise ValueError("Tile of an input of unknown rank")
    n = rank.get_length()
    if not n:  # the input itself, through a Convert to its type (an output of its own name)
        return [opset1.convert(x, x.get_element_type()).output(0)]
    repeats = opset1.convert(context.get_input(1), "i64")
    dims = opset3.shape_of(x, "i64")
    zero = opset1.constant(np.int64(0))

    def at(vector: Any, i: int) -> Any:
        return opset8.gather(vector, opset1.constant(np.array([i], np.int64)), zero)

    target = opset1.concat([part for i in range(n) for part in (at(repeats, i), at(dims, i))], 0)
    spaced = opset1.unsqueeze(x, opset1.constant(np.arange(0, 2 * n, 2, dtype=np.int64)))
    tiled = opset3.broadcast(spaced, target)
    return [opset1.reshape(tiled, opset1.multiply(repeats, dims), False).output(0)]


def _dft(context: Any) -> list:
    """DFT-17/20 (``ai.ovpool.DFT`` of x, axis and dft_length if given: ``dft_by_swapped_axis``) by
    OpenVINO's DFT, IDFT, RDFT and IRDFT over one axis fixed at r - 2 (r the rank with the trailing
    complex axis): ``axis`` (negative counted from the end) swapped there by a Transpose of a
    permutation computed at run time, and swapped back after; ``dft_length`` is the signal size.
    A real input [..., 1] is given a zero imaginary part (DFT, IDFT) or squeezed (RDFT for
    ``onesided``; with a dft_length the DFT's first n // 2 + 1 values instead, OpenVINO CPU's RDFT
    padding no signal). IRDFT (``onesided`` and ``inverse``) gives [..., 1] of length n (dft_length,
    else 2 * (m - 1)), computed at length max(n, 1) on the input zero-padded to that // 2 + 1 values
    and sliced to n (OpenVINO CPU's IRDFT pads wrong, 1.6e31 for [1, 2, 2] at length 4, and dies
    computing length 0). rfft of [1, 10, 10, 1] at axis 1: [1, 6, 10, 2]."""
    from openvino import opset1, opset3, opset4, opset7, opset8, opset9

    x = context.get_input(0)
    rank = x.get_partial_shape().rank
    if rank.is_dynamic:
        raise ValueError("DFT of an input of unknown rank")
    r = rank.get_length()
    one = opset1.constant(np.array([1], np.int64))
    axis = opset1.floor_mod(opset1.reshape(opset1.convert(context.get_input(1), "i64"), one, False), opset1.constant(np.int64(r)))
    last = opset1.constant(np.int64(r - 2))
    order = opset4.range(opset1.constant(np.int64(0)), opset1.constant(np.int64(r)), opset1.constant(np.int64(1)), "i64")
    swap = opset1.select(opset1.equal(order, axis), last, opset1.select(opset1.equal(order, last), axis, order))
    moved = opset1.transpose(x, swap)
    axes = opset1.constant(np.array([r - 2], np.int64))
    size = [opset1.reshape(opset1.convert(context.get_input(2), "i64"), one, False)] if context.get_input_size() > 2 else []
    inverse, onesided = bool(_attr(context, "inverse", 0)), bool(_attr(context, "onesided", 0))
    complex_input = x.get_partial_shape()[r - 1]
    if onesided and not inverse and not size:
        result = opset9.rdft(opset1.squeeze(moved, opset1.constant(np.array([r - 1], np.int64))), axes)
    elif onesided and inverse:
        # OpenVINO CPU's IRDFT pads no spectrum right and dies computing no output: the length n
        # (dft_length, else 2 * (m - 1)) taken as at least 1, the spectrum zero-padded to n // 2 + 1
        # values here, and the output sliced back to n (0 for one bin: an empty transform)
        have = opset8.gather(opset3.shape_of(moved, "i64"), axes, opset1.constant(np.int64(0)))
        two = opset1.constant(np.array([2], np.int64))
        length = size[0] if size else opset1.multiply(opset1.subtract(have, one), two)
        wide = opset1.maximum(length, one)
        short = opset1.maximum(
            opset1.subtract(opset1.add(opset1.divide(wide, two), one), have), opset1.constant(np.array([0], np.int64))
        )
        ends = opset1.concat([opset1.constant(np.zeros(r - 2, np.int64)), short, opset1.constant(np.array([0], np.int64))], 0)
        padded = opset1.pad(moved, opset1.constant(np.zeros(r, np.int64)), ends, "constant")
        signal = opset8.slice(opset9.irdft(padded, axes, wide), opset1.constant(np.array([0], np.int64)), length, one, axes)
        result = opset1.unsqueeze(signal, opset1.constant(np.array([r - 1], np.int64)))
    else:
        if complex_input.is_static and complex_input.get_length() == 1:
            zero = opset1.convert_like(opset1.constant(np.float32(0)), moved)  # 0, not x * 0: inf stays real
            moved = opset1.concat([moved, opset3.broadcast(zero, opset3.shape_of(moved, "i64"))], r - 1)
        result = (opset7.idft if inverse else opset7.dft)(moved, axes, *size)
        if onesided:  # rfft of a dft_length (OpenVINO CPU's RDFT pads no signal): the DFT's first n // 2 + 1
            half = opset1.add(opset1.divide(size[0], opset1.constant(np.array([2], np.int64))), one)
            start, step = opset1.constant(np.array([0], np.int64)), opset1.constant(np.array([1], np.int64))
            result = opset8.slice(result, start, half, step, axes)
    return [opset1.transpose(result, swap).output(0)]


CONVERTERS: dict[str, Callable[[Any], list]] = {
    "TopK": _top_k,
    "Hardmax": _hardmax,
    "Flatten": _flatten,
    "LpNormalization": _lp_normalization,
    "BitShift": _bit_shift,
    "Tile": _tile,
    "DFT": _dft,
    **{op_type: _wrapped(op_type) for op_type in ("Add", "Sub", "Mul")},
}
