"""The basic operators (Constant, Identity, Dropout, Cast, CastLike, Shape, Size, ConstantOfShape) and
pooling in the table, against onnxruntime at every since-version in force from opset 7, ONNX's own
node test cases, and the schema's Cast tables where onnxruntime cannot be the oracle (float 8 and
bfloat16 outputs, which onnxruntime's Python layer cannot return)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import onnx
import pytest
from harness import (
    assert_same,
    check,
    check_node_case,
    drawn_rng,
    make_model,
    node_case_params,
    ovpool_of,
    run_ovpool,
    since_opsets,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from ovpool.errors import ModelError, OvpoolError
from ovpool.memory import MemoryBudgetError

BASIC_OPS = ("Constant", "Identity", "Dropout", "Cast", "CastLike", "BitCast", "Shape", "Size", "ConstantOfShape")
POOL_OPS = ("AveragePool", "MaxPool", "MaxUnpool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool")


# ---------------------------------------------------------------- Constant


CONSTANT_VALUES: dict[str, Any] = {
    "value": numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3)),
    "value_float": 2.5,
    "value_floats": [1.0, -2.0],
    "value_int": 7,
    "value_ints": [3, 4, 5],
    "value_string": "abc",
    "value_strings": ["a", "bc"],
}


@pytest.mark.parametrize("opset", since_opsets("Constant"))
@pytest.mark.parametrize("attribute", sorted(CONSTANT_VALUES))
def test_constant_matches_onnxruntime(opset: int, attribute: str) -> None:
    if attribute != "value" and opset < 12:
        pytest.skip(f"{attribute} is an attribute from Constant-12")
    check("Constant", opset, [], {attribute: CONSTANT_VALUES[attribute]})


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int8, np.int32, np.uint64, np.bool_])
def test_constant_tensor_types(dtype: type) -> None:
    value = np.array([[1, 0], [2, 3]]).astype(dtype)
    (out,) = check("Constant", 13, [], {"value": numpy_helper.from_array(value)})
    assert out.dtype == value.dtype


def test_constant_sparse_value() -> None:
    """sparse_value (Constant-11): values at linear indices (or index rows) of a dense tensor, zeros
    elsewhere. Against the schema: onnxruntime's Python layer returns a sparse-tensor object here."""
    values = numpy_helper.from_array(np.array([5.0, 7.0], np.float32), "v")
    for indices in (np.array([1, 5], np.int64), np.array([[0, 1], [1, 2]], np.int64)):
        sparse = helper.make_sparse_tensor(values, numpy_helper.from_array(indices, "i"), [2, 3])
        (out,) = run_ovpool(make_model("Constant", 11, [], {"sparse_value": sparse}), {})
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, [[0, 5, 0], [0, 0, 7]])


@pytest.mark.parametrize(
    ("opset", "attrs", "message"),
    [
        (13, {}, "needs exactly one"),
        (13, {"value_float": 1.0, "value_int": 1}, "needs exactly one"),
        (11, {"value_float": 1.0}, "is not an attribute of Constant-11"),
        (9, {"sparse_value": None}, "is not an attribute of Constant-9"),
    ],
)
def test_constant_refuses_attributes_the_version_lacks(opset: int, attrs: dict[str, Any], message: str) -> None:
    if "sparse_value" in attrs:
        attrs = {
            "sparse_value": helper.make_sparse_tensor(
                numpy_helper.from_array(np.array([1.0], np.float32), "v"),
                numpy_helper.from_array(np.array([0], np.int64), "i"),
                [1],
            )
        }
    model = make_model("Constant", opset, [], attrs)
    with pytest.raises(ModelError, match=message):
        run_ovpool(model, {})


# ---------------------------------------------------------------- Identity, Dropout


@pytest.mark.parametrize("opset", since_opsets("Identity"))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_])
def test_identity(opset: int, dtype: type) -> None:
    check("Identity", opset, [np.arange(12).reshape(3, 4).astype(dtype)])


@pytest.mark.parametrize("opset", since_opsets("Dropout"))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_dropout_inference(opset: int, dtype: type) -> None:
    """Inference: output = input; the mask (T in Dropout-7, bool from 10) all ones/True: every
    element is kept. onnxruntime agrees from Dropout-12; for 7..11 it returns a mask of zeros/False,
    which the schema does not say (it says test mode copies the input), so there the mask is
    checked against "all kept" and only the output against onnxruntime."""
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(dtype)
    attrs = {"ratio": 0.3} if opset < 12 else {}
    check("Dropout", opset, [x], attrs)
    if opset >= 12:
        check("Dropout", opset, [x], attrs, n_outputs=2)
        return
    y, mask = run_ovpool(make_model("Dropout", opset, [x], attrs, n_outputs=2), {"x0": x})
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == (np.dtype(bool) if opset >= 10 else x.dtype) and mask.shape == x.shape and mask.all()


