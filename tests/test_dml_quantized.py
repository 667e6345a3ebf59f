"""DirectML's quantized average pooling (DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC).

Every drawn quantized average pool (QDQ ``DequantizeLinear -> AveragePool -> QuantizeLinear`` at
opsets 13, 19 and 21, or com.microsoft QLinearAveragePool / QLinearGlobalAveragePool, channels_last too;
ranks 1-3, explicit and auto pads, ceil, include-pad, dilations; uint8/int8, per-tensor and
per-channel scales and zero points) is either refused for a reason the test predicts without
ovpool, or written as operators whose descriptor fields, run by the naive emulator
(``tests/dml_emulator.py``, exact rationals), give exactly what ``ovpool.quant`` says, and what
onnxruntime (CPU, one thread, no graph optimisation) computes on the source model within one
quantization step, that step only where the exact value lies within float32 rounding of a tie;
naive loops on rationals over the oracle's windows agree exactly. The document converted back to
ONNX means the same (0 steps) and runs on onnxruntime alike.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import dml_emulator
import numpy as np
import onnxruntime as ort
import oracle
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from onnx import ModelProto, TensorProto, helper, numpy_helper
from quant_cases import RANGES
from strategies import window_attributes

from ovpool.dml import adapter as dml_adapter
from ovpool.dml import cpp as dml_cpp
from ovpool.dml import export as dml_export
from ovpool.dml import importer as dml_import
from ovpool.errors import ModelError, UnsupportedError
from ovpool.onnx.qdq import constants, find_qdq_pools, qlinear_pool

ROOT = Path(__file__).resolve().parents[1]
OP = "DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING"
ELEM = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "uint16": TensorProto.UINT16}


@dataclass(frozen=True)
class QCase:
    """One quantized average pool. ``shape`` is channels first (N, C, *spatial); with
    ``channels_last`` the model's input is (N, *spatial, C). ``form``: "qdq" or "qlinear";
    ``global_pool``: GlobalAveragePool / QLinearGlobalAveragePool (``attrs`` empty)."""

    form: str
    shape: tuple
    attrs: dict = field(hash=False)
    in_type: str
    out_type: str
    in_scale: tuple
    in_zero: tuple
    out_scale: tuple
    out_zero: tuple
    channels_last: bool = False
    global_pool: bool = False
    opset: int = 21

    @property
    def model_shape(self) -> tuple:
        n, c, *spatial = self.shape
        return (n, *spatial, c) if self.channels_last else self.shape

    def model(self) -> ModelProto:
        inits = [
            numpy_helper.from_array(_vector(self.in_scale, np.float32), "x_scale"),
            numpy_helper.from_array(_vector(self.in_zero, self.in_type), "x_zero"),
            numpy_helper.from_array(_vector(self.out_scale, np.float32), "y_scale"),
            numpy_helper.from_array(_vector(self.out_zero, self.out_type), "y_zero"),
        ]
        if self.form == "qlinear":
            op_type = "QLinearGlobalAveragePool" if self.global_pool else "QLinearAveragePool"
            extra = {"channels_last": 1} if self.channels_last else {}
            nodes = [
                helper.make_node(
                    op_type,
                    ["x", "x_scale", "x_zero", "y_scale", "y_zero"],
                    ["y"],
                    name="pool",
                    domain="com.microsoft",
                    **self.attrs,
                    **extra,
                )
            ]
        else:
            in_axis = {"axis": 1} if len(self.in_scale) > 1 or len(self.in_zero) > 1 else {}
            out_axis = {"axis": 1} if len(self.out_scale) > 1 or len(self.out_zero) > 1 else {}
            op_type = "GlobalAveragePool" if self.global_pool else "AveragePool"
            nodes = [
                helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero"], ["xf"], name="dq", **in_axis),
                helper.make_node(op_type, ["xf"], ["yf"], name="pool", **self.attrs),
                helper.make_node("QuantizeLinear", ["yf", "y_scale", "y_zero"], ["y"], name="q", **out_axis),
            ]
        graph = helper.make_graph(
            nodes,
            "case",
            [helper.make_tensor_value_info("x", ELEM[self.in_type], list(self.model_shape))],
            [helper.make_tensor_value_info("y", ELEM[self.out_type], None)],
            initializer=inits,
        )
        opsets = [helper.make_opsetid("", self.opset)] + (
            [helper.make_opsetid("com.microsoft", 1)] if self.form == "qlinear" else []
        )
        return helper.make_model(graph, opset_imports=opsets, ir_version=10)

    def input(self, seed: int) -> np.ndarray:
        low, high = RANGES[self.in_type]
        return np.random.default_rng(seed).integers(low, high, self.model_shape, endpoint=True).astype(self.in_type)

    def pool_attrs(self, spatial) -> dict:
        """The window attributes the naive oracle reads (a global pool's kernel is the input)."""
        return {"kernel_shape": list(spatial)} if self.global_pool else self.attrs


def _vector(values: tuple, dtype) -> np.ndarray:
    array = np.asarray(values, dtype=dtype)
    return array.reshape(()) if array.size == 1 else array


@st.composite
def quantized_cases(draw) -> QCase:
    form = draw(st.sampled_from(["qdq", "qdq", "qlinear"]))
    opset = draw(st.sampled_from([13, 19, 21])) if form == "qdq" else 21  # QDQ per-axis from 13; dilations from 19
    global_pool = draw(st.integers(0, 5)) == 0
    rank = draw(st.integers(1, 3))
    spatial = tuple(draw(st.integers(1, 5 if rank < 3 else 3)) for _ in range(rank))
    channels = draw(st.integers(1, 3))
    shape = (draw(st.integers(1, 2)), channels, *spatial)
    attrs: dict = {}
    if not global_pool:
        attrs = window_attributes(draw, rank, spatial, form == "qdq" and opset >= 19)
        if draw(st.booleans()):
            attrs["ceil_mode"] = 1
        if draw(st.booleans()):
            attrs["count_include_pad"] = 1
    in_type = draw(st.sampled_from(["uint8", "int8"]))
    out_type = draw(st.sampled_from(["uint8", "int8"])) if form == "qdq" else in_type
    scales = st.one_of(
        st.sampled_from([0.05, 0.04, 0.1, 0.0078125, 0.5, 1 / 3, 0.02]),
        st.floats(0.001, 1.0).map(lambda v: float(np.float32(v))),
    )

    def quantization(dtype: str) -> tuple[tuple, tuple]:
        count = channels if form == "qdq" and draw(st.booleans()) else 1
        low, high = RANGES[dtype]
        zero = st.integers(low, high) if draw(st.booleans()) else st.sampled_from([0, 128 if dtype == "uint8" else 0, 10])
        return tuple(draw(scales) for _ in range(count)), tuple(draw(zero) for _ in range(count))

    in_scale, in_zero = quantization(in_type)
    out_scale, out_zero = quantization(out_type)
    channels_last = form == "qlinear" and draw(st.booleans())
    return QCase(form, shape, attrs, in_type, out_type, in_scale, in_zero, out_scale, out_zero, channels_last, global_pool, opset)


def overhangs(case: QCase) -> bool:
    """A window reaching past the end pad (a ceil overhang), by enumerating windows with the
    naive oracle: its output count, and the last window's end against ``L + pads_end``."""
    spatial = case.shape[2:]
    attrs = case.pool_attrs(spatial)
    out = oracle.pool(np.zeros((1, 1, *spatial)), "avg", attrs).shape[2:]
    kernel = attrs["kernel_shape"]
    strides = attrs.get("strides", [1] * len(spatial))
    dilations = attrs.get("dilations", [1] * len(spatial))
    begin, end = oracle._pads_for(attrs, spatial, kernel, strides, dilations)
    return any(
        (n - 1) * s + d * (k - 1) + 1 > length + b + e
        for n, s, d, k, length, b, e in zip(out, strides, dilations, kernel, spatial, begin, end)
    )


def padded(case: QCase) -> bool:
    spatial = case.shape[2:]
    attrs = case.pool_attrs(spatial)
    if attrs.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        kernel = attrs["kernel_shape"]
        strides = attrs.get("strides", [1] * len(spatial))
        dilations = attrs.get("dilations", [1] * len(spatial))
        begin, end = oracle._pads_for(attrs, spatial, kernel, strides, dilations)
        return any(begin + end)
    return any(attrs.get("pads", []))


def expected_refusal(case: QCase) -> str | None:
    """Why DirectML must refuse a case, decided without ovpool: a window with no input cell (the
    naive max refuses it), or an include-pad window past the end pad (DirectML's divisor for it is
    undocumented: ovpool pads with the zero point first) where one PaddingValue cannot hold the
    per-channel zero points or the data is channels-last."""
    spatial = case.shape[2:]
    try:
        oracle.pool(np.zeros((1, 1, *spatial)), "max", case.pool_attrs(spatial))
    except ValueError:
        return "wholly in padding"
    if case.attrs.get("count_include_pad") and padded(case) and overhangs(case):
        if case.channels_last:
            return "channels_last"
        if len(set(case.in_zero)) > 1:
            return "per-channel zero points"
    return None


def channels_first(case: QCase, array: np.ndarray) -> np.ndarray:
    return np.moveaxis(array, -1, 1) if case.channels_last else array


def core_meaning(model: ModelProto, x: np.ndarray, channels_last: bool = False) -> np.ndarray:
    """``ovpool.quant``'s meaning of a one-pool model (QDQ or QLinear), on channels-first data."""
    graph = model.graph
    node = next(
        n
        for n in graph.node
        if n.op_type in ("QLinearAveragePool", "QLinearGlobalAveragePool", "AveragePool", "GlobalAveragePool")
    )
    if node.op_type.startswith("QLinear"):
        meaning = qlinear_pool(node, constants(graph), str(x.dtype))
    else:
        (pattern,) = find_qdq_pools(model)
        meaning = pattern.meaning
    return meaning.run(x)


def steps_apart(got: np.ndarray, want: np.ndarray, case: QCase, x: np.ndarray) -> int:
    """The largest difference in quantization steps, after checking that every one-step
    difference sits where the exact value is within float32 rounding of a tie (there float32
    runtimes may round either way; ``ovpool.quant`` computes exactly)."""
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    exact = exact_quotients(case, x)
    for index in zip(*np.nonzero(diff == 1)):
        value = exact[index]
        distance = abs(value - math.floor(value) - Fraction(1, 2))
        assert distance <= Fraction(1, 2**15) * max(1, abs(value)), (index, float(value), got[index], want[index])
    return int(diff.max(initial=0))


def exact_quotients(case: QCase, x: np.ndarray) -> np.ndarray:
    """Per output (channels first): the exact average over the output scale before rounding and
    the zero point, by naive loops on rationals over the windows the naive oracle enumerates."""
    xs = channels_first(case, x)
    n, c, *spatial = xs.shape
    attrs = case.pool_attrs(spatial)
    rank = len(spatial)
    kernel = attrs["kernel_shape"]
    strides = attrs.get("strides", [1] * rank)
    dilations = attrs.get("dilations", [1] * rank)
    begin, end = oracle._pads_for(attrs, spatial, kernel, strides, dilations)
    rounding = "ceil" if attrs.get("ceil_mode") and attrs.get("auto_pad", "NOTSET") == "NOTSET" else "floor"
    starts = [oracle._starts(spatial[a], kernel[a], strides[a], dilations[a], begin[a], end[a], rounding) for a in range(rank)]
    include = bool(attrs.get("count_include_pad"))
    out = np.empty((n, c, *[len(s) for s in starts]), dtype=object)
    for b, ch in np.ndindex(n, c):
        scale_in = Fraction(float(np.float32(case.in_scale[ch if len(case.in_scale) > 1 else 0])))
        zero_in = case.in_zero[ch if len(case.in_zero) > 1 else 0]
        scale_out = Fraction(float(np.float32(case.out_scale[ch if len(case.out_scale) > 1 else 0])))
        for pos in np.ndindex(out.shape[2:]):
            total, count = 0, 0
            for tap in np.ndindex(*kernel):
                at = [starts[a][pos[a]] + tap[a] * dilations[a] for a in range(rank)]
                inside = all(0 <= at[a] < spatial[a] for a in range(rank))
                if inside:
                    total += int(xs[(b, ch, *at)]) - zero_in
                if inside or (include and all(-begin[a] <= at[a] < spatial[a] + end[a] for a in range(rank))):
                    count += 1
            out[(b, ch, *pos)] = Fraction(total) * scale_in / count / scale_out
    return out


def naive_quantized(case: QCase, x: np.ndarray) -> np.ndarray:
    """``exact_quotients`` rounded half to even, plus the output zero point, saturated."""
    exact = exact_quotients(case, x)
    low, high = RANGES[case.out_type]
    out = np.empty(exact.shape, dtype=case.out_type)
    for index in np.ndindex(exact.shape):
        zero = case.out_zero[index[1] if len(case.out_zero) > 1 else 0]
        out[index] = min(max(round(exact[index]) + zero, low), high)
    return out


def run_onnxruntime(model: ModelProto, x: np.ndarray) -> np.ndarray | None:
    """onnxruntime CPU's output, or None where its QLinear pooling kernel refuses the scales
    ("parameter out of computation range": it computes with a fixed-point multiplier whose range
    some input/output scale ratios leave, e.g. 0.5 / 0.001953125 = 256 over one cell)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    try:
        return session.run(None, {"x": x})[0]
    except ort.capi.onnxruntime_pybind11_state.RuntimeException as exc:
        if "out of computation range" not in str(exc):
            raise
        return None


def compare_onnxruntime(model: ModelProto, case: QCase, x: np.ndarray, want: np.ndarray) -> None:
    got = run_onnxruntime(model, x)
    event("onnxruntime refused the scales" if got is None else "onnxruntime ran")
    if got is not None:
        assert steps_apart(channels_first(case, got), want, case, x) <= 1


def onnxruntime_skip(case: QCase) -> str | None:
    """Where onnxruntime 1.31 CPU is no oracle (measured, and in docs/semantics.md): its
    QLinearAveragePool divides an include-pad window past the end pad by the whole kernel; its
    SAME_* padding ignores dilation, and where ONNX's total pad ``max(0, ...)`` is 0 it pads by
    the negative number (L=3, k=1, s=3 reads cell 1, not 0); it takes ceil_mode=1 with
    auto_pad=VALID as ceil rounding (L=4, k=2, s=3: 2 windows where ONNX's VALID gives 1); it
    refuses pads of kernel_shape or more."""
    if case.form == "qlinear" and case.attrs.get("count_include_pad") and overhangs(case):
        return "QLinearAveragePool include-pad overhang"
    if case.attrs.get("auto_pad") == "VALID" and case.attrs.get("ceil_mode"):
        return "VALID with ceil_mode=1"
    if case.attrs.get("auto_pad", "").startswith("SAME"):
        if "dilations" in case.attrs:
            return "SAME with dilations"
        spatial = case.shape[2:]
        for length, k, s in zip(spatial, case.attrs["kernel_shape"], case.attrs["strides"]):
            if (-(-length // s) - 1) * s + k < length:
                return "SAME with a negative total pad"
    kernel = case.attrs.get("kernel_shape", [])
    pads = case.attrs.get("pads", [])
    if pads and any(p >= kernel[i % len(kernel)] for i, p in enumerate(pads)):
        return "pads >= kernel_shape"
    return None


def round_trip_meaning(back: ModelProto, x: np.ndarray, channels_last: bool) -> np.ndarray:
    """The core meaning of the ONNX model a document imports to: an optional zero-point Pad (the
    include-pad decomposition), then one QDQ or QLinear pool."""
    graph = back.graph
    pads = [n for n in graph.node if n.op_type == "Pad"]
    if pads:
        values = constants(graph)
        (pad,) = pads
        widths = values[pad.input[1]].reshape(2, -1).T
        fill = values[pad.input[2]].item() if len(pad.input) > 2 else 0
        x = np.pad(x, [tuple(w) for w in widths], constant_values=fill)
    return core_meaning(back, x, channels_last)


@given(quantized_cases(), st.integers(0, 2**16))
def test_quantized_average_pooling_is_exact_on_directml_and_back(case, seed):
    model = case.model()
    refusal = expected_refusal(case)
    event(f"refused: {refusal}" if refusal else f"{case.form} rank {len(case.shape) - 2}")
    if refusal:
        with pytest.raises(UnsupportedError, match=rf"node 'pool'.*{re.escape(refusal.split()[0])}"):
            dml_export.document_from_onnx(model)
        return
    document = dml_export.document_from_onnx(model)
    operators = document["operators"]
    assert operators[-1]["type"] == OP and operators[-1]["min_feature_level"] == "DML_FEATURE_LEVEL_6_2"
    assert document["skipped"] == []  # DequantizeLinear and QuantizeLinear are the operator's work
    x = case.input(seed)
    want = core_meaning(model, channels_first(case, x))
    emulated = channels_first(case, dml_emulator.run(document, {"x": x})["y"])
    np.testing.assert_array_equal(emulated, want)  # exact: the emulator computes on rationals
    np.testing.assert_array_equal(want, naive_quantized(case, x))  # and the naive loops agree

    skip = onnxruntime_skip(case)
    event(f"onnxruntime: {skip or 'compared'}")
    if skip is None:
        compare_onnxruntime(model, case, x, want)

    back = dml_import.model_from_document(document)
    round_trip = round_trip_meaning(back, channels_first(case, x), case.channels_last)
    np.testing.assert_array_equal(round_trip, want)
    kinds = {n.op_type for n in back.graph.node}
    event("back as QLinearAveragePool" if "QLinearAveragePool" in kinds else "back as QDQ")
    if skip is None:
        compare_onnxruntime(back, case, x, want)


def qdq_case(**changes) -> QCase:
    base = dict(
        form="qdq",
        shape=(1, 2, 6, 6),
        attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        in_type="uint8",
        out_type="uint8",
        in_scale=(0.05,),
        in_zero=(128,),
        out_scale=(0.04,),
        out_zero=(125,),
    )
    return QCase(**{**base, **changes})


def test_worked_example_uint8_zero_point_128_include_pad():
    """The issue's case: uint8 zero point 128, scale 0.05; include-pad pads fill with the real 0,
    the zero point, not the integer 0. All cells 138 (the real 0.5): the corner window of a
    3x3/stride-2/pad-1 include-pad average holds 4 cells of 0.5 and 5 pads of 0 -> 2/9 = 0.222...,
    which the output scale 0.04 and zero point 125 quantize to 125 + round(5.555...) = 131."""
    case = qdq_case(attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1})
    document = dml_export.document_from_onnx(case.model())
    (op,) = document["operators"]
    assert op["desc"]["IncludePadding"] is True and op["desc"]["StartPadding"] == [1, 1]
    assert op["inputs"] == ["x", "pool/input_scale", "pool/input_zero_point", "pool/output_scale", "pool/output_zero_point"]
    assert document["constants"]["pool/input_zero_point"] == {
        "DataType": "DML_TENSOR_DATA_TYPE_UINT8",
        "Sizes": [1, 1, 1, 1],
        "Values": [128],
    }
    assert document["constants"]["pool/input_scale"]["Values"] == [float(np.float32(0.05))]
    y = dml_emulator.run(document, {"x": np.full((1, 2, 6, 6), 138, np.uint8)})["y"]
    assert y[0, 0, 0, 0] == 131 and y[0, 0, 1, 1] == 125 + round(0.5 / float(np.float32(0.04)))


def test_per_channel_scales_are_one_c_one_one_tensors():
    case = qdq_case(in_scale=(0.05, 0.1), in_zero=(120, 3), out_scale=(0.04, 0.02), out_zero=(0, 250))
    (op,) = dml_export.document_from_onnx(case.model())["operators"]
    for member in ("InputScaleTensor", "InputZeroPointTensor", "OutputScaleTensor", "OutputZeroPointTensor"):
        assert op["desc"][member]["Sizes"] == [1, 2, 1, 1]
    back = dml_import.model_from_document(dml_export.document_from_onnx(case.model()))
    assert [n.op_type for n in back.graph.node] == ["DequantizeLinear", "AveragePool", "QuantizeLinear"]
    assert [a.i for a in back.graph.node[0].attribute if a.name == "axis"] == [1]


def test_one_d_pool_gets_a_unit_axis_and_per_channel_scales_follow_it():
    case = qdq_case(
        shape=(1, 3, 7),
        attrs={"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1},
        in_scale=(0.1, 0.2, 0.3),
        in_zero=(1, 2, 3),
    )
    document = dml_export.document_from_onnx(case.model())
    (op,) = document["operators"]
    assert op["desc"]["InputTensor"]["Sizes"] == [1, 3, 1, 7] and op["desc"]["WindowSize"] == [1, 3]
    assert op["desc"]["OutputTensor"]["Sizes"] == [1, 3, 1, 4]  # ceil: the 4th window starts in the input
    assert op["desc"]["InputScaleTensor"]["Sizes"] == [1, 3, 1, 1]
    assert document["tensors"]["x"]["Sizes"] == [1, 3, 7]
    back = dml_import.model_from_document(document)
    pool = next(n for n in back.graph.node if n.op_type == "AveragePool")
    assert [list(a.ints) for a in pool.attribute if a.name == "kernel_shape"] == [[3]]


def test_include_pad_ceil_overhang_pads_with_the_zero_point():
    """4x4, k3 s2 p1, ceil, include-pad: the last window overhangs the end pad, where DirectML's
    divisor is undocumented: PADDING with the input zero point 128 (the real 0), then an unpadded
    average with IncludePadding=FALSE. All cells 138 (0.5): the last window holds one input cell,
    one end pad and one overhang per axis, so 1 cell of 0.5 over 2x2 counted cells = 0.125."""
    case = qdq_case(
        shape=(1, 1, 4, 4),
        attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1},
        out_scale=(0.125,),
        out_zero=(0,),
    )
    document = dml_export.document_from_onnx(case.model())
    pad, pool = document["operators"]
    assert pad["type"] == "DML_OPERATOR_PADDING" and pad["desc"]["PaddingValue"] == 128.0
    assert pad["min_feature_level"] == "DML_FEATURE_LEVEL_2_1"  # uint8 padding
    assert pool["desc"]["IncludePadding"] is False and pool["desc"]["StartPadding"] == [0, 0]
    y = dml_emulator.run(document, {"x": np.full((1, 1, 4, 4), 138, np.uint8)})["y"]
    assert y[0, 0, 2, 2] == 1  # 0.125 / 0.125
    back = dml_import.model_from_document(document)
    assert [n.op_type for n in back.graph.node] == ["Pad", "QLinearAveragePool"]


def test_qlinear_channels_last_is_a_strided_view():
    case = QCase(
        "qlinear", (1, 3, 4, 5), {"kernel_shape": [2, 2], "strides": [2, 2]}, "int8", "int8", (0.1,), (-3,), (0.2,), (4,), True
    )
    document = dml_export.document_from_onnx(case.model())
    (op,) = document["operators"]
    assert op["desc"]["InputTensor"] == {
        "DataType": "DML_TENSOR_DATA_TYPE_INT8",
        "Sizes": [1, 3, 4, 5],
        "Strides": [60, 1, 15, 3],
    }
    assert op["desc"]["OutputTensor"]["Strides"] == [12, 1, 6, 3]
    assert document["tensors"]["x"]["Sizes"] == [1, 4, 5, 3] and document["tensors"]["y"]["Sizes"] == [1, 2, 2, 3]
    back = dml_import.model_from_document(document)
    (node,) = back.graph.node
    assert node.domain == "com.microsoft" and [a.i for a in node.attribute if a.name == "channels_last"] == [1]


def test_qdq_max_pool_stays_a_float_max_pool_and_a_shared_dequantize_stays():
    model = qdq_case().model()
    model.graph.node[1].op_type = "MaxPool"
    document = dml_export.document_from_onnx(model)
    assert [op["type"] for op in document["operators"]] == ["DML_OPERATOR_MAX_POOLING"]
    assert [s["op_type"] for s in document["skipped"]] == ["DequantizeLinear", "QuantizeLinear"]
    shared = qdq_case().model()
    shared.graph.node.append(helper.make_node("Relu", ["xf"], ["r"], name="relu"))
    shared.graph.output.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, None))
    document = dml_export.document_from_onnx(shared)
    assert [op["type"] for op in document["operators"]] == [OP]
    assert [s["op_type"] for s in document["skipped"]] == ["DequantizeLinear", "Relu"]


def test_global_pools_and_the_feature_level():
    for form in ("qdq", "qlinear"):
        case = qdq_case(form=form, attrs={}, global_pool=True)
        (op,) = dml_export.document_from_onnx(case.model())["operators"]
        assert op["desc"]["WindowSize"] == [6, 6] and op["desc"]["OutputTensor"]["Sizes"] == [1, 2, 1, 1]
        with pytest.raises(
            UnsupportedError, match=r"node 'pool'.*DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING at DML_FEATURE_LEVEL_6_2.*6\.1"
        ):
            dml_export.document_from_onnx(case.model(), "6.1")


@pytest.mark.parametrize(
    "change, message",
    [
        (
            dict(in_type="uint16", out_type="uint16", in_zero=(300,), out_zero=(300,)),
            r"node 'pool'.*quantized average pooling on a 4-D uint16 tensor",
        ),
        (
            dict(
                out_type="int8",
                out_zero=(0,),
                in_type="uint8",
                form="qdq",
                shape=(1, 1, 2, 2, 2, 2),
                attrs={"kernel_shape": [1, 1, 1, 1]},
            ),
            r"node 'pool'.*4 spatial axes",
        ),
        (
            dict(
                shape=(1, 2, 4, 4),
                in_zero=(1, 2),
                in_scale=(0.1, 0.1),
                attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1},
            ),
            r"node 'pool'.*per-channel zero points \[1, 2\]",
        ),
        (
            dict(in_scale=(0.1, 0.2, 0.3), in_zero=(1, 2, 3)),
            r"node 'dq' \(DequantizeLinear\): 3 per-axis scales for axis 1 of length 2",
        ),
    ],
)
def test_refusals_name_the_node_and_the_reason(change, message):
    with pytest.raises((UnsupportedError, ModelError), match=message):
        dml_export.document_from_onnx(qdq_case(**change).model())


def test_bad_quantization_constants_are_refused_by_name():
    model = qdq_case().model()
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array(0.0, np.float32), "x_scale"))
    with pytest.raises(ModelError, match=r"node 'dq' \(DequantizeLinear\): scale 0 must be finite and non-zero"):
        dml_export.document_from_onnx(model)


BASE = dml_export.document_from_onnx(qdq_case(in_scale=(0.05, 0.1), in_zero=(120, 3)).model())


def edited(keys: tuple, value) -> dict:
    """BASE with the member at ``keys`` set to ``value`` (None: removed from an object)."""
    document = json.loads(dml_adapter.dumps(BASE))
    target = document
    for key in keys[:-1]:
        target = target[key]
    if value is None and isinstance(target, dict):
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return document


DESC = ("operators", 0, "desc")
SCALE, ZERO = ("constants", "pool/input_scale"), ("constants", "pool/input_zero_point")


@pytest.mark.parametrize(
    "keys, value, message",
    [
        (
            (*DESC, "InputScaleTensor", "Sizes"),
            [1, 2, 1],
            r"InputScaleTensor Sizes \[1, 2, 1\] must be \[1, 1, 1, 1\] \(per tensor\) or \[1, 2, 1, 1\] \(per channel\)",
        ),
        (
            (*DESC, "InputScaleTensor", "DataType"),
            "DML_TENSOR_DATA_TYPE_FLOAT16",
            r"InputScaleTensor DataType must be DML_TENSOR_DATA_TYPE_FLOAT32",
        ),
        (
            (*DESC, "InputZeroPointTensor", "DataType"),
            "DML_TENSOR_DATA_TYPE_INT8",
            r"InputZeroPointTensor DataType must be DML_TENSOR_DATA_TYPE_UINT8 \(InputTensor's\)",
        ),
        (
            (*DESC, "InputTensor", "DataType"),
            "DML_TENSOR_DATA_TYPE_FLOAT32",
            r"InputTensor DataType must be DML_TENSOR_DATA_TYPE_INT8 or DML_TENSOR_DATA_TYPE_UINT8",
        ),
        ((*DESC, "InputTensor", "Sizes"), [1, 2, 36], r"InputTensor has 3 dims; .* takes 4 or 5"),
        ((*DESC, "InputScaleTensor"), None, r"missing InputScaleTensor"),
        ((*DESC, "OutputScaleTensor"), None, r"missing OutputScaleTensor"),
        (("operators", 0, "inputs"), ["x", "pool/input_scale"], r"takes 5 input\(s\)"),
        (SCALE, None, r"InputScaleTensor reads 'pool/input_scale', which has no 'constants' entry"),
        ((*SCALE, "Values"), [0.05, 0.0], r"InputScaleTensor/InputZeroPointTensor: scale 0 must be finite and non-zero"),
        ((*ZERO, "Values"), [120, 256], r"zero point 256 is outside uint8 \[0, 255\]"),
        ((*ZERO, "Values"), [120, 2.5], r"must have Values: a list of 2 integers"),
        (
            ("constants", "pool/output_scale", "Sizes"),
            [1, 1, 1, 1, 1],
            r"constant 'pool/output_scale' has Sizes \[1, 1, 1, 1, 1\] but OutputScaleTensor says \[1, 1, 1, 1\]",
        ),
        ((*DESC, "InputTensor", "Strides"), [72, 1, 12, 2], r"InputTensor and OutputTensor must both view channels-last tensors"),
        (
            (*DESC, "OutputTensor", "Strides"),
            [1, 1, 1, 1],
            r"OutputTensor.Strides \[1, 1, 1, 1\]: ovpool reads packed tensors.*channels-last view of \[1, 2, 3, 3\] is \[18, 1, 6, 2\]",
        ),
    ],
)
def test_reader_refuses_bad_quantized_descs_by_operator_and_member(keys, value, message):
    with pytest.raises((ModelError, UnsupportedError), match=rf"operator 'pool'.*{message}"):
        dml_import.model_from_document(edited(keys, value))


def test_onnxruntime_qlinear_include_pad_ceil_counts_the_overhang():
    """The measured defect the comparison above skips: onnxruntime 1.31's CPU QLinearAveragePool
    divides an include-pad window past the end pad by the whole kernel. 1-D L=4, k3 s2, pads 1,
    ceil, all cells 64 at scale 1/64: the last window holds cell 3, the end pad and one overhang
    cell; ONNX divides its sum 64 by 2 (32), onnxruntime by 3 (21). ovpool's DirectML operators
    (zero-point PADDING, then IncludePadding=FALSE) give ONNX's 32."""
    case = QCase(
        "qlinear",
        (1, 1, 4),
        {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1, "count_include_pad": 1},
        "uint8",
        "uint8",
        (1 / 64,),
        (0,),
        (1 / 64,),
        (0,),
    )
    x = np.full((1, 1, 4), 64, np.uint8)
    got = run_onnxruntime(case.model(), x)
    assert got is not None and got[0, 0, 2] == 21
    document = dml_export.document_from_onnx(case.model())
    assert dml_emulator.run(document, {"x": x})["y"][0, 0, 2] == 32
    assert core_meaning(case.model(), x)[0, 0, 2] == 32


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "ovpool", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def test_cli_converts_a_qdq_model_to_json_and_header_and_back(tmp_path):
    src = tmp_path / "q.onnx"
    src.write_bytes(qdq_case(in_scale=(0.05, 0.1), in_zero=(120, 3)).model().SerializeToString())
    done = run_cli("convert", src, "--to", "dml", "-o", tmp_path / "q.json")
    assert done.returncode == 0, done.stderr
    assert "skipped" not in done.stderr
    assert json.loads((tmp_path / "q.json").read_text())["operators"][0]["type"] == OP
    assert run_cli("convert", src, "--to", "dml", "-o", tmp_path / "q.h").returncode == 0
    header = (tmp_path / "q.h").read_text()
    assert "static const FLOAT op0_pool_InputScaleTensor_Values[2] = {0.05f, 0.1f};" in header
    assert "static const UINT8 op0_pool_InputZeroPointTensor_Values[2] = {120, 3};" in header
    back = run_cli("convert", tmp_path / "q.json", "--to", "onnx", "-o", tmp_path / "back.onnx")
    assert back.returncode == 0, back.stderr
    refused = run_cli("convert", tmp_path / "q.json", "--to", "ir", "-o", tmp_path / "back.xml")
    assert refused.returncode == 1 and "operator 'pool'" in refused.stderr and "no OpenVINO IR form" in refused.stderr
    assert not (tmp_path / "back.xml").exists()


def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path):
    model = qdq_case().model()
    model.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.array([1, 2, 3], np.uint8), "x_zero"))
    src = tmp_path / "bad.onnx"
    src.write_bytes(model.SerializeToString())
    result = run_cli("convert", src, "--to", "dml", "-o", tmp_path / "bad.json")
    assert result.returncode == 1 and not (tmp_path / "bad.json").exists()
    assert result.stderr.count("\n") == 1 and "node 'dq' (DequantizeLinear)" in result.stderr, result.stderr
    low = run_cli("convert", tmp_path / "none.onnx", "--to", "dml", "-o", tmp_path / "x.json", "--feature-level", "6.1")
    assert low.returncode == 2
    src.write_bytes(qdq_case().model().SerializeToString())
    capped = run_cli("convert", src, "--to", "dml", "-o", tmp_path / "c.json", "--feature-level", "6.1")
    assert capped.returncode == 1 and "DML_FEATURE_LEVEL_6_2" in capped.stderr and not (tmp_path / "c.json").exists()


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_header_with_quantized_operators_compiles_against_the_directml_declarations(tmp_path):
    """A QDQ per-channel pool, a channels-last QLinearAveragePool (Strides) and an include-pad
    ceil pool (zero-point PADDING) in one header: the member order of
    DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC is static_asserted against the declarations."""
    document = dml_export.document_from_onnx(qdq_case(in_scale=(0.05, 0.1), in_zero=(120, 3)).model())
    channels_last = QCase("qlinear", (1, 3, 4, 5), {"kernel_shape": [2, 2]}, "int8", "int8", (0.1,), (-3,), (0.2,), (4,), True)
    overhang = qdq_case(
        shape=(1, 1, 4, 4),
        attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1},
    )
    for i, case in enumerate((channels_last, overhang)):
        more = dml_export.document_from_onnx(case.model())
        renamed = {name: f"{name}{i}" for name in more["constants"]}
        for op in more["operators"]:
            op["name"] = f"{op['name']}{i}"
            op["inputs"] = [renamed.get(name, name) for name in op["inputs"]]
        document["operators"] += more["operators"]
        document["constants"].update({renamed[name]: value for name, value in more["constants"].items()})
    header = dml_cpp.render(document, "q.onnx")
    assert "DML_TARGET_VERSION >= 0x6200" in header
    assert "static const UINT op1_pool0_InputTensor_Strides[4] = {60u, 1u, 15u, 3u};" in header
    assert (
        "offsetof(DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC, InputTensor) < offsetof(DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC, InputScaleTensor)"
        in header
    )
    (tmp_path / "DirectML.h").write_text(f'#include "{ROOT / "tests" / "data" / "directml_decls.h"}"\n')
    (tmp_path / "generated.h").write_text(header)
    (tmp_path / "main.cpp").write_text(
        '#include "generated.h"\n'
        "int main() { return ovpool_dml::kOperators[0]->Type == DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING ? 0 : 1; }\n"
    )
    flags = ["-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-pedantic", "-Werror"]
    result = subprocess.run(
        ["g++", *flags, "-I", str(tmp_path), str(tmp_path / "main.cpp")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_reader_refuses_a_constant_used_as_data():
    document = edited(("operators", 0, "inputs", 0), "pool/input_scale")
    with pytest.raises(ModelError, match=r"tensor 'pool/input_scale': an operator reads or writes it as data, and 'constants'"):
        dml_import.model_from_document(document)


def test_null_zero_points_read_as_zero():
    """InputZeroPointTensor and OutputZeroPointTensor are optional (_Maybenull_): null is 0, and
    the operator then lists three inputs. uint8 cells 3 and 4 at scale 1 average to 3.5 -> 4."""
    case = qdq_case(
        shape=(1, 1, 1, 2), attrs={"kernel_shape": [1, 2]}, in_scale=(1.0,), in_zero=(0,), out_scale=(1.0,), out_zero=(0,)
    )
    document = dml_export.document_from_onnx(case.model())
    op = document["operators"][0]
    op["desc"]["InputZeroPointTensor"] = op["desc"]["OutputZeroPointTensor"] = None
    op["inputs"] = ["x", "pool/input_scale", "pool/output_scale"]
    x = np.array([[[[3, 4]]]], np.uint8)
    assert dml_emulator.run(document, {"x": x})["y"].item() == 4
    back = dml_import.model_from_document(document)
    assert round_trip_meaning(back, x, False).item() == 4


def test_worked_example_ties_go_to_even():
    """docs/semantics.md: uint8 cells 130 and 131 at zero point 128 and scale 0.5 are 1.0 and 1.5;
    their average 1.25 over the output scale 0.5 is 2.5, which rounds to 2: the output is 130."""
    case = qdq_case(
        shape=(1, 1, 1, 2), attrs={"kernel_shape": [1, 2]}, in_scale=(0.5,), in_zero=(128,), out_scale=(0.5,), out_zero=(128,)
    )
    x = np.array([[[[130, 131]]]], np.uint8)
    document = dml_export.document_from_onnx(case.model())
    assert dml_emulator.run(document, {"x": x})["y"].item() == 130
    assert core_meaning(case.model(), x).item() == 130


def test_a_pool_read_by_two_quantize_nodes_is_two_operators():
    model = qdq_case().model()
    model.graph.initializer.append(numpy_helper.from_array(np.array(0.1, np.float32), "s2"))
    model.graph.initializer.append(numpy_helper.from_array(np.array(3, np.int8), "z2"))
    model.graph.node.append(helper.make_node("QuantizeLinear", ["yf", "s2", "z2"], ["y2"], name="q2"))
    model.graph.output.append(helper.make_tensor_value_info("y2", TensorProto.INT8, None))
    document = dml_export.document_from_onnx(model)
    assert [(op["name"], op["outputs"]) for op in document["operators"]] == [("pool/q", ["y"]), ("pool/q2", ["y2"])]
    assert document["skipped"] == []
    x = qdq_case().input(5)
    emulated = dml_emulator.run(document, {"x": x})
    np.testing.assert_array_equal(emulated["y"], core_meaning(qdq_case().model(), x))
    assert emulated["y2"].dtype == np.int8
    back = dml_import.model_from_document(document)
    assert [n.op_type for n in back.graph.node] == ["QLinearAveragePool", "DequantizeLinear", "AveragePool", "QuantizeLinear"]


def _tiny_cnn() -> ModelProto:
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "B"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node(
            "AveragePool", ["r"], ["a"], name="avg", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1
        ),
        helper.make_node("GlobalAveragePool", ["a"], ["g"], name="gap"),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, 4, 1, 1])],
        initializer=weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("quant_format", ["QDQ", "QOperator"])
