"""ovpool's gather/scatter/sort/select operators (ovpool/engine/ops/indexing.py) against
onnxruntime, per since-version, over hypothesis-drawn shapes, attributes and dtypes; against the
ONNX schema text where onnxruntime disagrees with it or has no kernel; and on ONNX's own node
test cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import (
    assert_node_error,
    check,
    check_node_case,
    examples,
    ints,
    make_model,
    module_ops,
    node_case_ops,
    node_case_params,
    opsets,
    ort_of,
    ovpool_of,
    seeds,
    shapes,
    values,
)
from hypothesis import given
from hypothesis import strategies as st

from ovpool.engine.graph import GraphSession
from ovpool.errors import ModelError
from ovpool.memory import MemoryBudgetError

ALL = ("float32", "float16", "float64", "int64", "int32", "int8", "uint8", "bool")
FLOATS = ("float32", "float16", "float64")


def index_array(rng: np.random.Generator, shape: tuple[int, ...], size: int, negative: bool, dtype: str = "int64") -> np.ndarray:
    low = -size if negative else 0
    return rng.integers(low, size, shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# Gather, GatherElements, GatherND


@pytest.mark.parametrize("opset", opsets("Gather"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_gather(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 4))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = data.draw(shapes(0, 3, 0))
    rng = np.random.default_rng(seed)
    indices = index_array(rng, index_shape, shape[axis], opset >= 11, data.draw(st.sampled_from(["int64", "int32"])))
    x = values(seed, shape, data.draw(st.sampled_from(ALL)))
    check("Gather", opset, [x, indices], {"axis": axis}, constant=(1,) if data.draw(st.booleans()) else ())


def test_gather_index_bounds() -> None:
    """Gather-1 takes indices in [0, s) (onnxruntime also reads -1 there); Gather-11 [-s, s)."""
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    with pytest.raises(ModelError, match="outside"):
        ovpool_of("Gather", 7, [x, ints(-1)])
    np.testing.assert_array_equal(check("Gather", 11, [x, ints(-1)])[0], [[4, 5]])
    with pytest.raises(ModelError, match="outside"):
        ovpool_of("Gather", 13, [x, ints(3)])


def test_gather_constant_indices_bounded_on_every_run() -> None:
    """Constant indices are bounded once per axis size: a size they fit is remembered, one they do
    not fit is refused on each run (3 rows take index 2; 2 rows refuse it, twice)."""
    session = GraphSession(make_model("Gather", 13, [np.zeros((3, 2), np.float32), ints(2)], constant=(1,)))
    np.testing.assert_array_equal(session.run({"x0": np.arange(6, dtype=np.float32).reshape(3, 2)})["y0"], [[4, 5]])
    for _ in range(2):
        with pytest.raises(ModelError, match="outside"):
            session.run({"x0": np.zeros((2, 2), np.float32)})


@pytest.mark.parametrize("opset", opsets("GatherElements"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_gather_elements(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 4))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = tuple(data.draw(st.integers(0, 4 if i == axis % len(shape) else d)) for i, d in enumerate(shape))
    rng = np.random.default_rng(seed)
    indices = index_array(rng, index_shape, shape[axis], True, data.draw(st.sampled_from(["int64", "int32"])))
    check("GatherElements", opset, [values(seed, shape, data.draw(st.sampled_from(ALL))), indices], {"axis": axis})


@pytest.mark.parametrize("opset", opsets("GatherND"))
@examples(20)
@given(data=st.data(), seed=seeds)
def test_gather_nd(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 4))
    b = data.draw(st.integers(0, len(shape) - 1)) if opset >= 12 else 0
    k = data.draw(st.integers(1, len(shape) - b))
    index_shape = shape[:b] + data.draw(shapes(0, 2)) + (k,)
    rng = np.random.default_rng(seed)
    indices = np.stack([index_array(rng, index_shape[:-1], shape[b + j], True) for j in range(k)], axis=-1)
    attrs = {"batch_dims": b} if b or (opset >= 12 and data.draw(st.booleans())) else {}
    check("GatherND", opset, [values(seed, shape, data.draw(st.sampled_from(ALL))), indices], attrs)


def test_gather_nd_errors() -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ModelError, match="outside"):
        ovpool_of("GatherND", 13, [x, ints(0, 3).reshape(1, 2)])
    with pytest.raises(ModelError, match="entries"):
        ovpool_of("GatherND", 13, [x, ints(0, 0, 0).reshape(1, 3)])


# ---------------------------------------------------------------------------------------------
# Scatter, ScatterElements, ScatterND


def reduction_dtypes(reduction: str) -> tuple[str, ...]:
    """What onnxruntime's CPU kernels run: no float16 for add/mul (nor for ScatterND max/min), no
    bool for max/min."""
    if reduction in ("add", "mul"):
        return ("float32", "float64", "int64", "int32", "int8", "uint8")
    if reduction in ("max", "min"):
        return ("float32", "float64", "int64", "int32", "int8", "uint8")
    return ALL


def reductions(opset: int) -> list[str]:
    return ["none"] + (["add", "mul"] if opset >= 16 else []) + (["max", "min"] if opset >= 18 else [])


def scatter_case(data: st.DataObject, seed: int, negative: bool, unique: bool) -> tuple[np.ndarray, int, tuple[int, ...]]:
    """data, indices, updates and axis for ScatterElements; ``unique`` keeps targets distinct
    (reduction none), else duplicates are likely."""
    shape = data.draw(shapes(1, 3))
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1))
    a = axis % rank
    index_shape = [data.draw(st.integers(0, d)) for d in shape]
    rng = np.random.default_rng(seed)
    if unique:
        index_shape[a] = data.draw(st.integers(0, shape[a]))
        order = np.argsort(rng.random((*index_shape[:a], shape[a], *index_shape[a + 1 :])), axis=a)
        indices = np.take(order, np.arange(index_shape[a]), axis=a)
        if negative:
            indices = np.where(rng.random(indices.shape) < 0.5, indices - shape[a], indices)
    else:
        index_shape[a] = data.draw(st.integers(0, 5))
        indices = index_array(rng, tuple(index_shape), shape[a], negative)
    return indices, axis, shape


@pytest.mark.parametrize("opset", opsets("ScatterElements"))
@examples(20)
@given(data=st.data(), seed=seeds)
def test_scatter_elements(opset: int, data: st.DataObject, seed: int) -> None:
    reduction = data.draw(st.sampled_from(reductions(opset)))
    indices, axis, shape = scatter_case(data, seed, True, reduction == "none")
    dtype = data.draw(st.sampled_from(reduction_dtypes(reduction)))
    x = values(seed, shape, dtype)
    updates = values(seed + 1, indices.shape, dtype)
    if reduction == "mul" and dtype.startswith("int"):
        x, updates = x % 3, updates % 3
    attrs = {"axis": axis} | ({"reduction": reduction} if reduction != "none" else {})
    check("ScatterElements", opset, [x, indices.astype(data.draw(st.sampled_from(["int64", "int32"]))), updates], attrs)


@pytest.mark.parametrize("opset", opsets("Scatter"))
@examples(12)
@given(data=st.data(), seed=seeds)
def test_scatter(opset: int, data: st.DataObject, seed: int) -> None:
    """Scatter-9 against onnxruntime; Scatter-11 (onnxruntime has no kernel) against
    onnxruntime's ScatterElements-11, which the Scatter-11 text says it equals."""
    indices, axis, shape = scatter_case(data, seed, opset >= 11, True)
    dtype = data.draw(st.sampled_from(ALL))
    inputs = [values(seed, shape, dtype), indices, values(seed + 1, indices.shape, dtype)]
    if opset < 11:
        check("Scatter", opset, inputs, {"axis": axis})
        return
    np.testing.assert_array_equal(
        ovpool_of("Scatter", 11, inputs, {"axis": axis})[0], ort_of("ScatterElements", 11, inputs, {"axis": axis})[0]
    )


