"""OpenVINO IR layers on the numpy executor: one table, layer type and opset version -> builder.

A builder gets a :class:`LayerNode` (the layer's ``<data>``, the values of its constant inputs,
how many outputs are read) when the graph is prepared and returns the kernel, called on every
run with the layer's input arrays in port order, returning its outputs as a tuple. Where an ONNX
operator version means what the IR layer means, the builder calls that operator's factory of
ovpool's library (:mod:`ovpool.engine.ops`) with the ONNX attributes; where OpenVINO's meaning is
its own, the family module computes it with numpy (Interpolate's modes, StridedSlice masks, MVN's
``eps_mode``, Pad's ``symmetric``, Gather's ``batch_dims``). The table and :class:`LayerNode`
are in :mod:`.base`; each family module (elementwise, quantized, tensor, indexing, reduce,
normalization, linalg, conv, resize, detection, rearrange, recurrent, control) registers its
builders with :func:`layer` and states the rules of its layers.
"""

from ovpool.engine.ir_layers import (  # noqa: F401  (importing a family registers its builders)
    control,
    conv,
    detection,
    elementwise,
    indexing,
    linalg,
    normalization,
    quantized,
    rearrange,
    recurrent,
    reduce,
    resize,
    tensor,
)
from ovpool.engine.ir_layers.base import (
    ITERATING,
    STRUCTURAL,
    Body,
    Builder,
    LayerNode,
    builder_for,
    layer,
    layer_traits,
    layer_traits_named,
    supported,
    supported_markdown,
)

__all__ = [
    "ITERATING",
    "STRUCTURAL",
    "Body",
    "Builder",
    "LayerNode",
    "builder_for",
    "layer",
    "layer_traits",
    "layer_traits_named",
    "supported",
    "supported_markdown",
]
