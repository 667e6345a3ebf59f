"""The model to run and the steps of a traced run: ``open_model`` classifies a file (or takes an
ONNX proto) and checks it can be read before any device opens it; a ``Step`` is one node or layer
as a session executes it (``NumpySession.trace``; defined with the engine's ``Executor``,
``ovpool.engine.session``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from onnx import ModelProto

from ovpool.engine.session import Step, StepObserver, ir_step, onnx_step
from ovpool.errors import InputFileError
from ovpool.ir.reader import read_ir, weights_file
from ovpool.onnx.model import load

__all__ = ["Model", "Step", "StepObserver", "ir_step", "onnx_step", "open_model"]


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
