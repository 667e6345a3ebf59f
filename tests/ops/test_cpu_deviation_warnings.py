"""The OpenVINO CPU departures that depend on data are never silent where the conversion can see
them: ``ovpool convert`` warns once per node that can meet one (``cpu_deviations.DEVIATIONS``'s
detectors), and not of a node that cannot. Each case is a one-node model converted for real; the
departures themselves are repro'd in ``openvino_known.py``."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from harness import make_model
from onnx import TensorProto, helper
from runtime_support import invoke

import ovpool
from ovpool.ov.cpu_deviations import DEVIATIONS, CpuDeviationWarning, deviation_notes


def _warned(proto: onnx.ModelProto) -> list[str]:
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        ovpool.convert_model(proto)
    return [str(n.message) for n in notes if issubclass(n.category, CpuDeviationWarning)]


def _f(*dims: int) -> np.ndarray:
    return np.zeros(dims, np.float32)


def _resize(dtype: type, mode: str) -> onnx.ModelProto:
    return make_model(
        "Resize", 13, (np.zeros((1, 1, 2, 2), dtype), None, np.array([1, 1, 2, 2], np.float32)), {"mode": mode}, constant=(2,)
    )


CASES = {
    "NonMaxSuppression": (
        make_model("NonMaxSuppression", 11, (_f(1, 3, 4), _f(1, 1, 3), np.array([3], np.int64)), constant=(2,)),
        "equal scores",
    ),
    "integer Resize, linear": (_resize(np.int32, "linear"), "integer data, linear or cubic"),
    "Gemm beta 0": (make_model("Gemm", 13, (_f(2, 3), _f(3, 4), _f(2, 4)), {"beta": 0.0}), "beta = 0"),
    "float64 input": (make_model("Relu", 14, (np.zeros((2, 3), np.float64),)), "float64 data"),
    "ReduceMax int64": (make_model("ReduceMax", 13, (np.zeros((2, 3), np.int64),), {"axes": [1]}), "an axis of length 0"),
    "Slice ends fed": (
        make_model("Slice", 13, (_f(5), np.array([0], np.int64), np.array([5], np.int64)), constant=()),
        "int64 values beyond int32",
    ),
    "int64 constant beyond int32": (
        make_model("Add", 14, (np.zeros(2, np.int64), np.array([2**40, 1], np.int64)), constant=(1,)),
        "int64 values beyond int32",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_node_that_can_meet_a_departure_is_warned_of_by_name(case: str) -> None:
    proto, when = CASES[case]
    notes = _warned(proto)
    assert len(notes) == 1, notes
    assert "OpenVINO CPU computes otherwise on" in notes[0] and when in notes[0], notes
    assert "--verify" in notes[0]


QUIET = {
    "nearest integer Resize": _resize(np.int32, "nearest"),
    "float Resize, linear": _resize(np.float32, "linear"),
    "Gemm beta 1": make_model("Gemm", 13, (_f(2, 3), _f(3, 4), _f(2, 4)), {"beta": 1.0}),
    "ReduceMax float": make_model("ReduceMax", 13, (_f(2, 3),), {"axes": [1]}),
    "Slice of constant sentinels": make_model(
        "Slice",
        13,
        (
            _f(5),
            np.array([2**63 - 1], np.int64),
            np.array([-(2**63)], np.int64),
            np.array([0], np.int64),
            np.array([-1], np.int64),
        ),
        constant=(1, 2, 3, 4),
    ),
}


@pytest.mark.parametrize("case", sorted(QUIET))
def test_a_node_that_cannot_meet_one_is_not_warned_of(case: str) -> None:
    assert _warned(QUIET[case]) == []


def test_float64_is_one_line_for_the_model_not_one_per_node() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])],
    )
    notes = deviation_notes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]))
    assert notes == [notes[0]] and notes[0].startswith("input 'x' (float64): "), notes


def test_an_undeclared_type_is_found_by_shape_inference() -> None:
    """The Resize reads a Relu's output, which no value_info types: inference says int32."""
    nodes = [
        helper.make_node("Abs", ["x"], ["a"]),
        helper.make_node("Resize", ["a", "", "scales"], ["y"], mode="linear", name="up"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT32, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])],
    )
    notes = deviation_notes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert [n.split(":")[0] for n in notes] == ["node 'up' (Resize)"], notes


def test_an_int64_constant_attribute_beyond_int32_is_warned_of() -> None:
    """Constant-12's ``value_ints`` stands for an int64 tensor like ``value`` does."""
    nodes = [
        helper.make_node("Constant", [], ["c"], value_ints=[2**40, 1]),
        helper.make_node("Add", ["x", "c"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2])],
    )
    notes = deviation_notes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert [n.split(":")[0] for n in notes] == ["node 'add' (Add)"], notes


def test_every_row_warns_or_says_why_not() -> None:
    assert all((row.detect is None) == bool(row.unwarned) for row in DEVIATIONS)


def test_the_cli_prints_the_warning_and_writes_the_model(tmp_path, capsys) -> None:
    proto, _ = CASES["NonMaxSuppression"]
    source = tmp_path / "nms.onnx"
    onnx.save(proto, source)
    code, _, err = invoke(capsys, "convert", source, "-o", tmp_path / "nms.xml")
    assert code == 0, err
    assert (tmp_path / "nms.xml").is_file()
    assert "NonMaxSuppression): OpenVINO CPU computes otherwise on equal scores" in err, err


def test_the_bundled_example_converts_without_a_warning() -> None:
    from importlib.resources import files

    path = files("ovpool.examples") / "tiny_pool.onnx"
    assert _warned(onnx.load(str(path))) == []
