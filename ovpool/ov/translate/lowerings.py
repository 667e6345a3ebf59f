"""The lowerings of ``DEFECTS`` rows written here (Softmax, Resize, Constant, RoiAlign, Div): each
takes (node, its since-version, ``Facts``) and gives the nodes that replace it, or what it needs and
the node lacks ("static input dims"). The other rows' lowerings are in
``ovpool.ov.frontend_rewrites`` and ``ovpool.ov.value_fixes``.

Softmax-11 over a rank-3 input at ``axis=1``: ONNX normalises each ``x[n]`` (a 2-D block of
``d1 * d2`` values) as one, OpenVINO each column of ``d1``; the rewrite is Flatten at 1 (to
``[d0, d1*d2]``), Softmax over the last axis, Reshape to the input's shape."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from onnx import NodeProto, helper, numpy_helper

from ovpool.attributes import attribute_value
from ovpool.nodes import OpNode, attributes
from ovpool.ov import DOMAIN
from ovpool.ov.node_facts import Facts, input_rank, node_attr
from ovpool.ov.translate.conditions import CONSTANT_ATTRIBUTES, resize_inputs
from ovpool.resize import axis_matrices

# A lowering gives the nodes that replace the node, or the reason it cannot here ("static input dims").
Lowering = Callable[[NodeProto, int, Facts], "list[NodeProto] | str"]


def axes_normalised(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node with ``axes`` counted from 0: axes (-2, -1) of a rank-4 input are (2, 3)."""
    rank = input_rank(node, facts)
    if rank is None:
        return "a known input rank"
    axes = [int(a) % rank for a in node_attr(node, "axes", [])]
    copy = NodeProto()
    copy.CopyFrom(node)
    del copy.attribute[:]
    copy.attribute.extend([a for a in node.attribute if a.name != "axes"] + [helper.make_attribute("axes", axes)])
    return [copy]


