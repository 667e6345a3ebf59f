"""Loading ONNX models safely: clear errors for unreadable files and external data that is
missing or points outside the model's folder."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
from onnx import ModelProto
from onnx.external_data_helper import uses_external_data

from ovpool.errors import InputFileError


def load(model: str | os.PathLike | ModelProto, load_data: bool = True) -> ModelProto:
    """A ModelProto with its external data loaded; a path that is not a readable ONNX model raises
    ``InputFileError`` naming the file. ``load_data=False`` checks the external data (inside the
    model's folder, present) without reading it, for a caller that hands the file on."""
    if isinstance(model, ModelProto):
        return model
    path = Path(model)
    if not path.is_file():
        raise InputFileError(f"{path}: no such file")
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf raises DecodeError, RuntimeError or ValueError
        raise InputFileError(f"{path}: not a readable ONNX model ({type(exc).__name__}: {exc})") from exc
    if not proto.graph.node and not proto.graph.output:
        raise InputFileError(f"{path}: not an ONNX model (no graph)")
    check_external_data(proto, path)
    if not load_data:
        return proto
    try:
        onnx.load_external_data_for_model(proto, str(path.parent))
    except Exception as exc:
        raise InputFileError(f"{path}: external data could not be read ({exc})") from exc
    return proto


def check_external_data(proto: ModelProto, path: Path) -> None:
    """Every external-data location must be a file inside the model's folder: ``../secret`` or an
    absolute path is refused before anything is read."""
    root = path.parent.resolve()
    for tensor in _tensors(proto):
        if not uses_external_data(tensor):
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        target = (root / location).resolve()
        if os.path.isabs(location) or root not in target.parents:
            raise InputFileError(
                f"{path}: tensor '{tensor.name}' points its external data at '{location}', outside the model's folder"
            )
        if not target.is_file():
            raise InputFileError(f"{path}: tensor '{tensor.name}' needs external data '{location}', which is missing")


def _tensors(proto: ModelProto):
    yield from proto.graph.initializer
    for node in proto.graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t


def default_opset(proto: ModelProto) -> int:
    """The model's default-domain ("" or "ai.onnx") opset version."""
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    raise InputFileError(f"model '{proto.graph.name}' imports no default-domain opset")
