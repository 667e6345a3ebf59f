"""``expand-global``: GlobalAveragePool / GlobalMaxPool / GlobalLpPool -> AveragePool / MaxPool /
LpPool (the same ``p``) whose kernel is
the whole spatial extent (a 1x64x7x7 input gets ``kernel_shape=[7, 7]``, no pads, stride 1), so a
runtime or format without global pooling (or with a defective one: onnx.reference's 1-D
GlobalMaxPool) runs it as an ordinary window. The kernel needs static spatial dims; a global pool
on a dynamic input is refused with its name and axis, not left behind.
"""

from __future__ import annotations

from onnx import ModelProto

from ovpool.onnx.model import default_opset
from ovpool.transforms import graph
from ovpool.transforms.framework import VALID, Property, listed


def expand_global(model: ModelProto) -> bool:
    """Replace every global pool by its full-kernel window; True if any node changed."""
    opset = default_opset(model)
    replacements = {}
    for pool in graph.pool_nodes(model):
        if not pool.spec.is_global:
            continue
        spatial = pool.static_spatial("expand-global", "to make the kernel")
        replacements[pool.index] = [graph.emit(pool, pool.spec.resolve_global(spatial), opset)]
    graph.replace_nodes(model.graph, replacements)
    return bool(replacements)


NO_GLOBAL_POOLS = Property(
    "no-global-pools",
    "has no GlobalAveragePool, GlobalMaxPool or GlobalLpPool",
    lambda model: graph.pool_labels(model, lambda p: p.spec.is_global),
)

EXPAND_GLOBAL_PASS = listed(
    "expand-global",
    requires=(VALID,),
    ensures=(VALID, NO_GLOBAL_POOLS),
    rewrite=expand_global,
)
