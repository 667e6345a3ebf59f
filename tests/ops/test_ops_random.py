"""The random operators at every since-version: shape and dtype against onnxruntime, the range
by the schema (draws differ between runtimes, even under one seed), seeds, never folded; ONNX's
Bernoulli cases (their expected draws are numpy's own, so shape, dtype and 0/1 only); ImageDecoder
refused by name."""

from __future__ import annotations

from typing import Any

import harness
import numpy as np
import onnx
import pytest
from harness import model_of, node_case_params, since_opsets
from onnx import TensorProto, helper

from ovpool.engine.graph import GraphSession
from ovpool.errors import ModelError

BF16 = helper.tensor_dtype_to_np_dtype(TensorProto.BFLOAT16)
FLOAT_TYPES = [TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE]


def _draw(
    op: str, opset: int, inputs: list[np.ndarray], attrs: dict[str, Any], runs: int = 1
) -> tuple[list[np.ndarray], GraphSession]:
    """ovpool's outputs of ``runs`` runs of the node alone (no onnx.reference), and the session."""
    model = harness.make_model(op, opset, inputs, attrs)
    session = GraphSession(model)
    assert not session.reference_ops
    feeds = harness.feeds_of(model, inputs)
    return [session.run(feeds)["y0"] for _ in range(runs)], session


def _like_ort(op: str, opset: int, inputs: list[np.ndarray], attrs: dict[str, Any], actual: np.ndarray) -> None:
    """onnxruntime's output has ovpool's shape and dtype, where it has the version and type (it
    lacks every -22 random op, and some types): the schema's checks before this ran anyway."""
    model = harness.make_model(op, opset, inputs, attrs)
    try:
        (expected,) = harness.run_ort(model, harness.feeds_of(model, inputs))
    except pytest.skip.Exception:
        return
    assert actual.shape == expected.shape and actual.dtype == expected.dtype


def _dtype_params(op: str) -> list[Any]:
    cases = []
    for opset in since_opsets(op, highest=22):
        for elem in FLOAT_TYPES + ([TensorProto.BFLOAT16] if opset >= 22 else []):
            cases.append(pytest.param(opset, elem, id=f"{op}-{opset}-{helper.tensor_dtype_to_np_dtype(elem).name}"))
    return cases


@pytest.mark.parametrize("opset, elem", _dtype_params("RandomUniform"))
@pytest.mark.parametrize("low, high", [(0.0, 1.0), (-3.0, -2.5), (2.0, 2.0), (-1e4, 60000.0)])
def test_random_uniform(opset: int, elem: int, low: float, high: float) -> None:
    """Draws in [low, high) of the type (float16's 65504 limit respected by the range), low == high
    gives low."""
    attrs = {"shape": [3, 500], "dtype": elem, "low": low, "high": high}
    (y,), _ = _draw("RandomUniform", opset, [], attrs)
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    assert y.shape == (3, 500) and y.dtype == dtype
    wide = y.astype(np.float64)
    if high == low:
        assert np.all(wide == np.float64(np.array(low).astype(dtype)))
    else:
        assert np.all(wide >= np.array(low).astype(dtype).astype(np.float64)) and np.all(wide < high)
        assert len(np.unique(wide)) > 10
    _like_ort("RandomUniform", opset, [], attrs, y)


@pytest.mark.parametrize("opset, elem", _dtype_params("RandomNormal"))
def test_random_normal(opset: int, elem: int) -> None:
    """Shape and type; 4000 draws of mean 5, scale 0.5 average within 0.1 of 5 (a 14-sigma band)."""
    attrs = {"shape": [4000], "dtype": elem, "mean": 5.0, "scale": 0.5}
    (y,), _ = _draw("RandomNormal", opset, [], attrs)
    assert y.shape == (4000,) and y.dtype == helper.tensor_dtype_to_np_dtype(elem)
    assert abs(float(y.astype(np.float64).mean()) - 5.0) < 0.1
    _like_ort("RandomNormal", opset, [], attrs, y)