@pytest.mark.parametrize("opset", [12, 13, 22])
def test_dropout_12_inputs(opset: int) -> None:
    """Dropout-12 ratio input and training_mode=False input: still the identity."""
    x = np.linspace(-1, 1, 10, dtype=np.float32)
    check("Dropout", opset, [x, np.array(0.25, np.float32), np.array(False)], n_outputs=2)
    check("Dropout", opset, [x, np.array(0.25, np.float32), np.array(False)], n_outputs=2, constant=(1, 2))


@pytest.mark.parametrize("opset", [12, 13, 22])
@pytest.mark.parametrize("constant", [(), (1, 2)])
def test_dropout_training_with_ratio_0(opset: int, constant: tuple[int, ...]) -> None:
    """Training mode with ratio 0 drops nothing (scale 1 / (1 - 0) = 1): output = input, mask all
    True, as onnxruntime gives; ratio and training_mode constants or graph inputs."""
    x = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)
    y, mask = check("Dropout", opset, [x, np.array(0.0, np.float32), np.array(True)], n_outputs=2, constant=constant)
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == np.dtype(bool) and mask.all()


@pytest.mark.parametrize("opset", [12, 13, 22])
def test_dropout_training_drops_by_the_schema(opset: int) -> None:
    """Training mode with ratio r: every value is 0 (mask False) or x / (1 - r) (mask True), never
    anything else, as the schema says; about r of them dropped (5,000 values at 0.25: within 3 %).
    Unseeded draws differ from run to run; ratio and training_mode constants or fed."""
    x = np.linspace(1, 2, 5000, dtype=np.float32)
    model = make_model("Dropout", opset, [x, np.array(0.25, np.float32), np.array(True)], n_outputs=2)
    feeds = {"x0": x, "x1": np.array(0.25, np.float32), "x2": np.array(True)}
    y, mask = run_ovpool(model, feeds)
    assert mask.dtype == np.dtype(bool) and abs(1 - mask.mean() - 0.25) < 0.03
    np.testing.assert_array_equal(y, np.where(mask, x * np.float32(1 / 0.75), np.float32(0)))
    assert not np.array_equal(run_ovpool(model, feeds)[1], mask)
    constant = make_model("Dropout", opset, [x, np.array(0.25, np.float32), np.array(True)], constant=(1, 2), n_outputs=2)
    y, mask = run_ovpool(constant, {"x0": x})
    np.testing.assert_array_equal(y, np.where(mask, x * np.float32(1 / 0.75), np.float32(0)))


def test_dropout_seeded_draws_are_random_state_of_the_seed() -> None:
    """With ``seed`` the draws are numpy's RandomState(seed), afresh on every run: the mask is
    ``uniform(0, 1) >= ratio`` of those draws, worked out here (seed 3, ratio 0.5 omitted)."""
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    model = make_model("Dropout", 13, [x, None, np.array(True)], {"seed": 3}, constant=(2,), n_outputs=2)
    want = np.random.RandomState(3).uniform(0, 1.0, x.shape) >= 0.5
    for _ in range(2):
        y, mask = run_ovpool(model, {"x0": x})
        np.testing.assert_array_equal(mask, want)
        np.testing.assert_array_equal(y, np.where(want, x * 2, 0).astype(np.float32))


def test_dropout_refuses_a_ratio_outside_0_1() -> None:
    """A ratio of 1 or more (or below 0) in training mode, or not a scalar, is the node's error."""
    x = np.ones(4, np.float32)
    at_run = make_model("Dropout", 13, [x, np.array(0.5, np.float32), np.array(True)])
    with pytest.raises(ModelError, match=r"dropout_node.*ratio 1: the ratio must lie in \[0, 1\)"):
        run_ovpool(at_run, {"x0": x, "x1": np.array(1.0, np.float32), "x2": np.array(True)})
    with pytest.raises(ModelError, match="ratio has shape"):
        run_ovpool(at_run, {"x0": x, "x1": np.zeros(2, np.float32), "x2": np.array(True)})
    np.testing.assert_array_equal(run_ovpool(at_run, {"x0": x, "x1": np.array(1.0, np.float32), "x2": np.array(False)})[0], x)


def test_dropout_6_is_test() -> None:
    """Dropout-6 (opset 6, below onnxruntime's range): is_test=1 is the identity, the default
    is_test=0 asks for training mode and is refused."""
    x = np.arange(4, dtype=np.float32)
    y, mask = run_ovpool(make_model("Dropout", 6, [x], {"is_test": 1}, n_outputs=2), {"x0": x})
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == np.float32 and (mask == 1).all()
    with pytest.raises(ModelError, match="is_test"):
        run_ovpool(make_model("Dropout", 6, [x]), {"x0": x})


# ---------------------------------------------------------------- Cast

PLAIN = [
    np.float32,
    np.float64,
    np.float16,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.bool_,
]


