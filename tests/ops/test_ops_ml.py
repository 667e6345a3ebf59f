"""The ai.onnx.ml operators (ArrayFeatureExtractor-1, Binarizer-1, LabelEncoder-1/2/4,
TreeEnsemble-5) against onnxruntime, the schema's rule by hand where onnxruntime lacks a type or
differs from the schema, ONNX's node cases, and the refusals by name."""

from __future__ import annotations

import math
import struct
from typing import Any

import harness
import numpy as np
import pytest
from harness import assert_same, check, check_node_case, node_case_params, ovpool_of
from hypothesis import given
from hypothesis import strategies as st
from onnx import numpy_helper

ML = "ai.onnx.ml"
ML_CASES = ["ai_onnx_ml.array_feature_extractor", "ai_onnx_ml.binarizer", "ai_onnx_ml.label_encoder", "ai_onnx_ml.tree_ensemble"]


@pytest.mark.parametrize(
    "case", node_case_params(["ArrayFeatureExtractor", "Binarizer", "LabelEncoder", "TreeEnsemble"], ML_CASES)
)
def test_onnx_cases(case: Any) -> None:
    check_node_case(case)


def test_onnx_cases_are_found() -> None:
    assert len(node_case_params(["ArrayFeatureExtractor", "Binarizer", "LabelEncoder", "TreeEnsemble"], ML_CASES)) == 8


def strs(*values: str) -> np.ndarray:
    return np.array(values, dtype=object)


def ml_check(op: str, version: int, inputs: list[np.ndarray], attrs: dict[str, Any] | None = None, **kw: Any) -> list[np.ndarray]:
    return check(op, version, inputs, attrs, domain=ML, **kw)


def ml_ovpool(op: str, version: int, inputs: list[np.ndarray], attrs: dict[str, Any] | None = None) -> np.ndarray:
    return ovpool_of(op, version, inputs, attrs, domain=ML)[0]


# ---------------------------------------------------------------- ArrayFeatureExtractor


@pytest.mark.parametrize("dims", [[5], [3, 5], [2, 3, 5]])
@pytest.mark.parametrize("indices", [[4, 0, 4], [[1], [2]], 3, []])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, object])
def test_array_feature_extractor(dims: list[int], indices: Any, dtype: Any) -> None:
    """Indices of any shape (flattened; repeats allowed), on the last axis; a 1-D X gives [1, k]."""
    x = np.arange(np.prod(dims)).reshape(dims).astype(dtype)
    if dtype is object:
        x = np.vectorize(lambda v: f"s{v}", otypes=[object])(np.arange(np.prod(dims)).reshape(dims))
    y = np.array(indices, dtype=np.int64)
    if not y.size:
        (z,) = ovpool_of("ArrayFeatureExtractor", 1, [x, y], domain=ML)
        assert z.shape == ((1, 0) if len(dims) == 1 else (*dims[:-1], 0))
        return
    ml_check("ArrayFeatureExtractor", 1, [x, y])


# ---------------------------------------------------------------- Binarizer


@given(threshold=st.floats(-3, 3, width=32) | st.sampled_from([0.0, -0.5, 1.5, 2.0]), seed=harness.seeds)
@harness.examples(15)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binarizer_floats(dtype: Any, threshold: float, seed: int) -> None:
    x = np.round(np.random.default_rng(seed).uniform(-3, 3, 12), 1).astype(dtype)
    x[:3] = [threshold, np.inf, -np.inf]
    threshold32 = float(np.float32(threshold))
    expected = np.array([1 if float(v) > threshold32 else 0 for v in x.tolist()], dtype=dtype)
    assert_same(ml_ovpool("Binarizer", 1, [x], {"threshold": threshold}), expected)
    if dtype is np.float32:  # onnxruntime has float32 only
        ml_check("Binarizer", 1, [x], {"threshold": threshold})


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("threshold", [0.0, -0.5, 0.5, 6.5, 7.0, -7.0, 1e30, -1e30, math.inf, -math.inf, math.nan])
def test_binarizer_integers(dtype: Any, threshold: float) -> None:
    """Integer inputs (onnxruntime has none): 1 where the value exceeds the threshold, by hand."""
    x = np.array([-8, -7, -1, 0, 1, 6, 7, 8, np.iinfo(dtype).max, np.iinfo(dtype).min], dtype=dtype)
    threshold32 = float(np.float32(threshold))
    expected = np.array([1 if int(v) > threshold32 else 0 for v in x.tolist()], dtype=dtype)
    assert_same(ml_ovpool("Binarizer", 1, [x], {"threshold": threshold}), expected)


