"""Hypothesis strategies over the ONNX pooling attribute space: ranks 1-3, every op version,
every dtype a version allows, explicit and auto pads, ceil and floor, dilations, indices.

A drawn case is a ``PoolCase``: op type, opset, attributes, input shape, dtype; ``model()`` builds
the single-node ONNX model. Inputs stay small so the naive oracle runs quickly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from onnx import TensorProto, helper

# Opsets that select each schema version of the ops, and what each version accepts; written from
# the ONNX operator changelog, independently of ovpool's versions table.
AVERAGE_OPSETS = {1: 1, 7: 7, 10: 10, 11: 11, 19: 19, 22: 22}
MAX_OPSETS = {1: 1, 8: 8, 10: 10, 11: 11, 12: 12, 22: 22}
FLOATS = ["float32", "float64", "float16"]


@dataclass(frozen=True)
class PoolCase:
    op_type: str
    opset: int
    attrs: dict = field(hash=False)
    shape: tuple
    dtype: str
    with_indices: bool = False

    def model(self):
        elem = helper.np_dtype_to_tensor_dtype(np_dtype(self.dtype))
        outputs = ["y", "indices"] if self.with_indices else ["y"]
        node = helper.make_node(self.op_type, ["x"], outputs, name="pool", **self.attrs)
        graph_outputs = [helper.make_tensor_value_info("y", elem, None)]
        if self.with_indices:
            graph_outputs.append(helper.make_tensor_value_info("indices", TensorProto.INT64, None))
        graph = helper.make_graph([node], "case", [helper.make_tensor_value_info("x", elem, list(self.shape))], graph_outputs)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)], ir_version=8)

    def input(self, seed: int = 0) -> np.ndarray:
        rng = np.random.default_rng(seed)
        if self.dtype in ("int8", "uint8"):
            info = np.iinfo(self.dtype)
            return rng.integers(info.min, info.max, self.shape, endpoint=True).astype(self.dtype)
        # a coarse grid makes ties common, which exercises first-maximum-wins
        return (rng.integers(-8, 8, self.shape) / 4.0).astype(np_dtype(self.dtype))


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def window_attributes(draw, rank: int, spatial: tuple, dilations: bool, auto_pads: tuple = ("NOTSET", "NOTSET")) -> dict:
    """Drawn kernel_shape, strides, dilations (when ``dilations``) and pads or auto_pad (NOTSET
    weighted by how often it is in ``auto_pads``) of a pool over ``spatial``; pads stay below the
    dilated kernel and the padded input holds a window. ceil_mode and count_include_pad are left to
    the caller (their versions differ)."""
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    dilation = [draw(st.integers(1, 2)) if dilations else 1 for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    extents = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    attrs: dict = {"kernel_shape": kernel, "strides": strides}
    if any(d != 1 for d in dilation):
        attrs["dilations"] = dilation
    auto_pad = draw(st.sampled_from([*auto_pads, "SAME_UPPER", "SAME_LOWER", "VALID"]))
    if auto_pad == "NOTSET":
        pads = [draw(st.integers(0, e - 1)) for e in extents] + [draw(st.integers(0, e - 1)) for e in extents]
        attrs["pads"] = pads
        assume(all(spatial[a] + pads[a] + pads[rank + a] >= extents[a] for a in range(rank)))
    else:
        attrs["auto_pad"] = auto_pad
        assume(auto_pad != "VALID" or all(spatial[a] >= extents[a] for a in range(rank)))
    return attrs


@st.composite
def pool_cases(draw, op_types=("AveragePool", "MaxPool"), max_rank: int = 3, max_len: int = 7) -> PoolCase:
    op_type = draw(st.sampled_from(op_types))
    opset = draw(st.sampled_from(sorted(AVERAGE_OPSETS if op_type == "AveragePool" else MAX_OPSETS)))
    rank = draw(st.integers(1, max_rank))
    spatial = tuple(draw(st.integers(1, max_len)) for _ in range(rank))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + spatial
    has_dilations = opset >= (19 if op_type == "AveragePool" else 10)
    attrs = window_attributes(draw, rank, spatial, has_dilations)
    if opset >= 10 and draw(st.booleans()):
        attrs["ceil_mode"] = 1
    if op_type == "AveragePool" and opset >= 7 and draw(st.booleans()):
        attrs["count_include_pad"] = 1
    with_indices = op_type == "MaxPool" and opset >= 8 and draw(st.booleans())
    if with_indices and draw(st.booleans()):
        attrs["storage_order"] = 1
    dtypes = list(FLOATS)
    if opset >= 22:
        dtypes.append("bfloat16")
    if op_type == "MaxPool" and opset >= 12:
        dtypes += ["int8", "uint8"]
    dtype = draw(st.sampled_from(dtypes))
    return PoolCase(op_type, opset, attrs, shape, dtype, with_indices)
