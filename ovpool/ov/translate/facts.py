"""What the conditions and lowerings know of the model being converted: its constants (read when
looked up) and its tensors' types with the ``--input`` shapes pinned, both the conversion's
``ovpool.onnx.facts.ModelFacts`` (shape inference once per conversion, dims read when looked up)."""

from __future__ import annotations

from onnx import ModelProto

from ovpool.errors import UnsupportedError
from ovpool.onnx.facts import ModelFacts
from ovpool.onnx.model import Weights
from ovpool.ov.node_facts import Arrays, TensorTypes


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
