"""MatMul, Gemm and Einsum against onnxruntime at every since-version and type; integer Gemm and
upper-case Einsum letters (which onnxruntime does not run) against the schema; the node's errors;
ONNX's own node test cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from harness import (
    arrays,
    assert_node_error,
    check,
    check_node_case,
    make_model,
    node_case_params,
    node_error_params,
    opset_type_cases,
    run_ovpool,
    schema_dtypes,
    since_opsets,
    tolerance,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def _range(dtype: Any) -> tuple[float, float]:
    return (0, 9) if np.dtype(dtype).kind == "u" else (-9, 9) if np.dtype(dtype).kind == "i" else (-2, 2)


def _product_tolerance(dtype: Any, depth: int) -> dict[str, float]:
    """Sums of ``depth`` products: float16 rounds each input and the result once."""
    if np.dtype(dtype) == np.float16:
        return {"rtol": 4e-3, "atol": 4e-3 * depth}
    return tolerance(dtype)


@pytest.mark.parametrize(("opset", "dtype"), opset_type_cases("MatMul"))
@settings(max_examples=10)
@given(data=st.data())
def test_matmul_matches_onnxruntime(opset: int, dtype: Any, data: st.DataObject) -> None:
    """Ranks 1..4 each side, batch axes broadcasting (a 1 against n), B constant or not."""
    m, k, n = (data.draw(st.integers(1, 6)) for _ in range(3))
    batch = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    rank_a, rank_b = data.draw(st.integers(1, 2 + len(batch))), data.draw(st.integers(1, 2 + len(batch)))

    def shape(rank: int, matrix: tuple[int, ...]) -> tuple[int, ...]:
        if rank == 1:
            return matrix[:1] if matrix[0] == k else matrix[1:]
        lead = batch[len(batch) - (rank - 2) :]
        return tuple(1 if data.draw(st.booleans()) else d for d in lead) + matrix

    a = arrays(data.draw, dtype, shape(rank_a, (m, k)) if rank_a > 1 else (k,), *_range(dtype))
    b = arrays(data.draw, dtype, shape(rank_b, (k, n)), *_range(dtype))
    constant = (1,) if data.draw(st.booleans()) else ()
    check("MatMul", opset, [a, b], constant=constant, **_product_tolerance(dtype, k))


@pytest.mark.parametrize(("opset", "dtype"), opset_type_cases("Gemm"))
@settings(max_examples=10)
@given(data=st.data())
def test_gemm_matches_onnxruntime(opset: int, dtype: Any, data: st.DataObject) -> None:
    """transA/transB, alpha/beta (0 included), C of every broadcasting shape, or none from Gemm-11."""
    m, k, n = (data.draw(st.integers(1, 6)) for _ in range(3))
    attrs = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "transA": st.integers(0, 1),
                "transB": st.integers(0, 1),
                "alpha": st.sampled_from([0.5, 1.0, -2.0]),
                "beta": st.sampled_from([0.0, 1.0, 0.25]),
            },
        )
    )
    a = arrays(data.draw, dtype, (k, m) if attrs.get("transA") else (m, k), *_range(dtype))
    b = arrays(data.draw, dtype, (n, k) if attrs.get("transB") else (k, n), *_range(dtype))
    shapes = [(), (n,), (1, n), (m, 1), (m, n)] + ([None] if opset >= 11 else [])
    c_shape = data.draw(st.sampled_from(shapes))
    c = None if c_shape is None else arrays(data.draw, dtype, c_shape, *_range(dtype))
    constant = (2,) if c is not None and data.draw(st.booleans()) else ()
    check("Gemm", opset, [a, b, c], attrs, constant=constant, **_product_tolerance(dtype, k))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
@pytest.mark.parametrize(("alpha", "beta"), [(1.0, 1.0), (2.0, 3.0), (0.5, 1.5)])
def test_integer_gemm_follows_the_schema(dtype: Any, alpha: float, beta: float) -> None:
    """onnxruntime has no integer Gemm: Y[i][j] = alpha*sum(A[i][l]*B[l][j]) + beta*C[j] with Python
    integers, exact for whole alpha and beta, else computed in float and truncated toward zero."""
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 9, (3, 4)).astype(dtype), rng.integers(0, 9, (4, 2)).astype(dtype)
    c = rng.integers(0, 9, (2,)).astype(dtype)
    (y,) = run_ovpool(make_model("Gemm", 13, [a, b, c], {"alpha": alpha, "beta": beta}), {"x0": a, "x1": b, "x2": c})
    al, bl, cl = a.tolist(), b.tolist(), c.tolist()
    expected = [[alpha * sum(al[i][t] * bl[t][j] for t in range(4)) + beta * cl[j] for j in range(2)] for i in range(3)]
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, [[int(v) for v in row] for row in expected])


def test_gemm_beta_zero_leaves_c_unread() -> None:
    """beta = 0: a NaN or inf in C does not reach Y (BLAS's rule, which onnxruntime follows; 0*NaN
    would be NaN)."""
    a, b = np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)
    (y,) = check("Gemm", 13, [a, b, np.float32([np.nan, np.inf])], {"beta": 0.0})
    np.testing.assert_array_equal(y, 2 * np.ones((2, 2)))


EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(4, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 5, 4, 2)]),
    ("...ij->...ji", [(2, 3, 4)]),
    ("...ba", [(2, 3, 4)]),
    ("a...a->...", [(3, 2, 3)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd,a->bd", [(2, 3, 4), (4, 5), (2,)]),
    ("i j , j k -> i k", [(2, 3), (3, 2)]),
]


ORT_EINSUM_TYPES = (np.float32, np.float16, np.float64, np.int32, np.int64)


def _einsum_inputs(equation: str, shapes: list[tuple[int, ...]], dtype: Any) -> list[np.ndarray]:
    rng = np.random.default_rng(len(equation))
    low, high = _range(dtype)
    return [rng.uniform(low, high, s).round(0 if np.dtype(dtype).kind in "iu" else 6).astype(dtype) for s in shapes]


@pytest.mark.parametrize(("equation", "shapes"), EQUATIONS, ids=[e for e, _ in EQUATIONS])
@pytest.mark.parametrize("dtype", ORT_EINSUM_TYPES)
def test_einsum_matches_onnxruntime(equation: str, shapes: list[tuple[int, ...]], dtype: Any) -> None:
    inputs = _einsum_inputs(equation, shapes, dtype)
    check("Einsum", since_opsets("Einsum")[-1], inputs, {"equation": equation}, **_product_tolerance(dtype, 20))


@pytest.mark.parametrize(("equation", "shapes"), EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_other_integers_match_float64(equation: str, shapes: list[tuple[int, ...]]) -> None:
    """onnxruntime has no int8/uint8/int16/uint16/uint32/uint64 Einsum: onnxruntime's float64 result on
    the same small values (exact: no sum leaves 2^53 or the type) in the type."""
    for dtype in (d for d in schema_dtypes("Einsum", 12) if d not in ORT_EINSUM_TYPES):
        inputs = _einsum_inputs(equation, shapes, np.uint8 if np.dtype(dtype).kind == "u" else np.int8)
        inputs = [v.astype(dtype) for v in inputs]
        attrs = {"equation": equation}
        (expected,) = check("Einsum", 12, [v.astype(np.float64) for v in inputs], attrs)
        if np.abs(expected).max(initial=0) > np.iinfo(dtype).max:
            continue
        (actual,) = run_ovpool(make_model("Einsum", 12, inputs, attrs), {f"x{i}": v for i, v in enumerate(inputs)})
        assert actual.dtype == dtype
        np.testing.assert_array_equal(actual, expected.astype(dtype))


@settings(max_examples=25)
@given(data=st.data())
def test_random_einsum_matches_onnxruntime(data: st.DataObject) -> None:
    """Random terms over letters a-e (a letter repeated within a term is a diagonal), explicit or
    implicit output."""
    sizes = {c: data.draw(st.integers(1, 4)) for c in "abcde"}
    count = data.draw(st.integers(1, 3))
    terms = ["".join(data.draw(st.lists(st.sampled_from("abcde"), min_size=0, max_size=3))) for _ in range(count)]
    used = sorted(set("".join(terms)))
    equation = ",".join(terms)
    if data.draw(st.booleans()):
        equation += "->" + "".join(data.draw(st.permutations(used))[: data.draw(st.integers(0, len(used)))])
    inputs = [arrays(data.draw, np.float32, tuple(sizes[c] for c in t), -2, 2) for t in terms]
    check("Einsum", 12, inputs, {"equation": equation})


def test_einsum_upper_case_letters_follow_the_schema() -> None:
    """The schema allows A-Z (distinct from a-z; implicit output in ASCII order, upper case first);
    onnxruntime takes lower case only, so it runs the same equation with the letters renamed."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    for equation, renamed, inputs in [
        ("bA,Ac", "bx,xc->bc", [a, b]),
        ("bA", "bx->xb", [a]),
        ("Ab,bA->A", "xb,bx->x", [a, a.T.copy()]),
    ]:
        (ours,) = run_ovpool(make_model("Einsum", 12, inputs, {"equation": equation}), {f"x{i}": v for i, v in enumerate(inputs)})
        (theirs,) = check("Einsum", 12, inputs, {"equation": renamed})
        np.testing.assert_array_equal(ours, theirs)


