"""OpenVINO's ONNX frontend defects and what ovpool does about each: one table, ``DEFECTS``.

OpenVINO 2026.4's ONNX frontend computes something other than the ONNX model on a few nodes, or
refuses valid ones. Each row of ``DEFECTS`` names the operator, the range of since-versions, the
condition (a function of the node that gives its text, ``axis=1``, or None when the node is
fine), what OpenVINO does, and how ovpool computes the ONNX meaning instead: a lowering that
rewrites the node, before the frontend sees it, into nodes OpenVINO converts exactly. A row
without a lowering, or a node its lowering cannot take (a Resize whose input dims are not
static), is refused at convert time with one line naming the node, its op and version, and the
reason; with ``allow_inexact`` the node is left to OpenVINO and the same line is a warning.

A node takes the first row that applies to it: the Resize rows whose lowering is the per-axis
matrices (which compute every Resize attribute at once) come before the one that only renumbers
negative axes. Nodes in Loop, If and Scan bodies are rewritten too.

The conditions and lowerings of the rows other than Softmax, Resize, Constant, RoiAlign and Div
are in ``ovpool.ov.frontend_rewrites``, those of the departures OpenVINO CPU shows on some data
only that the conversion computes exactly (TopK ties, NaN in Greater, 8-bit overflow...) in
``ovpool.ov.value_fixes``; what they may know of the model, ``Facts``, in ``ovpool.ov.node_facts``. The departures of OpenVINO CPU that depend on the data fed, which no
conversion can see, are ``ovpool.ov.cpu_deviations``.

``rewrite(proto, label, shapes, allow_inexact)`` finds the replacements and ``apply`` writes them
into a copy of the model; ``extensions()`` are the ``ConversionExtension``s for the ``ai.ovpool``
nodes the lowerings write. The README's defect table is ``readme_table()``
(``python -m ovpool.ov.frontend_fixes`` prints it).

Softmax-11 over a rank-3 input at ``axis=1``: ONNX normalises each ``x[n]`` (a 2-D block of
``d1 * d2`` values) as one, OpenVINO each column of ``d1``; the rewrite is Flatten at 1 (to
``[d0, d1*d2]``), Softmax over the last axis, Reshape to the input's shape.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
import onnx.defs
from onnx import ModelProto, NodeProto, helper, numpy_helper

from ovpool.errors import ModelError, UnsupportedError
from ovpool.names import FreshNames
from ovpool.onnx.attributes import attribute_value
from ovpool.onnx.facts import ModelFacts
from ovpool.onnx.model import Weights, graphs
from ovpool.ov import DOMAIN
from ovpool.ov import frontend_rewrites as rewrites
from ovpool.ov import value_fixes as values
from ovpool.ov.node_facts import Arrays, Deferred, Facts, TensorTypes, input_rank, node_attr

if TYPE_CHECKING:
    from ovpool.inputs import InputShape

NEWEST = 10**6  # "every version from ``first`` on"

# A lowering gives the nodes that replace the node, or the reason it cannot here ("static input dims").
Lowering = Callable[[NodeProto, int, Facts], "list[NodeProto] | str"]


@dataclass(frozen=True)
class Defect:
    """One defect: ``op_type`` at since-versions ``first..last`` when ``when`` (the README's words),
    that is when ``condition`` gives a text for the node (None: the node is fine); ``openvino``:
    what OpenVINO does; ``fix``: how ovpool computes the ONNX meaning (None: refused, and
    ``lower`` is None)."""

    op_type: str
    first: int
    last: int
    when: str
    condition: Callable[[NodeProto, int, Facts], str | None]
    openvino: str
    fix: str | None
    lower: Lowering | None

    def covers(self, op_type: str, since: int) -> bool:
        return op_type == self.op_type and self.first <= since <= self.last

    @property
    def since(self) -> str:
        """``11..12``, ``18+``, ``12``."""
        if self.last == self.first:
            return str(self.first)
        return f"{self.first}+" if self.last >= NEWEST else f"{self.first}..{self.last}"

    @property
    def versions(self) -> str:
        """``Softmax-11..12``, ``Resize-18+``, ``Constant-12``."""
        return f"{self.op_type}-{self.since}"


# --- conditions ----------------------------------------------------------------------------------


def _axis_not_last(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Softmax-1..12's axis unless it is the last (there the 2-D coercion normalises what opset 13 does)."""
    axis = int(node_attr(node, "axis", 1))
    rank = input_rank(node, facts)
    if rank is not None and (rank < 2 or not -rank <= axis < rank or axis % rank == rank - 1):
        return None  # nothing to fix, or an axis OpenVINO refuses by itself
    if rank is None and axis == -1:
        return None
    return f"axis={axis} on a rank-{rank if rank is not None else '?'} input"


def _antialias(node: NodeProto, since: int, facts: Facts) -> str | None:
    mode = node_attr(node, "mode", "nearest")
    if node_attr(node, "antialias", 0) and mode != "nearest":
        return f"antialias=1, mode='{mode}'"
    return None


def _resize_inputs(node: NodeProto, facts: Facts) -> tuple[tuple[int, ...] | None, list[np.ndarray | None] | None]:
    """A Resize's (or Upsample's) static input dims (None: not static) and its constant roi, scales
    and sizes (None: one of them is not a constant); Resize-10's and Upsample-9's inputs are X and
    scales, Upsample-7's scales an attribute."""
    dims = facts.types.get(node.input[0], (None, None))[1]
    shape = None if dims is None or any(d is None for d in dims) else tuple(int(d) for d in dims if d is not None)
    if node.op_type == "Upsample" and not node.input[1:]:  # Upsample-7: the scales attribute
        return shape, [None, np.asarray(node_attr(node, "scales", []), np.float32), None]
    names = [str(name) for name in node.input[1:4]]
    if node.op_type == "Upsample" or onnx.defs.get_schema("Resize", facts.opset).since_version == 10:
        names = ["", *names[:1]]  # X and scales
    if any(name and facts.constants.get(name) is None for name in names):
        return shape, None
    given = [facts.constants.get(name) if name else None for name in names]
    return shape, (given + [None, None, None])[:3]


def _kept_axis_moves(node: NodeProto, since: int, facts: Facts) -> str | None:
    """An axis whose length the Resize keeps while its coordinates move (scale 1.1 on 4 elements, or
    tf_half_pixel_for_nn's half-pixel shift at scale 1): ONNX interpolates it, OpenVINO leaves it
    alone. Without static dims, scales strictly between 1 and 2 (n < 1/(s-1) elements keep their
    length) and tf_half_pixel_for_nn with ceiling rounding are flagged."""
    shape, given = _resize_inputs(node, facts)
    if given is None:
        return None
    if shape is not None:
        from ovpool.engine.ops.base import OpNode, attributes
        from ovpool.engine.ops.resize import axis_matrices

        op = OpNode(node.name, node.op_type, since, facts.opset, attributes(node))
        matrices = axis_matrices(op, shape, *given)
        if 0 in shape or any(m.weights.shape[0] == 0 for m in matrices):
            return None  # an empty output: no values to differ
        kept = [m for m in matrices if m.weights.shape[0] == m.weights.shape[1]]
        return f"axis {kept[0].axis} keeps its length {shape[kept[0].axis]} but not its values" if kept else None
    scales = given[1]
    between = scales is not None and any(1 < s < 2 for s in np.asarray(scales, np.float32).reshape(-1))
    shifted = node_attr(node, "coordinate_transformation_mode", "half_pixel") == "tf_half_pixel_for_nn" and node_attr(
        node, "nearest_mode", "round_prefer_floor"
    ) in ("ceil", "round_prefer_ceil")
    if between or shifted:
        return "an axis may keep its length but not its values (the input dims are not static)"
    return None


def _resizes_batch_or_channel(node: NodeProto, since: int, facts: Facts) -> str | None:
    """A Resize or Upsample that changes axis 0 or 1 (OpenVINO CPU's Interpolate resizes axes 2 on
    only): by the per-axis matrices with static dims, else by a constant scale other than 1 there
    (Resize-18's ``axes`` say which axes the scales are for)."""
    shape, given = _resize_inputs(node, facts)
    if given is None:
        return None
    if shape is not None:
        from ovpool.engine.ops.base import OpNode, attributes
        from ovpool.engine.ops.resize import axis_matrices

        op = OpNode(node.name, node.op_type, since, facts.opset, attributes(node))
        changed = [m.axis for m in axis_matrices(op, shape, *given) if m.axis < 2]
        return f"it resizes axis {changed[0]}" if changed else None
    if given[1] is None or not np.asarray(given[1]).size:
        return None
    scales = np.asarray(given[1], np.float64).reshape(-1)
    axes = list(node_attr(node, "axes", range(len(scales))))
    rank = input_rank(node, facts)
    moved = [a % rank if rank else a for a, s in zip(axes, scales) if s != 1]
    return f"a scale on axis {min(moved)}" if moved and min(moved) < 2 else None


def _fractional_scales(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Upsample's scales when one is not an integer (None also when they are not constants)."""
    given = _resize_inputs(node, facts)[1]
    scales = None if given is None else given[1]
    if scales is None or np.all(np.mod(np.asarray(scales, np.float64), 1) == 0):
        return None
    return f"scales {np.asarray(scales).reshape(-1).tolist()}"


def _aspect_policy(node: NodeProto, since: int, facts: Facts) -> str | None:
    policy = node_attr(node, "keep_aspect_ratio_policy", "stretch")
    sizes = node.input[3] if len(node.input) > 3 else ""
    return f"sizes with keep_aspect_ratio_policy='{policy}'" if sizes and policy != "stretch" else None


def _negative_axes(node: NodeProto, since: int, facts: Facts) -> str | None:
    axes = node_attr(node, "axes", [])
    return f"axes={list(axes)}" if any(a < 0 for a in axes) else None


def _axes_normalised(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
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


def _cubic_exclude_outside(node: NodeProto, since: int, facts: Facts) -> str | None:
    if node_attr(node, "mode", "nearest") == "cubic" and node_attr(node, "exclude_outside", 0):
        return "mode='cubic', exclude_outside=1"
    return None


def _coordinates(mode: str) -> Callable[[NodeProto, int, Facts], str | None]:
    """The condition: Resize's coordinate_transformation_mode is ``mode``."""

    def condition(node: NodeProto, since: int, facts: Facts) -> str | None:
        if node_attr(node, "coordinate_transformation_mode", "half_pixel") == mode:
            return f"coordinate_transformation_mode='{mode}'"
        return None

    return condition


_CONSTANT_ATTRIBUTES = ("value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings")


def _value_attributes(*names: str) -> Callable[[NodeProto, int, Facts], str | None]:
    """The condition: the Constant holds its value in one of the attributes ``names``."""

    def condition(node: NodeProto, since: int, facts: Facts) -> str | None:
        named = [a.name for a in node.attribute if a.name in names]
        return f"attribute '{named[0]}'" if named else None

    return condition


def _max_mode(node: NodeProto, since: int, facts: Facts) -> str | None:
    return "mode='max'" if node_attr(node, "mode", "avg") == "max" else None


def _integer_inputs(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Div of integers, or of inputs whose type shape inference could not give (the extension then
    reads the type OpenVINO sees). ONNX's Div takes one type for both inputs, so a float constant
    at either (``x / 6.0`` of a HardSwish) says the Div is of floats without shape inference."""
    if any(name in facts.constants and facts.constants[name].dtype.kind == "f" for name in node.input):
        return None
    dtype = facts.types.get(node.input[0], (None, None))[0] if node.input else None
    if dtype is not None and not np.issubdtype(np.dtype(dtype), np.integer):
        return None
    return f"{dtype} inputs" if dtype is not None else "inputs of a type only OpenVINO knows"


# --- lowerings -----------------------------------------------------------------------------------


def _softmax_2d(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
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


def _resize_matrices(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """A static Resize as one MatMul per resized axis with the weight matrices of
    ``ovpool.engine.ops.resize.axis_matrices`` (float32, or float64 for float64 data), a Where for
    the extrapolated outputs of tf_crop_and_resize, and Casts around it for float16/bfloat16."""
    from ovpool.engine.ops.base import OpNode, attributes
    from ovpool.engine.ops.resize import axis_matrices

    dtype, dims = facts.types.get(node.input[0], (None, None))
    shape, given = _resize_inputs(node, facts)
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


def _constant_tensor(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The attribute's value as a ``value`` tensor: value_float 2.5 is a float32 scalar, value_ints a 1-D int64 tensor."""
    attribute = next(a for a in node.attribute if a.name in _CONSTANT_ATTRIBUTES)
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


def _roi_align_max_by_samples(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
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


def _truncating_div(node: NodeProto, since: int, facts: Facts) -> list[NodeProto] | str:
    """The node as ``ai.ovpool.Div``, which ``extensions()`` converts to a Divide with
    ``m_pythondiv="false"`` for integers."""
    return [helper.make_node("Div", list(node.input), list(node.output), name=node.name, domain=DOMAIN)]


_RESIZE_FIX = (
    "one MatMul per resized axis with constant weights from ovpool's own Resize "
    "(needs static input dims and constant roi/scales/sizes, else refused)"
)

DEFECTS: tuple[Defect, ...] = (
    Defect(
        "Softmax",
        11,
        12,
        "axis not the last",
        _axis_not_last,
        "normalises over the one axis (opset 13's meaning) where ONNX flattens to 2-D at axis and "
        "normalises the whole trailing block",
        "Flatten at axis, Softmax over the last axis, Reshape back",
        _softmax_2d,
    ),
    Defect(
        "Resize",
        18,
        NEWEST,
        "antialias=1, linear or cubic",
        _antialias,
        "computes other values for the antialiased filter",
        _RESIZE_FIX,
        _resize_matrices,
    ),
    Defect(
        "Resize",
        11,
        NEWEST,
        "cubic, exclude_outside=1",
        _cubic_exclude_outside,
        "computes other weights where the cubic taps leave the input",
        _RESIZE_FIX,
        _resize_matrices,
    ),
    Defect(
        "Resize",
        19,
        NEWEST,
        "half_pixel_symmetric",
        _coordinates("half_pixel_symmetric"),
        "refuses it (not one of the coordinate transformation modes it knows)",
        _RESIZE_FIX,
        _resize_matrices,
    ),
    Defect(
        "Resize",
        11,
        NEWEST,
        "tf_crop_and_resize",
        _coordinates("tf_crop_and_resize"),
        "refuses it (not one of the coordinate transformation modes it knows)",
        _RESIZE_FIX,
        _resize_matrices,
    ),
    Defect(
        "Resize",
        10,
        NEWEST,
        "an axis keeps its length, not its values",
        _kept_axis_moves,
        "leaves an axis alone when its length does not change (scale 1.1 on 4 elements; tf_half_pixel_for_nn at scale 1)",
        _RESIZE_FIX,
        _resize_matrices,
    ),
    Defect(
        "Upsample",
        7,
        9,
        "a scale that is not an integer",
        _fractional_scales,
        "reads other input elements (nearest at scale 1.25 on 4 elements: 0, 1, 1, 2, 3 where ONNX "
        "floors x / 1.25 to 0, 0, 1, 2, 3)",
        _RESIZE_FIX,
        _resize_matrices,
    ),
    *(
        Defect(
            op_type,
            first,
            last,
            "a scale on the batch or channel axis",
            _resizes_batch_or_channel,
            "writes an Interpolate its CPU plugin does not compile (it resizes axes 2 on only)",
            _RESIZE_FIX,
            _resize_matrices,
        )
        for op_type, first, last in (("Upsample", 7, 9), ("Resize", 10, NEWEST))
    ),
    Defect(
        "Resize",
        18,
        NEWEST,
        "keep_aspect_ratio_policy not_larger/not_smaller",
        _aspect_policy,
        "interpolates each axis at its own output/input ratio instead of the common scale",
        _RESIZE_FIX,
        _resize_matrices,
    ),
    Defect(
        "Resize",
        18,
        NEWEST,
        "negative axes",
        _negative_axes,
        'refuses them ("All axes values should less than input rank")',
        "the same node with axes counted from 0 (needs the input rank)",
        _axes_normalised,
    ),
    Defect(
        "Constant",
        12,
        12,
        "value_float(s), value_int(s), value_string(s)",
        _value_attributes(*_CONSTANT_ATTRIBUTES),
        'refuses it ("Any was not initialized")',
        "a Constant of the same value as a 'value' tensor",
        _constant_tensor,
    ),
    Defect(
        "Constant",
        13,
        NEWEST,
        "value_string(s)",
        _value_attributes("value_string", "value_strings"),
        'refuses it ("Invalid attribute type STRING expected: TENSOR")',
        "a Constant of the same value as a 'value' tensor",
        _constant_tensor,
    ),
    Defect(
        "RoiAlign",
        10,
        NEWEST,
        "mode='max'",
        _max_mode,
        "computes another maximum than the schema's (the largest bilinear sample of each bin); onnxruntime's differs from both",
        "the largest of each bin's samples: an average RoiAlign of one sample per bin on a grid "
        "sampling_ratio times finer, Reshape, ReduceMax (sampling_ratio > 0; 0 is refused)",
        _roi_align_max_by_samples,
    ),
    Defect(
        "Div",
        7,
        NEWEST,
        "integer inputs",
        _integer_inputs,
        'writes Divide with m_pythondiv="true", floor division by the IR specification (-7/2 = -4; '
        "its CPU plugin truncates anyway) where ONNX truncates (-3)",
        'Divide with m_pythondiv="false" (truncation, as ONNX and the CPU plugin compute)',
        _truncating_div,
    ),
    Defect(
        "LRN",
        1,
        NEWEST,
        "a bias that is not a whole number",
        rewrites.fractional_bias,
        "writes LRN-1, whose CPU plugin truncates the bias to a whole number: bias 0.5 computes as 0 (x / (alpha / "
        "size * s) ** beta, 10 times ONNX's value or more), 1.5 as 1",
        "LRN with bias 1 and alpha / bias, times bias ** -beta (refused for a negative bias)",
        rewrites.lrn_unit_bias,
    ),
    Defect(
        "HardSigmoid",
        6,
        NEWEST,
        "alpha=0 or beta=0",
        rewrites.zero_alpha_or_beta,
        "takes a zero alpha or beta for the default (0.2, 0.5): alpha=0, beta=0 gives 0.4 for -0.5 where ONNX gives 0",
        "the formula max(0, min(1, alpha * x + beta)) in Mul, Add, Clip",
        rewrites.hard_sigmoid_formula,
    ),
    Defect(
        "LSTM",
        7,
        NEWEST,
        "peepholes (input P)",
        rewrites.peepholes,
        "drops P silently (its LSTMSequence has no peepholes)",
        None,
        None,
    ),
    Defect(
        "LSTM",
        7,
        NEWEST,
        "input_forget=1",
        rewrites.input_forget,
        "drops input_forget silently (its LSTMSequence has no coupled input-forget gate)",
        None,
        None,
    ),
    *(
        Defect(
            op_type,
            first,
            NEWEST,
            "integer inputs",
            values.input_kinds("iu", "integer inputs", unless=rewrites.reduce_of_dynamic_rank),
            f"{what} in the integer type (its CPU plugin rounds: {example})",
            "the node on the input cast to float32, the result cast back (truncation, as onnxruntime computes)",
            values.through_float32,
        )
        for op_type, first, what, example in (
            ("ReduceLogSum", 1, "takes the logarithm", "log(20) = 3 where ONNX truncates to 2"),
            ("ReduceLogSumExp", 1, "takes the logarithm", "log(exp(1) + exp(1)) = 2 where ONNX truncates to 1"),
            ("Shrink", 9, "subtracts the bias", "5 - 1e-6 = 5 where ONNX truncates to 4"),
        )
    ),
    *(
        Defect(
            op_type,
            13,
            17,
            "the axes attribute",
            rewrites.axes_attribute,
            "ignores axes at opset 13 and reduces every axis (axes=[1] of [2, 3, 4] gives [1, 1, 1])",
            "the same node with axes as a constant second input, where the frontend's opset-13 rule reads them",
            rewrites.axes_as_input,
        )
        for op_type in ("ReduceL1", "ReduceLogSum", "ReduceLogSumExp")
    ),
    Defect(
        "Range",
        11,
        NEWEST,
        "a range that is or may be empty",
        rewrites.maybe_empty_range,
        "counts abs(limit - start) / delta elements (5, 0, 1 gives 5 values where ONNX gives none)",
        "the limit moved to the start where the range is empty: Where(delta > 0, Max(limit, start), Min(limit, start))",
        rewrites.range_limit_clamped,
    ),
    Defect(
        "Pad",
        11,
        NEWEST,
        "constant_value from a graph input",
        rewrites.runtime_pad_value,
        "pads with 0 instead of the value fed (7: [0, 1, 2, 0] where ONNX gives [7, 1, 2, 7])",
        "Where(a mask of ones padded with zeros, the input padded with 0, the value)",
        rewrites.pad_value_by_mask,
    ),
    Defect(
        "ConvTranspose",
        1,
        NEWEST,
        "output_shape with group > 1",
        rewrites.grouped_output_shape,
        "computes other values (group=2, strides=[2], output_shape=[1] on [1, 6, 3]: -1.17 where ONNX gives -0.39)",
        "the same node with the pads the schema derives from output_shape (needs static input dims and kernel)",
        rewrites.output_shape_as_pads,
    ),
    *(
        Defect(
            op_type,
            18,
            NEWEST,
            "noop_with_empty_axes=1, no axes",
            rewrites.noop_without_axes,
            "returns the input unchanged, where the schema keeps the elementwise step (abs(x), x * x, log x)",
            "the elementwise step: Abs, Sqrt(x * x), Mul(x, x), Log, or the input for ReduceLogSumExp",
            rewrites.elementwise_step,
        )
        for op_type in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")
    ),
    Defect(
        "Gather",
        1,
        NEWEST,
        "empty indices",
        rewrites.empty_second_input("indices"),
        "gives a rank-0 result for constant ones (indices [0, 2] of a [4] tensor: [] where ONNX gives [0, 2]); "
        "from a graph input its CPU plugin's compile_model dies of SIGFPE",
        "Gather of zero indices of the shape with each zero dim made 1, then Slice to length 0 there",
        rewrites.gather_then_empty,
    ),
    Defect(
        "Compress",
        9,
        NEWEST,
        "an empty condition",
        rewrites.empty_second_input("condition"),
        "its CPU plugin's compile_model dies of SIGFPE (Floating point exception)",
        "the data sliced to length 0 on axis (flattened first without one)",
        rewrites.compress_nothing,
    ),
    Defect(
        "TopK",
        10,
        NEWEST,
        "K = 0",
        rewrites.k_zero,
        "writes a TopK its CPU plugin does not compile (K (0) must be positive); ONNX gives empty outputs",
        "the input sliced to length 0 on axis, and that cast to int64 for the indices",
        rewrites.top_nothing,
    ),
    Defect(
        "Einsum",
        12,
        NEWEST,
        "a repeated index in one operand, the output implicit (trace 'ii', '...ii')",
        rewrites.repeated_index,
        "writes an Einsum its CPU plugin does not compile ('Input order must have shape [n]')",
        "the equation with its output written out ('ii' -> 'ii->', '...ii' -> '...ii->...')",
        rewrites.explicit_output,
    ),
    Defect(
        "Attention",
        25,
        NEWEST,
        "a local window (left_window_size or right_window_size of 0 or more)",
        rewrites.attention_window,
        "ignores the window: every key the mask and is_causal allow is attended (test_attention_local_window: "
        "0.429 where ONNX gives 0.539)",
        "the window and causal frontier as a boolean mask (p - left <= j <= p + right, j <= p with is_causal, p the "
        "query's absolute position) composed into attn_mask, the node without them",
        rewrites.bounds_as_mask,
    ),
    Defect(
        "Attention",
        23,
        NEWEST,
        "is_causal=1 with past_key, new keys not as many as the queries (static dims)",
        rewrites.causal_past_offset,
        "aligns the causal mask to the end of all keys, where ONNX offsets it by the past keys (query i sees keys "
        "up to i + 14, not i + 12, for 4 queries, 12 past and 6 new keys)",
        "the causal frontier as a boolean mask (j <= i + past) composed into attn_mask, is_causal=0",
        rewrites.bounds_as_mask,
    ),
    *(
        Defect(
            op_type,
            first,
            NEWEST,
            "to STRING",
            rewrites.to_string,
            "writes a Convert to string its CPU plugin does not compile",
            None,
            None,
        )
        for op_type, first in (("Cast", 6), ("CastLike", 15))
    ),
    Defect(
        "Squeeze",
        13,
        NEWEST,
        "axes from a graph input, more than one",
        rewrites.reduce_of_dynamic_rank,
        "writes a Squeeze of dynamic rank its CPU plugin does not compile",
        None,
        None,
    ),
    Defect(
        "Unsqueeze",
        13,
        NEWEST,
        "axes from a graph input",
        rewrites.axes_from_graph_input,
        "writes an Unsqueeze of dynamic rank its CPU plugin does not compile",
        None,
        None,
    ),
    *(
        Defect(
            op_type,
            first,
            NEWEST,
            "an activation other than Relu, Sigmoid, Tanh",
            rewrites.unsupported_activations,
            "writes a sequence its CPU plugin does not compile ('Unsupported activation function')",
            None,
            None,
        )
        for op_type, first in (("RNN", 7), ("GRU", 7), ("LSTM", 7))
    ),
    *(
        Defect(
            op_type,
            13 if op_type == "ReduceSum" else 18,
            NEWEST,
            "keepdims=0, axes from a graph input",
            rewrites.reduce_of_dynamic_rank,
            "writes a reduction of dynamic rank its CPU plugin does not compile",
            None,
            None,
        )
        for op_type in (
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceMax",
            "ReduceMean",
            "ReduceMin",
            "ReduceProd",
            "ReduceSumSquare",
            "ReduceSum",
        )
    ),
    *(
        Defect(
            op_type,
            first,
            NEWEST,
            "NaN operands",
            values.always("NaN operands"),
            f"its CPU plugin gives True for NaN {sign} 1 (ONNX: False)",
            f"{less}(b, a), which the CPU plugin gives False for NaN",
            values.swapped_comparison,
        )
        for op_type, first, sign, less in (("Greater", 7, ">", "Less"), ("GreaterOrEqual", 12, ">=", "LessOrEqual"))
    ),
    *(
        Defect(
            op_type,
            first,
            NEWEST,
            "a float input to BOOL",
            values.float_to_bool,
            "its CPU plugin casts NaN to False (ONNX: True, NaN is not zero)",
            "Not(Equal(x, 0))",
            values.not_equal_zero,
        )
        for op_type, first in (("Cast", 6), ("CastLike", 15))
    ),
    *(
        Defect(
            op_type,
            19,
            NEWEST,
            "a float input to FLOAT8E4M3FN or FLOAT8E5M2, saturate=1 (the default)",
            values.float8_saturation,
            "its Convert ignores saturate: NaN (E4M3FN) or +-inf (E5M2) beyond the largest finite value and for "
            "+-inf, where ONNX gives +-448 (+-57344)",
            "Where(IsNaN(x), x, Clip(x, -largest, largest)) cast",
            values.clipped_to_float8,
        )
        for op_type in ("Cast", "CastLike")
    ),
    *(
        Defect(
            op_type,
            24,
            NEWEST,
            "a float input to FLOAT8E8M0",
            values.float8e8m0_rounding,
            "its Convert ignores round_mode and saturate: it rounds to the nearest power of two, ties down "
            "(1.1 -> 1 and 3 -> 2 where round_mode='up' gives 2 and 4), 0 -> 2^-127 and inf -> 2^127 without "
            "saturate, negative values -> 2^-127",
            "the power of two round_mode picks computed in float32 by comparisons, clipped (saturate=1) or NaN "
            "outside [2^-127, 2^127], then cast",
            values.powers_of_two,
        )
        for op_type in ("Cast", "CastLike")
    ),
    Defect(
        "TopK",
        1,
        NEWEST,
        "equal values",
        values.always("equal values"),
        "writes a TopK without stable, which its CPU plugin orders otherwise (indices 1, 2, 0 for zeros and K from "
        "a graph input, where ONNX gives the lower index first: 0, 1, 2), and refuses a K of 0 fed at run time",
        "TopK-11 with stable=true, sorted by value; a K from an input taken as max(K, 1), the outputs sliced to K",
        values.as_ovpool,
    ),
    Defect(
        "Hardmax",
        1,
        NEWEST,
        "equal maxima",
        values.non_empty("equal maxima"),
        "picks the maximum by a TopK without stable: not always the first (6 of 400 values on [5, 5, 4, 4])",
        "OneHot of the index a stable TopK of 1 gives (over the 2-D coercion before version 13)",
        values.as_ovpool,
    ),
    *(
        Defect(
            op_type,
            1,
            NEWEST,
            "an axis of length 0 (static dims)",
            values.empty_reduction,
            f"its CPU plugin gives {cpu} for the reduction of no values (ONNX: {onnx_value})",
            "a constant of the output's shape holding ONNX's value",
            values.empty_fill,
        )
        for op_type, cpu, onnx_value in (
            ("ReduceMax", "-FLT_MAX or INT32_MIN", "-inf or the type's minimum"),
            ("ReduceMin", "FLT_MAX or INT32_MAX", "inf or the type's maximum"),
        )
    ),
    *(
        Defect(
            op_type,
            1,
            NEWEST,
            f"float input, a reduced row of {infinity} only (opset 11+)",
            values.infinite_rows,
            f"its CPU plugin gives {cpu} for a row [{infinity}, {infinity}] (ONNX: {infinity}; Attention's function "
            "body then gives NaN for a fully masked row where ONNX gives 0)",
            f"Where(the same reduction of IsInf(x) is all true, {infinity}, the reduction)",
            values.infinity_kept,
        )
        for op_type, infinity, cpu in (("ReduceMax", "-inf", "-FLT_MAX"), ("ReduceMin", "+inf", "FLT_MAX"))
    ),
    Defect(
        "Flatten",
        1,
        NEWEST,
        "an input with a zero dim (static dims)",
        values.empty_flatten,
        "writes Reshape [d0, -1] with special_zero (Flatten(axis=2) of [4, 1, 2, 0] gives [4, 1] where ONNX gives [4, 0])",
        "a Reshape to the static target [prod(dims[:axis]), prod(dims[axis:])] without special_zero",
        values.flatten_to_static,
    ),
    *(
        Defect(
            op_type,
            first,
            NEWEST,
            "8-bit integers",
            values.input_kinds("iu", "8-bit integers", (1,)),
            "its CPU plugin saturates on overflow (int8 100 * 3 = 127) where ONNX wraps (44)",
            "the operation in int32, wrapped to 8 bits (floor_mod(v + 128, 256) - 128 for int8), converted back",
            values.as_ovpool,
        )
        for op_type, first in (("Add", 14), ("Sub", 14), ("Mul", 14))
    ),
    *(
        Defect(
            op_type,
            6,
            NEWEST,
            "float16, three or more inputs",
            values.float16_chain,
            "writes a chain of float16 Adds, whose partial sums the IR's meaning rounds to float16 (its CPU plugin at "
            "f32 keeps them in f32: 0.1 + 1000 - 1000 is 0.0 by the IR, 0.09998 by the plugin and ONNX)",
            "the node on its inputs cast to float32, the result cast back to float16",
            values.in_float32,
        )
        for op_type in ("Sum", "Mean")
    ),
    Defect(
        "Expand",
        8,
        NEWEST,
        "a rank-0 result",
        values.rank_0_expand,
        "writes a Broadcast whose CPU plugin gives shape [1] for the rank-0 result (ONNX: shape [])",
        "Identity (the input is the result)",
        values.identity,
    ),
    Defect(
        "LpNormalization",
        1,
        NEWEST,
        "any input",
        values.always("the norm"),
        "divides by sqrt(sum(x * x) + eps): a single value on the axis gives 0.99993 where ONNX's x / abs(x) is 1",
        "x divided by its norm without eps (0 where the norm is 0)",
        values.as_ovpool,
    ),
    Defect(
        "BitShift",
        11,
        NEWEST,
        "8, 16, 32-bit integers",
        values.input_kinds("iu", "integers", (1, 2, 4)),
        "multiplies or divides by Power(2, shift), which saturates (uint8 5 << 5 = 255 where ONNX keeps the low bits, "
        "160; int8 64 << 1 = 127 where ONNX-28 wraps to -128), divides by 0 for a shift by the type's width or more, "
        "and rounds a negative right shift toward 0 (int8 -1 >> 1 = 0 where ONNX-28 shifts arithmetically: -1)",
        "OpenVINO's bitwise shifts in int32: 0 for a shift by the width or more (the sign, -1 or 0, for a signed "
        "right shift), uint32's right shift masked to be logical, a signed left shift sign-extended from the width",
        values.as_ovpool,
    ),
    Defect(
        "SpaceToDepth",
        28,
        NEWEST,
        "mode='CRD'",
        rewrites.crd_mode,
        "computes DCR whatever the mode (channel 1 of CRD, pixel (0, 1) of input channel 0, gets pixel (0, 0) of "
        "input channel 1)",
        "SpaceToDepth of each channel alone (reshaped to [N * C, 1, H, W], where DCR and CRD agree), reshaped to "
        "[N, C * b * b, H / b, W / b]",
        rewrites.space_to_depth_per_channel,
    ),
    *(
        Defect(
            op_type,
            14,
            NEWEST,
            "layout=1",
            rewrites.batch_first,
            "computes other values for batch-first inputs (0.31 where ONNX gives 0.175 on GRU's batchwise case)",
            "Transposes to and from the node at layout=0",
            rewrites.sequence_first,
        )
        for op_type in ("RNN", "GRU", "LSTM")
    ),
    Defect(
        "QuantizeLinear",
        10,
        NEWEST,
        "a scale or zero point not constant, float32 to 8 or 16-bit integers",
        values.runtime_quantization,
        "adds the zero point before rounding half to even (x / s = 1.5 at uint16 zero point 32767 gives "
        "round(32768.5) = 32768 where ONNX gives round(1.5) + 32767 = 32769)",
        "round(x / s) + zp saturated in float32 steps, cast to the type",
        values.quantize_by_formula,
    ),
    Defect(
        "Tile",
        6,
        NEWEST,
        "repeats not a constant",
        values.runtime_repeats,
        "its CPU plugin leaves every value of a larger output uninitialised when the repeats are known only at run "
        "time (repeats [7, 6, 4, 2] of a [2, 3, 4, 5] input; constant repeats and small outputs are right)",
        "Broadcast of the input with a unit axis before each axis ([1, d0, 1, d1, ...] to [r0, d0, r1, d1, ...]), "
        "reshaped to [r0 * d0, r1 * d1, ...]",
        values.tile_by_broadcast,
    ),
    Defect(
        "DFT",
        17,
        NEWEST,
        "an input of known rank",
        rewrites.known_rank,
        "ignores DFT-20's axis fed at run time (test_dft_axis: 450 where ONNX gives 45) and gives onesided outputs "
        "the wrong rank (DFT-20 rfft: [1, 6, 10, 1, 2] where ONNX gives [1, 6, 10, 2]; DFT-17 rfft of [1, 1, 1]: "
        "[1, 1, 1, 2] where ONNX gives [1, 1, 2])",
        "OpenVINO's DFT, IDFT, RDFT or IRDFT over the axis r - 2, the input's axis swapped there and back by "
        "Transposes of a permutation computed at run time",
        rewrites.dft_by_swapped_axis,
    ),
)


# The rows of ``DEFECTS`` by op type, in table order: a node is held against its own op's rows only
# (an Add against none of the Resize rows), one schema lookup each.
_ROWS: dict[str, tuple[Defect, ...]] = {op: tuple(d for d in DEFECTS if d.op_type == op) for op in {d.op_type for d in DEFECTS}}


def defect_of(node: NodeProto, opset: int, facts: Facts) -> tuple[Defect, int, str] | None:
    """The first row of ``DEFECTS`` the node has, its since-version and the condition's text."""
    rows = _ROWS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    if not rows:
        return None
    since = _since_version(node.op_type, opset)
    for defect in rows:
        if defect.covers(node.op_type, since):
            condition = defect.condition(node, since, facts)
            if condition is not None:
                return defect, since, condition
    return None


@functools.cache
def _since_version(op_type: str, opset: int) -> int:
    """The since-version of the default domain's ``op_type`` in force at ``opset`` (Resize at 13:
    13), looked up once (a model of 342 Constant nodes: one lookup, not 342); an operator with no
    schema there is ``onnx.defs.SchemaError``."""
    return onnx.defs.get_schema(op_type, opset).since_version


def rewrite(
    proto: ModelProto,
    label: str,
    shapes: Sequence[InputShape] = (),
    allow_inexact: bool = False,
    weights: Weights | None = None,
    model_facts: ModelFacts | None = None,
) -> dict[tuple[int, int], list[NodeProto]]:
    """``{(graph, node index): the nodes that replace it}`` for every node with a defect ``DEFECTS``
    lowers, in the main graph (graph 0) and its subgraphs (numbered in ``graphs`` order; their
    tensors have no inferred types, so only the lowerings that need none apply there). A node no
    lowering takes (a refused row or a lowering's missing precondition) is an ``UnsupportedError``
    naming it, or with ``allow_inexact`` a warning of the same line and the node is left to OpenVINO.
    ``weights``, those ``load_apart`` left in the model file, are constants as the others are.
    ``model_facts``, the conversion's ``ModelFacts`` of ``proto`` (else made of ``proto``, ``shapes`` and
    ``weights``), gives the types and constants, each worked out once for the whole conversion."""
    model = model_facts if model_facts is not None else ModelFacts(proto, label, weights=weights, shapes=tuple(shapes))
    every = list(model.subgraphs)
    found_ops = [(g, i, node) for g, graph in enumerate(every) for i, node in enumerate(graph.node) if node.op_type in _ROWS]
    if not found_ops:
        return {}
    opset = model.opset
    taken = {name for graph in every for node in graph.node for name in [node.name, *node.output]}
    taken |= {i.name for i in proto.graph.initializer} | {i.name for i in proto.graph.input}
    types, constants = Deferred(lambda: _types(model)), Deferred(lambda: model.constants)
    facts = Facts(opset, types, constants, FreshNames(taken), frozenset(model.graph_inputs))
    replaced: dict[tuple[int, int], list[NodeProto]] = {}
    for g, index, node in found_ops:
        try:
            found = defect_of(node, opset, facts)
        except (ValueError, TypeError, IndexError, onnx.defs.SchemaError):
            continue  # a malformed node (axis="x"): OpenVINO's own conversion names what is wrong
        if found is None:
            continue
        defect, since, condition = found
        try:
            lowered = defect.lower(node, since, facts) if defect.lower is not None else None
        except (ValueError, TypeError, IndexError) as exc:
            raise ModelError(f"node '{node.name or node.output[0]}' ({node.op_type}-{since}): {condition}: {exc}") from None
        if isinstance(lowered, list):
            replaced[(g, index)] = lowered
            continue
        need = "ovpool has no exact lowering" if lowered is None else f"ovpool's exact lowering needs {lowered}"
        _inexact(label, node, defect, since, condition, need, allow_inexact)
    return replaced


def _inexact(label: str, node: NodeProto, defect: Defect, since: int, condition: str, need: str, allow: bool) -> None:
    """Refuse the node (or with ``allow``, warn of it): one line naming it, the defect and ``need``."""
    where = f"node '{node.name or node.output[0]}' ({node.op_type}-{since}): {condition}: OpenVINO {defect.openvino}"
    if allow:
        warnings.warn(f"{label}: {where}; {need}; written as OpenVINO converts it (--allow-inexact)", stacklevel=2)
        return
    raise UnsupportedError.in_file(label, f"{where}; {need} (--allow-inexact writes it anyway)")


def apply(proto: ModelProto, replaced: Mapping[tuple[int, int], list[NodeProto]]) -> ModelProto:
    """A copy of ``proto`` with the nodes of ``rewrite`` in place (and the ``ai.ovpool`` opset when
    one is written). Subgraphs are rebuilt before the graphs that hold them (deepest last in
    ``graphs`` order), so a rebuilt parent copies its children's new nodes."""
    model = ModelProto()
    model.CopyFrom(proto)
    every = list(graphs(model.graph))
    for g in sorted({g for g, _index in replaced}, reverse=True):
        graph = every[g]
        nodes = [new for i, node in enumerate(graph.node) for new in replaced.get((g, i), [node])]
        del graph.node[:]
        graph.node.extend(nodes)
    if any(n.domain == DOMAIN for nodes in replaced.values() for n in nodes):
        if not any(o.domain == DOMAIN for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return model


def _constants(proto: ModelProto, weights: Weights | None = None) -> Arrays:
    """The main graph's constants (``ModelFacts.constants``: ``constant_tensors``, and the
    ``weights`` left in the model file), each read when looked up."""
    return ModelFacts(proto, "", weights=weights).constants


def _types(model: ModelFacts) -> TensorTypes:
    """``ModelFacts.types``, inferred with the static shapes given for inputs (``--input``) set
    first; none when a tensor has a type ovpool has no numpy form for (strings): the conditions
    then assume the worst and the lowerings that need types refuse."""
    try:
        return model.types
    except UnsupportedError:
        return {}


def extensions() -> list[object]:
    """The ``ConversionExtension``s of the ``ai.ovpool`` nodes the lowerings write: ``ai.ovpool.Div``
    (Divide, ``m_pythondiv="false"`` on integers) and ``ovpool.ov.value_fixes.CONVERTERS``."""
    from openvino.frontend.onnx import ConversionExtension

    converters = {"Div": _divide, **values.CONVERTERS}
    return [ConversionExtension(op_type, DOMAIN, converter) for op_type, converter in converters.items()]


def _divide(context) -> list:
    from openvino import opset1

    divide = opset1.divide(context.get_input(0), context.get_input(1))
    if divide.get_output_element_type(0).is_integral():
        divide.set_attribute("m_pythondiv", False)
    return list(divide.outputs())


def readme_table() -> str:
    """The README's table of the defects: one row per ``DEFECTS`` row, fixed (how) or refused;
    consecutive rows that differ only in the op type share a line (``ReduceL1, ReduceL2-18+``)."""
    rows = ["| ONNX node | OpenVINO 2026.4 frontend | ovpool |", "|---|---|---|"]
    groups: list[list[Defect]] = []
    for defect in DEFECTS:
        last = groups[-1][0] if groups else None
        same = last is not None and (last.first, last.last, last.when, last.openvino, last.fix) == (
            defect.first,
            defect.last,
            defect.when,
            defect.openvino,
            defect.fix,
        )
        if same:
            groups[-1].append(defect)
        else:
            groups.append([defect])
    for group in groups:
        defect = group[0]
        doing = f"fixed: {defect.fix}" if defect.fix else "refused (`--allow-inexact` writes OpenVINO's)"
        ops = ", ".join(d.op_type for d in group)
        rows.append(f"| {ops}-{defect.since}, {defect.when} | {defect.openvino} | {doing} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(readme_table())