@st.composite
def _cast_case(draw: st.DrawFn) -> tuple[np.ndarray, type]:
    """An input of any plain type and a target; float inputs are kept within the target's range
    (out of range is undefined by the schema)."""
    source = draw(st.sampled_from(PLAIN))
    target = draw(st.sampled_from(PLAIN))
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    rng = drawn_rng(draw)
    values = rng.uniform(-300, 300, shape) * draw(st.sampled_from([0.01, 1.0]))
    if np.dtype(source).kind == "f" and np.dtype(target).kind in "iu":
        info = np.iinfo(target)
        values = np.clip(values, max(info.min, -60000), min(info.max, 60000))
    if np.dtype(source).kind in "iu":
        info = np.iinfo(source)
        values = np.clip(np.round(values), info.min, info.max)
    return values.astype(source), target


@pytest.mark.parametrize("opset", since_opsets("Cast"))
@settings(max_examples=25)
@given(case=_cast_case())
def test_cast_matches_onnxruntime(opset: int, case: tuple[np.ndarray, type]) -> None:
    x, target = case
    check("Cast", opset, [x], {"to": helper.np_dtype_to_tensor_dtype(np.dtype(target))}, rtol=0, atol=0)


def test_cast_truncates_toward_zero_and_wraps() -> None:
    """float -> int truncates toward zero; int -> narrower int keeps the low bits (200 int16 -> -56 int8)."""
    (out,) = check("Cast", 13, [np.array([2.7, -2.7, 0.5, -0.5, 127.9], np.float32)], {"to": TensorProto.INT8})
    np.testing.assert_array_equal(out, [2, -2, 0, 0, 127])
    (out,) = check("Cast", 13, [np.array([200, -200, 255, 256], np.int16)], {"to": TensorProto.INT8})
    np.testing.assert_array_equal(out, [-56, 56, -1, 0])
    (out,) = check("Cast", 13, [np.array([0.0, -0.0, np.nan, 0.1], np.float32)], {"to": TensorProto.BOOL})
    np.testing.assert_array_equal(out, [False, False, True, True])


@pytest.mark.parametrize("opset", since_opsets("Cast"))
@pytest.mark.parametrize("target", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("source", [np.float16, np.float32, np.float64])
def test_cast_of_one_float(source: type, target: type, opset: int) -> None:
    """One float inside the target's range (cast without the floating-point state) truncates toward
    zero (-0.9 -> 0, 126.7 -> 126; the range's ends included); outside it, and for NaN and the
    infinities, it is numpy's cast of that one value, quietly (numpy's values there differ with the
    array's length: NaN to uint32 is 0 alone, 2147483648 among 16)."""
    info = np.iinfo(target)
    to = {"to": helper.np_dtype_to_tensor_dtype(np.dtype(target))}
    edges = [float(info.min), float(info.max) + 1, -0.9, 0.9, 126.7, -1.0, np.nan, np.inf, -np.inf, 1e30]
    with np.errstate(all="ignore"):
        values = np.array(edges, np.float64).astype(source)
    for value in values:
        (one,) = ovpool_of("Cast", opset, [value.reshape(1)], to)
        if np.isfinite(value) and info.min <= float(value) < float(info.max) + 1:
            assert one.tolist() == [int(value)], value
        else:
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(one, value.reshape(1).astype(target), err_msg=f"{value!r}")


@pytest.mark.parametrize("opset", [9, 13, 19])
def test_cast_to_and_from_string(opset: int) -> None:
    """Numbers to strings as onnxruntime writes them; strings parsed (spaces, exponents, INF/NaN any case)."""
    floats = np.array([0.1, 1.0, -2.5, 1e20, 1.5e-7, np.nan, np.inf, -np.inf, 123456789.0], np.float32)
    check("Cast", opset, [floats], {"to": TensorProto.STRING})
    check("Cast", opset, [floats.astype(np.float64)], {"to": TensorProto.STRING})
    check("Cast", opset, [np.array([1, -2, 2**40], np.int64)], {"to": TensorProto.STRING})
    check("Cast", opset, [np.array([True, False])], {"to": TensorProto.STRING})
    texts = np.array(["1.5", " 2", "inf", "-INF", "NaN", "1e3", "-0.25"], dtype=object)
    check("Cast", opset, [texts], {"to": TensorProto.FLOAT})
    check("Cast", opset, [texts], {"to": TensorProto.DOUBLE})
    check("Cast", opset, [np.array(["1", "-3", "+7", "1.7"], dtype=object)], {"to": TensorProto.INT64})
    check("Cast", opset, [np.array(["1", "0", "-1", "2"], dtype=object)], {"to": TensorProto.BOOL})


def test_cast_1_takes_a_type_name() -> None:
    """Cast-1 (opset 1-5, below onnxruntime's range): ``to`` is a name; checked against numpy."""
    x = np.array([1.7, -1.7, 3.0], np.float32)
    (out,) = run_ovpool(make_model("Cast", 5, [x], {"to": "INT32"}), {"x0": x})
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, -1, 3])
    with pytest.raises(ModelError, match="not an ONNX data type name"):
        run_ovpool(make_model("Cast", 5, [x], {"to": "REAL"}), {"x0": x})