def test_binarizer_nan_is_zero() -> None:
    """The schema's "values greater than this are 1, others 0": NaN is 0 (onnxruntime refuses it)."""
    y = ml_ovpool("Binarizer", 1, [np.array([np.nan, 1.0], np.float32)], {"threshold": 0.0})
    assert_same(y, np.array([0.0, 1.0], np.float32))


# ---------------------------------------------------------------- LabelEncoder

WORDS = strs("a", "b", "c", "", "Amy", "b")


def test_label_encoder_1() -> None:
    """Strings to indices and indices to strings, with and without defaults."""
    ml_check("LabelEncoder", 1, [WORDS], {"classes_strings": ["b", "a", "Amy"]})
    ml_check("LabelEncoder", 1, [WORDS.reshape(2, 3)], {"classes_strings": ["b", "a", "Amy"], "default_int64": 9})
    ints = np.array([0, 2, 3, -1, 1], dtype=np.int64)
    ml_check("LabelEncoder", 1, [ints], {"classes_strings": ["x", "y", "z"]})
    ml_check("LabelEncoder", 1, [ints], {"classes_strings": ["x", "y", "z"], "default_string": "?"})


KEYS = {"strings": ["a", "b", "Amy", ""], "int64s": [3, -1, 0, 7], "floats": [0.5, -2.0, 1e30, 3.0]}
VALUES = {"strings": ["w", "x", "y", "z"], "int64s": [10, 20, -30, 40], "floats": [1.5, -0.25, 2.0, 8.0]}
INPUTS = {
    "strings": strs("a", "q", "Amy", "", "b", "a"),
    "int64s": np.array([[3, 5], [-1, 0], [7, 9]], np.int64),
    "floats": np.array([0.5, 0.25, 3.0, -2.0, 1e30], np.float32),
}


@pytest.mark.parametrize("version", [2, 4])
@pytest.mark.parametrize("key", list(KEYS))
@pytest.mark.parametrize("value", list(VALUES))
@pytest.mark.parametrize("with_default", [False, True])
def test_label_encoder_lists(version: int, key: str, value: str, with_default: bool) -> None:
    """Every pairing of keys_*/values_* lists, defaults given or not."""
    attrs: dict[str, Any] = {f"keys_{key}": KEYS[key], f"values_{value}": VALUES[value]}
    if with_default:
        attrs[{"strings": "default_string", "int64s": "default_int64", "floats": "default_float"}[value]] = (
            "none" if value == "strings" else 99 if value == "int64s" else 0.75
        )
    ml_check("LabelEncoder", version, [INPUTS[key]], attrs)


def _tensor(values: list[Any], dtype: Any) -> Any:
    return numpy_helper.from_array(np.array(values, dtype=dtype))


@pytest.mark.parametrize("key_type", [np.int64, np.float32, np.float64, object])
@pytest.mark.parametrize("value_type", [np.int64, np.float32, np.float64, object])
@pytest.mark.parametrize("default", [None, "tensor", "attribute"])
def test_label_encoder_4_tensors(key_type: Any, value_type: Any, default: str | None) -> None:
    """keys_tensor/values_tensor, default_tensor or default_* or none: by hand, and against
    onnxruntime where it has the pairing (a default_float does not apply to double values)."""
    keys = ["1", "2", "3"] if key_type is object else [1, 2, 3]
    values = ["x", "y", "z"] if value_type is object else [7, 8, 9]
    attrs: dict[str, Any] = {"keys_tensor": _tensor(keys, key_type), "values_tensor": _tensor(values, value_type)}
    if default == "tensor":
        attrs["default_tensor"] = _tensor(["?"] if value_type is object else [5], value_type)
    elif default == "attribute":
        attrs.update({"default_string": "?"} if value_type is object else {"default_int64": 5, "default_float": 0.5})
    x = np.array(["1", "3", "4", "2"], dtype=object) if key_type is object else np.array([1, 3, 4, 2], dtype=key_type)
    # by hand first (onnxruntime lacks some pairings): "4" is no key, the rest map in order
    if default == "tensor":
        fallback: Any = "?" if value_type is object else 5
    elif default == "attribute" and value_type is not np.float64:
        fallback = "?" if value_type is object else 5 if value_type is np.int64 else 0.5
    else:
        fallback = "_Unused" if value_type is object else -1 if value_type is np.int64 else -0.0
    expected = np.array([values[0], values[2], fallback, values[1]], dtype=value_type)
    assert_same(ml_ovpool("LabelEncoder", 4, [x], attrs), expected)
    try:
        ml_check("LabelEncoder", 4, [x], attrs)
    except pytest.skip.Exception:
        pass  # onnxruntime lacks the pairing: the mapping by hand above is the oracle