@pytest.mark.parametrize("op", ["RandomUniformLike", "RandomNormalLike"])
@pytest.mark.parametrize("opset", since_opsets("RandomUniformLike"))
@pytest.mark.parametrize(
    "x, elem",
    [
        (np.zeros((2, 3), np.float32), None),
        (np.zeros(4, np.float64), None),
        (np.zeros((2, 2), np.int64), TensorProto.FLOAT16),
        (np.array(["a"], dtype=object), TensorProto.DOUBLE),
    ],
)
def test_random_like(op: str, opset: int, x: np.ndarray, elem: int | None) -> None:
    """The input's shape, and its type unless ``dtype`` says; any input type with ``dtype``."""
    attrs = {} if elem is None else {"dtype": elem}
    (y,), _ = _draw(op, opset, [x], attrs)
    assert y.shape == x.shape and y.dtype == (x.dtype if elem is None else helper.tensor_dtype_to_np_dtype(elem))
    if op == "RandomUniformLike":
        assert np.all((y >= 0) & (y < 1))
    if x.dtype != object:
        _like_ort(op, opset, [x], attrs, y)


@pytest.mark.parametrize("opset", since_opsets("Multinomial"))
@pytest.mark.parametrize("elem", [None, TensorProto.INT32, TensorProto.INT64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_multinomial(opset: int, elem: int | None, dtype: Any) -> None:
    """Indices in [0, classes), never a class of probability 0 (-inf), int32 by default; a row of
    one likely class draws it most."""
    x = np.array([[0.0, -np.inf, 0.0], [5.0, -5.0, -5.0]], dtype=dtype)
    attrs: dict[str, Any] = {"sample_size": 200}
    if elem is not None:
        attrs["dtype"] = elem
    (y,), _ = _draw("Multinomial", opset, [x], attrs)
    assert y.shape == (2, 200) and y.dtype == (np.int32 if elem in (None, TensorProto.INT32) else np.int64)
    assert set(y[0].tolist()) == {0, 2} and set(y[1].tolist()) <= {0, 1, 2}
    assert np.count_nonzero(y[1] == 0) > 150
    _like_ort("Multinomial", opset, [x], attrs, y)


@pytest.mark.parametrize("opset", since_opsets("Bernoulli"))
@pytest.mark.parametrize("elem", [None, TensorProto.BOOL, TensorProto.INT8, TensorProto.UINT64, TensorProto.DOUBLE])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_bernoulli(opset: int, elem: int | None, dtype: Any) -> None:
    """0 where p = 0, 1 where p = 1, 0 or 1 elsewhere, in ``dtype`` or the input's type."""
    p = np.tile(np.array([0.0, 1.0, 0.5, 0.25], dtype=dtype), 50)
    attrs = {} if elem is None else {"dtype": elem}
    (y,), _ = _draw("Bernoulli", opset, [p], attrs)
    assert y.shape == p.shape and y.dtype == (p.dtype if elem is None else helper.tensor_dtype_to_np_dtype(elem))
    ones = y.astype(np.float64)
    assert np.all(ones[0::4] == 0) and np.all(ones[1::4] == 1) and set(np.unique(ones).tolist()) == {0.0, 1.0}
    _like_ort("Bernoulli", opset, [p], attrs, y)


def test_bfloat16_from_22() -> None:
    """bfloat16 draws at -22 (onnxruntime lacks them: range by the schema); refused before, by name."""
    (y,), _ = _draw("RandomUniformLike", 22, [np.zeros(300, BF16)], {"low": 0.5, "high": 1.0})
    assert y.dtype == BF16 and np.all((y.astype(np.float32) >= 0.5) & (y.astype(np.float32) < 1.0))
    (y,), _ = _draw("Bernoulli", 22, [np.ones(3, BF16)], {})
    assert y.dtype == BF16 and y.astype(np.float32).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ModelError, match=r"randomuniformlike_node.*bfloat16, which comes with RandomUniformLike-22"):
        _draw("RandomUniformLike", 21, [np.zeros(3, BF16)], {})
    with pytest.raises(ModelError, match=r"randomnormal_node.*attribute 'dtype'.*bfloat16 comes with RandomNormal-22"):
        _draw("RandomNormal", 21, [], {"shape": [2], "dtype": TensorProto.BFLOAT16})


@pytest.mark.parametrize(
    "op, inputs, attrs", [("RandomUniform", [], {"shape": [50]}), ("Bernoulli", [np.full(50, 0.5, np.float32)], {})]
)
def test_seeds(op: str, inputs: list[np.ndarray], attrs: dict[str, Any]) -> None:
    """With a seed, two sessions draw the same sequence, each run anew; without, sessions differ."""
    opset = since_opsets(op)[-1]
    first, _ = _draw(op, opset, inputs, {**attrs, "seed": 3.0}, runs=2)
    again, _ = _draw(op, opset, inputs, {**attrs, "seed": 3.0}, runs=2)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[0], first[1])
    other, _ = _draw(op, opset, inputs, {**attrs, "seed": 3.5})
    assert not np.array_equal(first[0], other[0])