def _two_casts(x: np.ndarray, to: int, saturate: int | None = None) -> np.ndarray:
    """onnxruntime through Cast(to) then Cast(float32): its Python layer cannot return bfloat16 or float 8."""
    import onnxruntime as ort

    extra = {} if saturate is None else {"saturate": saturate}
    nodes = [helper.make_node("Cast", ["x"], ["t"], to=to, **extra), helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)], [helper.make_empty_tensor_value_info("y")]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def test_cast_bfloat16_rounds_to_nearest_even() -> None:
    """bfloat16 (through onnx's dtype mapping): onnxruntime's value, read back through float32."""
    x = np.array([1.00390625, 1.01171875, 1.0 + 2**-8 + 2**-20, 3.4e38, -2.5e-39, np.nan, 65504.0, -0.0], np.float32)
    (out,) = run_ovpool(make_model("Cast", 13, [x], {"to": TensorProto.BFLOAT16}), {"x0": x})
    assert out.dtype == helper.tensor_dtype_to_np_dtype(TensorProto.BFLOAT16)
    assert_same(out.astype(np.float32), _two_casts(x, TensorProto.BFLOAT16), rtol=0, atol=0)
    (back,) = run_ovpool(make_model("Cast", 13, [out], {"to": TensorProto.FLOAT}), {"x0": out})
    assert_same(back, _two_casts(x, TensorProto.BFLOAT16), rtol=0, atol=0)


F8_SPECIAL = np.array(
    [0.0, -0.0, np.nan, np.inf, -np.inf, 1e6, -1e6, 448.0, 464.0, 500.0, 0.3, 2.5, 57344.0, 61440.0], np.float32
)
# The Cast schema's float 8 table, written out for F8_SPECIAL: (type, saturate) -> expected values.
F8_TABLE = {
    ("FLOAT8E4M3FN", 1): [0, -0.0, np.nan, 448, -448, 448, -448, 448, 448, 448, 0.3125, 2.5, 448, 448],
    ("FLOAT8E4M3FN", 0): [0, -0.0, np.nan, np.nan, np.nan, np.nan, np.nan, 448, 448, np.nan, 0.3125, 2.5, np.nan, np.nan],
    ("FLOAT8E4M3FNUZ", 1): [0, 0, np.nan, np.nan, np.nan, 240, -240, 240, 240, 240, 0.3125, 2.5, 240, 240],
    ("FLOAT8E4M3FNUZ", 0): [0, 0, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, 0.3125, 2.5, np.nan, np.nan],
    ("FLOAT8E5M2", 1): [0, -0.0, np.nan, 57344, -57344, 57344, -57344, 448, 448, 512, 0.3125, 2.5, 57344, 57344],
    ("FLOAT8E5M2", 0): [0, -0.0, np.nan, np.inf, -np.inf, np.inf, -np.inf, 448, 448, 512, 0.3125, 2.5, 57344, np.inf],
    ("FLOAT8E5M2FNUZ", 1): [0, 0, np.nan, np.nan, np.nan, 57344, -57344, 448, 448, 512, 0.3125, 2.5, 57344, 57344],
    ("FLOAT8E5M2FNUZ", 0): [0, 0, np.nan, np.nan, np.nan, np.nan, np.nan, 448, 448, 512, 0.3125, 2.5, 57344, np.nan],
}


@pytest.mark.parametrize(("name", "saturate"), sorted(F8_TABLE))
def test_cast_float8_follows_the_schema_table(name: str, saturate: int) -> None:
    """Against the schema's table, not onnxruntime, which differs from it in two places:
    Inf -> 240 instead of NaN in FLOAT8E4M3FNUZ with saturate=1, and 61440 -> NaN instead of Inf in
    FLOAT8E5M2 with saturate=0 (61440 rounds to even 65536, beyond FLT_MAX)."""
    to = getattr(TensorProto, name)
    (out,) = run_ovpool(make_model("Cast", 19, [F8_SPECIAL], {"to": to, "saturate": saturate}), {"x0": F8_SPECIAL})
    assert out.dtype == helper.tensor_dtype_to_np_dtype(to)
    got = out.astype(np.float32)
    want = np.array(F8_TABLE[(name, saturate)], np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[:2]), np.signbit(want[:2]))


def test_cast_float8_e4m3fn_matches_onnxruntime_elsewhere() -> None:
    """Away from the table's special rows onnxruntime agrees (both saturate settings)."""
    x = np.random.default_rng(1).uniform(-400, 400, 200).astype(np.float32)
    for saturate in (0, 1):
        (out,) = run_ovpool(make_model("Cast", 19, [x], {"to": TensorProto.FLOAT8E4M3FN, "saturate": saturate}), {"x0": x})
        np.testing.assert_array_equal(out.astype(np.float32), _two_casts(x, TensorProto.FLOAT8E4M3FN, saturate))


