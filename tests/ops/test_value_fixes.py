"""OpenVINO CPU departures on some data that ovpool's conversion computes exactly
(``ovpool.ov.value_fixes``): each op at every since-version in force in opsets 7-22 it is lowered
at, on the data that shows the departure (ties, NaN, 8-bit overflow, empty axes, small norms,
shifts by the width), converted by ``ovpool convert``, run on OpenVINO CPU at f32 against
onnxruntime (BitShift against the schema computed here with Python integers: onnxruntime has no
uint16 kernel), and the IR on numpy against OpenVINO CPU (``on_openvino.outcome_of``). And a graph input of
unknown rank, which OpenVINO CPU does not compile, refused at convert time by name."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from harness import drawn_rng, examples, feeds_of, make_model, run_ort, since_opsets, tolerance
from hypothesis import given
from hypothesis import strategies as st
from on_openvino import outcome_of
from onnx import helper

pytest.importorskip("openvino")
pytestmark = pytest.mark.openvino


def agrees(op: str, opset: int, inputs: list[Any], attrs: dict[str, Any], n_outputs: int = 1, **options: Any) -> None:
    """The one-node model through ovpool's conversion agrees on OpenVINO CPU with the expected
    outputs (``expected``, else onnxruntime's) and on numpy with OpenVINO CPU."""
    expected = options.pop("expected", None)
    model = make_model(op, opset, inputs, attrs, n_outputs, **options)
    feeds = feeds_of(model, inputs)
    if expected is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = run_ort(model, feeds)
    dtype = next((np.asarray(v).dtype for v in inputs if v is not None), np.dtype(np.float32))
    case, outcome, stage, detail = outcome_of(model, feeds, expected, **tolerance(dtype))
    assert outcome == "agrees", f"{case.describe()}: {stage}: {detail}"


def _ties(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Small integers as float32: many equal values per row."""
    return rng.integers(-2, 3, shape).astype(np.float32)


@pytest.mark.parametrize("opset", since_opsets("TopK"))
@examples(3)
@given(data=st.data())
def test_top_k_ties_go_to_the_lower_index(opset: int, data: st.DataObject) -> None:
    rng = drawn_rng(data.draw)
    shape = (data.draw(st.integers(1, 4)), data.draw(st.integers(2, 8)))
    x, k = _ties(rng, shape), data.draw(st.integers(1, shape[1]))
    if opset < 10:
        agrees("TopK", opset, [x], {"k": k, "axis": 1}, 2)
        return
    attrs = {"largest": data.draw(st.integers(0, 1))} if opset >= 11 else {}
    agrees("TopK", opset, [x, np.array([k], np.int64)], attrs, 2, constant=(1,) if data.draw(st.booleans()) else ())


def test_top_k_of_zeros_with_k_from_a_graph_input() -> None:
    """The repro of the departure: OpenVINO's own conversion gives indices 1, 2, 0."""
    agrees("TopK", 11, [np.zeros((1, 6), np.float32), np.array([3], np.int64)], {}, 2)


@pytest.mark.parametrize("opset", since_opsets("TopK", lowest=10))
def test_top_k_of_k_0_fed_at_run_time_is_empty(opset: int) -> None:
    """OpenVINO CPU refuses a TopK of K = 0; ONNX gives [2, 0] outputs for axis 1 of [2, 5]."""
    agrees("TopK", opset, [np.ones((2, 5), np.float32), np.array([0], np.int64)], {"axis": 1}, 2)


@pytest.mark.parametrize("opset", since_opsets("Hardmax"))
@examples(3)
@given(data=st.data())
def test_hardmax_picks_the_first_maximum(opset: int, data: st.DataObject) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    axis = data.draw(st.integers(-len(shape) if opset >= 11 else 0, len(shape) - 1))
    agrees("Hardmax", opset, [_ties(drawn_rng(data.draw), shape)], {"axis": axis})


NAN_A = np.array([np.nan, 1, 2, np.nan, -np.inf, 3], np.float32)
NAN_B = np.array([1, np.nan, 1, np.nan, -np.inf, 3], np.float32)


@pytest.mark.parametrize(("op", "opset"), [(op, o) for op in ("Greater", "GreaterOrEqual") for o in since_opsets(op)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_greater_with_nan_is_false(op: str, opset: int, dtype: type) -> None:
    if opset < 9 and dtype != np.float32:
        pytest.skip("Greater-7 takes float types only")
    a, b = (np.nan_to_num(v, nan=7, neginf=-9).astype(dtype) if dtype == np.int32 else v.astype(dtype) for v in (NAN_A, NAN_B))
    agrees(op, opset, [a, b], {})


@pytest.mark.parametrize("opset", since_opsets("Cast"))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_cast_of_nan_to_bool_is_true(opset: int, dtype: type) -> None:
    x = np.array([np.nan, 0.0, -0.0, 1e-4, -np.inf], dtype)
    agrees("Cast", opset, [x], {"to": onnx.TensorProto.BOOL})


@pytest.mark.parametrize("opset", since_opsets("CastLike"))
def test_cast_like_of_nan_to_bool_is_true(opset: int) -> None:
    x = np.array([np.nan, 0.0, -0.0, 1e-4, -np.inf], np.float32)
    agrees("CastLike", opset, [x, np.array([True])], {}, constant=(1,))


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_8_bit_arithmetic_wraps(op: str, dtype: type) -> None:
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, 100, 7, info.max, 0], dtype)
    b = np.array([[info.max], [info.min], [3]], dtype)
    for opset in since_opsets(op, lowest=14):
        agrees(op, opset, [a, b], {})


@pytest.mark.parametrize(("op", "opset"), [(op, o) for op in ("ReduceMax", "ReduceMin") for o in since_opsets(op)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8])
def test_reduce_max_min_over_an_empty_axis(op: str, opset: int, dtype: type) -> None:
    if dtype == np.int8 and opset < 12:
        pytest.skip("8-bit ReduceMax/ReduceMin from version 12")
    x = np.ones((2, 0, 3), dtype)
    if opset >= 18:
        agrees(op, opset, [x, np.array([1], np.int64)], {"keepdims": 0}, constant=(1,))
    else:
        agrees(op, opset, [x], {"axes": [1]})


@pytest.mark.parametrize("opset", since_opsets("Flatten"))
@pytest.mark.parametrize(
    ("shape", "axis"), [((4, 1, 2, 0), 2), ((0, 1, 4, 0), 4), ((3, 0), 0), ((0, 5), 1), ((1, 1, 0, 2), -2), ((2, 0, 2, 2), -1)]
)
def test_flatten_of_an_input_with_a_zero_dim(opset: int, shape: tuple[int, ...], axis: int) -> None:
    if axis < 0 and opset < 11:
        pytest.skip("negative axes from Flatten-11")
    agrees("Flatten", opset, [np.zeros(shape, np.float32)], {"axis": axis})


@pytest.mark.parametrize("opset", since_opsets("Expand"))
@pytest.mark.parametrize("constant", [(), (1,)])
def test_expand_to_a_rank_0_result_keeps_rank_0(opset: int, constant: tuple[int, ...]) -> None:
    agrees("Expand", opset, [np.float32(3), np.array([], np.int64)], {}, constant=constant)


@pytest.mark.parametrize("opset", since_opsets("LpNormalization"))
@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_without_eps(opset: int, p: int) -> None:
    x = np.array([[[1e-3], [-2e-2], [0.0], [3.0]], [[1e-3], [2e-3], [0.0], [-4.0]]], np.float32)
    agrees("LpNormalization", opset, [x], {"axis": -1, "p": p})
    agrees("LpNormalization", opset, [x], {"axis": 0, "p": p})


def _shifted(x: np.ndarray, s: np.ndarray, left: bool) -> np.ndarray:
    """The schema with Python integers: the bits shifted out of the type are lost (a shift by the
    width or more gives 0)."""
    width = x.dtype.itemsize * 8
    out = [((int(a) << int(b)) if left else (int(a) >> int(b))) % 2**width for a, b in np.broadcast(x, s)]
    return np.array(out, x.dtype).reshape(np.broadcast(x, s).shape)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@examples(3)
@given(data=st.data())
def test_bit_shift_keeps_the_low_bits(dtype: type, direction: str, data: st.DataObject) -> None:
    rng = drawn_rng(data.draw)
    width = np.dtype(dtype).itemsize * 8
    x = rng.integers(0, 2**width, 12, dtype=np.uint64).astype(dtype)
    s = np.concatenate([[0, 1, width - 1, width, width + 1], rng.integers(0, width, 7)]).astype(dtype)
    x[:3] = [2**width - 1, 2 ** (width - 1) + 5, 1]
    agrees("BitShift", 11, [x, s], {"direction": direction}, expected=[_shifted(x, s, direction == "LEFT")])


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8])
def test_shrink_of_integers_truncates(dtype: type) -> None:
    x = np.array([5, 0, -7, 3, 2, -2, 100], dtype) if dtype != np.uint8 else np.array([5, 0, 7, 3, 2, 100], dtype)
    agrees("Shrink", 9, [x], {"bias": 1e-6, "lambd": 1.5})
    agrees("Shrink", 9, [x], {"bias": 1.5, "lambd": 2.0})


