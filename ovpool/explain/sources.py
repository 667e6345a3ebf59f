"""Where ``ovpool explain`` gets its PoolSpec: command-line flags, an ONNX node, or an IR layer.
Each returns the spec and, when the model says it, the node's static input shape. A bad flag value
is a ``UsageError`` naming the flag (``--strides 0: must be >= 1``, exit 2); a node or layer that
is not a windowed or global pool is refused naming it (exit 1)."""

from __future__ import annotations

from pathlib import Path

from ovpool import shape
from ovpool.errors import ModelError, SpecError, UnsupportedError, UsageError
from ovpool.ir.adapter import spec_from_layer, template_for
from ovpool.ir.reader import dim_bounds, read_ir
from ovpool.onnx.adapter import is_pool_node, spec_from_node
from ovpool.onnx.model import default_opset, inferred_types, load
from ovpool.spec import Divisor, Padding, PoolKind, PoolSpec, Rounding

_AUTO_PAD = {
    "NOTSET": Padding.EXPLICIT,
    "SAME_UPPER": Padding.SAME_UPPER,
    "SAME_LOWER": Padding.SAME_LOWER,
    "VALID": Padding.VALID,
}
# PoolSpec's attribute names -> the flags they come from, for errors.
_FLAG_OF = {"kernel_shape": "--kernel", "strides": "--strides", "dilations": "--dilations", "pads": "--pads"}


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
        raise UsageError(f"--op {op}: must be avg or max")
    if auto_pad.upper() not in _AUTO_PAD:
        raise UsageError(f"--auto-pad {auto_pad}: must be one of {', '.join(_AUTO_PAD)}")
    rank = len(kernel)
    if pads and len(pads) != 2 * rank:
        raise UsageError(f"--pads {_csv(pads)}: needs {2 * rank} values for {rank} spatial axes (all begins, then all ends)")
    if rounding not in {r.value for r in Rounding}:
        raise UsageError(f"--rounding {rounding}: must be one of {', '.join(r.value for r in Rounding)}")
    if divisor not in {d.value for d in Divisor}:
        raise UsageError(f"--divisor {divisor}: must be one of {', '.join(d.value for d in Divisor)}")
    begin, end = pads[:rank], pads[rank:]
    try:
        return PoolSpec(
            kinds[op],
            kernel,
            strides,
            dilations,
            begin,
            end,
            _AUTO_PAD[auto_pad.upper()],
            Rounding(rounding),
            Divisor(divisor),
            name="flags",
        )
    except SpecError as exc:
        raise flag_error(exc) from None


def flag_error(exc: SpecError, on: str | None = None) -> UsageError:
    """A spec error of a spec made from flags, said of the flag that gave the attribute and, with
    ``on``, of the input it was checked on: kernel [1] on a 1x1x3000x3000 input reads
    ``--kernel 1 on --input-shape 1,1,3000,3000: has 1 axis but the input has 2 spatial axes``."""
    flag = _FLAG_OF.get(exc.attribute or "", exc.attribute)
    subject = f"{flag} {_csv(exc.value)}" if flag else None
    where = " on ".join(part for part in (subject, on) if part)
    return UsageError(f"{where}: {exc.message}" if where else exc.message)


def _csv(value: object) -> str:
    return ",".join(str(v) for v in value) if isinstance(value, (tuple, list)) else str(value)


def spec_from_onnx(path: Path, node_name: str) -> tuple[PoolSpec, tuple[int, ...] | None]:
    """The pooling node ``node_name`` of an ONNX model, and its input's static shape if inferable."""
    proto = load(path)
    node = next((n for n in proto.graph.node if n.name == node_name), None)
    if node is None:
        names = ", ".join(n.name for n in proto.graph.node if is_pool_node(n)) or "none"
        raise ModelError.in_file(path, f"no node named '{node_name}' (pooling nodes: {names})")
    if not is_pool_node(node):
        raise ModelError.in_file(path, f"node '{node_name}' is {node.op_type}, not a pooling node")
    spec = spec_from_node(node, default_opset(proto))
    _refuse_unpool(spec, path, f"node '{node_name}'")
    dims = inferred_types(proto).get(node.input[0], (None, None))[1]  # a help here: --input-shape can say it
    return spec, (tuple(int(d) for d in dims) if dims and shape.is_static(dims) else None)


def _refuse_unpool(spec: PoolSpec, path: Path, where: str) -> None:
    if spec.kind is PoolKind.UNPOOL:
        raise UnsupportedError.in_file(
            path, f"{where} is MaxUnpool: it has no windows over its input to explain (explain its MaxPool)"
        )


def spec_from_ir(path: Path, layer_key: str) -> tuple[PoolSpec, tuple[int, ...] | None]:
    """The pooling layer with this name or id in an IR, and its input port's static dims."""
    doc = read_ir(path)
    doc.check_structure()
    layer = doc.layers.get(layer_key) or next((l for l in doc.layers.values() if l.name == layer_key), None)
    if layer is None:
        raise ModelError.in_file(path, f"no layer with id or name '{layer_key}'")
    where = f"layer {layer.id} '{layer.name}' ({layer.type} {layer.version})"
    template = template_for(layer.type, layer.version, where)
    bounds = [dim_bounds(d) for d in layer.inputs[0].dims] if layer.inputs else []
    static = tuple(b[0] for b in bounds if b is not None and b[0] == b[1])
    rank = len(bounds) or None
    try:
        spec = spec_from_layer(template, layer.data, rank, name=layer.name)
    except SpecError as exc:
        raise exc.at(where).located(path) from None
    return spec, (static if bounds and len(static) == len(bounds) else None)
