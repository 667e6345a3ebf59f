"""Small ONNX models for the transform tests: one pooling node (optionally after a Relu), with
static input dims and outputs of known rank, plus hypothesis strategies for their attributes."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from onnx import ModelProto, TensorProto, helper

ORT_IR_VERSION = 8  # onnxruntime 1.31 loads IR <= 10; 8 covers every opset used here


def pool_model(
    op_type: str,
    attrs: dict,
    shape: list,
    opset: int,
    *,
    indices: bool = False,
    elem: int = TensorProto.FLOAT,
    relu: bool = False,
    name: str = "pool",
) -> ModelProto:
    rank = len(shape)
    x = helper.make_tensor_value_info("x", elem, shape)
    outputs = [helper.make_tensor_value_info("y", elem, [None] * rank)]
    if indices:
        outputs.append(helper.make_tensor_value_info("i", TensorProto.INT64, [None] * rank))
    nodes = []
    source = "x"
    if relu:
        nodes.append(helper.make_node("Relu", ["x"], ["r"], name="relu"))
        source = "r"
    nodes.append(helper.make_node(op_type, [source], [o.name for o in outputs], name=name, **attrs))
    graph = helper.make_graph(nodes, "g", [x], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ORT_IR_VERSION
    return model


def integer_input(rng: np.random.Generator, shape, dtype=np.float32) -> np.ndarray:
    """Small integers: every sum of them is exact in float, so a rewritten average must match
    bit for bit, whatever order it adds in, and ties exercise the first-maximum index rule."""
    return rng.integers(-4, 5, size=shape).astype(dtype)


@st.composite
def windowed_cases(draw, ranks=(1, 2, 3), ops=("AveragePool", "MaxPool"), auto_pad=True, ceil=None, include=None):
    """(op_type, attrs, input shape, opset, indices) for a valid AveragePool/MaxPool; ``ceil`` and
    ``include`` True/False force ceil_mode and count_include_pad, None draws them."""
    op = draw(st.sampled_from(ops))
    rank = draw(st.sampled_from(ranks))
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    dilations = [draw(st.integers(1, 2)) for _ in range(rank)]
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilations)]
    spatial = [draw(st.integers(e, e + 4)) for e in extent]
    attrs: dict = {"kernel_shape": kernel, "strides": strides}
    if any(d > 1 for d in dilations):
        attrs["dilations"] = dilations
    mode = draw(st.sampled_from(["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"] if auto_pad else ["NOTSET"]))
    if mode == "NOTSET":
        pads = [draw(st.integers(0, e - 1)) for e in extent] + [draw(st.integers(0, e - 1)) for e in extent]
        attrs["pads"] = pads
    else:
        attrs["auto_pad"] = mode
    if ceil or (ceil is None and draw(st.booleans())):
        attrs["ceil_mode"] = 1
    indices = False
    if op == "AveragePool" and (include or (include is None and draw(st.booleans()))):
        attrs["count_include_pad"] = 1
    if op == "MaxPool" and draw(st.booleans()):
        indices = True
        if rank > 1 and draw(st.booleans()):
            attrs["storage_order"] = 1
    low = 19 if op == "AveragePool" and "dilations" in attrs else 12 if op == "MaxPool" else 11
    opset = draw(st.sampled_from([v for v in (11, 12, 13, 19, 22) if v >= low]))
    return op, attrs, [draw(st.integers(1, 2)), draw(st.integers(1, 2)), *spatial], opset, indices
