"""What the conditions and lowerings know of the model being converted: its constants (read when
looked up) and its tensors' types with the ``--input`` shapes pinned (shape inference once, dims
read when looked up)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from onnx import ModelProto

from ovpool.errors import UnsupportedError
from ovpool.onnx.model import ValueTypes, Weights, constant_tensors, inferred_graph, weightless
from ovpool.ov.node_facts import Arrays, TensorTypes

if TYPE_CHECKING:
    from ovpool.inputs import InputShape


def _constants(proto: ModelProto, weights: Weights | None = None) -> Arrays:
    """The main graph's constants (``ovpool.onnx.model.constant_tensors``, and the ``weights`` left
    in the model file), each read when looked up."""
    found = constant_tensors(proto.graph)
    return Arrays(found) if weights is None else Arrays(found, weights.tensors(proto.graph))


def _types(proto: ModelProto, shapes: Sequence[InputShape]) -> TensorTypes:
    """``inferred_types`` with the static shapes given for inputs (``--input``) set first; none
    when a tensor has a type ovpool has no numpy form for (strings): the conditions then assume
    the worst and the lowerings that need types refuse."""
    try:
        return _inferred(proto, shapes)
    except UnsupportedError:
        return {}


def _inferred(proto: ModelProto, shapes: Sequence[InputShape]) -> TensorTypes:
    """``inferred_types`` of the model's ``weightless`` copy, its inputs given their static shapes,
    each tensor's dims read when looked up (``ValueTypes``: the conditions look up a few)."""
    model = weightless(proto)
    fixed = [s for s in shapes if s.is_static]
    inputs = [i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    for given in fixed:
        target = next((i for i in inputs if i.name == given.name), None) if given.name else None
        if target is None and given.name is None and given.index < len(inputs):
            target = inputs[given.index]
        if target is None or not target.type.HasField("tensor_type"):
            continue
        dims = target.type.tensor_type.shape.dim
        del dims[:]
        for low, _high in given.dims or ():
            dims.add().dim_value = int(low)
    return ValueTypes(inferred_graph(model))