@pytest.mark.parametrize(("op", "opset"), [(op, o) for op in ("ReduceLogSum", "ReduceLogSumExp") for o in since_opsets(op)])
def test_log_reductions_of_integers_truncate(op: str, opset: int) -> None:
    x = np.array([[10, 10, 0], [3, 1, 16], [20, 0, 0]], np.int32)
    if opset >= 18:
        agrees(op, opset, [x, np.array([1], np.int64)], {"keepdims": 0}, constant=(1,))
    else:
        agrees(op, opset, [x], {"axes": [1], "keepdims": 0})


@pytest.mark.parametrize(("op", "opset"), [(op, o) for op in ("Sum", "Mean") for o in since_opsets(op)])
def test_float16_sum_and_mean_round_once(op: str, opset: int) -> None:
    inputs = [np.float16([0.1, 1.5]), np.float16([1000, 3.25]), np.float16([-1000, 0.001]), np.float16([0.3, 0.7])]
    agrees(op, opset, inputs, {})


def test_an_input_of_unknown_rank_is_refused_by_name_and_converts_with_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ONNX input without a shape: one line naming it and ``--input``, exit 1, nothing written;
    with ``--input`` the IR compiles on OpenVINO CPU."""
    import openvino as ov

    from ovpool.cli.app import main

    x, y = (helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in ("pixels", "y"))
    graph = helper.make_graph([helper.make_node("Relu", ["pixels"], ["y"])], "g", [x], [y])
    source = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), source)

    def convert(*flags: str) -> tuple[int, str]:
        monkeypatch.setattr(sys, "argv", ["ovpool", "convert", str(source), "--output-dir", str(tmp_path / "out"), *flags])
        with pytest.raises(SystemExit) as exit_info:
            main()
        return int(exit_info.value.code or 0), capsys.readouterr().err.strip()

    code, err = convert()
    assert code == 1 and len(err.splitlines()) == 1, err
    assert re.match(rf"^error: {re.escape(str(source))}: input 'pixels' has no shape \(unknown rank\).*--input", err), err
    assert not (tmp_path / "out").exists()
    assert convert("--input", "pixels[?,2]")[0] == 0
    compiled = ov.Core().compile_model(str(tmp_path / "out" / "m.xml"), "CPU")
    np.testing.assert_array_equal(compiled({"pixels": np.float32([[-1, 2]])})[0], [[0, 2]])


@pytest.mark.parametrize(
    ("op", "opset", "attrs", "said"),
    [
        ("Hardmax", 7, {"axis": 5}, "axis 5 is out of range for a rank-2 input"),
        ("LpNormalization", 1, {"p": 3}, "p = 3: LpNormalization takes 1 or 2"),
        ("TopK", 11, {"axis": 5}, "Axis 5 out of the tensor rank range"),
    ],
)
def test_bad_attributes_of_lowered_nodes_are_one_line_naming_the_node(op: str, opset: int, attrs: dict, said: str) -> None:
    from ovpool.errors import OvpoolError
    from ovpool.ov.from_onnx import onnx_to_ov_model

    inputs: list[Any] = [np.zeros((2, 3), np.float32)] + ([np.array([2], np.int64)] if op == "TopK" else [])
    model = make_model(op, opset, inputs, attrs, 2 if op == "TopK" else 1)
    with pytest.raises(OvpoolError) as error:
        onnx_to_ov_model(model)
    text = str(error.value)
    assert "\n" not in text and f"node '{model.graph.node[0].name}'" in text and said in text, text
