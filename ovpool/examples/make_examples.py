"""Rebuild the bundled example models: ``python -m ovpool.examples.make_examples``.

``tiny_pool.onnx`` (opset 13) is a small image model whose pooling is exactly where stock runtimes
disagree: MaxPool 3x3 s2 p1 with ceil_mode=1 and its indices, then AveragePool 3x3 s2 p1 with
ceil_mode=1 and count_include_pad=1, then GlobalAveragePool.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tiny_pool() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weights = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.2, "conv_w")
    nodes = [
        helper.make_node("Conv", ["input", "conv_w"], ["conv"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu1"),
        helper.make_node(
            "MaxPool",
            ["relu"],
            ["pool1", "pool1_indices"],
            name="pool1",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            ceil_mode=1,
        ),
        helper.make_node(
            "AveragePool",
            ["pool1"],
            ["pool2"],
            name="pool2",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            ceil_mode=1,
            count_include_pad=1,
        ),
        helper.make_node("GlobalAveragePool", ["pool2"], ["output"], name="gap"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_pool",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 14, 14])],
        [
            helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4, 1, 1]),
            helper.make_tensor_value_info("pool1_indices", TensorProto.INT64, [1, 4, 8, 8]),
        ],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ovpool", ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    onnx.save(tiny_pool(), Path(__file__).with_name("tiny_pool.onnx"))
