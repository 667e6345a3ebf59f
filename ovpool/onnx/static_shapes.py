"""Static dims for the tensors a target needs sized (DirectML's tensor descs), on given input shapes.

A real model's inputs are often dynamic (``x: float32 [?, 3, ?, ?]``); given shapes (``--input
x[1,3,640,640]``, as ``ovc`` takes them) are set on the graph inputs first (``with_input_shapes``).
The dims of a tensor then come from the first of these that gives them all (``static_dims``):

1. ONNX shape inference with data propagation (a Reshape fed by Shape arithmetic gets its dims);
2. OpenVINO's shape inference: the model converted by its ONNX frontend, which folds shape-computing
   subgraphs (``Shape -> Gather -> Concat -> Pad``, where onnx's inference stops);
3. ovpool's numpy executor, run once on seeded random inputs of the given shapes: the dims the
   tensor has when the model runs.

Pooling output sizes are never taken from here: the shape engine gives them from the input's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from onnx import ModelProto

from ovpool.errors import ModelError, OvpoolError, UsageError
from ovpool.inputs import InputShape
from ovpool.onnx.model import inferred_types

Dims = tuple[int | None, ...]


def with_input_shapes(proto: ModelProto, shapes: Sequence[InputShape], label: str) -> ModelProto:
    """A copy of ``proto`` whose graph inputs have the given static dims: ``x[1,3,640,640]``
    replaces ``x: [?, 3, ?, ?]``. A range or ``?`` is a ``UsageError`` (a target that needs sizes
    needs numbers); a name the model lacks, another rank or a different static dim is a
    ``ModelError`` naming the input."""
    from ovpool.onnx.facts import input_index
    from ovpool.tensors import onnx_inputs

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


def static_dims(proto: ModelProto, needed: Collection[str]) -> dict[str, tuple[str | None, Dims | None]]:
    """``{tensor: (dtype, dims)}`` of the main graph (``inferred_types``), with every tensor of
    ``needed`` that ONNX inference leaves dynamic given its dims by OpenVINO's shape inference or,
    failing that, by running the model on numpy (module docstring). A tensor none of them sizes
    keeps its dynamic dims: the caller names it."""
    known = {
        name: (dtype, None if dims is None else tuple(None if d is not None and d < 0 else d for d in dims))
        for name, (dtype, dims) in inferred_types(proto, data_prop=True).items()
    }  # paddle2onnx writes a dynamic dim as -1
    missing = [name for name in needed if not _static(known.get(name, (None, None))[1])]
    if missing:
        _fill(known, missing, _openvino_dims(proto, missing))
    missing = [name for name in missing if not _static(known.get(name, (None, None))[1])]
    if missing:
        _fill(known, missing, _numpy_dims(proto, missing))
    return known


def _static(dims: Dims | None) -> bool:
    return dims is not None and all(d is not None for d in dims)


def _fill(known: dict[str, tuple[str | None, Dims | None]], names: Sequence[str], found: Mapping[str, tuple[int, ...]]) -> None:
    for name in names:
        if name in found:
            known[name] = (known.get(name, (None, None))[0], found[name])


def _openvino_dims(proto: ModelProto, names: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """The static dims OpenVINO's shape inference gives the tensors ``names`` (none when OpenVINO
    is missing or cannot convert the model)."""
    from ovpool.execution import devices

    if devices.openvino() is None:
        return {}
    from openvino.frontend import FrontEndManager

    wanted = set(names)
    try:
        frontend = FrontEndManager().load_by_framework("onnx")
        converted = frontend.convert(frontend.load(proto.SerializeToString()))
    except Exception:  # OpenVINO's conversion failures: the numpy executor is asked next
        return {}
    found: dict[str, tuple[int, ...]] = {}
    for op in converted.get_ordered_ops():
        for output in op.outputs():
            shape = output.get_partial_shape()
            if shape.is_static:
                for name in wanted.intersection(output.get_names()):
                    found[name] = tuple(int(d.get_length()) for d in shape)
    return found


def _numpy_dims(proto: ModelProto, names: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """The dims the tensors ``names`` have when the numpy executor runs the model once on seeded
    random inputs of its (static) input shapes, within the memory budget (``limits.RunBudget``);
    none when it cannot."""
    import numpy as np

    from ovpool.engine.graph import GraphSession
    from ovpool.execution import limits
    from ovpool.tensors import random_inputs

    wanted = set(names)
    found: dict[str, tuple[int, ...]] = {}

    def observe(node, outputs) -> None:
        for name, value in zip(node.output, outputs):
            if name in wanted and isinstance(value, np.ndarray):
                found[name] = tuple(value.shape)

    try:
        label = proto.graph.name or "model"
        types = limits.check_run_budget(proto, {}, label)
        session = GraphSession(proto)
        run_budget = limits.RunBudget(session.proto, label, session=session, types=types)
        session.run(random_inputs(label, session.inputs, {}, checks=(run_budget.check,)), observe=observe)
    except OvpoolError:
        return found
    return found
