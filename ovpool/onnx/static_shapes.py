"""Given input shapes set on an ONNX model's graph inputs (``with_input_shapes``).

A real model's inputs are often dynamic (``x: float32 [?, 3, ?, ?]``); given shapes (``--input
x[1,3,640,640]``, as ``ovc`` takes them) replace them before a target that needs sizes reads the
model. The dims every other tensor then has are ``ovpool.dml.sizes.static_dims``' (it runs the
model, so it lives above the engines; ``static_dims`` here is a deprecated alias of it).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Sequence
from typing import Any

from onnx import ModelProto

from ovpool.errors import ModelError, UsageError
from ovpool.inputs import InputShape
from ovpool.onnx.facts import input_index
from ovpool.tensors import onnx_inputs


def with_input_shapes(proto: ModelProto, shapes: Sequence[InputShape], label: str) -> ModelProto:
    """A copy of ``proto`` whose graph inputs have the given static dims: ``x[1,3,640,640]``
    replaces ``x: [?, 3, ?, ?]``. A range or ``?`` is a ``UsageError`` (a target that needs sizes
    needs numbers); a name the model lacks, another rank or a different static dim is a
    ``ModelError`` naming the input."""
    if not shapes:
        return proto
    model = ModelProto()
    model.CopyFrom(proto)
    declared = onnx_inputs(model)
    graph_inputs = {value.name: value for value in model.graph.input}
    names = [d.name for d in declared]
    for given in shapes:
        index = input_index(names, given)
        takes = "; ".join(d.shown() for d in declared)
        if index is None:
            raise ModelError.in_file(label, f"input shape {given}: the model has no such input (it takes {takes})")
        decl = declared[index]
        if given.dims is None:
            continue
        if not decl.is_tensor:
            raise ModelError.in_file(label, f"input shape {given}: input {decl.shown()} is not a tensor")
        if not given.is_static:
            raise UsageError(f"--input {given}: give every dim as a number (DirectML tensor descs need sizes)")
        dims = [low for low, _ in given.dims]
        if decl.shape is not None and len(decl.shape) != len(dims):
            raise ModelError.in_file(label, f"input shape {given}: {len(dims)} dim(s) for input {decl.shown()}")
        for axis, (want, got) in enumerate(zip(decl.shape or (), dims)):
            if want is not None and want != got:
                raise ModelError.in_file(label, f"input shape {given}: axis {axis} is {want} in the model ({decl.shown()})")
        shape = graph_inputs[decl.name].type.tensor_type.shape
        del shape.dim[:]
        for dim in dims:
            shape.dim.add().dim_value = dim
    return model


def __getattr__(name: str) -> Any:
    """``static_dims``, deprecated here: it is ``ovpool.dml.sizes.static_dims`` since 0.2.0."""
    if name == "static_dims":
        warnings.warn(
            "ovpool.onnx.static_shapes.static_dims is deprecated; use ovpool.dml.sizes.static_dims",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module("ovpool.dml.sizes").static_dims
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