def test_cast_int4_as_onnxruntime() -> None:
    """INT4/UINT4 (Cast-21): onnxruntime rounds floats half away from zero, then keeps four bits."""
    x = np.array([-9.7, -8.5, -1.5, -0.5, 0.5, 1.5, 2.5, 7.4, 7.6, 20], np.float32)
    for name, want in (("INT4", [6, 7, -2, -1, 1, 2, 3, 7, -8, 4]), ("UINT4", [6, 7, 14, 15, 1, 2, 3, 7, 8, 4])):
        (out,) = run_ovpool(make_model("Cast", 21, [x], {"to": getattr(TensorProto, name)}), {"x0": x})
        np.testing.assert_array_equal(out.astype(np.float32), want)


def test_cast_float8_fnuz_infinity_saturates_from_cast_24() -> None:
    """Cast-24's table: with saturate=1 an infinity becomes the largest finite value in the FNUZ
    types too (Cast-19..23: NaN, above)."""
    x = np.array([np.inf, -np.inf, 1e6, np.nan], np.float32)
    for name, largest in (("FLOAT8E4M3FNUZ", 240.0), ("FLOAT8E5M2FNUZ", 57344.0)):
        for opset, want in ((23, [np.nan, np.nan, largest, np.nan]), (24, [largest, -largest, largest, np.nan])):
            (out,) = run_ovpool(make_model("Cast", opset, [x], {"to": getattr(TensorProto, name)}), {"x0": x})
            np.testing.assert_array_equal(out.astype(np.float32), np.array(want, np.float32))


def test_cast_narrow_integers_keep_the_low_bits() -> None:
    """INT2/UINT2 (Cast-25) as INT4 above: rounded half away from zero, then two (two's complement) bits."""
    x = np.array([-3.0, -2.5, -1.0, 1.5, 2.0, 3.0, 5.0, np.nan], np.float32)
    for name, want in (("INT2", [1, 1, -1, -2, -2, -1, 1, 0]), ("UINT2", [1, 1, 3, 2, 2, 3, 1, 0])):
        (out,) = run_ovpool(make_model("Cast", 25, [x], {"to": getattr(TensorProto, name)}), {"x0": x})
        np.testing.assert_array_equal(out.astype(np.float32), want)


def test_cast_float4e2m1_follows_the_float4_table() -> None:
    """ONNX's float 4 document (technical/float4): round to nearest even within [-6, 6], beyond
    and +-inf saturate to +-6, NaN to 6; written out here value by value."""
    x = np.array(
        [0.48, 0.25, 0.75, 1.05, 1.25, 1.75, 2.5, 3.5, 5.0, -3.5, -8, 9, 1e6, 1e-7, -0.1, np.nan, np.inf, -np.inf], np.float32
    )
    want = [0.5, 0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, -4.0, -6.0, 6.0, 6.0, 0.0, -0.0, 6.0, 6.0, -6.0]
    for opset in (23, 25):
        (out,) = run_ovpool(make_model("Cast", opset, [x], {"to": TensorProto.FLOAT4E2M1}), {"x0": x})
        got = out.astype(np.float32)
        np.testing.assert_array_equal(got, np.array(want, np.float32))
        assert np.signbit(got[14])


# (round_mode, saturate) -> the Cast schema's FLOAT8E8M0 rules written out for E8M0_INPUT
E8M0_INPUT = np.array([0.0, 0.124, 0.25, 1.1, 1.4, 1.5, 1.9, 3e38, np.inf, np.nan, 1e-40], np.float32)
E8M0_TABLE = {
    ("up", 1): [2.0**-127, 0.125, 0.25, 2, 2, 2, 2, 2.0**127, 2.0**127, np.nan, 2.0**-127],
    ("down", 1): [2.0**-127, 0.0625, 0.25, 1, 1, 1, 1, 2.0**127, 2.0**127, np.nan, 2.0**-127],
    ("nearest", 1): [2.0**-127, 0.125, 0.25, 1, 1, 2, 2, 2.0**127, 2.0**127, np.nan, 2.0**-127],
    ("nearest", 0): [np.nan, 0.125, 0.25, 1, 1, 2, 2, np.nan, np.nan, np.nan, np.nan],
}


@pytest.mark.parametrize(("round_mode", "saturate"), sorted(E8M0_TABLE))
def test_cast_float8e8m0_follows_the_schema(round_mode: str, saturate: int) -> None:
    """Cast-24's FLOAT8E8M0 rules (powers of two; 3e38 lies beyond 2^127, 1e-40 below 2^-127)."""
    attrs = {"to": TensorProto.FLOAT8E8M0, "round_mode": round_mode, "saturate": saturate}
    (out,) = run_ovpool(make_model("Cast", 24, [E8M0_INPUT], attrs), {"x0": E8M0_INPUT})
    np.testing.assert_array_equal(out.astype(np.float64), np.array(E8M0_TABLE[(round_mode, saturate)], np.float64))