@pytest.mark.parametrize("dtype", [np.int32, np.int16])
def test_label_encoder_4_small_integers(dtype: Any) -> None:
    """int16/int32 keys and values (onnxruntime has neither): the mapping by hand, default -1."""
    attrs = {"keys_tensor": _tensor([1, -2, 3], dtype), "values_tensor": _tensor([10, 20, 30], dtype)}
    x = np.array([[3, 1], [0, -2]], dtype=dtype)
    table = {1: 10, -2: 20, 3: 30}
    expected = np.array([[table.get(int(v), -1) for v in row] for row in x], dtype=dtype)
    assert_same(ml_ovpool("LabelEncoder", 4, [x], attrs), expected)


def test_label_encoder_float_keys_by_version() -> None:
    """LabelEncoder-2 compares float keys bit for bit (a NaN key matches that NaN, -0.0 is not 0.0);
    LabelEncoder-4 by value, a NaN key matching every NaN (the schema texts; onnxruntime compares
    values in both and matches no NaN in -2)."""
    quiet, other = struct.unpack("<f", struct.pack("<I", 0x7FC00000))[0], np.uint32(0x7FC00001).view(np.float32)
    x = np.array([quiet, other, -0.0, 0.0, 1.0], dtype=np.float32)
    attrs = {"keys_floats": [float("nan"), 0.0], "values_strings": ["nan", "zero"]}
    assert_same(ml_ovpool("LabelEncoder", 2, [x], attrs), strs("nan", "_Unused", "_Unused", "zero", "_Unused"))
    assert_same(ml_ovpool("LabelEncoder", 4, [x], attrs), strs("nan", "nan", "zero", "zero", "_Unused"))


def test_label_encoder_repeated_keys_by_version() -> None:
    """A repeated key: LabelEncoder-4's last value (its schema; onnxruntime keeps the first),
    LabelEncoder-2's first (onnxruntime's; the schema does not say)."""
    attrs = {"keys_strings": ["a", "b", "a"], "values_int64s": [1, 2, 3]}
    assert_same(ml_ovpool("LabelEncoder", 4, [strs("a", "b")], attrs), np.array([3, 2], np.int64))
    ml_check("LabelEncoder", 2, [strs("a", "b")], attrs)


# ---------------------------------------------------------------- TreeEnsemble