# ---------------------------------------------------------------- the node's errors

ERRORS = [
    ("MatMul", 13, [np.float32(1), np.float32([1])], {}),
    ("MatMul", 13, [np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)], {}),
    ("MatMul", 13, [np.ones((2, 3), np.float32), np.ones((3, 2), np.float64)], {}),
    ("Gemm", 13, [np.ones((2, 3, 1), np.float32), np.ones((3, 2), np.float32)], {}),
    ("Gemm", 13, [np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)], {}),
    ("Gemm", 9, [np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)], {}),  # C required before 11
    ("Gemm", 13, [np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), np.ones((3,), np.float32)], {}),
    ("Einsum", 12, [np.ones((2, 3), np.float32)], {"equation": "ij,jk->ik"}),  # two terms, one input
    ("Einsum", 12, [np.ones((2, 3), np.float32)], {"equation": "ij->ii"}),
    ("Einsum", 12, [np.ones((2, 3), np.float32)], {"equation": "ij->k"}),
    ("Einsum", 12, [np.ones((2, 3), np.float32)], {"equation": "i1->i"}),
    ("Einsum", 12, [np.ones((2, 3), np.float32)], {"equation": "ijk->i"}),  # rank 2 for three letters
    ("Einsum", 12, [np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)], {"equation": "ij,jk->ik"}),
    ("Einsum", 12, [np.ones((2, 3), np.float32)], {"equation": "ij->...i"}),
    ("Einsum", 12, [np.ones((2, 3, 4), np.float32), np.ones((4, 2), np.float32)], {"equation": "...ij,...jk->...ik"}),
    ("Einsum", 12, [np.ones((2, 3), np.float32)], {}),  # equation is required
]