def test_cast_refuses_an_unknown_round_mode() -> None:
    x = np.ones(3, np.float32)
    with pytest.raises(ModelError, match="round_mode"):
        run_ovpool(make_model("Cast", 24, [x], {"to": TensorProto.FLOAT8E8M0, "round_mode": "even"}), {"x0": x})


@pytest.mark.parametrize("name", ["COMPLEX64", "COMPLEX128"])
def test_cast_refuses_types_it_does_not_do(name: str) -> None:
    x = np.ones(3, np.float32)
    with pytest.raises(ModelError, match=f"{name}: ovpool does not cast"):
        run_ovpool(make_model("Cast", 25, [x], {"to": getattr(TensorProto, name)}), {"x0": x})


@pytest.mark.parametrize("opset", since_opsets("CastLike"))
@settings(max_examples=15)
@given(case=_cast_case())
def test_castlike_matches_onnxruntime(opset: int, case: tuple[np.ndarray, type]) -> None:
    x, target = case
    check("CastLike", opset, [x, np.zeros(2, dtype=target)], rtol=0, atol=0)
    check("CastLike", opset, [x, np.zeros(2, dtype=target)], constant=(1,), rtol=0, atol=0)


# ---------------------------------------------------------------- Shape, Size, ConstantOfShape


@st.composite
def _any_tensor(draw: st.DrawFn) -> np.ndarray:
    rank = draw(st.integers(0, 5))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    return np.zeros(shape, dtype=draw(st.sampled_from([np.float32, np.int64, np.bool_, np.float16])))


@pytest.mark.parametrize("opset", since_opsets("Shape"))
@settings(max_examples=20)
@given(x=_any_tensor(), start=st.none() | st.integers(-7, 7), end=st.none() | st.integers(-7, 7))
def test_shape_matches_onnxruntime(opset: int, x: np.ndarray, start: int | None, end: int | None) -> None:
    attrs = {}
    if opset >= 15:
        attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    check("Shape", opset, [x], attrs)


def test_shape_15_clamps() -> None:
    """The schema's examples: (2, 3, 4, 5) start=-3 end=-1 -> [3, 4]; start=10 -> []; end=-10 -> []."""
    x = np.zeros((2, 3, 4, 5), np.float32)
    for attrs, want in (
        ({"start": -3, "end": -1}, [3, 4]),
        ({"start": 10}, []),
        ({"end": -10}, []),
        ({"start": 1, "end": 99}, [3, 4, 5]),
    ):
        (out,) = check("Shape", 15, [x], attrs)
        assert out.tolist() == want


@pytest.mark.parametrize("opset", since_opsets("Size"))
@settings(max_examples=10)
@given(x=_any_tensor())
def test_size_matches_onnxruntime(opset: int, x: np.ndarray) -> None:
    check("Size", opset, [x])


@pytest.mark.parametrize("opset", since_opsets("ConstantOfShape"))
@settings(max_examples=15)
@given(
    dims=st.lists(st.integers(0, 4), max_size=4),
    value=st.none()
    | st.sampled_from([np.float32(1.5), np.int32(7), np.int64(-3), np.float16(2), np.bool_(True), np.float64(0.25)]),
    constant=st.booleans(),
)
def test_constant_of_shape_matches_onnxruntime(opset: int, dims: list[int], value: Any, constant: bool) -> None:
    attrs = {} if value is None else {"value": numpy_helper.from_array(np.array([value]))}
    check("ConstantOfShape", opset, [np.array(dims, np.int64)], attrs, constant=(0,) if constant else ())


def test_constant_of_shape_refuses_negative_dims() -> None:
    model = make_model("ConstantOfShape", 9, [np.array([2, -1], np.int64)])
    with pytest.raises(ModelError, match="negative dim"):
        run_ovpool(model, {"x0": np.array([2, -1], np.int64)})


@pytest.mark.parametrize("opset", since_opsets("ConstantOfShape"))
def test_constant_of_shape_over_the_budget_is_refused_before_any_work(opset: int) -> None:
    """Dims from a graph input (shape inference cannot know them) within the memory budget before
    the output is allocated: [1, 40000, 40000] of the default float32 is 6.0 GiB."""
    match = r"constantofshape_node.*output \[1, 40000, 40000\] float32 would need 6\.0 GiB"
    with pytest.raises(MemoryBudgetError, match=match):
        ovpool_of("ConstantOfShape", opset, [np.array([1, 40000, 40000], np.int64)])


# ---------------------------------------------------------------- pooling in the table