def softmax_2d(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """Flatten at ``axis``, Softmax over the last of the two axes, Reshape to the input's shape."""
    name = node.name or node.output[0]
    axis = int(node_attr(node, "axis", 1))
    flat, normalised, dims = (facts.names.fresh(f"{name}/{part}") for part in ("flat", "2d", "shape"))
    return [
        helper.make_node("Flatten", [node.input[0]], [flat], name=facts.names.fresh(f"{name}/flatten"), axis=axis),
        helper.make_node(node.op_type, [flat], [normalised], name=name, axis=1),
        helper.make_node("Shape", [node.input[0]], [dims], name=facts.names.fresh(f"{name}/shape")),
        helper.make_node("Reshape", [normalised, dims], [node.output[0]], name=facts.names.fresh(f"{name}/reshape")),
    ]


def resize_matrices(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """A static Resize as one MatMul per resized axis with the weight matrices of
    ``ovpool.resize.axis_matrices`` (float32, or float64 for float64 data), a Where for
    the extrapolated outputs of tf_crop_and_resize, and Casts around it for float16/bfloat16."""
    dtype, dims = facts.types.get(node.input[0], (None, None))
    shape, given = resize_inputs(node, facts)
    if shape is None:
        shown = "unknown" if dims is None else "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
        return f"static input dims (they are {shown}; give them with --input)"
    if given is None:
        return "constant roi, scales and sizes"
    if dtype is None or np.dtype(dtype).kind != "f":
        return f"float data (it is {dtype or 'of unknown type'})"
    roi, scales, sizes = given
    op = OpNode(node.name, node.op_type, since, facts.opset, attributes(node))
    matrices = axis_matrices(op, shape, roi, scales, sizes)
    if 0 in shape or any(0 in m.weights.shape for m in matrices):
        return "a non-empty input and output (OpenVINO takes an empty constant for a scalar)"
    compute = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    name = node.name or node.output[0]
    nodes: list[NodeProto] = []
    value = node.input[0]

    def add(op_type: str, inputs: Sequence[str], part: str, **attrs: Any) -> str:
        output = facts.names.fresh(f"{name}/{part}")
        nodes.append(helper.make_node(op_type, list(inputs), [output], name=facts.names.fresh(f"{name}/{part}"), **attrs))
        return output

    def constant(array: np.ndarray, part: str) -> str:
        return add("Constant", [], part, value=numpy_helper.from_array(array, facts.names.fresh(f"{name}/{part}")))

    if compute != np.dtype(dtype):
        value = add("Cast", [value], "cast", to=helper.np_dtype_to_tensor_dtype(np.dtype(compute)))
    rank = len(shape)
    outside = np.zeros([1] * rank, bool)
    for matrix in matrices:
        weights = matrix.weights.astype(compute)
        if matrix.axis == rank - 2:
            value = add("MatMul", [constant(weights, f"weights{matrix.axis}"), value], f"axis{matrix.axis}")
        else:
            order = [a for a in range(rank) if a != matrix.axis] + [matrix.axis]
            if matrix.axis != rank - 1:
                value = add("Transpose", [value], f"to_last{matrix.axis}", perm=order)
            value = add(
                "MatMul", [value, constant(np.ascontiguousarray(weights.T), f"weights{matrix.axis}")], f"axis{matrix.axis}"
            )
            if matrix.axis != rank - 1:
                value = add("Transpose", [value], f"from_last{matrix.axis}", perm=list(np.argsort(order)))
        if matrix.outside is not None:
            along = [1] * rank
            along[matrix.axis] = len(matrix.outside)
            outside = outside | matrix.outside.reshape(along)
    if outside.any():
        fill = np.array(float(node_attr(node, "extrapolation_value", 0.0)), compute)
        value = add("Where", [constant(outside, "outside"), constant(fill, "extrapolation"), value], "extrapolated")
    if compute != np.dtype(dtype):
        value = add("Cast", [value], "cast_back", to=helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    nodes.append(helper.make_node("Identity", [value], [node.output[0]], name=name))
    return nodes


def constant_tensor(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The attribute's value as a ``value`` tensor: value_float 2.5 is a float32 scalar, value_ints a 1-D int64 tensor."""
    attribute = next(a for a in node.attribute if a.name in CONSTANT_ATTRIBUTES)
    value = attribute_value(attribute, text=False)
    if attribute.name.startswith("value_float"):
        array = np.asarray(value, np.float32)
    elif attribute.name.startswith("value_int"):
        array = np.asarray(value, np.int64)
    else:
        texts = [v.decode() for v in value] if isinstance(value, list) else value.decode()
        array = np.asarray(texts, dtype=object)
    tensor = numpy_helper.from_array(array, node.output[0])
    return [helper.make_node("Constant", [], list(node.output), name=node.name, value=tensor)]


def roi_align_max_by_samples(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """RoiAlign max as the maximum of each bin's bilinear samples: with ``sampling_ratio`` g > 0
    the samples of bin (i, j) are the bin centres of an average RoiAlign of ``g*output_height`` x
    ``g*output_width`` bins and sampling_ratio 1 (centre ``k = i*g + a`` is at
    ``start + (i + (a + 0.5)/g) * height/output_height``, sample a of bin i); a Reshape to
    ``[rois, C, output_height, g, output_width, g]`` and ReduceMax over the two g axes pick each
    bin's largest."""
    ratio = int(node_attr(node, "sampling_ratio", 0))
    if ratio <= 0:
        return "sampling_ratio > 0 (with 0 the number of samples depends on each roi at run time)"
    name = node.name or node.output[0]
    height, width = int(node_attr(node, "output_height", 1)), int(node_attr(node, "output_width", 1))
    kept = [a for a in node.attribute if a.name not in ("mode", "output_height", "output_width", "sampling_ratio")]
    samples, grouped, dims = (facts.names.fresh(f"{name}/{part}") for part in ("samples", "grouped", "shape"))
    sampler = helper.make_node(
        "RoiAlign", list(node.input), [samples], name=facts.names.fresh(f"{name}/samples"), mode="avg", sampling_ratio=1
    )
    sampler.attribute.extend([*kept, helper.make_attribute("output_height", height * ratio)])
    sampler.attribute.extend([helper.make_attribute("output_width", width * ratio)])
    shape = numpy_helper.from_array(np.array([0, 0, height, ratio, width, ratio], np.int64), dims)
    nodes = [
        sampler,
        helper.make_node("Constant", [], [dims], name=facts.names.fresh(f"{name}/shape"), value=shape),
        helper.make_node("Reshape", [samples, dims], [grouped], name=facts.names.fresh(f"{name}/group")),
    ]
    if facts.opset >= 18:
        axes = facts.names.fresh(f"{name}/axes")
        value = numpy_helper.from_array(np.array([3, 5], np.int64), axes)
        nodes.append(helper.make_node("Constant", [], [axes], name=facts.names.fresh(f"{name}/axes"), value=value))
        nodes.append(helper.make_node("ReduceMax", [grouped, axes], list(node.output[:1]), name=name, keepdims=0))
    else:
        nodes.append(helper.make_node("ReduceMax", [grouped], list(node.output[:1]), name=name, axes=[3, 5], keepdims=0))
    return nodes


def truncating_div(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node as ``ai.ovpool.Div``, which ``extensions()`` converts to a Divide with
    ``m_pythondiv="false"`` for integers."""
    return [helper.make_node("Div", list(node.input), list(node.output), name=node.name, domain=DOMAIN)]
