"""One-node quantized pooling models and their ONNX meaning, computed here without ovpool.

A ``QdqCase`` is ``q -> DequantizeLinear -> pool -> QuantizeLinear -> y`` (the QDQ form quantizers
write) or one com.microsoft QLinearAveragePool / QLinearGlobalAveragePool node, with integer input
and output. ``expected(case, q)`` is the ONNX meaning computed directly: the naive loop oracle
(``tests/oracle.py``) sums each window of the integers ``q - zero_point`` (exact) and counts its
divisor; the dequantize, average and quantize steps are then done in exact rational arithmetic
(``fractions``), rounding half to even once, and saturated. A max pool takes the largest integer
and requantizes it the same way. Results are compared in quantization steps (integer differences).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import oracle
from hypothesis import assume
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from strategies import window_attributes

# Opsets covering every since-version of QuantizeLinear/DequantizeLinear (10, 13, 19, 21, 23, 24,
# 25) and of AveragePool (10, 11, 19, 22) / MaxPool (10, 11, 12, 22) from opset 10 on.
OPSETS = (10, 11, 12, 13, 19, 21, 22, 23, 24, 25)
RANGES = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "uint16": (0, 65535),
    "int16": (-32768, 32767),
    "uint4": (0, 15),
    "int4": (-8, 7),
}
ELEM = {
    "uint8": TensorProto.UINT8,
    "int8": TensorProto.INT8,
    "uint16": TensorProto.UINT16,
    "int16": TensorProto.INT16,
    "uint4": TensorProto.UINT4,
    "int4": TensorProto.INT4,
}
MS = "com.microsoft"


@dataclass(frozen=True)
class QdqCase:
    op_type: str
    opset: int
    attrs: dict = field(hash=False)
    shape: tuple
    dtype: str
    in_scale: tuple
    in_zero: tuple
    out_scale: tuple
    out_zero: tuple
    qlinear: bool = False  # one com.microsoft QLinear node instead of the QDQ pattern
    channels_last: bool = False

    @property
    def per_channel(self) -> bool:
        return len(self.in_scale) > 1 or len(self.out_scale) > 1

    def model(self):
        elem = ELEM[self.dtype]
        shape = list(self.shape)
        if self.channels_last:
            shape = [shape[0], *shape[2:], shape[1]]
        inits = [
            _tensor("x_scale", np.float32, self.in_scale),
            _tensor("x_zero", self.dtype, self.in_zero),
            _tensor("y_scale", np.float32, self.out_scale),
            _tensor("y_zero", self.dtype, self.out_zero),
        ]
        if self.qlinear:
            attrs = dict(self.attrs)
            if self.channels_last:
                attrs["channels_last"] = 1
            nodes = [
                helper.make_node(
                    "QLinear" + self.op_type,
                    ["q", "x_scale", "x_zero", "y_scale", "y_zero"],
                    ["y"],
                    name="pool",
                    domain=MS,
                    **attrs,
                )
            ]
            imports = [helper.make_opsetid("", self.opset), helper.make_opsetid(MS, 1)]
        else:
            axis = {"axis": 1} if self.per_channel else {}
            nodes = [
                helper.make_node("DequantizeLinear", ["q", "x_scale", "x_zero"], ["x"], name="dequantize", **axis),
                helper.make_node(self.op_type, ["x"], ["p"], name="pool", **self.attrs),
                helper.make_node("QuantizeLinear", ["p", "y_scale", "y_zero"], ["y"], name="quantize", **axis),
            ]
            imports = [helper.make_opsetid("", self.opset)]
        graph = helper.make_graph(
            nodes,
            "case",
            [helper.make_tensor_value_info("q", elem, shape)],
            [helper.make_tensor_value_info("y", elem, None)],
            inits,
        )
        model = helper.make_model(graph, opset_imports=imports)
        model.ir_version = 9
        return model

    def input(self, rng: np.random.Generator) -> np.ndarray:
        low, high = RANGES[self.dtype]
        q = rng.integers(low, high + 1, self.shape).astype(self.dtype)
        return np.moveaxis(q, 1, -1).copy() if self.channels_last else q


def expected(case: QdqCase, q: np.ndarray) -> np.ndarray:
    """The ONNX meaning of ``case`` on ``q``, computed exactly (see the module docstring)."""
    if case.channels_last:
        q = np.moveaxis(q, -1, 1)
    channels = q.shape[1]
    zeros_in = np.resize(np.asarray(case.in_zero, np.int64), channels).reshape(1, -1, *([1] * (q.ndim - 2)))
    centred = q.astype(np.int64) - zeros_in
    attrs = dict(case.attrs)
    if case.op_type.startswith("Global"):
        attrs = {"kernel_shape": list(q.shape[2:])}
    if "MaxPool" in case.op_type:
        values, _ = oracle.pool(centred, "max", attrs)
        counts = np.ones(values.shape, dtype=np.int64)
    else:
        values, counts = oracle.pool(centred, "sum", attrs)
    low, high = RANGES[case.dtype]
    out = np.empty(values.shape, dtype=np.int64)
    for index in np.ndindex(values.shape):
        c = index[1]
        s_in = Fraction(float(np.float32(case.in_scale[c % len(case.in_scale)])))
        s_out = Fraction(float(np.float32(case.out_scale[c % len(case.out_scale)])))
        zero = case.out_zero[c % len(case.out_zero)]
        real = Fraction(int(values[index])) * s_in / (int(counts[index]) * s_out)
        out[index] = min(high, max(low, round(real) + zero))  # round(): half to even
    out = out.astype(case.dtype)
    return np.moveaxis(out, 1, -1) if case.channels_last else out


@st.composite
def qdq_cases(draw, qlinear: bool = False, max_rank: int = 3, max_len: int = 7) -> QdqCase:
    """A drawn quantized pooling case over the pooling attribute space (kernel, strides,
    dilations, pads, auto_pad, ceil_mode, count_include_pad; ranks 1-3; global pools), every
    since-version of QuantizeLinear/DequantizeLinear and of the pool, uint8/int8 (and 16-bit
    where the version has it), per-tensor and per-channel scales, shared or distinct."""
    op_types = (
        ("AveragePool", "GlobalAveragePool") if qlinear else ("AveragePool", "MaxPool", "GlobalAveragePool", "GlobalMaxPool")
    )
    op_type = draw(st.sampled_from(op_types))
    opset = 11 if qlinear else draw(st.sampled_from(OPSETS))
    rank = draw(st.integers(1, max_rank))
    spatial = tuple(draw(st.integers(1, max_len)) for _ in range(rank))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + spatial
    attrs: dict = {}
    if not op_type.startswith("Global"):
        attrs = _window(draw, op_type, opset if not qlinear else 11, rank, spatial)
    dtypes = ["uint8", "int8"] + (["uint16", "int16"] if opset >= 21 and not qlinear else [])
    dtype = draw(st.sampled_from(dtypes))
    low, high = RANGES[dtype]
    per_channel = opset >= 13 and not qlinear and draw(st.booleans())
    count = shape[1] if per_channel else 1
    scales = st.floats(0.0009765625, 1.0, width=32)
    zeros = st.integers(low, high) if draw(st.booleans()) else st.just(0 if dtype.startswith("int") else (high + 1) // 2)
    in_scale = tuple(draw(scales) for _ in range(count))
    in_zero = tuple(draw(zeros) for _ in range(count))
    shared = draw(st.booleans())
    out_scale = in_scale if shared else tuple(draw(scales) for _ in range(count))
    out_zero = in_zero if shared else tuple(draw(zeros) for _ in range(count))
    channels_last = qlinear and draw(st.booleans())
    return QdqCase(op_type, opset, attrs, shape, dtype, in_scale, in_zero, out_scale, out_zero, qlinear, channels_last)


def _window(draw, op_type: str, opset: int, rank: int, spatial: tuple) -> dict:
    attrs = window_attributes(draw, rank, spatial, opset >= (19 if op_type == "AveragePool" else 10), ("NOTSET",) * 3)
    kernel, strides = attrs["kernel_shape"], attrs["strides"]
    dilations = attrs.get("dilations", [1] * rank)
    if draw(st.booleans()):
        attrs["ceil_mode"] = 1
    if op_type == "AveragePool" and draw(st.booleans()):
        attrs["count_include_pad"] = 1
    # a window with no input cell: undefined for max and exclude-pad averages, and refused by the
    # OpenVINO lowering for include-pad ones too (tests/test_onnx_to_ir.py covers that refusal)
    assume(all(_every_window_inside(spatial[a], kernel[a], strides[a], dilations[a], attrs, a, rank) for a in range(rank)))
    return attrs


def _every_window_inside(length: int, k: int, s: int, d: int, attrs: dict, axis: int, rank: int) -> bool:
    begin, end = oracle._pads_for(attrs, (length,) * rank, [k] * rank, [s] * rank, [d] * rank)
    rounding = "ceil" if attrs.get("ceil_mode") and attrs.get("auto_pad", "NOTSET") == "NOTSET" else "floor"
    starts = oracle._starts(length, k, s, d, begin[axis], end[axis], rounding)
    return all(any(0 <= start + t * d < length for t in range(k)) for start in starts)


def _tensor(name: str, dtype, values) -> TensorProto:
    array = np.asarray(values, dtype=dtype)
    return numpy_helper.from_array(array.reshape(()) if array.size == 1 else array, name)


def steps(got: np.ndarray, want: np.ndarray) -> int:
    """The largest difference in quantization steps (0 when equal)."""
    assert got.shape == want.shape, (got.shape, want.shape)
    return int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max()) if got.size else 0