POOL_SMOKE = {
    "AveragePool": ({"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1, "count_include_pad": 1, "pads": [1, 1, 0, 0]}, 1),
    "MaxPool": ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 2),
    "GlobalAveragePool": ({}, 1),
    "GlobalMaxPool": ({}, 1),
}


@pytest.mark.parametrize(("op", "opset"), [(op, opset) for op in POOL_SMOKE for opset in since_opsets(op)])
def test_pooling_smoke(op: str, opset: int) -> None:
    """Pooling runs ovpool's kernels through the table at each since-version (tested in depth elsewhere)."""
    attrs, n_outputs = POOL_SMOKE[op]
    x = np.random.default_rng(2).standard_normal((1, 2, 7, 6)).astype(np.float32)
    if op == "AveragePool" and opset < 10:
        attrs = {k: v for k, v in attrs.items() if k != "ceil_mode"}
    if op == "MaxPool" and opset < 8:
        n_outputs = 1
    check(op, opset, [x], attrs, n_outputs=n_outputs)


@pytest.mark.parametrize("opset", since_opsets("MaxUnpool"))
def test_max_unpool_smoke(opset: int) -> None:
    x = np.random.default_rng(3).standard_normal((1, 1, 4, 4)).astype(np.float32)
    values, indices = check("MaxPool", max(opset, 8), [x], {"kernel_shape": [2, 2], "strides": [2, 2]}, n_outputs=2)
    check("MaxUnpool", opset, [values, indices], {"kernel_shape": [2, 2], "strides": [2, 2]})


def test_pooling_refuses_bad_attributes_at_prepare() -> None:
    model = make_model("MaxPool", 12, [np.zeros((1, 1, 4, 4), np.float32)], {"kernel_shape": [2, 2], "strides": [0, 1]})
    with pytest.raises(OvpoolError, match="strides"):
        run_ovpool(model, {})


# ---------------------------------------------------------------- ONNX's node test cases

# Casts of floats to 4- and 2-bit integers: the schema defines a float in the target's range only
# (out of it "undefined"); onnx makes the expected data with ml_dtypes, whose answer there moved
# between versions (0.5 wraps -9 to 7 in INT4, 0.7 gives 0).
NARROW_FROM_FLOAT = r"^test_cast(like)?_(FLOAT|FLOAT16|BFLOAT16|DOUBLE)_to_U?INT[24](_expanded)?$"
_NARROW_RANGES = {"INT4": (-8, 7), "UINT4": (0, 15), "INT2": (-2, 1), "UINT2": (0, 3)}
# ... and to FLOAT4E2M1, where ONNX's float 4 document makes NaN 6 and ml_dtypes 0.7 gives -0.
FLOAT4_FROM_FLOAT = r"^test_cast(like)?_(FLOAT|FLOAT16|BFLOAT16|DOUBLE)_to_FLOAT4E2M1(_expanded)?$"

# Cases whose expected values are written with 4 decimals (ovpool agrees with onnxruntime to 1e-7).
NODE_CASE_ATOL = {"test_averagepool_2d_ceil_last_window_starts_on_pad": 1e-4}
# Cases (name patterns) whose expected value ovpool does not produce, and why.
NODE_CASE_SKIPS = {
    NARROW_FROM_FLOAT: "a float out of a narrow integer's range is undefined (Cast schema): test_narrow_int_cast_node_cases",
    FLOAT4_FROM_FLOAT: "NaN is 6 by ONNX's float 4 document, not ml_dtypes' -0: test_float4_cast_node_cases",
    r"maxunpool_export_with_output_shape": "reads indices in the inferred shape; SEMANTICS.md: indices are positions in the output",
}


# ---------------------------------------------------------------- BitCast

SAME_WIDTH = {
    1: ("int8", "uint8", "bool"),
    2: ("int16", "uint16", "float16"),
    4: ("int32", "uint32", "float32"),
    8: ("int64", "uint64", "float64"),
}
STRUCT_CODES = {"int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "float16": "e", "int32": "i", "uint32": "I"}
STRUCT_CODES |= {"float32": "f", "int64": "q", "uint64": "Q", "float64": "d", "bool": "?"}


@pytest.mark.parametrize("width", sorted(SAME_WIDTH))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_bit_cast(width: int, data: st.DataObject) -> None:
    """BitCast-26 (its only version) between every pair of same-width numpy types against
    onnxruntime and the bits read element by element with ``struct`` (little endian)."""
    import struct

    source, target = data.draw(st.permutations(SAME_WIDTH[width]))[:2]
    rng = drawn_rng(data.draw)
    shape = tuple(data.draw(st.lists(st.integers(0, 3), max_size=3)))
    if "bool" in (source, target):  # bool bytes are 0 or 1 (other bytes: below)
        x = rng.integers(0, 2, shape).astype(source)
    else:
        x = rng.integers(0, 256, (*shape, width), dtype=np.uint8).view(source).reshape(shape)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(target))
    (y,) = ovpool_of("BitCast", 26, [x], {"to": elem})
    expected = [
        struct.unpack("<" + STRUCT_CODES[target], struct.pack("<" + STRUCT_CODES[source], v))[0] for v in x.reshape(-1).tolist()
    ]
    assert_same(y.reshape(-1), np.array(expected, dtype=target))
    if "bool" not in (source, target):  # onnxruntime 1.31 has no bool BitCast
        check("BitCast", 26, [x], {"to": elem})


def test_bit_cast_sub_byte_and_bool() -> None:
    """4-bit types (held one to a byte) keep their 4 bits: INT4 -1 is UINT4 15, FLOAT4E2M1 -0.5
    (1001) is INT4 -7; a non-zero byte is a true bool (uint8 2 -> true)."""
    import ml_dtypes

    (y,) = ovpool_of("BitCast", 26, [np.array([-1, 7, -8], ml_dtypes.int4)], {"to": TensorProto.UINT4})
    assert y.dtype == ml_dtypes.uint4 and y.astype(np.int64).tolist() == [15, 7, 8]
    (y,) = ovpool_of("BitCast", 26, [np.array([-0.5, 6.0], ml_dtypes.float4_e2m1fn)], {"to": TensorProto.INT4})
    assert y.astype(np.int64).tolist() == [-7, 7]
    (y,) = ovpool_of("BitCast", 26, [np.array([0, 2, 255], np.uint8)], {"to": TensorProto.BOOL})
    assert y.dtype == np.bool_ and y.tolist() == [False, True, True]
    (y,) = ovpool_of("BitCast", 26, [np.array([1.0], ml_dtypes.bfloat16)], {"to": TensorProto.INT16})
    assert y.tolist() == [0x3F80]


@pytest.mark.parametrize(
    ("x", "attrs", "match"),
    [
        (np.float32([1]), {"to": TensorProto.INT64}, "to"),  # 32 bits to 64
        (np.float32([1]), {"to": TensorProto.STRING}, "to"),
        (np.float32([1]), {}, "to"),
        (np.array(["a"], dtype=object), {"to": TensorProto.UINT8}, "object"),
    ],
    ids=["width", "string-target", "no-to", "string-input"],
)
def test_bit_cast_errors(x: np.ndarray, attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(ModelError, match=match):
        ovpool_of("BitCast", 26, [x], attrs)


# clip's module holds two Identity cases (Clip's default expanded)
@pytest.mark.parametrize("case", node_case_params(BASIC_OPS + POOL_OPS, modules=["clip"]))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case, atol=NODE_CASE_ATOL.get(case.name, 1e-6), skip=NODE_CASE_SKIPS)


def _cast_case_runs(case: Any) -> Any:
    """Each data set of a Cast/CastLike node case: (its input as float64, ovpool's output, the
    expected output), values given as TensorProtos read by ovpool's tensor_value."""
    from ovpool.engine.ops.casts import tensor_value

    def value(v: Any) -> Any:
        return tensor_value(v) if isinstance(v, onnx.TensorProto) else v

    for inputs, expected in case.data_sets:
        feeds = {info.name: value(v) for info, v in zip(case.model.graph.input, inputs)}
        (out,) = run_ovpool(case.model, feeds)
        yield np.asarray(value(inputs[0])).astype(np.float64), out, np.asarray(value(expected[0]))


@pytest.mark.parametrize("case", [p for p in node_case_params(["Cast", "CastLike"]) if re.search(NARROW_FROM_FLOAT, p.id)])
def test_narrow_int_cast_node_cases(case: Any) -> None:
    """ONNX's float -> INT4/UINT4/INT2/UINT2 cases, compared where the schema defines the value: the
    elements whose input lies in the target's range (ovpool's choice beyond it is tested against
    onnxruntime in test_cast_int4_as_onnxruntime)."""
    low, high = _NARROW_RANGES[re.search(r"_to_(U?INT[24])", case.name).group(1)]
    for x, out, want in _cast_case_runs(case):
        inside = (x >= low) & (x <= high)
        assert inside.sum() >= 4 and out.dtype == want.dtype
        np.testing.assert_array_equal(out.astype(np.int64)[inside], want.astype(np.int64)[inside])


@pytest.mark.parametrize("case", [p for p in node_case_params(["Cast", "CastLike"]) if re.search(FLOAT4_FROM_FLOAT, p.id)])
def test_float4_cast_node_cases(case: Any) -> None:
    """ONNX's float -> FLOAT4E2M1 cases: the expected data where the input is a number, 6 where it
    is NaN (the float 4 document's table: "NaN | 6")."""
    for x, out, want in _cast_case_runs(case):
        assert np.isnan(x).any() and out.dtype == want.dtype
        np.testing.assert_array_equal(out.astype(np.float64), np.where(np.isnan(x), 6.0, want.astype(np.float64)))
