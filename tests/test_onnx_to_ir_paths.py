"""The lowering paths most likely to go wrong, each on static and on dynamic spatial dims, on
OpenVINO CPU at f32 against the naive oracle: SAME padding with the include-pad divisor and
dilations, ceil with dilations, storage_order=1 with N, C > 1, int8/uint8 max pools with pads that
hide all-negative windows, float16, and MaxUnpool with N, C > 1 and ``output_shape``.
"""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_onnx_to_ir import run_ov, single_op

from ovpool.errors import UnsupportedError

pytestmark = pytest.mark.openvino

TOLERANCE = {np.float32: 1e-5, np.float16: 1e-3, np.int8: 0, np.uint8: 0}

POOLS = [
    (
        "same-upper-include",
        "AveragePool",
        22,
        {"kernel_shape": [3, 2], "strides": [2, 3], "auto_pad": "SAME_UPPER", "count_include_pad": 1},
        (2, 3, 7, 8),
        np.float32,
    ),
    (
        "same-lower-include-dilated",
        "AveragePool",
        22,
        {"kernel_shape": [3, 2], "strides": [2, 3], "dilations": [2, 2], "auto_pad": "SAME_LOWER", "count_include_pad": 1},
        (2, 3, 7, 8),
        np.float32,
    ),
    (
        "same-lower-include-dilated-ceil",
        "AveragePool",
        22,
        {
            "kernel_shape": [3, 2],
            "strides": [2, 3],
            "dilations": [2, 2],
            "auto_pad": "SAME_LOWER",
            "count_include_pad": 1,
            "ceil_mode": 1,
        },
        (1, 2, 7, 8),
        np.float32,
    ),
    (
        "ceil-dilated-include",
        "AveragePool",
        22,
        {
            "kernel_shape": [3, 2],
            "strides": [2, 3],
            "dilations": [2, 2],
            "pads": [2, 1, 1, 1],
            "count_include_pad": 1,
            "ceil_mode": 1,
        },
        (2, 3, 8, 9),
        np.float32,
    ),
    (
        "ceil-dilated-exclude",
        "AveragePool",
        22,
        {"kernel_shape": [3, 2], "strides": [2, 3], "dilations": [2, 2], "pads": [2, 1, 1, 1], "ceil_mode": 1},
        (2, 3, 8, 9),
        np.float32,
    ),
    (
        "floor-dilated-include",
        "AveragePool",
        22,
        {"kernel_shape": [3, 3], "strides": [1, 2], "dilations": [2, 3], "pads": [2, 1, 1, 3], "count_include_pad": 1},
        (1, 2, 8, 9),
        np.float32,
    ),
    (
        "ceil-dilated-max-indices",
        "MaxPool",
        22,
        {"kernel_shape": [3, 2], "strides": [2, 3], "dilations": [2, 2], "pads": [2, 1, 1, 1], "ceil_mode": 1},
        (2, 3, 8, 9),
        np.float32,
    ),
    (
        "int8-pads-ceil-indices",
        "MaxPool",
        12,
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [2, 2, 2, 2], "ceil_mode": 1},
        (2, 3, 6, 7),
        np.int8,
    ),
    ("uint8-pads", "MaxPool", 12, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [2, 2, 2, 2]}, (2, 3, 6, 7), np.uint8),
    (
        "int8-same-lower",
        "MaxPool",
        12,
        {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
        (2, 3, 6, 7),
        np.int8,
    ),
    (
        "float16-include-ceil",
        "AveragePool",
        22,
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1, "ceil_mode": 1},
        (1, 2, 9, 9),
        np.float16,
    ),
    (
        "storage-order-2d",
        "MaxPool",
        12,
        {"kernel_shape": [2, 3], "strides": [2, 1], "pads": [1, 0, 0, 1], "storage_order": 1},
        (2, 3, 5, 6),
        np.float32,
    ),
    (
        "storage-order-3d-ceil",
        "MaxPool",
        12,
        {"kernel_shape": [2, 2, 2], "strides": [1, 2, 1], "storage_order": 1, "ceil_mode": 1},
        (2, 3, 3, 5, 4),
        np.float32,
    ),
]


def _model(op_type, opset, attrs, shape, dtype, dynamic, indices):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    declared = [*shape[:2], *(f"s{axis}" for axis in range(len(shape) - 2))] if dynamic else list(shape)
    outputs = ["y", "i"] if indices else ["y"]
    node = helper.make_node(op_type, ["x"], outputs, name="pool", **attrs)
    values = [helper.make_tensor_value_info("y", elem, None)]
    if indices:
        values.append(helper.make_tensor_value_info("i", TensorProto.INT64, None))
    return single_op(node, [helper.make_tensor_value_info("x", elem, declared)], values, opset)


