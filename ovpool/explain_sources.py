"""Where ``ovpool explain`` gets its PoolSpec: command-line flags, an ONNX node, or an IR layer.
Each returns the spec and, when the model says it, the node's static input shape."""

from __future__ import annotations

from pathlib import Path

from ovpool.errors import ModelError, SpecError
from ovpool.spec import Divisor, Padding, PoolKind, PoolSpec, Rounding

_AUTO_PAD = {"NOTSET": Padding.EXPLICIT, "SAME_UPPER": Padding.SAME_UPPER, "SAME_LOWER": Padding.SAME_LOWER, "VALID": Padding.VALID}


def spec_from_flags(
    op: str,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    pads: tuple[int, ...],
    dilations: tuple[int, ...],
    auto_pad: str,
    rounding: str,
    divisor: str,
) -> PoolSpec:
    """A spec from ONNX-style flags; pads are all begins then all ends (``1,1,1,1``)."""
    kinds = {"avg": PoolKind.AVERAGE, "max": PoolKind.MAX}
    if op not in kinds:
        raise SpecError("flags", "op", op, "must be avg or max")
    if auto_pad.upper() not in _AUTO_PAD:
        raise SpecError("flags", "auto_pad", auto_pad, f"must be one of {', '.join(_AUTO_PAD)}")
    if pads and len(pads) != 2 * len(kernel):
        raise SpecError("flags", "pads", pads, f"needs {2 * len(kernel)} values (begins then ends)")
    try:
        rounding_value, divisor_value = Rounding(rounding), Divisor(divisor)
    except ValueError as exc:
        raise SpecError("flags", "rounding/divisor", f"{rounding}/{divisor}", str(exc)) from None
    half = len(pads) // 2
    return PoolSpec(
        kinds[op], kernel, strides, dilations, pads[:half], pads[half:], _AUTO_PAD[auto_pad.upper()], rounding_value, divisor_value, name="flags"
    )


def spec_from_onnx(path: Path, node_name: str) -> tuple[PoolSpec, tuple[int, ...] | None]:
    """The pooling node ``node_name`` of an ONNX model, and its input's static shape if inferable."""
    import onnx

    from ovpool.onnx_adapter import is_pool_node, spec_from_node
    from ovpool.onnx_model import default_opset, load

    proto = load(path)
    node = next((n for n in proto.graph.node if n.name == node_name), None)
    if node is None:
        names = ", ".join(n.name for n in proto.graph.node if is_pool_node(n)) or "none"
        raise ModelError(f"{path}: no node named '{node_name}' (pooling nodes: {names})")
    if not is_pool_node(node):
        raise ModelError(f"{path}: node '{node_name}' is {node.op_type}, not a pooling node")
    spec = spec_from_node(node, default_opset(proto))
    inferred = onnx.shape_inference.infer_shapes(proto)
    infos = list(inferred.graph.input) + list(inferred.graph.value_info)
    info = next((v for v in infos if v.name == node.input[0]), None)
    dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in info.type.tensor_type.shape.dim) if info else ()
    return spec, (dims if dims and min(dims) > 0 else None)


def spec_from_ir(path: Path, layer_key: str) -> tuple[PoolSpec, tuple[int, ...] | None]:
    """The pooling layer with this name or id in an IR, and its input port's static dims."""
    from ovpool.ir_adapter import spec_from_layer, template_for
    from ovpool.ir_read import dim_bounds, read_ir

    doc = read_ir(path)
    layer = doc.layers.get(layer_key) or next((l for l in doc.layers.values() if l.name == layer_key), None)
    if layer is None:
        raise ModelError(f"{path}: no layer with id or name '{layer_key}'")
    where = f"layer {layer.id} '{layer.name}' ({layer.type} {layer.version})"
    template = template_for(layer.type, layer.version, where)
    bounds = [dim_bounds(d) for d in layer.inputs[0].dims] if layer.inputs else []
    static = tuple(b[0] for b in bounds if b is not None and b[0] == b[1])
    rank = len(bounds) or None
    spec = spec_from_layer(template, layer.data, rank, name=layer.name)
    return spec, (static if bounds and len(static) == len(bounds) else None)