def _tree_attrs(draw: Any, features: int, targets: int, dtype: Any) -> dict[str, Any]:
    """1..3 random trees of depth up to 3 over ``features`` features; every mode, member sets (of
    integers: onnxruntime has no others),
    NaN tracking, leaves on random targets."""
    nodes: list[dict[str, Any]] = []
    leaves: list[tuple[int, float]] = []
    members: list[float] = []

    def leaf() -> tuple[int, int]:
        leaves.append((draw(st.integers(0, targets - 1)), draw(st.sampled_from([-2.5, -1.0, 0.5, 1.25, 3.0, 10.0]))))
        return len(leaves) - 1, 1

    def grow(depth: int) -> tuple[int, int]:
        if depth == 0 or draw(st.integers(0, 3)) == 0:
            return leaf()
        index = len(nodes)
        mode = draw(st.integers(0, 6))
        nodes.append(
            {
                "feature": draw(st.integers(0, features - 1)),
                "mode": mode,
                "split": draw(st.sampled_from([-1.0, 0.0, 0.5, 1.0])),
                # a NaN at a != node with nan_true=0: the schema's false branch, onnxruntime's true
                # one (NaN != split); test_tree_ensemble_nan_at_not_equal has it by hand
                "nan_true": 1 if mode == 5 else draw(st.integers(0, 1)),
            }
        )
        if mode == 6:
            members.extend(draw(st.lists(st.sampled_from([-1.0, 0.0, 1.0, 2.0]), min_size=1, max_size=3)) + [math.nan])
        nodes[index]["true"] = grow(depth - 1)
        nodes[index]["false"] = grow(depth - 1)
        return index, 0

    roots = []
    for _ in range(draw(st.integers(1, 3))):
        root, is_leaf = grow(3)
        if is_leaf:  # a lone leaf: one node whose both branches are that leaf
            nodes.append({"feature": 0, "mode": 0, "split": 0.0, "nan_true": 0, "true": (root, 1), "false": (root, 1)})
            root = len(nodes) - 1
        roots.append(root)
    attrs = {
        "n_targets": targets,
        "tree_roots": roots,
        "nodes_featureids": [n["feature"] for n in nodes],
        "nodes_modes": numpy_helper.from_array(np.array([n["mode"] for n in nodes], np.uint8)),
        "nodes_splits": numpy_helper.from_array(np.array([n["split"] for n in nodes], dtype)),
        "nodes_truenodeids": [n["true"][0] for n in nodes],
        "nodes_trueleafs": [n["true"][1] for n in nodes],
        "nodes_falsenodeids": [n["false"][0] for n in nodes],
        "nodes_falseleafs": [n["false"][1] for n in nodes],
        "nodes_missing_value_tracks_true": [n["nan_true"] for n in nodes],
        "leaf_targetids": [t for t, _ in leaves],
        "leaf_weights": numpy_helper.from_array(np.array([w for _, w in leaves], dtype)),
    }
    if members:
        attrs["membership_values"] = numpy_helper.from_array(np.array(members, dtype))
    return attrs


def _transformed(scores: np.ndarray, transform: int) -> np.ndarray:
    """The schema's post transforms by hand, row by row in float64: 1 SOFTMAX, 2 LOGISTIC,
    3 SOFTMAX_ZERO (softmax of the non-zero scores, zeros stay 0)."""
    result = np.zeros(scores.shape)
    for r, row in enumerate(scores.astype(np.float64).tolist()):
        if transform == 2:
            result[r] = [1 / (1 + math.exp(-v)) for v in row]
            continue
        kept = [v for v in row if transform == 1 or v != 0]
        top = max(kept) if kept else 0.0
        total = sum(math.exp(v - top) for v in kept)
        result[r] = [math.exp(v - top) / total if transform == 1 or v != 0 else 0.0 for v in row]
    return result.astype(scores.dtype)


@given(data=st.data(), targets=st.integers(1, 3), aggregate=st.integers(0, 3), transform=st.integers(0, 3))
@harness.examples(25)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tree_ensemble(dtype: Any, data: st.DataObject, targets: int, aggregate: int, transform: int) -> None:
    """Random ensembles: every aggregate against onnxruntime, inputs on the splits and set members,
    and NaN; the post transforms but PROBIT by hand on onnxruntime's untransformed scores
    (onnxruntime 1.31 swaps SOFTMAX (1) and LOGISTIC (2) of TreeEnsemble-5 and applies neither to
    a single target)."""
    attrs = _tree_attrs(data.draw, 3, targets, dtype)
    attrs.update(aggregate_function=aggregate, post_transform=0)
    # onnxruntime tests membership on the value truncated to an integer (0.5 is in {0}): with
    # member nodes, integer inputs only (test_tree_ensemble_membership_of_fractions has the rest)
    choices = [-1.0, 0.0, 1.0, 2.0, math.nan] + ([] if "membership_values" in attrs else [0.25, 0.5])
    x = np.array(data.draw(st.lists(st.sampled_from(choices), min_size=24, max_size=24)), dtype)
    tight = {"rtol": 1e-6, "atol": 1e-7} if dtype is np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    (raw,) = ml_check("TreeEnsemble", 5, [x.reshape(8, 3)], attrs, **tight)
    if transform:
        attrs["post_transform"] = transform
        assert_same(ml_ovpool("TreeEnsemble", 5, [x.reshape(8, 3)], attrs), _transformed(raw, transform), **tight)