def test_random_of_constants_is_not_folded() -> None:
    """RandomUniformLike of an initializer runs on every run (its random trait), on ovpool's kernel."""
    node = helper.make_node("RandomUniformLike", ["c"], ["y"], name="draw")
    model = model_of([node], [], ["y"], 17, initializers=[onnx.numpy_helper.from_array(np.zeros(100, np.float32), "c")])
    session = GraphSession(model)
    assert "draw" not in session.folded_nodes and not session.reference_ops
    assert not np.array_equal(session.run({})["y"], session.run({})["y"])


@pytest.mark.parametrize("case", node_case_params(["Bernoulli"]))
def test_onnx_bernoulli_cases(case: Any) -> None:
    """ONNX's Bernoulli cases (and their expansions through RandomUniformLike) on ovpool's kernels:
    the expected values are numpy's draws, which no runtime reproduces; shape, dtype and 0/1."""
    session = GraphSession(case.model)
    assert not session.reference_ops
    for inputs, expected in case.data_sets:
        feeds = {info.name: value for info, value in zip(case.model.graph.input, inputs)}
        actual = list(session.run(feeds).values())
        for a, e in zip(actual, expected):
            assert a.shape == e.shape and a.dtype == e.dtype
            assert set(np.unique(a.astype(np.float64)).tolist()) <= {0.0, 1.0}


def _expanded_cases() -> list[Any]:
    from onnx.backend.test.case import node

    harness.onnx_node_cases(["Bernoulli"])
    return [
        pytest.param(c, id=c.name)
        for c in node._NodeTestCases
        if c.name.startswith("test_bernoulli") and c.name.endswith("_expanded")
    ]


@pytest.mark.parametrize("case", _expanded_cases())
def test_onnx_bernoulli_expanded_cases(case: Any) -> None:
    test_onnx_bernoulli_cases(case)


@pytest.mark.parametrize("case", node_case_params(["ImageDecoder"]))
def test_image_decoder_is_refused_by_name(case: Any) -> None:
    node = case.model.graph.node[0]
    with pytest.raises(
        ModelError, match=rf"node '{node.name or node.output[0]}' \(ImageDecoder-20\): decoding JPEG.*image codec"
    ):
        GraphSession(case.model)


@pytest.mark.parametrize(
    "op, opset, inputs, attrs, match",
    [
        ("RandomUniform", 17, [], {}, "attribute 'shape': is required"),
        ("RandomUniform", 17, [], {"shape": [2], "dtype": TensorProto.INT32}, "attribute 'dtype': dtype int32 is not one of"),
        ("RandomUniform", 17, [], {"shape": [2], "low": 2.0, "high": 1.0}, "attribute 'high'"),
        ("RandomNormal", 17, [], {"shape": [2, -1]}, "attribute 'shape'"),
        ("RandomUniformLike", 17, [np.zeros(2, np.int64)], {}, "the input's type int64 .no dtype attribute. is not one of"),
        ("Multinomial", 17, [np.zeros((2, 3), np.float32)], {"sample_size": 0}, "attribute 'sample_size'"),
        ("Multinomial", 17, [np.zeros(3, np.float32)], {}, r"shape \[3\]; Multinomial takes"),
        ("Multinomial", 17, [np.full((1, 2), -np.inf, np.float32)], {}, "no finite log-probability"),
        ("Bernoulli", 17, [np.zeros(2, np.int32)], {}, "input 0 has type int32"),
        ("Bernoulli", 17, [np.zeros(2, np.float32)], {"dtype": TensorProto.STRING}, "attribute 'dtype'"),
    ],
)
def test_bad_nodes_are_refused(op: str, opset: int, inputs: list[np.ndarray], attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(ModelError, match=rf"{op.lower()}_node.*{match}"):
        _draw(op, opset, inputs, attrs)
