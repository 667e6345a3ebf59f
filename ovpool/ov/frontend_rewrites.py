"""The conditions and lowerings of ``ovpool.ov.translate.table.DEFECTS`` rows other than Resize,
Softmax, Constant, RoiAlign and Div: HardSigmoid's zero alpha or beta, LSTM's peepholes, the
reductions' axes, Range, Pad, ConvTranspose's output_shape, empty Gather and Compress, TopK's
K = 0, LRN's fractional bias, SpaceToDepth's CRD mode, recurrent nodes' layout=1, DFT (written as
``ai.ovpool.DFT``, converted by ``ovpool.ov.value_fixes``), and the nodes whose IR OpenVINO CPU
would not compile. A condition gives the node's text
(``alpha=0, beta=0``) or None; a lowering the nodes that compute the ONNX meaning, or what it
needs and lacks ("a known input type")."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import NodeProto, helper, numpy_helper

from ovpool.ov import DOMAIN
from ovpool.ov.node_facts import Facts, NodeBuilder, input_rank, node_attr, static_dims, tensor_dtype


def zero_alpha_or_beta(node: NodeProto, since: int, facts: Facts) -> str | None:
    """HardSigmoid's alpha or beta when one is 0: ``alpha=0, beta=0.5``."""
    alpha, beta = float(node_attr(node, "alpha", 0.2)), float(node_attr(node, "beta", 0.5))
    return f"alpha={alpha:g}, beta={beta:g}" if alpha == 0 or beta == 0 else None