@pytest.mark.parametrize("tracks", [0, 1])
def test_tree_ensemble_nan_at_not_equal(tracks: int) -> None:
    """A NaN feature at a BRANCH_NEQ node takes the branch nodes_missing_value_tracks_true says, as
    at every other mode (the schema; onnxruntime takes the true branch, NaN != split, whatever it
    says): leaf 0 (weight 1) is the true branch, leaf 1 (weight 2) the false one."""
    attrs = _stump(nodes_modes=numpy_helper.from_array(np.array([5], np.uint8)), nodes_missing_value_tracks_true=[tracks])
    attrs.update(nodes_truenodeids=[0], nodes_falsenodeids=[1])
    y = ml_ovpool("TreeEnsemble", 5, [np.array([[np.nan], [0.0], [3.0]], np.float32)], attrs)
    assert_same(y, np.array([[1.0 if tracks else 2.0], [2.0], [1.0]], np.float32))


def test_tree_ensemble_membership_of_fractions() -> None:
    """0.5 is not a member of {0, 1} (onnxruntime truncates the input to an integer first and
    finds it): leaf 0 (weight 1) for members, leaf 1 (weight 2) for the rest."""
    attrs = _stump(
        nodes_modes=numpy_helper.from_array(np.array([6], np.uint8)),
        membership_values=numpy_helper.from_array(np.array([0.0, 1.0], np.float32)),
    )
    attrs.update(nodes_truenodeids=[0], nodes_falsenodeids=[1])
    y = ml_ovpool("TreeEnsemble", 5, [np.array([[0.5], [0.0], [1.0], [1.5], [-0.5]], np.float32)], attrs)
    assert_same(y, np.array([[2.0], [1.0], [1.0], [2.0], [2.0]], np.float32))


def _probit(p: float) -> float:
    """The inverse normal CDF by bisection on math.erf (the test's own, not the kernel's)."""
    low, high = -40.0, 40.0
    for _ in range(200):
        middle = (low + high) / 2
        if 0.5 * math.erfc(-middle / math.sqrt(2)) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tree_ensemble_probit(dtype: Any) -> None:
    """PROBIT of the scores, exactly (onnxruntime approximates erfinv to about 1e-3): one stump whose
    leaves give 0.3 or 0.975 to target 0, 0.5 to target 1."""
    attrs = {
        "n_targets": 2,
        "tree_roots": [0, 1],
        "nodes_featureids": [0, 0],
        "nodes_modes": numpy_helper.from_array(np.array([0, 0], np.uint8)),
        "nodes_splits": numpy_helper.from_array(np.array([0.0, 100.0], dtype)),
        "nodes_truenodeids": [0, 2],
        "nodes_trueleafs": [1, 1],
        "nodes_falsenodeids": [1, 2],
        "nodes_falseleafs": [1, 1],
        "leaf_targetids": [0, 0, 1],
        "leaf_weights": numpy_helper.from_array(np.array([0.3, 0.975, 0.5], dtype)),
        "post_transform": 4,
    }
    x = np.array([[-1.0], [1.0]], dtype)
    expected = np.array([[_probit(float(dtype(0.3))), 0.0], [_probit(float(dtype(0.975))), 0.0]]).astype(dtype)
    assert_same(ml_ovpool("TreeEnsemble", 5, [x], attrs), expected, rtol=1e-6 if dtype is np.float32 else 1e-12, atol=1e-7)


def test_tree_ensemble_float16() -> None:
    """float16 (onnxruntime's shape inference refuses it): the ONNX set-membership case's ensemble in float16, each row
    by hand."""
    (case,) = [c for c in harness.onnx_node_cases(["TreeEnsemble"], ML_CASES) if "set_membership" in c.name]
    node = case.model.graph.node[0]
    from ovpool.engine.ops.base import attributes

    attrs = attributes(node)
    for name in ("nodes_splits", "leaf_weights", "membership_values"):
        attrs[name] = numpy_helper.from_array(attrs[name].astype(np.float16))
    attrs["nodes_modes"] = numpy_helper.from_array(attrs["nodes_modes"])
    x = np.array([1.2, 3.4, -0.12, np.nan, 12, 7], np.float16).reshape(-1, 1)
    y = ml_ovpool("TreeEnsemble", 5, [x], attrs)
    expected = np.zeros((6, 4), np.float16)
    for row, (target, weight) in enumerate([(0, 1), (3, 100), (3, 100), (2, 1000), (2, 1000), (1, 10)]):
        expected[row, target] = weight
    assert_same(y, expected)


