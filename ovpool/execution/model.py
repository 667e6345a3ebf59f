"""The model to run and the steps of a traced run: ``open_model`` classifies a file (or takes an
ONNX proto) and checks it can be read before any device opens it; a ``Step`` is one node or layer
as a session executes it (``NumpySession.trace``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onnx import ModelProto, NodeProto

from ovpool.errors import InputFileError
from ovpool.ir.reader import IRDocument, Layer, read_ir, weights_file
from ovpool.onnx.model import load


@dataclass(frozen=True)
class Model:
    """A model to run: ``format`` "onnx" or "ir", ``label`` for messages, the IR or ONNX path and
    the ONNX proto. A proto read from a file holds no external data (OpenVINO and onnxruntime read
    the file themselves); ``onnx_with_data()`` loads it for the numpy executor."""

    format: str
    label: str
    path: Path | None = None
    proto: ModelProto | None = None

    @property
    def folder(self) -> Path | None:
        """The folder of the model's file, where its external data lies (None for a proto)."""
        return self.path.parent if self.path is not None else None

    def onnx_with_data(self) -> ModelProto:
        """The ONNX proto with its external data loaded (the proto itself when it has none)."""
        if self.path is not None:
            return load(self.path)
        assert self.proto is not None  # a Model without a path is made from a proto (open_model)
        return self.proto


@dataclass(frozen=True)
class Step:
    """One node or layer as a session executes it: ``name``, ``type`` (``Conv``, ``Convolution``),
    the tensors it reads and writes (ONNX tensor names; for IR ``ovpool.names.port_tensor_name``)."""

    name: str
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


# observe(step, outputs): called after each step of a traced run, its outputs in ``step.outputs`` order.
StepObserver = Callable[[Step, tuple[Any, ...]], None]


def open_model(model: str | os.PathLike | ModelProto) -> Model:
    """Classify a model by its extension (.onnx, .xml) and check it can be read: an ONNX file is
    loaded, an IR file parsed by ovpool's safe XML reader, so a broken file (or an entity bomb) is
    an ``InputFileError`` naming it whatever the device, before OpenVINO opens anything."""
    if isinstance(model, ModelProto):
        return Model("onnx", model.graph.name or "model", proto=model)
    path = Path(model)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        return Model("onnx", str(path), path=path, proto=load(path, load_data=False))
    if suffix == ".xml":
        read_ir(path).check_structure()
        weights_file(path)
        return Model("ir", str(path), path=path)
    raise InputFileError.in_file(path, "unknown model format (expected .onnx or OpenVINO IR .xml)")


def onnx_step(node: NodeProto) -> Step:
    """An ONNX node as a step, named by its name or else its first output."""
    return Step(node.name or node.output[0], node.op_type, tuple(node.input), tuple(node.output))


def ir_step(document: IRDocument, producers: Mapping[tuple[str, str], Any], layer: Layer) -> Step:
    """An IR layer as a step: its inputs are the tensors of the ports feeding it."""
    sources = [producers.get((layer.id, port.id)) for port in layer.inputs]
    inputs = tuple(
        document.tensor_name(document.layers[e.from_layer], e.from_port)
        if e is not None and e.from_layer in document.layers
        else ""
        for e in sources
    )
    return Step(layer.name, layer.type, inputs, tuple(document.tensor_name(layer, port.id) for port in layer.outputs))
