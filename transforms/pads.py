"""``explicit-pads`` and ``no-ceil``: pads and rounding in their plainest exact form.

``explicit-pads`` replaces ``auto_pad`` SAME_UPPER/SAME_LOWER/VALID with the pads
``shape.resolved_pads`` gives, dilation included: kernel 3, dilation 2, stride 2 on L=5 with
SAME_UPPER becomes ``pads=[2, 2]`` (onnxruntime 1.31 computes SAME pads without the dilation).
SAME needs the input's static spatial dims, VALID does not. Under ovpool's rules ``ceil_mode`` does
not change the size of an auto-padded pool, so the rewritten node drops it (with explicit pads
``ceil_mode`` would count: VALID, kernel 2, stride 2 on L=5 gives 2 windows, not 3).

``no-ceil`` turns ``ceil_mode=1`` into floor rounding with the end pads
``shape.floor_end_pads`` gives, which yield the same windows: kernel 3, stride 2, pads (1, 1) on
L=4 becomes pads (1, 2). A max and an exclude-pad average never read the extra end cells. An
include-pad average would count them, so where a ceil overhang exists it becomes an explicit zero
``Pad`` of the original pads followed by an exclude-pad average over the padded tensor (whose
divisor then counts exactly the input plus the original pads); with no pads at all, include-pad
already equals exclude-pad and only the attribute changes.

Dynamic dims: a node that needs them (SAME, or ceil with explicit pads) is refused with its name
and the dynamic axis rather than left as it was, so a pass that succeeds has rewritten every node.
"""

from __future__ import annotations

from collections.abc import Callable

from onnx import ModelProto

from ovpool import shape
from ovpool.onnx.model import default_opset
from ovpool.spec import Divisor, Padding, PoolKind, Rounding
from ovpool.transforms import graph, legal
from ovpool.transforms.framework import VALID, Property, listed
from ovpool.transforms.graph import PoolNode, model_names


def explicit_pads(model: ModelProto) -> bool:
    """Rewrite every auto-padded pool with explicit pads, and every pool with a pad as long as its
    kernel with a ``Pad`` node (``legal.legal_nodes``); True if any node changed."""
    opset = default_opset(model)
    names = model_names(model)
    replacements = {}
    for pool in graph.pool_nodes(model):
        if not graph.is_windowed(pool.spec):
            continue
        if pool.spec.padding is Padding.EXPLICIT:
            if legal.pads_reach_kernel(pool.spec):
                replacements[pool.index] = legal.legal_nodes(model.graph, pool, pool.spec, names, opset, "explicit-pads")
            continue
        if pool.spec.padding is Padding.VALID:
            spatial = (None,) * len(pool.spec.kernel)
        else:
            spatial = pool.static_spatial("explicit-pads", f"to resolve auto_pad {pool.spec.padding.value.upper()}")
        begin, end = shape.resolved_pads(pool.spec, spatial)
        spec = pool.spec.with_(padding=Padding.EXPLICIT, pads_begin=begin, pads_end=end, rounding=Rounding.FLOOR)
        replacements[pool.index] = legal.legal_nodes(model.graph, pool, spec, names, opset, "explicit-pads")
    graph.replace_nodes(model.graph, replacements)
    return bool(replacements)


def no_ceil(model: ModelProto) -> bool:
    """Rewrite every ceil_mode=1 pool with floor rounding; True if any node changed."""
    return rewrite_ceil(model, lambda pool: True, "no-ceil")


def ceil_to_floor(model: ModelProto, pool: PoolNode, names: model_names, pass_name: str, legalize: bool = True) -> list:
    """The nodes replacing one ceil-mode pool: the pool with floor rounding and widened end pads,
    preceded by a zero Pad for an include-pad average with padding and an overhang. With
    ``legalize``, where a widened pad reaches the kernel, the Pad forms of ``legal.legal_nodes``."""
    opset = default_opset(model)
    spec = pool.spec
    if spec.padding is not Padding.EXPLICIT:
        return [graph.emit(pool, spec.with_(rounding=Rounding.FLOOR), opset)]
    spatial = pool.static_spatial(pass_name, "to size the ceil_mode windows")
    end = shape.floor_end_pads(spec, spatial)
    floor = spec.with_(rounding=Rounding.FLOOR, pads_end=end)
    if legalize and legal.pads_reach_kernel(floor):
        return legal.legal_nodes(model.graph, pool, spec, names, opset, pass_name)
    overhang = end != spec.pads_end
    if not (overhang and spec.kind is PoolKind.AVERAGE and spec.divisor is Divisor.INCLUDE_PAD):
        return [graph.emit(pool, floor, opset)]
    if not any(spec.pads_begin + spec.pads_end):
        return [graph.emit(pool, floor.with_(divisor=Divisor.EXCLUDE_PAD), opset)]
    base = graph.node_label(pool.node)
    padded = names.fresh(f"{base}/padded")
    pad = graph.pad_node(model.graph, names, opset, base, pool.node.input[0], padded, spec.pads_begin, spec.pads_end)
    rank = len(spec.kernel)
    inner = floor.with_(
        pads_begin=(0,) * rank,
        pads_end=shape.ceil_overhang(spec, spatial),
        divisor=Divisor.EXCLUDE_PAD,
    )
    return [pad, graph.emit(pool, inner, opset, inputs=[padded, *pool.node.input[1:]])]


def rewrite_ceil(model: ModelProto, select: Callable[[PoolNode], bool], pass_name: str, legalize: bool = True) -> bool:
    """Apply ``ceil_to_floor`` to the ceil-mode pools ``select`` picks; True if any changed."""
    names = model_names(model)
    replacements = {
        pool.index: ceil_to_floor(model, pool, names, pass_name, legalize)
        for pool in graph.pool_nodes(model)
        if pool.spec.rounding is Rounding.CEIL and select(pool)
    }
    graph.replace_nodes(model.graph, replacements)
    return bool(replacements)


EXPLICIT_PADS = Property(
    "explicit-pads",
    "has no pooling node with auto_pad",
    lambda model: graph.pool_labels(model, lambda p: graph.is_windowed(p.spec) and p.spec.padding is not Padding.EXPLICIT),
)

PADS_BELOW_KERNEL = Property(
    "pads-below-kernel",
    "has no pooling node with a pad as long as its kernel (onnxruntime refuses those)",
    lambda model: graph.pool_labels(model, lambda p: legal.pads_reach_kernel(p.spec)),
)

FLOOR_ROUNDING = Property(
    "floor-rounding",
    "has no pooling node with ceil_mode=1",
    lambda model: graph.pool_labels(model, lambda p: p.spec.rounding is not Rounding.FLOOR),
)

EXPLICIT_PADS_PASS = listed(
    "explicit-pads",
    requires=(VALID,),
    ensures=(VALID, EXPLICIT_PADS, PADS_BELOW_KERNEL),
    rewrite=explicit_pads,
)

NO_CEIL_PASS = listed(
    "no-ceil",
    requires=(VALID,),
    ensures=(VALID, FLOOR_ROUNDING),
    rewrite=no_ceil,
)
