"""The facts of one ONNX model being converted, worked out once and handed to every stage.

``ovpool convert m.onnx --input x[1,3,640,640]`` reads ``m.onnx`` once (``ModelFacts.read``: its
float weights left in the file, ``load_apart``), and every stage of the conversion asks the one
``ModelFacts`` what it needs: the frontend fixes' conditions the tensor types, the CPU deviation
warnings the element types, the quantization forms the (element type, rank) of each tensor, the
OpenVINO frontend the input shapes to set, ``--verify`` the model with its weights. Each fact is
worked out when first asked and kept: ONNX shape inference runs at most once per conversion, on
the ``weightless`` copy with the static ``--input`` shapes pinned (x: [?, 3, ?, ?] becomes
[1, 3, 640, 640]), and a conversion that asks for no type runs none.

``input_index`` is the one rule naming the input an ``InputShape`` sets (by name, else by
position); ``attribute``, ``attributes`` and ``attribute_value`` (``ovpool.attributes``)
the one decoder of a NodeProto's attributes (``axis=1`` is 1, ``mode="linear"`` is
``"linear"``, text decoded).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, numpy_helper

from ovpool.attributes import attribute as attribute
from ovpool.attributes import attribute_value as attribute_value
from ovpool.attributes import attributes as attributes
from ovpool.inputs import InputShape
from ovpool.onnx.graphs import constant_tensors, default_opset, graphs
from ovpool.onnx.model import Weights, load, load_apart, weightless

TensorTypes = Mapping[str, tuple[str | None, tuple[int | None, ...] | None]]


def input_index(names: Sequence[str], given: InputShape) -> int | None:
    """The position among the model's inputs ``names`` (graph inputs, initializers left out) of
    the input ``given`` sets: by its name, else by its position (``[1,3]`` unnamed, second in
    ``--input`` order, sets the second input); None when the model has no such input."""
    if given.name is not None:
        return names.index(given.name) if given.name in names else None
    return given.index if given.index < len(names) else None


class Arrays(Mapping[str, np.ndarray]):
    """ONNX tensors by name, each read as an array when first looked up (``numpy_helper.to_array``)
    and kept: ``Facts.constants`` of a model with 100 MB of weights costs ~40 ms when every weight
    is read, nothing when the conditions look up a Div's constant divisor (24 bytes). Of several
    mappings of tensors, the first that holds a name gives it."""

    def __init__(self, *tensors: Mapping[str, TensorProto]) -> None:
        self._sources = tensors
        self._arrays: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        array = self._arrays.get(key)
        if array is None:
            source = next((s for s in self._sources if key in s), None)
            if source is None:
                raise KeyError(key)
            array = self._arrays[key] = numpy_helper.to_array(source[key])
        return array

    def __contains__(self, key: object) -> bool:
        return any(key in source for source in self._sources)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(name for source in self._sources for name in source))

    def __len__(self) -> int:
        return len(dict.fromkeys(name for source in self._sources for name in source))


@dataclass(frozen=True)
class ModelFacts:
    """One ONNX model being converted: ``proto`` as read (float weights left in the file, held by
    ``weights``), the file's ``path`` (None for a model given in memory), the ``label`` messages
    locate errors in and the input ``shapes`` given (``--input``). The rest is worked out when
    first read and kept (module docstring)."""

    proto: ModelProto
    label: str
    path: Path | None = None
    weights: Weights | None = None
    shapes: tuple[InputShape, ...] = ()

    @classmethod
    def read(cls, model: str | os.PathLike | ModelProto, shapes: Sequence[InputShape] = ()) -> ModelFacts:
        """The facts of the model at ``model`` (read once, ``load_apart``) or of a ModelProto (its
        label the graph's name, else ``"model"``)."""
        if isinstance(model, ModelProto):
            return cls(model, model.graph.name or "model", shapes=tuple(shapes))
        path = Path(model)
        proto, weights = load_apart(path)
        return cls(proto, str(model), path, weights, tuple(shapes))

    @cached_property
    def with_data(self) -> ModelProto:
        """The model with every weight in it (``Weights.restore``), and its external data read when
        an initializer has some (``load``): the model as ``load(path)`` reads it."""
        proto = self.proto if self.weights is None else self.weights.restore(self.proto)
        if self.path is not None and any(i.data_location == TensorProto.EXTERNAL for i in proto.graph.initializer):
            proto = load(self.path, load_data=True)
        return proto

    @cached_property
    def opset(self) -> int:
        """The default-domain opset version."""
        return default_opset(self.proto)

    @cached_property
    def subgraphs(self) -> tuple[GraphProto, ...]:
        """The main graph and every Loop, If and Scan body below it, outer first (``graphs``)."""
        return tuple(graphs(self.proto.graph))

    @cached_property
    def nodes_by_op(self) -> Mapping[str, tuple[NodeProto, ...]]:
        """The default-domain nodes of every graph (``subgraphs``) by op type, in graph order."""
        found: dict[str, list[NodeProto]] = {}
        for graph in self.subgraphs:
            for node in graph.node:
                if node.domain in ("", "ai.onnx"):
                    found.setdefault(node.op_type, []).append(node)
        return {op: tuple(nodes) for op, nodes in found.items()}

    @cached_property
    def graph_inputs(self) -> tuple[str, ...]:
        """The main graph's inputs that are not initializers, by name, in order."""
        initializers = {t.name for t in self.proto.graph.initializer}
        return tuple(i.name for i in self.proto.graph.input if i.name not in initializers)

    @cached_property
    def constants(self) -> Arrays:
        """The main graph's constants as arrays, each read when looked up: initializers, Constant
        values, and the weights left in the file (``Arrays``)."""
        found = constant_tensors(self.proto.graph)
        return Arrays(found) if self.weights is None else Arrays(found, self.weights.tensors(self.proto.graph))

    @cached_property
    def pinned(self) -> ModelProto:
        """The model's ``weightless`` copy with the static input shapes given set on its inputs
        (``x[1,3,640,640]`` replaces ``x: [?, 3, ?, ?]``; a range or ``?`` leaves the input as
        declared): the model ONNX shape inference reads."""
        model = weightless(self.proto)
        inputs = {i.name: i for i in model.graph.input}
        for given in self.shapes:
            index = input_index(self.graph_inputs, given) if given.is_static else None
            target = inputs[self.graph_inputs[index]] if index is not None else None
            if target is None or not target.type.HasField("tensor_type"):
                continue
            dims = target.type.tensor_type.shape.dim
            del dims[:]
            for low, _high in given.dims or ():
                dims.add().dim_value = int(low)
        return model

    @cached_property
    def inferred(self) -> ModelProto | None:
        """``pinned`` after ONNX shape inference, once for the whole conversion (None: inference
        failed)."""
        import onnx

        try:
            return onnx.shape_inference.infer_shapes(self.pinned, strict_mode=False)
        except (onnx.shape_inference.InferenceError, RuntimeError, ValueError):
            return None

    @cached_property
    def types(self) -> TensorTypes:
        """``{tensor: (dtype, dims)}`` of the main graph after inference (``inferred``; the pinned
        graph as declared when it failed), each tensor's dims read when looked up
        (``ValueTypes``). A tensor of an element type ovpool has no numpy form for is an
        ``UnsupportedError`` naming it."""
        from ovpool.onnx.model import ValueTypes

        inferred = self.inferred
        return ValueTypes((inferred if inferred is not None else self.pinned).graph)

    @cached_property
    def tensor_kinds(self) -> Mapping[str, tuple[str | None, int | None]]:
        """``{tensor: (element type name, rank)}`` of the main graph after inference, as
        ``ovpool.onnx.qdq.tensor_kinds`` gives them (4-bit types by ovpool.quant's names)."""
        from ovpool.onnx.qdq import graph_kinds

        inferred = self.inferred
        return graph_kinds((inferred if inferred is not None else self.pinned).graph)