@pytest.mark.parametrize("activation", ["QUInt8", "QInt8"])
def test_models_quantized_by_onnxruntime(tmp_path, quant_format, activation):
    """A tiny CNN quantized by onnxruntime's quantize_static (static calibration on seeded data):
    its two average pools, QDQ or QLinearAveragePool / QLinearGlobalAveragePool, become two
    quantized operators; run on the integers onnxruntime feeds them, the emulated descriptors give
    onnxruntime's pooled integers within one step, and they import back to QLinearAveragePool."""
    from onnxruntime import quantization

    rng = np.random.default_rng(1)

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.batches, None)

    source, quantized_path = tmp_path / "cnn.onnx", tmp_path / "q.onnx"
    source.write_bytes(_tiny_cnn().SerializeToString())
    quantization.quantize_static(
        str(source),
        str(quantized_path),
        Reader(),
        quant_format=getattr(quantization.QuantFormat, quant_format),
        activation_type=getattr(quantization.QuantType, activation),
        weight_type=quantization.QuantType.QInt8,
    )
    model = ModelProto.FromString(quantized_path.read_bytes())
    document = dml_export.document_from_onnx(model)
    pools = [op for op in document["operators"] if op["type"] == OP]
    assert len(pools) == 2 and len(document["operators"]) == 2
    assert {s["op_type"] for s in document["skipped"]} <= {"QuantizeLinear", "DequantizeLinear", "Conv", "QLinearConv"}
    tensors = {name for op in pools for name in (op["inputs"][0], op["outputs"][0])}
    probe = ModelProto.FromString(model.SerializeToString())
    elem = TensorProto.UINT8 if activation == "QUInt8" else TensorProto.INT8
    probe.graph.output.extend(helper.make_tensor_value_info(name, elem, None) for name in sorted(tensors))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    seen = dict(zip(names, session.run(None, {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)})))
    for op in pools:
        single = {**document, "operators": [op]}
        emulated = dml_emulator.run(single, {op["inputs"][0]: seen[op["inputs"][0]]})[op["outputs"][0]]
        assert np.abs(emulated.astype(np.int64) - seen[op["outputs"][0]].astype(np.int64)).max() <= 1
    back = dml_import.model_from_document(document)
    assert [n.op_type for n in back.graph.node] == ["QLinearAveragePool", "QLinearAveragePool"]
