"""``dml-legal``: rewrite what DirectML cannot take as it is into ONNX it can.

DirectML pools 4-D and 5-D tensors only (``DimensionCount`` 2 or 3), so:
- a 1-D pool (N, C, L) becomes Unsqueeze(axis 2) -> the 2-D pool with a unit leading axis
  (kernel ``[1, k]``, pads ``[0, pb, 0, pe]``) -> Squeeze(axis 2). Flat max indices are unchanged,
  since a unit axis does not move any element (index 5 of a 1x2x4 input is index 5 of 1x2x1x4),
  and a 1-D ``storage_order=1`` equals row-major, so it is dropped. 1-D MaxUnpool lifts the same
  way (its values and indices both), unless it has an ``output_shape`` input;
- the average divisor of a window that runs past ``EndPadding`` is undocumented with
  ``IncludePadding=TRUE``, so an include-pad average with a ceil overhang gets the exact ``no-ceil``
  rewrite (a zero Pad, then exclude-pad; ``transforms.pads``); other nodes keep ``ceil_mode``.

Refused with the node named: pools over 4 or more spatial axes, MaxUnpool over 3, and
``storage_order=1`` on a 2-D or 3-D MaxPool (DirectML and onnxruntime's DML provider write
row-major indices only).

Not needed, and so not done: ``no-ceil`` in general. DirectML has no rounding field; it takes the
output size from ``OutputTensor.Sizes``, so a converter writes the ceil size there (and may widen
``EndPadding`` to ``shape.floor_end_pads``, which a max and an exclude-pad average never read).
Auto padding, global pools and dilations are likewise a converter's business (explicit pads, a
full window, AVERAGE_POOLING1 / MAX_POOLING2); data types and feature levels cannot be said in ONNX
and are checked where the DirectML operators are written.
"""

from __future__ import annotations

from dataclasses import replace

from onnx import ModelProto

from ovpool import shape
from ovpool.errors import UnsupportedError
from ovpool.onnx.model import default_opset
from ovpool.spec import Divisor, IndexOrder, Padding, PoolKind, PoolSpec, Rounding
from ovpool.transforms import graph
from ovpool.transforms.framework import VALID, Property, listed
from ovpool.transforms.graph import PoolNode, model_names
from ovpool.transforms.pads import rewrite_ceil

_PASS = "dml-legal"


def dml_legal(model: ModelProto) -> bool:
    """Make every pooling node expressible as one DirectML operator; True if any changed."""
    for pool in graph.pool_nodes(model):
        _refuse(pool)
    changed = rewrite_ceil(model, lambda pool: _include_pad_overhang(pool, strict=True), _PASS, legalize=False)
    return _lift_1d(model) or changed


def _include_pad_overhang(pool: PoolNode, strict: bool) -> bool:
    """An include-pad average whose ceil windows run past the end pads (dynamic dims: refused
    when ``strict``, else counted as a violation)."""
    spec = pool.spec
    if not (
        spec.kind is PoolKind.AVERAGE
        and spec.divisor is Divisor.INCLUDE_PAD
        and spec.rounding is Rounding.CEIL
        and spec.padding is Padding.EXPLICIT
    ):
        return False
    if not strict and (pool.spatial is None or None in pool.spatial):
        return True
    spatial = pool.static_spatial(_PASS, "to find the ceil overhang of an include-pad average")
    return shape.floor_end_pads(spec, spatial) != spec.pads_end


def _problem(pool: PoolNode) -> str | None:
    rank = pool.rank
    if rank is None:
        return "the input's rank is unknown"
    if pool.spec.kind is PoolKind.UNPOOL:
        if rank == 1 and len(pool.node.input) > 2 and pool.node.input[2]:
            return "a 1-D MaxUnpool with an output_shape input cannot be lifted to 2-D"
        return None if rank in (1, 2) else f"DirectML MAX_UNPOOLING takes 4-D tensors only (2 spatial axes, not {rank})"
    if rank > 3:
        return f"DirectML pools 2 or 3 spatial axes, not {rank}"
    if rank > 1 and pool.spec.indices is not None and pool.spec.indices.order is IndexOrder.COLUMN_MAJOR:
        return "storage_order=1: DirectML writes row-major indices only"
    return None


def _refuse(pool: PoolNode) -> None:
    problem = _problem(pool)
    if problem:
        raise UnsupportedError(f"{pool.label}: pass '{_PASS}': {problem}")


def _lift_1d(model: ModelProto) -> bool:
    opset = default_opset(model)
    names = model_names(model)
    replacements = {p.index: _lifted(model, p, names, opset) for p in graph.pool_nodes(model) if p.rank == 1}
    graph.replace_nodes(model.graph, replacements)
    return bool(replacements)


def _lifted(model: ModelProto, pool: PoolNode, names: model_names, opset: int) -> list:
    """Unsqueeze the tensor inputs at axis 2, pool in 2-D, Squeeze the outputs back."""
    base = graph.node_label(pool.node)
    tensor_inputs = 2 if pool.spec.kind is PoolKind.UNPOOL else 1
    nodes, inputs, outputs, squeezes = [], list(pool.node.input), [], []
    for position in range(tensor_inputs):
        lifted = names.fresh(f"{base}/{position}_2d" if position else f"{base}/input_2d")
        nodes.append(graph.axes_node(model.graph, names, opset, "Unsqueeze", base, inputs[position], lifted, [2]))
        inputs[position] = lifted
    for name in pool.node.output:
        if not name:
            outputs.append("")
            continue
        lifted = names.fresh(f"{name}/2d")
        outputs.append(lifted)
        squeezes.append(graph.axes_node(model.graph, names, opset, "Squeeze", base, lifted, name, [2]))
    nodes.append(graph.emit(pool, _with_unit_axis(pool.spec), opset, inputs=inputs, outputs=outputs))
    return nodes + squeezes


def _with_unit_axis(spec: PoolSpec) -> PoolSpec:
    """The 2-D spec over (1, L) that equals a 1-D spec over L; its indices are row-major, which a
    unit axis makes identical to column-major."""
    lifted = shape.unit_axis_spec(spec)
    if spec.indices is None:
        return lifted
    return lifted.with_(indices=replace(spec.indices, order=IndexOrder.ROW_MAJOR))


DML_LEGAL = Property(
    "dml-legal",
    "has only pooling nodes DirectML can run as one operator",
    lambda model: graph.pool_labels(
        model, lambda p: p.rank == 1 or _problem(p) is not None or _include_pad_overhang(p, strict=False)
    ),
)

DML_LEGAL_PASS = listed(
    _PASS,
    requires=(VALID,),
    ensures=(VALID, DML_LEGAL),
    rewrite=dml_legal,
)