def _input(shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    return (rng.integers(-8, 8, shape) / 4.0).astype(dtype)  # a coarse grid: ties are common


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name, op_type, opset, attrs, shape, dtype", POOLS, ids=[p[0] for p in POOLS])
def test_pool_path_matches_oracle(name, op_type, opset, attrs, shape, dtype, dynamic):
    indices = op_type == "MaxPool" and opset >= 8
    model = _model(op_type, opset, attrs, shape, dtype, dynamic, indices)
    if dynamic and attrs.get("storage_order") == 1:
        with pytest.raises(UnsupportedError, match="node 'pool': storage_order=1 indices need static spatial dims"):
            run_ov(model, {})
        return
    if dynamic and indices and attrs.get("auto_pad", "").startswith("SAME"):
        with pytest.raises(UnsupportedError, match="node 'pool': auto_pad SAME_LOWER with indices needs static"):
            run_ov(model, {})
        return
    x = _input(shape, dtype)
    got = run_ov(model, {"x": x})
    want = oracle.pool(x.astype(np.float64), "avg" if op_type == "AveragePool" else "max", attrs)
    values = want[0] if indices else want
    assert got["y"].dtype == x.dtype and got["y"].shape == values.shape
    np.testing.assert_allclose(got["y"].astype(np.float64), values, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    if indices:
        np.testing.assert_array_equal(got["i"], want[1])


UNPOOLS = [
    ("2d-pads", (2, 3, 5, 7), {"kernel_shape": [2, 3], "strides": [2, 2], "pads": [0, 1, 0, 1]}),
    ("3d", (2, 3, 5, 6, 3), {"kernel_shape": [2, 2, 1], "strides": [2, 2, 1]}),
    ("1d-odd", (3, 2, 9), {"kernel_shape": [3], "strides": [2]}),
]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("source", ["initializer", "input"])
@pytest.mark.parametrize("name, shape, attrs", UNPOOLS, ids=[u[0] for u in UNPOOLS])
def test_unpool_with_output_shape_n_c_above_one(name, shape, attrs, source, dynamic):
    """MaxUnpool of the oracle's own pool: indices flat over N*C*spatial, output_shape the pooled
    input's (odd sizes the inferred shape would not give back)."""
    x = _input(shape, np.float32)
    pooled, indices = oracle.pool(x.astype(np.float64), "max", attrs)
    pooled = pooled.astype(np.float32)
    rank = len(shape) - 2
    declared = ["n", "c", *(f"s{axis}" for axis in range(rank))] if dynamic else list(pooled.shape)
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, declared),
        helper.make_tensor_value_info("i", TensorProto.INT64, declared),
    ]
    feeds = {"x": pooled, "i": indices}
    initializers = []
    if source == "initializer":
        initializers.append(numpy_helper.from_array(np.array(shape, np.int64), "shape"))
    else:
        inputs.append(helper.make_tensor_value_info("shape", TensorProto.INT64, [len(shape)]))
        feeds["shape"] = np.array(shape, np.int64)
    node = helper.make_node("MaxUnpool", ["x", "i", "shape"], ["y"], name="unpool", **attrs)
    model = single_op(node, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], 11, initializers)
    want = oracle.unpool(pooled, indices, attrs, list(shape))
    np.testing.assert_array_equal(run_ov(model, feeds)["y"], want)


@pytest.mark.parametrize("name, shape, attrs", UNPOOLS, ids=[u[0] for u in UNPOOLS])
def test_unpool_without_output_shape_on_dynamic_dims(name, shape, attrs):
    """The inferred output size computed at run time equals the oracle's, for two input sizes. The
    indices come from pooling a tensor of the inferred size, so every one lies inside it."""
    rank = len(shape) - 2
    declared = ["n", "c", *(f"s{axis}" for axis in range(rank))]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, declared),
        helper.make_tensor_value_info("i", TensorProto.INT64, declared),
    ]
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="unpool", **attrs)
    model = single_op(node, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], 11)
    for grow in (0, 3):
        first = oracle.pool(_input(shape[:2] + tuple(d + grow for d in shape[2:]), np.float32), "max", attrs)[0]
        inferred = oracle.unpool(first, np.zeros(0, np.int64), attrs).shape
        pooled, indices = oracle.pool(_input(inferred, np.float32).astype(np.float64), "max", attrs)
        pooled = pooled.astype(np.float32)
        want = oracle.unpool(pooled, indices, attrs)
        got = run_ov(model, {"x": pooled, "i": indices})["y"]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
