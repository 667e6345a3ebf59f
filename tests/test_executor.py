"""Whole models on the numpy executor, its errors, and the bundled example."""

from __future__ import annotations

from importlib.resources import files

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ovpool

EXAMPLE = files("ovpool.examples") / "tiny_pool.onnx"


def test_bundled_example_matches_onnxruntime():
    """onnxruntime gets these pools right (ceil with include-pad, indices); it is a peer, not the oracle."""
    ort = pytest.importorskip("onnxruntime")
    x = np.random.default_rng(1).standard_normal((1, 3, 14, 14)).astype(np.float32)
    got = ovpool.run(str(EXAMPLE), {"input": x}, device="numpy")
    want = ort.InferenceSession(str(EXAMPLE), providers=["CPUExecutionProvider"]).run(None, {"input": x})
    np.testing.assert_allclose(got["output"], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["pool1_indices"], want[1])


def test_model_proto_and_path_agree():
    x = np.ones((1, 3, 14, 14), np.float32)
    a = ovpool.run(onnx.load(str(EXAMPLE)), {"input": x}, device="numpy")
    b = ovpool.run(str(EXAMPLE), {"input": x}, device="numpy")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_input_names_are_checked():
    with pytest.raises(ovpool.ModelError, match="missing input\\(s\\) 'input'; unknown input\\(s\\) 'x'"):
        ovpool.run(str(EXAMPLE), {"x": np.ones((1, 3, 14, 14), np.float32)}, device="numpy")


def _unpool_model(shape, out_shape=None):
    node = helper.make_node(
        "MaxUnpool", ["x", "i"] + (["s"] if out_shape else []), ["y"], name="up", kernel_shape=[2, 2], strides=[2, 2]
    )
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
        helper.make_tensor_value_info("i", TensorProto.INT64, shape),
    ]
    if out_shape:
        inputs.append(helper.make_tensor_value_info("s", TensorProto.INT64, [4]))
    graph = helper.make_graph([node], "u", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)


@pytest.mark.parametrize("bad", [-1, 16])
def test_unpool_index_outside_the_output_names_the_node(bad):
    indices = np.array([[[[0, 1], [2, bad]]]], dtype=np.int64)
    with pytest.raises(ovpool.ModelError, match=f"node 'up': input 'I' holds index {bad} outside the output of 16"):
        ovpool.run(_unpool_model([1, 1, 2, 2]), {"x": np.ones((1, 1, 2, 2), np.float32), "i": indices}, device="numpy")


def test_unpool_output_shape_with_odd_size():
    x = np.array([[[[5.0, 7.0]]]], np.float32)
    indices = np.array([[[[4, 8]]]], np.int64)
    got = ovpool.run(
        _unpool_model([1, 1, 1, 2], True), {"x": x, "i": indices, "s": np.array([1, 1, 3, 5], np.int64)}, device="numpy"
    )["y"]
    want = np.zeros(15, np.float32)
    want[[4, 8]] = [5, 7]
    np.testing.assert_array_equal(got, want.reshape(1, 1, 3, 5))


def test_average_pool_1_excludes_pads():
    """AveragePool-1 has no count_include_pad: a corner of ones stays 1.0."""
    graph = helper.make_graph(
        [helper.make_node("AveragePool", ["x"], ["y"], name="a", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 1)], ir_version=3)
    y = ovpool.run(model, {"x": np.ones((1, 1, 3, 3), np.float32)}, device="numpy")["y"]
    np.testing.assert_array_equal(y, np.ones((1, 1, 3, 3), np.float32))


def test_unreadable_model_is_an_input_file_error(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(EXAMPLE.read_bytes()[:100])
    with pytest.raises(ovpool.InputFileError, match="bad.onnx: not a readable ONNX model"):
        ovpool.run(bad, {}, device="numpy")


def test_external_data_outside_the_model_folder_is_refused(tmp_path):
    model = onnx.load(str(EXAMPLE))
    weights = model.graph.initializer[0]
    weights.data_location = onnx.TensorProto.EXTERNAL
    weights.ClearField("raw_data")
    weights.ClearField("float_data")
    entry = weights.external_data.add()
    entry.key, entry.value = "location", "../secret.bin"
    (tmp_path / "m").mkdir()
    onnx.save(model, str(tmp_path / "m" / "m.onnx"))
    with pytest.raises(ovpool.InputFileError, match="'../secret.bin', outside the model's folder"):
        ovpool.run(tmp_path / "m" / "m.onnx", {}, device="numpy")


def _dilated_same_average(include: int):
    """L=1, k=2, d=2, SAME_UPPER: pads 1/1, the one window reads cells -1 and 1, both padding."""
    node = helper.make_node(
        "AveragePool", ["x"], ["y"], name="gap", kernel_shape=[2], dilations=[2], auto_pad="SAME_UPPER", count_include_pad=include
    )
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=8)


def test_window_of_padding_only_averages_to_zero_when_pads_count():
    y = ovpool.run(_dilated_same_average(1), {"x": np.full((1, 1, 1), 7.0, np.float32)}, device="numpy")["y"]
    np.testing.assert_array_equal(y, np.zeros((1, 1, 1), np.float32))


def test_window_of_padding_only_is_refused_when_nothing_counts():
    with pytest.raises(ovpool.SpecError, match="node 'gap'.*no input cell in its window and nothing to divide by"):
        ovpool.run(_dilated_same_average(0), {"x": np.full((1, 1, 1), 7.0, np.float32)}, device="numpy")