@pytest.mark.parametrize(("op", "opset", "inputs", "attrs"), node_error_params(ERRORS))
def test_bad_nodes_are_model_errors(op: str, opset: int, inputs: list[Any], attrs: dict[str, Any]) -> None:
    assert_node_error(op, opset, inputs, attrs)


@pytest.mark.parametrize("case", node_case_params(("MatMul", "Gemm", "Einsum")))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case)


# ---------------------------------------------------------------- Det


def schema_det(x: np.ndarray) -> np.ndarray:
    """The determinant by the Leibniz formula in float64, matrix by matrix (small M only)."""
    import itertools

    m = x.shape[-1]
    flat = x.astype(np.float64).reshape(-1, m, m)
    results = []
    for matrix in flat:
        total = 0.0
        for perm in itertools.permutations(range(m)):
            inversions = sum(1 for i in range(m) for j in range(i + 1, m) if perm[i] > perm[j])
            total += (-1) ** inversions * math.prod(matrix[i, perm[i]] for i in range(m))
        results.append(total)
    return np.array(results).reshape(x.shape[:-2])


@pytest.mark.parametrize(("opset", "dtype"), opset_type_cases("Det"))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_det_matches_onnxruntime_and_schema(opset: int, dtype: Any, data: st.DataObject) -> None:
    """Det-11/22 on batches (none, one or two batch axes) of 1x1 to 4x4 matrices."""
    batch = data.draw(st.lists(st.integers(1, 3), max_size=2))
    m = data.draw(st.integers(1, 4))
    x = arrays(data.draw, dtype, (*batch, m, m), -2, 2)
    rtol = 2e-2 if dtype == np.float16 else 1e-4
    (y,) = run_ovpool(make_model("Det", opset, [x]), {"x0": x})
    assert y.dtype == x.dtype and y.shape == tuple(batch)
    np.testing.assert_allclose(y.astype(np.float64), schema_det(x), rtol=rtol, atol=1e-2 if dtype == np.float16 else 1e-5)
    check("Det", opset, [x], rtol=rtol, atol=rtol / 10)  # onnxruntime has no float16 Det


def test_det_bfloat16_from_det_22() -> None:
    """bfloat16 (Det-22) computed in float32 and rounded once; Det-11 refuses it naming Det-22."""
    import ml_dtypes

    x = np.array([[[1.5, 2.0], [3.0, 4.25]], [[2.0, 0.5], [1.0, 3.0]]], ml_dtypes.bfloat16)
    (y,) = run_ovpool(make_model("Det", 22, [x]), {"x0": x})
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y.astype(np.float64), schema_det(x).astype(ml_dtypes.bfloat16).astype(np.float64))
    assert_node_error("Det", 11, [x], match="from Det-22")


@pytest.mark.parametrize("x", [np.zeros((2, 3), np.float32), np.zeros(3, np.float32), np.zeros((2, 2), np.int32)], ids=str)
def test_det_errors(x: np.ndarray) -> None:
    assert_node_error("Det", 22, [x])


@pytest.mark.parametrize("case", node_case_params(("Det",)))
def test_det_node_cases(case: Any) -> None:
    check_node_case(case)