# ---------------------------------------------------------------- refusals


def _stump(**changes: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "n_targets": 1,
        "tree_roots": [0],
        "nodes_featureids": [0],
        "nodes_modes": numpy_helper.from_array(np.array([0], np.uint8)),
        "nodes_splits": numpy_helper.from_array(np.array([0.0], np.float32)),
        "nodes_truenodeids": [0],
        "nodes_trueleafs": [1],
        "nodes_falsenodeids": [1],
        "nodes_falseleafs": [1],
        "leaf_targetids": [0, 0],
        "leaf_weights": numpy_helper.from_array(np.array([1.0, 2.0], np.float32)),
    }
    attrs.update(changes)
    return {k: v for k, v in attrs.items() if v is not None}


ONE = np.zeros((1, 1), np.float32)


@pytest.mark.parametrize(
    "op, version, inputs, attrs, match",
    [
        (
            "ArrayFeatureExtractor",
            1,
            [np.zeros((2, 3), np.float32), np.array([3], np.int64)],
            {},
            r"index 3 of Y is outside \[0, 3\)",
        ),
        ("ArrayFeatureExtractor", 1, [np.zeros(3, np.float16), np.array([0], np.int64)], {}, "type float16"),
        ("Binarizer", 1, [np.zeros(3, np.float16)], {}, "type float16"),
        (
            "LabelEncoder",
            2,
            [strs("a")],
            {"keys_strings": ["a"], "keys_int64s": [1], "values_int64s": [1]},
            "exactly one of keys_",
        ),
        ("LabelEncoder", 2, [strs("a")], {"keys_strings": ["a", "b"], "values_int64s": [1]}, "2 keys and 1 values"),
        ("LabelEncoder", 2, [np.array([1], np.int64)], {"keys_strings": ["a"], "values_int64s": [1]}, "input 0 has type int64"),
        ("LabelEncoder", 2, [strs("a")], {"keys_tensor": _tensor(["a"], object), "values_int64s": [1]}, "exactly one of keys_"),
        (
            "LabelEncoder",
            4,
            [strs("a")],
            {"keys_strings": ["a"], "values_int64s": [1], "default_tensor": _tensor(["x"], object)},
            "'default_tensor'",
        ),
        ("TreeEnsemble", 5, [ONE], _stump(n_targets=None), "attribute 'n_targets': is required"),
        ("TreeEnsemble", 5, [ONE], _stump(leaf_targetids=[0, 1]), r"attribute 'n_targets': leaf_targetids must lie in \[0, 1\)"),
        ("TreeEnsemble", 5, [ONE], _stump(tree_roots=[2]), "attribute 'tree_roots'"),
        ("TreeEnsemble", 5, [ONE], _stump(nodes_falsenodeids=[2]), "attribute 'nodes_falsenodeids'"),
        (
            "TreeEnsemble",
            5,
            [ONE],
            _stump(nodes_modes=numpy_helper.from_array(np.array([7], np.uint8))),
            "attribute 'nodes_modes'",
        ),
        (
            "TreeEnsemble",
            5,
            [ONE],
            _stump(nodes_modes=numpy_helper.from_array(np.array([6], np.uint8))),
            "attribute 'membership_values': is required",
        ),
        ("TreeEnsemble", 5, [ONE], _stump(aggregate_function=4), "attribute 'aggregate_function'"),
        ("TreeEnsemble", 5, [ONE], _stump(post_transform=5), "attribute 'post_transform'"),
        ("TreeEnsemble", 5, [ONE], _stump(nodes_featureids=[1]), "reach feature 1; the input has 1"),
        ("TreeEnsemble", 5, [ONE], _stump(nodes_trueleafs=[0]), "loops"),
        ("TreeEnsemble", 5, [np.zeros(3, np.float32)], _stump(), r"shape \[3\]; TreeEnsemble takes \[N, F\]"),
    ],
)
def test_bad_nodes_are_refused(op: str, version: int, inputs: list[np.ndarray], attrs: dict[str, Any], match: str) -> None:
    from ovpool.errors import ModelError

    with pytest.raises(ModelError, match=rf"{op.lower()}_node.*{match}"):
        ovpool_of(op, version, inputs, attrs, domain=ML)
