"""Pooling in the operator table: AveragePool, MaxPool, MaxUnpool, GlobalAveragePool, GlobalMaxPool,
LpPool and GlobalLpPool (none of them runs on onnx.reference).

Every version of ``ovpool.onnx.versions.ONNX_VERSIONS`` is registered, each row covering its since-version
up to the next row's (AveragePool-11 covers 11..18), and runs ovpool's exact kernels
(``ovpool.kernels``) on the spec ``ovpool.onnx.adapter.spec_from_node`` parses, the rules of
SEMANTICS.md: a 1x1x5x5 input, kernel 2, stride 2, ``ceil_mode=1`` gives 3x3 with the last window
holding one row of input cells, where onnx.reference's own pooling miscounts. The attributes are
checked when the session is prepared; the spec is built once per input dtype.
"""

from __future__ import annotations

import numpy as np
from onnx import AttributeProto, helper

from ovpool import kernels
from ovpool.engine.ops.base import LATEST, Kernel, OpNode, Rule, Traits, register
from ovpool.onnx.adapter import spec_from_node
from ovpool.onnx.versions import ONNX_VERSIONS, POOL_OPS
from ovpool.spec import PoolSpec


def pool(node: OpNode) -> Kernel:
    """The node's kernel: specs cached per input dtype (int8 MaxPool before MaxPool-12 is refused
    there, naming the first version that allows it)."""
    proto = helper.make_node(
        node.op_type,
        [f"x{i}" for i in range(max(len(node.constants), 1))],
        [f"y{i}" for i in range(node.n_outputs)],
        name=node.name,
    )
    # an empty list (kernel_shape: []) has no type to infer; every list attribute of pooling is INTS
    proto.attribute.extend(
        helper.make_attribute(key, value, attr_type=AttributeProto.INTS if isinstance(value, list) and not value else None)
        for key, value in node.attrs.items()
    )
    spec_from_node(proto, node.opset)
    specs: dict[np.dtype, PoolSpec] = {}

    def spec_for(x: np.ndarray) -> PoolSpec:
        spec = specs.get(x.dtype)
        if spec is None:
            spec = specs[x.dtype] = spec_from_node(proto, node.opset, dtype=x.dtype.name)
        return spec

    if node.op_type == "MaxUnpool":

        def unpool(x: np.ndarray, indices: np.ndarray, output_shape: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
            shape = None if output_shape is None else [int(d) for d in output_shape.reshape(-1)]
            return (kernels.max_unpool(x, indices, spec_for(x), shape),)

        return unpool

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        result = kernels.pool(x, spec_for(x))
        return result if isinstance(result, tuple) else (result,)

    return kernel


# Working memory (``Traits.work``): the axis passes hold one input-sized copy and output-sized
# accumulators (MaxPool k3 s1 over [1, 16, 256, 256]: 0.99 x input), what ``ovpool.kernels``'
# pooling keeps to; a MaxPool that also writes indices tracks them in int64 over every window (7.7 x
# a float32 input for k3 s1 pads 1 in 3-D, 26 x a uint8 one); an LpPool holds its powers and their
# axis sums (``kernels.lp_pool``: 3.1 x input for k3 over [1, 2, 32, 32]).
POOLING = Traits(work=Rule(kernels.SCRATCH_INPUTS, kernels.SCRATCH_OUTPUTS))
MAX_POOLING = Traits(work=POOLING.work, work_indices=Rule(8.0, 2.0))
LP_POOLING = Traits(work=Rule(5.0, 2.0))


def _register_versions() -> None:
    for op_type in POOL_OPS:
        rows = [row for row in ONNX_VERSIONS if row.op_type == op_type]
        traits = MAX_POOLING if op_type == "MaxPool" else LP_POOLING if "LpPool" in op_type else POOLING
        for row, following in zip(rows, rows[1:] + [None]):
            register(op_type, row.since, following.since - 1 if following else LATEST, traits=traits)(pool)


_register_versions()
