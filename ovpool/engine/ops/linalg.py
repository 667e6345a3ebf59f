"""MatMul, Gemm, Einsum and Det, one kernel per ONNX version range, on numpy (BLAS for floats).

- MatMul-1/9/13 is numpy's matmul: (2, 3, 4) @ (4, 5) gives (2, 3, 5); a 1-D first input is a row
  and a 1-D second a column, the added axis removed again: (4,) @ (2, 4, 5) gives (2, 5), (3,) @ (3,)
  a 0-d value. MatMul-9 adds int32/int64/uint32/uint64, which wrap on overflow.
- Gemm-7/9/11/13: Y = alpha*A'B' + beta*C with A' = A.T when ``transA`` (B' likewise), A and B 2-D,
  C broadcasting to (M, N) one way (a (N,) bias, a (M, 1) column, a scalar); C is required up to
  Gemm-9 and optional from Gemm-11. beta = 0 leaves C unread, as BLAS and onnxruntime do (a NaN in C
  does not reach Y). Integer Gemm (9+) is exact when alpha and beta are whole numbers; otherwise it is
  computed in float64 and truncated toward zero.
- Einsum-12/28: the equation is checked once (one term per input, letters a-z A-Z, at most one
  ``...`` per term, output letters from the inputs, none twice); without ``->`` the output is the
  ellipsis then the letters used once, in ASCII order ("bA,Ac" is "bA,Ac->bc", "ba" is "ba->ab").
  A letter's dimension must be the same in every term that uses it; every ``...`` stands for the same
  number of axes (whose sizes broadcast: (2, 1, 3, 4) and (1, 5, 4, 2) under "...ij,...jk").

- Det-11/22: the determinant of each trailing square matrix: [[1, 2], [3, 4]] gives -2.

float16 (and bfloat16) products and determinants are computed in float32 and rounded once, as numpy's half-precision
matmul is slow and accumulates in half precision.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ovpool.engine.memo import ShapeMemo
from ovpool.engine.ops.base import Kernel, OpNode, Rule, Traits, outputs, register
from ovpool.engine.ops.checks import float_attr, int_attr, type_guard
from ovpool.engine.ops.precision import narrow, wide

# A body's run may give back a product's last results for the same operands (graph._Remembered).
REMEMBERED = Traits(remembered=True)


@register("MatMul", 1, traits=REMEMBERED)
def matmul(node: OpNode) -> Kernel:
    """MatMul-1/9/13: numpy matmul semantics: (2, 3, 4) @ (4, 5) -> (2, 3, 5), (3,) @ (3,) -> 0-d.
    A constant half-precision B is widened to float32 once, here."""
    check = type_guard(node)
    constant_b = node.constants[1] if len(node.constants) > 1 else None
    wide_b = wide(constant_b) if constant_b is not None else None
    checked: set[tuple[np.dtype, np.dtype]] = set()  # the pairs of input types check has passed

    def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        types = (a.dtype, b.dtype)
        if types not in checked:
            check(a, b)
            checked.add(types)
        if a.ndim == 0 or b.ndim == 0:
            raise node.fail(f"inputs of shapes {a.shape} and {b.shape}: MatMul needs at least 1-D inputs")
        try:
            product = np.matmul(wide(a), wide_b if wide_b is not None and b is constant_b else wide(b))
        except ValueError:
            raise node.fail(f"inputs of shapes {a.shape} and {b.shape} do not multiply") from None
        return outputs(narrow(np.asarray(product), a.dtype))

    return kernel


@register("Gemm", 7, traits=REMEMBERED)
def gemm(node: OpNode) -> Kernel:
    """Gemm-7/9/11/13: Y = alpha*A'B' + beta*C (alpha = beta = 1, no transposes by default):
    A (2, 3), B (4, 3) with transB=1, C (4,) gives (2, 4). C is required before Gemm-11."""
    alpha = float_attr(node, "alpha", 1.0)
    beta = float_attr(node, "beta", 1.0)
    trans_a = int_attr(node, "transA", 0) != 0
    trans_b = int_attr(node, "transB", 0) != 0
    check = type_guard(node)
    whole = alpha.is_integer() and beta.is_integer()
    constant_b = node.constants[1] if len(node.constants) > 1 else None
    # A constant float B' laid out row-major once: OpenBLAS multiplies (20, 1024) by a transposed
    # (8210, 1024) view at half the speed of its contiguous copy.
    laid_out = None
    if constant_b is not None and constant_b.ndim == 2 and constant_b.dtype.kind == "f":
        laid_out = np.ascontiguousarray(wide(constant_b.T if trans_b else constant_b))
    checked: set[tuple[np.dtype, ...]] = set()  # the input types check has passed

    def check_shapes(shapes: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...] | None]) -> None:
        a, b, c = shapes
        if len(a) != 2 or len(b) != 2:
            raise node.fail(f"inputs A {a} and B {b}: both must be 2-D")
        left = a[::-1] if trans_a else a
        right = b[::-1] if trans_b else b
        if left[1] != right[0]:
            raise node.fail(f"A' {left} and B' {right} (transA={int(trans_a)}, transB={int(trans_b)}) do not multiply")
        shape = (left[0], right[1])
        if c is not None and _broadcast_shape(c, shape) != shape:
            raise node.fail(f"C of shape {c} does not broadcast to ({shape[0]}, {shape[1]})")

    shapes_fit = ShapeMemo(check_shapes)  # the shapes checked once per (A, B, C) shapes

    def kernel(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        types = (a.dtype, b.dtype) if c is None else (a.dtype, b.dtype, c.dtype)
        if types not in checked:
            check(a, b, c)
            checked.add(types)
        if c is None and node.since < 11:
            raise node.fail(f"has no input C; Gemm-{node.since} requires it (it is optional from Gemm-11)")
        shapes_fit((a.shape, b.shape, None if c is None else c.shape))
        left = a.T if trans_a else a
        right = b.T if trans_b else b
        integer = a.dtype.kind in "iu"
        if integer and not whole:
            left, right = left.astype(np.float64), right.astype(np.float64)
            c = None if c is None else c.astype(np.float64)
        y = np.matmul(wide(left), laid_out if laid_out is not None and b is constant_b else wide(right))
        scale: Any = int(alpha) if integer and whole else alpha
        if alpha != 1:
            y *= scale
        if c is not None and beta != 0:
            bias = wide(c)
            if beta != 1:
                bias = bias * (int(beta) if integer and whole else beta)
            y += bias
        return outputs(narrow(y, a.dtype))

    return kernel


def _broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


# ---------------------------------------------------------------- Einsum

_TERM = re.compile(r"^[A-Za-z]*(\.\.\.)?[A-Za-z]*$")


class _Equation:
    """A checked einsum equation: input terms, the explicit output term."""

    def __init__(self, node: OpNode, equation: str, n_inputs: int) -> None:
        text = equation.replace(" ", "")
        left, arrow, right = text.partition("->")
        self.terms = left.split(",")
        if len(self.terms) != n_inputs:
            raise node.fail(f"{equation!r} has {len(self.terms)} input terms for {n_inputs} inputs", "equation")
        for term in self.terms + ([right] if arrow else []):
            if not _TERM.match(term):
                raise node.fail(f"{equation!r}: term {term!r} is not letters around at most one '...'", "equation")
        letters = "".join(t.replace("...", "") for t in self.terms)
        if arrow:
            output = right.replace("...", "")
            if len(set(output)) != len(output):
                raise node.fail(f"{equation!r}: an output letter appears twice", "equation")
            missing = sorted(set(output) - set(letters))
            if missing:
                raise node.fail(f"{equation!r}: output letters {''.join(missing)} are in no input term", "equation")
            if "..." in right and not any("..." in t for t in self.terms):
                raise node.fail(f"{equation!r}: the output has '...' and no input term does", "equation")
        else:
            once = sorted(c for c in set(letters) if letters.count(c) == 1)
            right = ("..." if "..." in left else "") + "".join(once)
        self.output = right
        self.text = f"{','.join(self.terms)}->{right}"

    def check_shapes(self, node: OpNode, arrays: tuple[np.ndarray, ...]) -> None:
        """Each term's letters against its input's rank, each letter's dimension everywhere, and
        one number of axes for every ``...`` (their sizes broadcast)."""
        sizes: dict[str, int] = {}
        ellipsis_rank: int | None = None
        for i, (term, array) in enumerate(zip(self.terms, arrays)):
            labels = term.replace("...", "")
            ellipsis = "..." in term
            if array.ndim < len(labels) or (not ellipsis and array.ndim != len(labels)):
                raise node.fail(f"input {i} of shape {array.shape} does not match term {term!r}")
            if ellipsis:
                rank = array.ndim - len(labels)
                if ellipsis_rank is not None and rank != ellipsis_rank:
                    raise node.fail(
                        f"'...' is {ellipsis_rank} axes in one input and {rank} in input {i}; the schema needs one number"
                    )
                ellipsis_rank = rank
            head = term.index("...") if ellipsis else len(labels)
            tail = len(labels) - head
            dims = array.shape[:head] + (array.shape[array.ndim - tail :] if tail else ())
            for label, dim in zip(labels, dims):
                if sizes.setdefault(label, dim) != dim:
                    raise node.fail(f"letter {label!r} is {sizes[label]} in one input and {dim} in input {i}")


@register("Einsum", 12)
def einsum(node: OpNode) -> Kernel:
    """Einsum-12/28: "ij,jk->ik" of (2, 3) and (3, 4) is their (2, 4) product; "ii->i" a diagonal;
    "bA,Ac" (implicit) is "bA,Ac->bc". The contraction order of each input-shape combination is found
    once (numpy's optimizer, BLAS for float pairs) and reused."""
    equation = node.attr("equation")
    if not isinstance(equation, str):
        raise node.fail("is required (a string)", "equation")
    parsed = _Equation(node, equation, len(node.constants))
    check = type_guard(node)
    paths: dict[tuple[tuple[int, ...], ...], Any] = {}

    def kernel(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        check(*arrays)
        if len(arrays) != len(parsed.terms):
            raise node.fail(f"has {len(arrays)} inputs for the {len(parsed.terms)} terms of {equation!r}")
        parsed.check_shapes(node, arrays)
        operands = [wide(a) for a in arrays]
        shapes = tuple(a.shape for a in arrays)
        try:
            path = paths.get(shapes)
            if path is None:
                if len(paths) > 64:
                    paths.clear()
                path = paths[shapes] = np.einsum_path(parsed.text, *operands, optimize="greedy")[0]
            result = np.einsum(parsed.text, *operands, optimize=path)
        except ValueError as error:
            raise node.fail(f"{equation!r} on shapes {', '.join(map(str, shapes))}: {error}") from None
        return outputs(narrow(np.asarray(result), arrays[0].dtype))

    return kernel


# ---------------------------------------------------------------- Det


@register("Det", 11, traits=Traits(work=Rule(3.0, 1.0)))  # LAPACK's copy of the matrices: 2.1 x input
def det(node: OpNode) -> Kernel:
    """Det-11/22: the determinant of each trailing M x M matrix (LU, LAPACK): (3, 2, 2) gives (3,),
    a 2-D input a 0-d result; [[1, 2], [3, 4]] gives -2. float16 and bfloat16 (Det-22) are computed
    in float32 and rounded once."""
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            raise node.fail(f"input of shape {x.shape}: Det takes square matrices, shape (*, M, M)")
        return outputs(narrow(np.asarray(np.linalg.det(wide(x))), x.dtype))

    return kernel