def test_scatter9_refuses_negative_indices() -> None:
    with pytest.raises(ModelError, match="outside"):
        ovpool_of("Scatter", 9, [np.zeros((1, 3), np.float32), ints(-1).reshape(1, 1), np.ones((1, 1), np.float32)], {"axis": 1})


@pytest.mark.parametrize("opset", opsets("ScatterND"))
@examples(20)
@given(data=st.data(), seed=seeds)
def test_scatter_nd(opset: int, data: st.DataObject, seed: int) -> None:
    reduction = data.draw(st.sampled_from(reductions(opset)))
    shape = data.draw(shapes(1, 4))
    k = data.draw(st.integers(1, len(shape)))
    rng = np.random.default_rng(seed)
    cells = int(np.prod(shape[:k]))
    if reduction == "none":
        flat = rng.permutation(cells)[: data.draw(st.integers(0, cells))]
    else:
        flat = rng.integers(0, cells, data.draw(st.integers(0, 6)))
    tuples = np.stack(np.unravel_index(flat, shape[:k]), axis=-1).astype(np.int64).reshape(-1, k)
    tuples = np.where(rng.random(tuples.shape) < 0.3, tuples - np.array(shape[:k]), tuples)
    lead = data.draw(st.sampled_from([(len(flat),), (1, len(flat))]))
    indices = tuples.reshape(*lead, k)
    dtype = data.draw(st.sampled_from(reduction_dtypes(reduction)))
    x = values(seed, shape, dtype)
    updates = values(seed + 1, indices.shape[:-1] + shape[k:], dtype)
    if reduction == "mul" and dtype.startswith("int"):
        x, updates = x % 3, updates % 3
    check("ScatterND", opset, [x, indices, updates], {"reduction": reduction} if reduction != "none" else {})


