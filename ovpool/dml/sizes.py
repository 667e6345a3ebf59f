"""Static dims for the tensors DirectML's tensor descs need sized, on given input shapes.

The model's graph inputs have their given shapes first (``ovpool.onnx.static_shapes.with_input_shapes``).
The dims of a tensor then come from the first of these that gives them all (``static_dims``):

1. ONNX shape inference with data propagation (a Reshape fed by Shape arithmetic gets its dims);
2. OpenVINO's shape inference: the model converted by its ONNX frontend, which folds shape-computing
   subgraphs (``Shape -> Gather -> Concat -> Pad``, where onnx's inference stops);
3. ovpool's numpy executor, run once on seeded random inputs of the given shapes: the dims the
   tensor has when the model runs.

Pooling output sizes are never taken from here: the shape engine gives them from the input's.
It runs models, so it sits above the engines and ``ovpool.execution`` (with ``ovpool.dml.export``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from onnx import ModelProto

from ovpool.errors import OvpoolError
from ovpool.onnx.model import inferred_types
from ovpool.tensors import random_inputs

Dims = tuple[int | None, ...]


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
    try:
        from openvino.frontend import FrontEndManager
    except ImportError:
        return {}

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
