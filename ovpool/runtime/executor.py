"""The numpy executor: whole ONNX models, pooling on ovpool's kernels, the rest on onnx.reference.

Pooling nodes are substituted into onnx.reference's evaluator, so a model of convolutions,
activations and pools runs end to end while every pooling node follows SEMANTICS.md (onnx.reference's
own pooling has known defects: ceil overhangs, stride-1 ceil sizes, auto_pad with ceil_mode).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
from onnx import ModelProto
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

from ovpool import kernels
from ovpool.errors import ModelError
from ovpool.onnx import adapter as onnx_adapter
from ovpool.onnx.model import default_opset, load
from ovpool.onnx.versions import POOL_OPS


class NumpySession:
    """An ONNX model prepared once for repeated runs (as ``onnxruntime.InferenceSession``)."""

    def __init__(self, model: str | os.PathLike | ModelProto) -> None:
        self.proto = load(model)
        opset = default_opset(self.proto)
        self._evaluator = ReferenceEvaluator(self.proto, new_ops=[_pool_op(op_type, opset) for op_type in POOL_OPS])
        self.output_names = [o.name for o in self.proto.graph.output]

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``{output name: array}`` for every graph output."""
        _check_inputs(self.proto, inputs)
        results = self._evaluator.run(None, {k: np.asarray(v) for k, v in inputs.items()})
        return dict(zip(self.output_names, results))


def run_onnx(model: str | os.PathLike | ModelProto, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run an ONNX model on numpy once: ``{output name: array}`` for every graph output."""
    return NumpySession(model).run(inputs)


def run_node(node, opset: int, *args: np.ndarray) -> tuple[np.ndarray, ...]:
    """Run one pooling node on arrays: (Y,) or (Y, Indices)."""
    x = args[0]
    spec = onnx_adapter.spec_from_node(node, opset, dtype=x.dtype.name)
    if node.op_type == "MaxUnpool":
        output_shape = args[2] if len(args) > 2 and args[2] is not None else None
        return (kernels.max_unpool(x, args[1], spec, output_shape),)
    result = kernels.pool(x, spec)
    return result if isinstance(result, tuple) else (result,)


def _pool_op(op_type: str, opset: int) -> type[OpRun]:
    """An onnx.reference operator class named ``op_type`` that runs ovpool's kernel."""

    def _run(self, *args, **_attributes):
        return run_node(self.onnx_node, opset, *args)

    return type(op_type, (OpRun,), {"op_domain": "", "_run": _run})


def _check_inputs(proto: ModelProto, inputs: Mapping[str, np.ndarray]) -> None:
    initializers = {t.name for t in proto.graph.initializer}
    expected = [i.name for i in proto.graph.input if i.name not in initializers]
    missing = [n for n in expected if n not in inputs]
    unknown = [n for n in inputs if n not in expected]
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing input(s) {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown input(s) {', '.join(unknown)}")
        raise ModelError(f"model '{proto.graph.name}': {'; '.join(parts)} (the model takes {', '.join(expected)})")