def test_scatter_reductions_by_version() -> None:
    """reduction exists from 16 (add, mul); max/min from 18."""
    inputs = [np.zeros(3, np.float32), ints(1, 1).reshape(2, 1), np.ones(2, np.float32)]
    np.testing.assert_array_equal(check("ScatterND", 16, inputs, {"reduction": "add"})[0], [0, 2, 0])
    with pytest.raises(ModelError, match="reduction"):
        ovpool_of("ScatterND", 16, inputs, {"reduction": "max"})
    np.testing.assert_array_equal(check("ScatterND", 18, inputs, {"reduction": "max"})[0], [0, 1, 0])


# ---------------------------------------------------------------------------------------------
# OneHot, CumSum

# (indices, depth, values) type triples onnxruntime has OneHot kernels for
ONEHOT_TYPES = [
    ("int64", "int64", "int64"),
    ("int64", "int64", "float32"),
    ("int64", "float32", "float16"),
    ("int32", "int32", "float32"),
    ("int32", "float32", "float16"),
    ("float32", "float32", "float32"),
    ("float32", "int64", "int64"),
    ("float16", "float16", "float32"),
]


@pytest.mark.parametrize("opset", opsets("OneHot"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_one_hot(opset: int, data: st.DataObject, seed: int) -> None:
    """Against onnxruntime with indices in [0, depth] (one out of range): onnxruntime reads
    negative indices as 11's [-depth, 0) in OneHot-9 too; test_one_hot_negative_indices covers them."""
    shape = data.draw(shapes(1, 3))
    depth = data.draw(st.integers(1, 5))
    index_type, depth_type, value_type = data.draw(st.sampled_from(ONEHOT_TYPES))
    rng = np.random.default_rng(seed)
    low = -depth - 1 if opset >= 11 else 0
    indices = rng.integers(low, depth + 1, shape).astype(index_type)
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    on_off = values(seed, (2,), value_type)
    depth_value = np.array(depth if data.draw(st.booleans()) else [depth], depth_type)
    check(
        "OneHot",
        opset,
        [indices, depth_value, on_off],
        {"axis": axis} if data.draw(st.booleans()) else {} if axis == -1 else {"axis": axis},
        constant=data.draw(st.sampled_from([(), (2,), (1, 2)])),  # depth and on/off as initializers too
    )


def test_one_hot_negative_indices() -> None:
    """The schema: OneHot-9 gives all-off for indices outside [0, depth) (onnxruntime wraps -1 to
    the last class there); OneHot-11 takes [-depth, depth). Fractional indices truncate to int64."""
    on_off = np.array([0, 5], np.float32)
    out9 = ovpool_of("OneHot", 9, [ints(0, 2, -1, 3), ints(3), on_off])[0]
    np.testing.assert_array_equal(out9, [[5, 0, 0], [0, 0, 5], [0, 0, 0], [0, 0, 0]])
    out11 = ovpool_of("OneHot", 11, [ints(0, 2, -1, -4), ints(3), on_off])[0]
    np.testing.assert_array_equal(out11, [[5, 0, 0], [0, 0, 5], [0, 0, 5], [0, 0, 0]])
    for indices, row in ((ints(-1), [0, 0, 5]), (ints(-4), [0, 0, 0]), (ints(3), [0, 0, 0]), (ints(1), [0, 5, 0])):
        out = ovpool_of("OneHot", 11, [indices, ints(3), on_off], {}, 1, (1, 2))[0]  # one index, constant depth and values
        np.testing.assert_array_equal(out, [row])
    out = ovpool_of("OneHot", 11, [np.array([1.7, -0.5], np.float32), np.array(3.9, np.float32), on_off], {"axis": 0})[0]
    np.testing.assert_array_equal(out, [[0, 5], [5, 0], [0, 0]])


@pytest.mark.parametrize(
    ("opset", "indices", "depth", "on_off", "match"),
    [
        (
            9,
            np.zeros(40000, np.int64),
            40000,
            np.array([0, 1], np.float32),
            r"output \[40000, 40000\] float32 would need 6\.0 GiB",
        ),
        (11, np.zeros(40000, np.int64), 40000, np.array([0, 1], np.float32), r"output \[40000, 40000\] float32"),
        # an int8 output of 2 GiB, compared against 2**31 int64 class numbers: 16 GiB
        (11, ints(0), 2**31, np.array([0, 1], np.int8), r"class numbers \[2147483648\] int64"),
    ],
)
def test_one_hot_over_the_budget_is_refused_before_any_work(
    opset: int, indices: np.ndarray, depth: int, on_off: np.ndarray, match: str
) -> None:
    """``depth`` from a graph input (shape inference cannot know it) within the memory budget
    before any work: 40000 indices of depth 40000 with float32 values are 6.0 GiB."""
    with pytest.raises(MemoryBudgetError, match=f"onehot_node.*{match}"):
        ovpool_of("OneHot", opset, [indices, ints(depth), on_off])


@pytest.mark.parametrize("opset", opsets("CumSum"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_cumsum(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 4, 0))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dtypes = ("float32", "float64", "int64", "int32") + (("float16",) if opset >= 14 else ())
    dtype = data.draw(st.sampled_from(dtypes))
    attrs = {name: 1 for name in ("exclusive", "reverse") if data.draw(st.booleans())}
    axis_input = np.array(axis, data.draw(st.sampled_from(["int64", "int32"])))
    rtol = 2e-3 if dtype == "float16" else 1e-5
    check("CumSum", opset, [values(seed, shape, dtype), axis_input], attrs, rtol=rtol, atol=rtol)


def schema_cumprod(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """CumProd-26's schema by loops over the axis, in T (x's dtype, wrapping for integers)."""
    moved = np.moveaxis(x, axis, -1)
    out = np.empty_like(moved)
    length = moved.shape[-1]
    for index in np.ndindex(moved.shape[:-1]):
        order = range(length - 1, -1, -1) if reverse else range(length)
        product = np.ones((), x.dtype)
        for j in order:
            if exclusive:
                out[(*index, j)] = product
            with np.errstate(all="ignore"):
                product = (product * moved[(*index, j)]).astype(x.dtype)
            if not exclusive:
                out[(*index, j)] = product
    return np.moveaxis(out, -1, axis)


@examples(15)
@given(data=st.data(), seed=seeds)
def test_cumprod(data: st.DataObject, seed: int) -> None:
    """CumProd-26 (its only version) against onnxruntime and the schema's loops: every type of T
    that onnxruntime runs, both axis types, exclusive/reverse, negative axes."""
    shape = data.draw(shapes(1, 4, 0))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dtype = data.draw(st.sampled_from(("float32", "float64", "float16", "int32", "int64")))
    attrs = {name: 1 for name in ("exclusive", "reverse") if data.draw(st.booleans())}
    axis_input = np.array(axis, data.draw(st.sampled_from(["int64", "int32"])))
    x = (
        values(seed, shape, dtype)
        if dtype.startswith("float")
        else np.random.default_rng(seed).integers(-3, 4, shape).astype(dtype)
    )
    rtol = 2e-3 if dtype == "float16" else 1e-5
    (y,) = check("CumProd", 26, [x, axis_input], attrs, rtol=rtol, atol=rtol)
    expected = schema_cumprod(x, axis % len(shape), "exclusive" in attrs, "reverse" in attrs)
    np.testing.assert_allclose(y.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["uint32", "uint64", "bfloat16"])
def test_cumprod_types_onnxruntime_lacks(dtype: str) -> None:
    """uint32, uint64 (wrapping) and bfloat16 (rounded at each step) against the schema's loops."""
    import ml_dtypes

    numpy_type = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x = np.array([[3, 70000, 70000, 2], [1, 2, 3, 4]]).astype(numpy_type)
    if dtype == "bfloat16":
        x = np.array([[1.5, 3.25, 7.0, 0.1], [1, 2, 3, 4]], numpy_type)
    for attrs in ({}, {"exclusive": 1, "reverse": 1}):
        (y,) = ovpool_of("CumProd", 26, [x, np.int64(1)], attrs)
        expected = schema_cumprod(x, 1, "exclusive" in attrs, "reverse" in attrs)
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y.astype(np.float64), expected.astype(np.float64))


@pytest.mark.parametrize(
    ("inputs", "match"),
    [
        ([np.int8([1, 2]), np.int64(0)], "int8"),  # T has no 8-bit integers
        ([np.float32([1, 2]), np.int64([0, 0])], "axis"),  # one value
        ([np.float32([1, 2]), np.int64(1)], "axis"),  # beyond the rank
        ([np.float32([1, 2]), np.float32(0)], "float32"),  # T2 is int32/int64
    ],
)
def test_cumprod_errors(inputs: list[np.ndarray], match: str) -> None:
    assert_node_error("CumProd", 26, inputs, match=match)


# ---------------------------------------------------------------------------------------------
# TopK


@pytest.mark.parametrize("opset", opsets("TopK"))
@examples(20)
@given(data=st.data(), seed=seeds)
def test_top_k(opset: int, data: st.DataObject, seed: int) -> None:
    """Ties are frequent (values 0..3): equal values must come in index order."""
    shape = data.draw(shapes(1, 3, 1, 6))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(1 if opset < 10 else 0, shape[axis]))
    dtypes = FLOATS + (("int64", "int32", "int8", "uint8") if opset >= 11 else ())
    x = values(seed, shape, data.draw(st.sampled_from(dtypes)), distinct=data.draw(st.booleans()))
    attrs: dict = {"axis": axis} if axis != -1 or data.draw(st.booleans()) else {}
    if opset >= 11:
        attrs |= {name: data.draw(st.integers(0, 1)) for name in ("largest", "sorted") if data.draw(st.booleans())}
    if opset < 10:
        check("TopK", opset, [x], attrs | {"k": k}, n_outputs=2)
        return
    if attrs.get("sorted", 1):
        check("TopK", opset, [x, ints(k)], attrs, n_outputs=2, constant=(1,) if data.draw(st.booleans()) else ())
        return
    ours, theirs = ovpool_of("TopK", opset, [x, ints(k)], attrs, 2), ort_of("TopK", opset, [x, ints(k)], attrs, 2)
    for o, t in zip(ours, theirs):  # sorted=0: the order is unspecified, the selection is not
        assert o.dtype == t.dtype and o.shape == t.shape
        np.testing.assert_array_equal(np.sort(o, axis=axis), np.sort(t, axis=axis))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int64", "int32", "uint8"])
@pytest.mark.parametrize(
    ("shape", "k", "axis"), [((3, 5000), 7, 1), ((5000, 2), 60, 0), ((2, 3000), 1500, -1), ((4, 20000), 300, 1)]
)
def test_top_k_large_rows(dtype: str, shape: tuple[int, int], k: int, axis: int) -> None:
    """Rows long enough for the threshold selection (a partition, or a strided sample for small
    k), with ties (values 0..49) and without, largest and smallest."""
    rng = np.random.default_rng(k)
    tied = rng.integers(0, 50, shape).astype(dtype)
    spread = values(k, shape, dtype)
    for x in (tied, spread):
        for largest in (0, 1):
            check("TopK", 11, [x, ints(k)], {"axis": axis, "largest": largest}, n_outputs=2)


def test_top_k_ties_lower_index_first() -> None:
    x = np.array([3, 1, 3, 2, 1], np.float32)
    top, indices = check("TopK", 11, [x, ints(3)], n_outputs=2)
    np.testing.assert_array_equal(top, [3, 3, 2])
    np.testing.assert_array_equal(indices, [0, 2, 3])
    _, indices = check("TopK", 11, [x, ints(3)], {"largest": 0}, n_outputs=2)
    np.testing.assert_array_equal(indices, [1, 4, 3])
    with pytest.raises(ModelError, match="outside"):
        ovpool_of("TopK", 11, [x, ints(6)], n_outputs=2)


# ---------------------------------------------------------------------------------------------
# NonZero, Compress, Unique


@pytest.mark.parametrize("opset", opsets("NonZero"))
@examples(12)
@given(data=st.data(), seed=seeds)
def test_non_zero(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 4, 0))
    dtype = data.draw(st.sampled_from(("float32", "float16", "int64", "int32", "uint8", "bool")))
    x = values(seed, shape, dtype, distinct=True) if dtype != "bool" else values(seed, shape, dtype)
    check("NonZero", opset, [x])


def test_non_zero_scalar() -> None:
    """The schema: a 0-D input gives shape (0, N) (onnxruntime gives (1, N), numpy's old reading)."""
    assert ovpool_of("NonZero", 13, [np.array(3.0, np.float32)])[0].shape == (0, 1)
    assert ovpool_of("NonZero", 9, [np.array(0, np.int64)])[0].shape == (0, 0)


@pytest.mark.parametrize("opset", opsets("Compress"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_compress(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 3, 0))
    axis = data.draw(st.none() | st.integers(-len(shape) if opset >= 11 else 0, len(shape) - 1))
    length = int(np.prod(shape)) if axis is None else shape[axis]
    condition = np.random.default_rng(seed).random(data.draw(st.integers(0, length))) < 0.5
    attrs = {} if axis is None else {"axis": axis}
    check("Compress", opset, [values(seed, shape, data.draw(st.sampled_from(ALL))), condition], attrs)


def test_compress_condition_beyond_axis() -> None:
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    with pytest.raises(ModelError, match="selects"):
        ovpool_of("Compress", 11, [x, np.array([False, False, True])], {"axis": 0})
    with pytest.raises(ModelError, match="negative"):
        ovpool_of("Compress", 9, [x, np.array([True])], {"axis": -1})


@pytest.mark.parametrize("opset", opsets("Unique"))
@examples(20)
@given(data=st.data(), seed=seeds)
def test_unique(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 3, 1))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    x = values(seed, shape, data.draw(st.sampled_from(("float32", "float64", "int64", "int8"))), distinct=True)
    attrs = ({} if axis is None else {"axis": axis}) | (
        {"sorted": data.draw(st.integers(0, 1))} if data.draw(st.booleans()) else {}
    )
    check("Unique", opset, [x], attrs, n_outputs=data.draw(st.integers(1, 4)))


# ---------------------------------------------------------------------------------------------
# ONNX's own node test cases

OPS = module_ops("ovpool.engine.ops.indexing")


def test_onnx_cases_cover_every_op() -> None:
    assert node_case_ops(OPS) == OPS


@pytest.mark.parametrize("case", node_case_params(OPS))
def test_onnx_node_case(case: Any) -> None:
    check_node_case(case)
