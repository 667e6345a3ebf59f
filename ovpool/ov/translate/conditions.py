"""The conditions of ``DEFECTS`` rows written here (Softmax, Resize, Upsample, Constant, RoiAlign,
Div): each takes (node, its since-version, ``Facts``) and gives the condition's text for the node
(``axis=1 on a rank-3 input``), or None when the node is fine. The other rows' conditions are in
``ovpool.ov.frontend_rewrites`` and ``ovpool.ov.value_fixes``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import onnx.defs
from onnx import NodeProto

from ovpool.axis import is_last_axis
from ovpool.nodes import OpNode, attributes
from ovpool.ov.node_facts import Facts, input_rank, node_attr
from ovpool.resize import axis_matrices


def axis_not_last(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Softmax-1..12's axis unless it is the last (there the 2-D coercion normalises what opset 13 does)."""
    axis = int(node_attr(node, "axis", 1))
    rank = input_rank(node, facts)
    if rank is not None and (rank < 2 or not -rank <= axis < rank or is_last_axis(axis, rank)):
        return None  # nothing to fix, or an axis OpenVINO refuses by itself
    if rank is None and axis == -1:
        return None
    return f"axis={axis} on a rank-{rank if rank is not None else '?'} input"


def antialias(node: NodeProto, since: int, facts: Facts) -> str | None:
    mode = node_attr(node, "mode", "nearest")
    if node_attr(node, "antialias", 0) and mode != "nearest":
        return f"antialias=1, mode='{mode}'"
    return None


def resize_inputs(node: NodeProto, facts: Facts) -> tuple[tuple[int, ...] | None, list[np.ndarray | None] | None]:
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


def kept_axis_moves(node: NodeProto, since: int, facts: Facts) -> str | None:
    """An axis whose length the Resize keeps while its coordinates move (scale 1.1 on 4 elements, or
    tf_half_pixel_for_nn's half-pixel shift at scale 1): ONNX interpolates it, OpenVINO leaves it
    alone. Without static dims, scales strictly between 1 and 2 (n < 1/(s-1) elements keep their
    length) and tf_half_pixel_for_nn with ceiling rounding are flagged."""
    shape, given = resize_inputs(node, facts)
    if given is None:
        return None
    if shape is not None:
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


def resizes_batch_or_channel(node: NodeProto, since: int, facts: Facts) -> str | None:
    """A Resize or Upsample that changes axis 0 or 1 (OpenVINO CPU's Interpolate resizes axes 2 on
    only): by the per-axis matrices with static dims, else by a constant scale other than 1 there
    (Resize-18's ``axes`` say which axes the scales are for)."""
    shape, given = resize_inputs(node, facts)
    if given is None:
        return None
    if shape is not None:
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


def fractional_scales(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Upsample's scales when one is not an integer (None also when they are not constants)."""
    given = resize_inputs(node, facts)[1]
    scales = None if given is None else given[1]
    if scales is None or np.all(np.mod(np.asarray(scales, np.float64), 1) == 0):
        return None
    return f"scales {np.asarray(scales).reshape(-1).tolist()}"


def aspect_policy(node: NodeProto, since: int, facts: Facts) -> str | None:
    policy = node_attr(node, "keep_aspect_ratio_policy", "stretch")
    sizes = node.input[3] if len(node.input) > 3 else ""
    return f"sizes with keep_aspect_ratio_policy='{policy}'" if sizes and policy != "stretch" else None


def negative_axes(node: NodeProto, since: int, facts: Facts) -> str | None:
    axes = node_attr(node, "axes", [])
    return f"axes={list(axes)}" if any(a < 0 for a in axes) else None


def cubic_exclude_outside(node: NodeProto, since: int, facts: Facts) -> str | None:
    if node_attr(node, "mode", "nearest") == "cubic" and node_attr(node, "exclude_outside", 0):
        return "mode='cubic', exclude_outside=1"
    return None


def coordinates(mode: str) -> Callable[[NodeProto, int, Facts], str | None]:
    """The condition: Resize's coordinate_transformation_mode is ``mode``."""

    def condition(node: NodeProto, since: int, facts: Facts) -> str | None:
        if node_attr(node, "coordinate_transformation_mode", "half_pixel") == mode:
            return f"coordinate_transformation_mode='{mode}'"
        return None

    return condition


CONSTANT_ATTRIBUTES = ("value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings")


def value_attributes(*names: str) -> Callable[[NodeProto, int, Facts], str | None]:
    """The condition: the Constant holds its value in one of the attributes ``names``."""

    def condition(node: NodeProto, since: int, facts: Facts) -> str | None:
        named = [a.name for a in node.attribute if a.name in names]
        return f"attribute '{named[0]}'" if named else None

    return condition


def max_mode(node: NodeProto, since: int, facts: Facts) -> str | None:
    return "mode='max'" if node_attr(node, "mode", "avg") == "max" else None


def integer_inputs(node: NodeProto, since: int, facts: Facts) -> str | None:
    """Div of integers, or of inputs whose type shape inference could not give (the extension then
    reads the type OpenVINO sees). ONNX's Div takes one type for both inputs, so a float constant
    at either (``x / 6.0`` of a HardSwish) says the Div is of floats without shape inference."""
    if any(name in facts.constants and facts.constants[name].dtype.kind == "f" for name in node.input):
        return None
    dtype = facts.types.get(node.input[0], (None, None))[0] if node.input else None
    if dtype is not None and not np.issubdtype(np.dtype(dtype), np.integer):
        return None
    return f"{dtype} inputs" if dtype is not None else "inputs of a type only OpenVINO knows"
