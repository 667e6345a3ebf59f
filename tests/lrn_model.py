"""A GoogLeNet-style ONNX model with LRN, for the tests: no PyPI package ships a small real model
with LRN (AlexNet, CaffeNet, ZFNet and GoogLeNet exports are 30-240 MB and downloaded at run
time by the packages that use them), so this one is built here, with seeded random weights. The
model zoo's AlexNet and ZFNet graphs, with constant weights, are tests/test_lrn_zoo_graphs.py's.

Its layers are GoogLeNet's first stages at a small size: a 7x7/2 convolution, ReLU, max pooling
3x3/2, LRN (size 5, alpha 1e-4, beta 0.75, caffe's), a 1x1 and a 3x3 convolution, LRN, max pooling,
one inception block (1x1, 1x1 -> 3x3, 1x1 -> 5x5, 3x3 pool -> 1x1, concatenated), global average
pooling and a 10-way classifier with softmax. Input ``data`` [1, 3, 64, 64] in 0..255 (caffe's
pixels, no mean subtracted), so the squared sums LRN divides by are large.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def googlenet_style_lrn_model(opset: int = 13, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    weights: list[onnx.TensorProto] = []

    def conv(name: str, x: str, c_in: int, c_out: int, k: int, stride: int = 1) -> str:
        w = (rng.standard_normal((c_out, c_in, k, k)) * np.sqrt(2 / (c_in * k * k))).astype(np.float32)
        weights.extend(
            [
                numpy_helper.from_array(w, f"{name}_w"),
                numpy_helper.from_array(rng.uniform(-0.1, 0.1, c_out).astype(np.float32), f"{name}_b"),
            ]
        )
        nodes.append(
            helper.make_node(
                "Conv",
                [x, f"{name}_w", f"{name}_b"],
                [f"{name}_conv"],
                name=name,
                kernel_shape=[k, k],
                strides=[stride] * 2,
                pads=[k // 2] * 4,
            )
        )
        nodes.append(helper.make_node("Relu", [f"{name}_conv"], [name], name=f"{name}_relu"))
        return name

    def pool(name: str, x: str, stride: int) -> str:
        nodes.append(
            helper.make_node(
                "MaxPool",
                [x],
                [name],
                name=name,
                kernel_shape=[3, 3],
                strides=[stride] * 2,
                pads=[1, 1, 1, 1] if stride == 1 else [0, 0, 1, 1],
            )
        )
        return name

    def lrn(name: str, x: str) -> str:
        nodes.append(helper.make_node("LRN", [x], [name], name=name, size=5, alpha=1e-4, beta=0.75, bias=1.0))
        return name

    x = lrn("norm1", pool("pool1", conv("conv1", "data", 3, 16, 7, 2), 2))
    x = pool("pool2", lrn("norm2", conv("conv2_3x3", conv("conv2_reduce", x, 16, 16, 1), 16, 32, 3)), 2)
    branches = [
        conv("i_1x1", x, 32, 8, 1),
        conv("i_3x3", conv("i_3x3_reduce", x, 32, 8, 1), 8, 16, 3),
        conv("i_5x5", conv("i_5x5_reduce", x, 32, 4, 1), 4, 8, 5),
        conv("i_pool_proj", pool("i_pool", x, 1), 32, 8, 1),
    ]
    nodes.append(helper.make_node("Concat", branches, ["inception"], name="inception", axis=1))
    nodes.append(helper.make_node("GlobalAveragePool", ["inception"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat"))
    weights.append(numpy_helper.from_array((rng.standard_normal((40, 10)) * 0.2).astype(np.float32), "fc_w"))
    weights.append(numpy_helper.from_array(np.zeros(10, np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc"))
    nodes.append(helper.make_node("Softmax", ["logits"], ["prob"], name="prob", axis=1))
    graph = helper.make_graph(
        nodes,
        "googlenet_style_lrn",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model)
    return model