def hard_sigmoid_formula(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The schema's formula ``max(0, min(1, alpha * x + beta))`` in Mul, Add, Clip: alpha=0,
    beta=0 gives 0 for every finite x (OpenVINO's 0.2 * -0.5 + 0.5 = 0.4 is the default's)."""
    dtype = tensor_dtype(node.input[0], facts)
    if dtype is None:
        return "a known input type"
    nodes = NodeBuilder(node, facts)
    scaled = nodes.add("Mul", [node.input[0], nodes.constant(np.array(node_attr(node, "alpha", 0.2), dtype), "alpha")], "scaled")
    shifted = nodes.add("Add", [scaled, nodes.constant(np.array(node_attr(node, "beta", 0.5), dtype), "beta")], "shifted")
    if facts.opset < 11:
        clipped = helper.make_node("Clip", [shifted], [node.output[0]], name=node.name, min=0.0, max=1.0)
    else:
        bounds = [nodes.constant(np.array(0, dtype), "zero"), nodes.constant(np.array(1, dtype), "one")]
        clipped = helper.make_node("Clip", [shifted, *bounds], [node.output[0]], name=node.name)
    return [*nodes.nodes, clipped]


def peepholes(node: NodeProto, since: int, facts: Facts) -> str | None:
    """LSTM's input P, unless it is a constant of zeros (no peepholes)."""
    name = node.input[7] if len(node.input) > 7 else ""
    given = facts.constants.get(name) if name else None
    if not name or (given is not None and not np.any(given)):
        return None
    return "peepholes (input P)"


def input_forget(node: NodeProto, since: int, facts: Facts) -> str | None:
    """LSTM's ``input_forget=1`` (the coupled input and forget gate)."""
    return "input_forget=1" if int(node_attr(node, "input_forget", 0)) else None


def axes_attribute(node: NodeProto, since: int, facts: Facts) -> str | None:
    """The reduction's ``axes`` attribute when it has one: ``axes=[1]``."""
    axes = node_attr(node, "axes", None)
    return None if axes is None else f"axes={list(axes)}"


def axes_as_input(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node with its ``axes`` attribute given as a constant second input, where the frontend's
    opset-13 rule reads it: axes=[1] of a [2, 3, 4] input reduces to [2, 1, 4]."""
    nodes = NodeBuilder(node, facts)
    axes = nodes.constant(np.array(node_attr(node, "axes", []), np.int64), "axes")
    kept = [a for a in node.attribute if a.name != "axes"]
    reduced = helper.make_node(node.op_type, [node.input[0], axes], list(node.output), name=node.name)
    reduced.attribute.extend(kept)
    return [*nodes.nodes, reduced]


def maybe_empty_range(node: NodeProto, since: int, facts: Facts) -> str | None:
    """A Range whose start, limit and delta are not constants that give a non-empty range."""
    given = [facts.constants.get(name) for name in node.input[:3]]
    if all(v is not None for v in given):
        start, limit, delta = (float(np.asarray(v)) for v in given)
        if (limit - start) * delta > 0:
            return None
        return f"an empty range (start {start:g}, limit {limit:g}, delta {delta:g})"
    return "start, limit or delta from a graph input (the range may be empty)"


def range_limit_clamped(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The limit moved to the start where the range is empty: ``Where(delta > 0, Max(limit, start),
    Min(limit, start))``; Range(5, 0, 1) is then Range(5, 5, 1), no elements (ONNX's
    ``max(ceil((limit - start) / delta), 0)``), where OpenVINO counts abs(0 - 5) / 1 = 5. The zero
    is ``delta - delta``, of delta's type whatever it is (a Range in a Loop body has no inferred
    type)."""
    start, limit, delta = node.input[:3]
    nodes = NodeBuilder(node, facts)
    rising = nodes.add("Greater", [delta, nodes.add("Sub", [delta, delta], "zero")], "rising")
    upper = nodes.add("Max", [limit, start], "upper")
    lower = nodes.add("Min", [limit, start], "lower")
    clamped = nodes.add("Where", [rising, upper, lower], "limit")
    return [*nodes.nodes, helper.make_node("Range", [start, clamped, delta], list(node.output), name=node.name)]


def runtime_pad_value(node: NodeProto, since: int, facts: Facts) -> str | None:
    """A constant-mode Pad whose constant_value is not a constant (a graph input or computed)."""
    name = node.input[2] if len(node.input) > 2 else ""
    if not name or name in facts.constants or node_attr(node, "mode", "constant") != "constant":
        return None
    return "constant_value from a graph input"


def pad_value_by_mask(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The input padded with 0, and the value put where a mask of ones padded with zeros is 0:
    ``Where(Pad(ones, pads, 0), Pad(x, pads, 0), value)``; [1, 2] with pads [1, 1] and value 7 is
    [7, 1, 2, 7]. The input is padded with Pad's default constant, 0 of its type."""
    nodes = NodeBuilder(node, facts)
    rest = list(node.input[3:4])  # Pad-18's axes
    shape = nodes.add("Shape", [node.input[0]], "shape")
    ones = nodes.add("ConstantOfShape", [shape], "ones", value=numpy_helper.from_array(np.array([1], np.uint8), "one"))
    zero = nodes.constant(np.array(0, np.uint8), "mask_zero")
    mask = nodes.add("Pad", [ones, node.input[1], zero, *rest], "mask_padded", mode="constant")
    inside = nodes.add("Cast", [mask], "inside", to=onnx.TensorProto.BOOL)
    padded = nodes.add("Pad", [node.input[0], node.input[1], *([""] if rest else []), *rest], "padded", mode="constant")
    nodes.nodes.append(helper.make_node("Where", [inside, padded, node.input[2]], list(node.output), name=node.name))
    return nodes.nodes


def grouped_output_shape(node: NodeProto, since: int, facts: Facts) -> str | None:
    """ConvTranspose's ``output_shape`` with ``group`` > 1: ``output_shape=[1] with group=2``."""
    group = int(node_attr(node, "group", 1))
    shape = node_attr(node, "output_shape", None)
    return f"output_shape={list(shape)} with group={group}" if shape is not None and group != 1 else None


def output_shape_as_pads(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node with ``output_shape`` replaced by the pads the schema derives from it: total =
    stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - out, split total - total // 2
    at the start and total // 2 at the end (the other way round for SAME_UPPER). Stride 2, dilation
    2, kernel 2 on 3 elements to output_shape [1]: total 6 - 1 = 5, pads [3, 2]."""
    dims = facts.types.get(node.input[0], (None, None))[1]
    weights = facts.types.get(node.input[1], (None, None))[1]
    if dims is None or any(d is None for d in dims[2:]):
        return "static input dims (give them with --input)"
    spatial = len(dims) - 2
    kernel = list(node_attr(node, "kernel_shape", []))
    if not kernel:
        if weights is None or any(d is None for d in weights[2:]):
            return "a static weight shape or kernel_shape"
        kernel = [int(d) for d in weights[2:] if d is not None]
    strides = list(node_attr(node, "strides", [1] * spatial))
    dilations = list(node_attr(node, "dilations", [1] * spatial))
    padding = list(node_attr(node, "output_padding", [0] * spatial))
    wanted = list(node_attr(node, "output_shape", []))[-spatial:]
    begins, ends = [], []
    for axis in range(spatial):
        size = int(dims[axis + 2])  # type: ignore[arg-type]
        total = strides[axis] * (size - 1) + padding[axis] + (kernel[axis] - 1) * dilations[axis] + 1 - wanted[axis]
        if total < 0:
            return f"an output_shape within the natural size (axis {axis + 2}: {wanted[axis]} > {wanted[axis] + total})"
        small, large = total // 2, total - total // 2
        upper = node_attr(node, "auto_pad", "NOTSET") == "SAME_UPPER"
        begins.append(small if upper else large)
        ends.append(large if upper else small)
    copy = NodeProto()
    copy.CopyFrom(node)
    del copy.attribute[:]
    copy.attribute.extend([a for a in node.attribute if a.name not in ("output_shape", "auto_pad", "pads")])
    copy.attribute.extend([helper.make_attribute("pads", begins + ends)])
    return [copy]


def noop_without_axes(node: NodeProto, since: int, facts: Facts) -> str | None:
    """noop_with_empty_axes=1 with no axes (omitted, a constant of none, or a tensor of static
    shape [0])."""
    if not int(node_attr(node, "noop_with_empty_axes", 0)):
        return None
    name = node.input[1] if len(node.input) > 1 else ""
    given = facts.constants.get(name) if name else None
    empty = (given is not None and given.size == 0) or (bool(name) and static_dims(name, facts) == (0,))
    return "noop_with_empty_axes=1, no axes" if not name or empty else None


def elementwise_step(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """What the schema keeps of the reduction over no axes, its elementwise step: ReduceL1 |x|,
    ReduceL2 sqrt(x * x) (|x| for integers), ReduceSumSquare x * x, ReduceLogSum log(x),
    ReduceLogSumExp x (log(exp(x)) with onnxruntime's shift by the maximum, so 100 stays 100):
    ReduceSumSquare of [-2, 3] is [4, 9]."""
    x, (y,) = node.input[0], node.output
    dtype = tensor_dtype(x, facts)
    if node.op_type == "ReduceL1" or (node.op_type == "ReduceL2" and dtype is not None and dtype.kind in "iu"):
        return [helper.make_node("Abs", [x], [y], name=node.name)]
    if node.op_type == "ReduceLogSum":
        return [helper.make_node("Log", [x], [y], name=node.name)]
    if node.op_type == "ReduceLogSumExp":
        return [helper.make_node("Identity", [x], [y], name=node.name)]
    if node.op_type == "ReduceSumSquare":
        return [helper.make_node("Mul", [x, x], [y], name=node.name)]
    nodes = NodeBuilder(node, facts)
    square = nodes.add("Mul", [x, x], "square")
    return [*nodes.nodes, helper.make_node("Sqrt", [square], [y], name=node.name)]


def empty_second_input(what: str) -> Callable[[NodeProto, int, Facts], str | None]:
    """The condition: the node's second input (``what``) has a zero dim by its static shape. A
    constant's shape is its own (what shape inference gives it; so a model whose inference is not
    needed elsewhere skips it: a Gather of constant indices [3] is not empty)."""

    def condition(node: NodeProto, since: int, facts: Facts) -> str | None:
        name = node.input[1] if len(node.input) > 1 else None
        given = facts.constants.get(name) if name else None
        dims = tuple(given.shape) if given is not None else static_dims(name, facts) if name is not None else None
        if dims is None or 0 not in dims:
            return None
        source = "a constant" if node.input[1] in facts.constants else "a graph input"
        return f"empty {what} ({source} of shape {list(dims)})"

    return condition


def _slice_to_nothing(nodes: NodeBuilder, value: str, axes: Sequence[int], output: str, name: str) -> NodeProto:
    """Slice ``value`` to length 0 on ``axes`` (Slice-10's inputs, or Slice-1's attributes)."""
    zeros = [0] * len(axes)
    if nodes.facts.opset < 10:
        return helper.make_node("Slice", [value], [output], name=name, starts=zeros, ends=zeros, axes=list(axes))
    bounds = nodes.constant(np.array(zeros, np.int64), "bounds")
    chosen = nodes.constant(np.array(axes, np.int64), "axes")
    return helper.make_node("Slice", [value, bounds, bounds, chosen], [output], name=name)


def gather_then_empty(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """Gather of indices 0 of the shape with each zero dim made 1, then Slice to length 0 on those
    axes: indices of shape [0, 2] on axis 0 of a [4] tensor gather [1, 2] values and keep [0, 2]."""
    dims = static_dims(node.input[1], facts)
    rank = input_rank(node, facts)
    if dims is None or rank is None:
        return "static index dims and the data's rank"
    axis = int(node_attr(node, "axis", 0)) % rank
    nodes = NodeBuilder(node, facts)
    ones = nodes.constant(np.zeros([max(d, 1) for d in dims], np.int64), "indices")
    gathered = nodes.add("Gather", [node.input[0], ones], "gathered", axis=axis)
    sliced = _slice_to_nothing(nodes, gathered, [axis + i for i, d in enumerate(dims) if d == 0], node.output[0], node.name)
    return [*nodes.nodes, sliced]


def compress_nothing(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """An empty condition selects nothing: the data sliced to length 0 on ``axis``, or flattened
    and sliced to [0] without one."""
    nodes = NodeBuilder(node, facts)
    axis = node_attr(node, "axis", None)
    value = node.input[0]
    if axis is None:
        value = nodes.add("Reshape", [value, nodes.constant(np.array([-1], np.int64), "flat_shape")], "flat")
        axis = 0
    else:
        rank = input_rank(node, facts)
        if rank is None:
            return "the data's rank"
        axis = int(axis) % rank
    sliced = _slice_to_nothing(nodes, value, [axis], node.output[0], node.name)
    return [*nodes.nodes, sliced]


def k_zero(node: NodeProto, since: int, facts: Facts) -> str | None:
    """TopK-10+'s constant K when it is 0 (TopK-1's ``k`` attribute must be positive)."""
    given = facts.constants.get(node.input[1]) if len(node.input) > 1 else None
    return "K = 0" if given is not None and given.size == 1 and int(given.reshape(-1)[0]) == 0 else None


def top_nothing(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """TopK of K = 0: the input sliced to length 0 on ``axis`` (values), and that cast to int64
    (indices): [2, 0] for axis 1 of a [2, 5] input."""
    rank = input_rank(node, facts)
    if rank is None:
        return "the input's rank"
    axis = int(node_attr(node, "axis", -1)) % rank
    nodes = NodeBuilder(node, facts)
    values = node.output[0] if node.output[0] else nodes.facts.names.fresh(f"{nodes.base}/values")
    sliced = _slice_to_nothing(nodes, node.input[0], [axis], values, node.name)
    result = [*nodes.nodes, sliced]
    if len(node.output) > 1 and node.output[1]:
        cast = helper.make_node("Cast", [values], [node.output[1]], name=facts.names.fresh(f"{nodes.base}/indices"), to=7)
        result.append(cast)
    return result


def repeated_index(node: NodeProto, since: int, facts: Facts) -> str | None:
    """An Einsum without ``->`` (its output implicit) whose operand names one index twice (trace
    'ii', '...ii'). The explicit forms ('ii->', '...ii->...i') OpenVINO CPU computes right."""
    equation = str(node_attr(node, "equation", "")).replace(" ", "")
    if "->" in equation:
        return None
    for term in equation.split(","):
        letters = term.replace("...", "")
        if len(set(letters)) < len(letters):
            return f"equation '{equation}': a repeated index in the operand '{term}', the output implicit"
    return None


def explicit_output(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The Einsum with its implicit output written out, as the schema defines it: the indices that
    appear exactly once, in increasing ASCII order (upper case first), after the ellipsis when
    there is one: 'ii' -> 'ii->', 'Bii,j' -> 'Bii,j->Bj', '...ii' -> '...ii->...'."""
    equation = str(node_attr(node, "equation", "")).replace(" ", "")
    letters = equation.replace("...", "").replace(",", "")
    once = sorted(letter for letter in set(letters) if letters.count(letter) == 1)
    output = ("..." if "..." in equation else "") + "".join(once)
    copy = helper.make_node("Einsum", list(node.input), list(node.output), name=node.name, equation=f"{equation}->{output}")
    return [copy]


def attention_window(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Attention-25's local window: ``left_window_size`` or ``right_window_size`` of 0 or more
    (-1, the default, is no window)."""
    sizes = {name: int(node_attr(node, name, -1)) for name in ("left_window_size", "right_window_size")}
    given = [f"{name}={size}" for name, size in sizes.items() if size >= 0]
    return ", ".join(given) if given else None


def bounds_as_mask(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """Attention's window (Attention-25) and causal frontier as a boolean mask composed into
    ``attn_mask``, the node then without ``left_window_size``/``right_window_size`` and with
    ``is_causal=0``: query i at absolute position p = offset + i (offset: the past keys, or
    ``nonpad_kv_seqlen`` - queries per batch, else 0) attends key j iff p - left <= j <= p + right
    and, with is_causal, j <= p (the schema's rules; left=2, right=0: keys p-2..p). A boolean
    ``attn_mask`` is And-ed with it, a float one set to -inf outside it. With ``nonpad_kv_seqlen``
    an ``attn_mask`` shorter than the keys (or of unknown length) is refused."""
    inputs = list(node.input) + [""] * (7 - len(node.input))
    mask, past, nonpad = inputs[3], inputs[4], inputs[6]
    if nonpad and mask:
        mask_dims, key_dims = static_dims(mask, facts), static_dims(inputs[1], facts)
        if mask_dims is None or key_dims is None or len(key_dims) < 2 or mask_dims[-1] != key_dims[-2]:
            return "an attn_mask as long as the keys beside nonpad_kv_seqlen (static dims; it may be shorter)"
    nodes = NodeBuilder(node, facts)
    i64 = onnx.TensorProto.INT64

    def scalar(value: int, part: str) -> str:
        return nodes.constant(np.array(value, np.int64), part)

    second_last = scalar(-2, "seq_axis")
    queries = nodes.add("Gather", [nodes.add("Shape", [inputs[0]], "q_shape"), second_last], "queries", axis=0)
    keys = nodes.add("Gather", [nodes.add("Shape", [inputs[1]], "k_shape"), second_last], "new_keys", axis=0)
    zero, one = scalar(0, "zero"), scalar(1, "one")
    if past:
        offset = nodes.add("Gather", [nodes.add("Shape", [past], "past_shape"), second_last], "past_keys", axis=0)
        total = nodes.add("Add", [offset, keys], "keys")
    else:
        total = keys
        offset = zero
        if nonpad:
            valid = nodes.add("Cast", [nonpad], "valid", to=i64)
            per_batch = nodes.add("Sub", [valid, queries], "offsets")
            offset = nodes.add("Unsqueeze", [per_batch, nodes.constant(np.array([1, 2, 3], np.int64), "batch_axes")], "offset")
    rows = nodes.add(
        "Unsqueeze",
        [nodes.add("Range", [zero, queries, one], "rows"), nodes.constant(np.array([1], np.int64), "row_axis")],
        "row",
    )
    position = nodes.add("Add", [rows, offset], "position")
    columns = nodes.add("Range", [zero, total, one], "columns")
    bounds = []
    left, right = int(node_attr(node, "left_window_size", -1)), int(node_attr(node, "right_window_size", -1))
    if left >= 0:
        first = nodes.add("Sub", [position, scalar(left, "left")], "first")
        bounds.append(nodes.add("GreaterOrEqual", [columns, first], "after_first"))
    if right >= 0:
        last = nodes.add("Add", [position, scalar(right, "right")], "last")
        bounds.append(nodes.add("LessOrEqual", [columns, last], "before_last"))
    if int(node_attr(node, "is_causal", 0)):
        bounds.append(nodes.add("LessOrEqual", [columns, position], "causal"))
    window = bounds[0] if len(bounds) == 1 else nodes.add("And", bounds, "window")
    if mask:
        dtype = tensor_dtype(mask, facts)
        if dtype is None:
            return "an attn_mask of known type"
        if dtype == np.bool_:
            window = nodes.add("And", [mask, window], "mask")
        else:
            window = nodes.add("Where", [window, mask, nodes.constant(np.array(-np.inf, dtype), "minus_inf")], "mask")
    inputs[3] = window
    while inputs and not inputs[-1]:
        inputs.pop()
    attention = helper.make_node("Attention", inputs, list(node.output), name=node.name)
    attention.attribute.extend(a for a in node.attribute if a.name not in ("left_window_size", "right_window_size", "is_causal"))
    return [*nodes.nodes, attention]


def causal_past_offset(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Attention with ``is_causal=1`` and ``past_key`` whose new keys are not as many as the
    queries (static dims: axis 2 of 4-D Q and K, axis 1 of 3-D ones). ONNX offsets the causal mask
    by the past keys (query i sees keys up to i + past), OpenVINO aligns it to the end of all keys
    (up to i + past + new - queries): the same only when new keys and queries are as many."""
    if not int(node_attr(node, "is_causal", 0)) or len(node.input) < 5 or not node.input[4]:
        return None
    q, k = (static_dims(name, facts) for name in node.input[:2])
    if q is None or k is None or len(q) not in (3, 4) or len(q) != len(k):
        return None
    axis = len(q) - 2
    return f"is_causal=1 with past_key, {k[axis]} new keys for {q[axis]} queries" if q[axis] != k[axis] else None


def to_string(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Cast to STRING, or CastLike whose target input is a string constant."""
    if node.op_type == "Cast":
        return "to=STRING" if int(node_attr(node, "to", 0)) == onnx.TensorProto.STRING else None
    target = facts.constants.get(node.input[1]) if len(node.input) > 1 else None
    return "a STRING target" if target is not None and target.dtype == object else None


def axes_from_graph_input(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Unsqueeze-13+'s axes when they are a graph input (the output's rank is then unknown)."""
    name = node.input[1] if len(node.input) > 1 else ""
    return f"axes from the graph input '{name}'" if name in facts.inputs else None


_SEQUENCE_ACTIVATIONS = ("Relu", "Sigmoid", "Tanh")


def unsupported_activations(node: NodeProto, since: int, facts: Facts) -> str | None:
    """A recurrent node's activation other than Relu, Sigmoid and Tanh."""
    given = [a.decode() if isinstance(a, bytes) else str(a) for a in node_attr(node, "activations", [])]
    other = [a for a in given if a.lower() not in {s.lower() for s in _SEQUENCE_ACTIVATIONS}]
    return f"activation '{other[0]}'" if other else None


def reduce_of_dynamic_rank(node: NodeProto, since: int, facts: Facts) -> str | None:
    """keepdims=0 (a Squeeze: always) with axes from a graph input of more than one (or an unknown
    number of) axes: OpenVINO cannot tell the output's rank (axes [1] of [2, 3, 4] compiles, axes
    [1, 2] does not)."""
    name = node.input[1] if len(node.input) > 1 else ""
    if name not in facts.inputs or (node.op_type != "Squeeze" and int(node_attr(node, "keepdims", 1))):
        return None
    dims = static_dims(name, facts)
    keepdims = "" if node.op_type == "Squeeze" else "keepdims=0 with "
    return None if dims == (1,) else f"{keepdims}axes from the graph input '{name}'"


def fractional_bias(node: NodeProto, since: int, facts: Facts) -> str | None:
    """LRN's bias when it is not a whole number: ``bias=0.5``."""
    bias = float(node_attr(node, "bias", 1.0))
    return f"bias={bias:g}" if bias != int(bias) else None


def lrn_unit_bias(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """LRN with bias 1 and ``alpha / bias``, times ``bias ** -beta``: the same values, since
    ``(b + a / n * s) ** beta = b ** beta * (1 + (a / b) / n * s) ** beta`` for ``b > 0``
    (bias 0.5, alpha 1, beta 1, size 1: ``x / (0.5 + s)`` is ``2 * x / (1 + 2 * s)``)."""
    bias = float(node_attr(node, "bias", 1.0))
    if bias <= 0:
        return "a positive bias"
    dtype = tensor_dtype(node.input[0], facts)
    if dtype is None:
        return "a known input type"
    alpha, beta, size = float(node_attr(node, "alpha", 1e-4)), float(node_attr(node, "beta", 0.75)), node_attr(node, "size", 1)
    nodes = NodeBuilder(node, facts)
    unit = nodes.add("LRN", [node.input[0]], "unit_bias", size=size, alpha=alpha / bias, beta=beta, bias=1.0)
    scale = nodes.constant(np.array(bias**-beta, dtype), "scale")
    return [*nodes.nodes, helper.make_node("Mul", [unit, scale], list(node.output), name=node.name)]


def crd_mode(node: NodeProto, since: int, facts: Facts) -> str | None:
    """SpaceToDepth-28's ``mode="CRD"`` (DCR, the default, OpenVINO computes right)."""
    mode = node_attr(node, "mode", "DCR")
    return "mode='CRD'" if (mode.decode() if isinstance(mode, bytes) else str(mode)) == "CRD" else None


def space_to_depth_per_channel(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """CRD as SpaceToDepth of each channel alone: ``x`` reshaped to ``[N * C, 1, H, W]`` (where DCR
    and CRD agree: one channel), SpaceToDepth, reshaped to ``[N, C * b * b, H / b, W / b]``. Output
    channel ``c * b * b + i * b + j`` then holds pixel (i, j) of each block of channel c: for b = 2
    and 3 channels, channel 5 is pixel (0, 1) of channel 1 (DCR puts it at channel 4)."""
    nodes = NodeBuilder(node, facts)
    flat = nodes.add("Reshape", [node.input[0], nodes.constant(np.array([-1, 1, 0, 0], np.int64), "per_channel")], "flat")
    moved = nodes.add("SpaceToDepth", [flat], "moved", blocksize=int(node_attr(node, "blocksize", 1)))
    batch = nodes.add("Shape", [node.input[0]], "batch", start=0, end=1)
    rest = nodes.constant(np.array([-1, 0, 0], np.int64), "rest")
    target = nodes.add("Concat", [batch, rest], "target", axis=0)
    return [*nodes.nodes, helper.make_node("Reshape", [moved, target], list(node.output), name=node.name)]


def batch_first(node: NodeProto, since: int, facts: Facts) -> str | None:
    """RNN, GRU or LSTM with ``layout=1`` (batch-first inputs and outputs)."""
    return "layout=1" if int(node_attr(node, "layout", 0)) == 1 else None


def sequence_first(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """``layout=1`` as Transposes around the node at ``layout=0``: X ``[batch, seq, input]``,
    initial_h and initial_c ``[batch, dirs, hidden]`` swap their first two axes; Y comes back from
    ``[seq, dirs, batch, hidden]`` by perm (2, 0, 1, 3), Y_h and Y_c from ``[dirs, batch, hidden]``
    by (1, 0, 2). Batch 3, sequence 2: Y[b, t, d] is the layout-0 node's Y[t, d, b]."""
    nodes = NodeBuilder(node, facts)
    states = (5, 6) if node.op_type == "LSTM" else (5,)  # initial_h (and initial_c)
    inputs = list(node.input)
    for i in (0, *states):
        if i < len(inputs) and inputs[i]:
            inputs[i] = nodes.add("Transpose", [inputs[i]], f"input{i}_sequence_first", perm=[1, 0, 2])
    outputs = [facts.names.fresh(f"{nodes.base}/output{i}") if name else "" for i, name in enumerate(node.output)]
    inner = helper.make_node(node.op_type, inputs, outputs, name=facts.names.fresh(nodes.base))
    inner.attribute.extend(a for a in node.attribute if a.name != "layout")
    back = [
        helper.make_node(
            "Transpose",
            [inner_out],
            [out],
            name=facts.names.fresh(f"{nodes.base}/output{i}_batch_first"),
            perm=[2, 0, 1, 3] if i == 0 else [1, 0, 2],
        )
        for i, (inner_out, out) in enumerate(zip(outputs, node.output))
        if out
    ]
    return [*nodes.nodes, inner, *back]


def known_rank(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Any DFT whose input has a known rank (the lowering's Transposes need it)."""
    return None if input_rank(node, facts) is None else "the axis, onesided"


def dft_by_swapped_axis(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """DFT as ``ai.ovpool.DFT`` (``ovpool.ov.value_fixes``' converter) of x, the axis and
    dft_length when given: DFT-20's axis input (a constant -2 when omitted, the schema's default),
    DFT-17's ``axis`` attribute (default 1) as a constant."""
    nodes = NodeBuilder(node, facts)
    given = node.input[2] if since >= 20 and len(node.input) > 2 else ""
    if since >= 20:
        axis = given or nodes.constant(np.array(-2, np.int64), "axis")
    else:
        axis = nodes.constant(np.array(node_attr(node, "axis", 1), np.int64), "axis")
    length = [node.input[1]] if len(node.input) > 1 and node.input[1] else []
    lowered = helper.make_node("DFT", [node.input[0], axis, *length], list(node.output), name=node.name, domain=DOMAIN)
    lowered.attribute.extend(a for a in node.attribute if a.name != "axis")
    return [*nodes.nodes, lowered]
