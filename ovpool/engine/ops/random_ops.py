"""Random operators: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike (1, 22),
Multinomial (7, 22), Bernoulli (15, 22).

Their values differ from one run to the next (registered with the ``random`` trait, the session
never folds them) and between runtimes even under one ``seed``, as the schemas
say: only the shape, the type and the range of a draw are the schema's. A node with ``seed``
draws from a numpy generator seeded by it when the session is prepared, which then goes on from
run to run (a session's sequence of draws repeats; onnxruntime's does too); without ``seed`` the
generator is seeded afresh by numpy.

* RandomUniform(Like): ``low + (high - low) * u`` with u uniform in [0, 1), computed in float64 and
  rounded to the type; a value that rounds up to ``high`` is put just below it, so draws lie in
  ``[low, high)`` (``low == high`` gives ``low``).
* RandomNormal(Like): ``mean + scale * z``, z standard normal, in float64, rounded to the type.
* The ``*Like`` ops take the input's shape, and its type when ``dtype`` is absent (an int64 input
  without ``dtype`` is the node's error: the output must be a float type).
* Multinomial: ``sample_size`` draws (with replacement) per row of a [batch, classes] input of
  unnormalised log-probabilities, class ``k`` with probability ``softmax(row)[k]``; int32
  (default) or int64 indices.
* Bernoulli: 1 where u < p (u uniform in [0, 1)), else 0, in ``dtype`` (default: the input's
  type): p = 0 never gives 1, p = 1 always does.
* bfloat16 (an input, or ``dtype``) comes with the -22 versions.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ovpool import dtypes
from ovpool.engine.ops.base import Kernel, OpNode, Traits, register
from ovpool.errors import UnsupportedError

_FLOATS = ("float16", "float32", "float64")


def _generator(node: OpNode) -> np.random.Generator:
    """A generator seeded by the node's ``seed`` (its float64 bits: 1.0 and 1.5 differ), else by numpy."""
    seed = node.attr("seed")
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(int(np.float64(seed).view(np.uint64)))


def _output_type(node: OpNode, elem: int | None, allowed: tuple[str, ...], like: np.dtype | None = None) -> np.dtype:
    """The output dtype from the ``dtype`` attribute (``elem``), else ``like``; refused outside
    ``allowed`` (plus bfloat16 from version 22)."""
    if elem is None:
        if like is None:
            raise node.fail("is required", "dtype")
        dtype, where = like, f"the input's type {like.name} (no dtype attribute)"
    else:
        try:
            dtype = dtypes.np_dtype(dtypes.from_onnx(int(elem)))
        except UnsupportedError:
            raise node.fail(f"{elem} is not an element type {node.op_type} can give", "dtype") from None
        where = f"dtype {dtype.name}"
    if dtype.name == "bfloat16" and node.since < 22:
        raise node.fail(f"{where}: bfloat16 comes with {node.op_type}-22", None if elem is None else "dtype")
    if dtype.name != "bfloat16" and dtype.name not in allowed:
        raise node.fail(f"{where} is not one of {', '.join(allowed)}", None if elem is None else "dtype")
    return dtype


def _input_type(node: OpNode, x: np.ndarray, allowed: tuple[str, ...] | None) -> None:
    if x.dtype.name == "bfloat16" and node.since < 22:
        raise node.fail(f"input 0 has type bfloat16, which comes with {node.op_type}-22")
    if allowed is not None and x.dtype.name != "bfloat16" and x.dtype.name not in allowed:
        raise node.fail(f"input 0 has type {x.dtype.name}; {node.op_type}-{node.since} takes {', '.join(allowed)}")


def _uniform(rng: np.random.Generator, shape: tuple[int, ...], low: float, high: float, dtype: np.dtype) -> np.ndarray:
    values = (low + (high - low) * rng.random(shape)).astype(dtype)
    if high > low:
        top, bottom = np.array(high).astype(dtype), np.array(low).astype(dtype)
        values = np.where(values >= top, np.maximum(_below(top), bottom), values).astype(dtype)
    return values


def _below(top: np.ndarray) -> np.ndarray:
    """The value of ``top``'s type just below it; bfloat16 has no ``nextafter``: its bits minus
    one for a positive value, plus one for a negative one, -0x1p-133 below zero."""
    if top.dtype.name != "bfloat16":
        return np.nextafter(top, np.array(-np.inf, dtype=top.dtype))
    bits = int(top.view(np.uint16))
    below = bits - 1 if top > 0 else bits + 1 if top < 0 else 0x8001
    return np.array(below, dtype=np.uint16).view(top.dtype)


def _normal(rng: np.random.Generator, shape: tuple[int, ...], mean: float, scale: float, dtype: np.dtype) -> np.ndarray:
    return (mean + scale * rng.standard_normal(shape)).astype(dtype)


def _shape(node: OpNode) -> tuple[int, ...]:
    if "shape" not in node.attrs:
        raise node.fail("is required", "shape")
    shape = tuple(int(d) for d in node.attrs["shape"])
    if any(d < 0 for d in shape):
        raise node.fail(f"{list(shape)} has a negative dimension", "shape")
    return shape


DRAWING = Traits(random=True)  # never folded into a constant nor hoisted out of a loop body


@register("RandomUniform", 1, traits=DRAWING)
def random_uniform(node: OpNode) -> Kernel:
    """RandomUniform: ``shape`` of draws in [low, high) (default [0, 1)), float by default."""
    shape, low, high = _shape(node), float(node.attr("low", 0.0)), float(node.attr("high", 1.0))
    if high < low:
        raise node.fail(f"{high} is below low {low}", "high")
    dtype = _output_type(node, node.attr("dtype", TensorProto.FLOAT), _FLOATS)
    rng = _generator(node)

    def kernel() -> tuple[np.ndarray, ...]:
        return (_uniform(rng, shape, low, high, dtype),)

    return kernel


@register("RandomNormal", 1, traits=DRAWING)
def random_normal(node: OpNode) -> Kernel:
    """RandomNormal: ``shape`` of normal draws of ``mean`` (0) and ``scale`` (1), float by default."""
    shape, mean, scale = _shape(node), float(node.attr("mean", 0.0)), float(node.attr("scale", 1.0))
    dtype = _output_type(node, node.attr("dtype", TensorProto.FLOAT), _FLOATS)
    rng = _generator(node)

    def kernel() -> tuple[np.ndarray, ...]:
        return (_normal(rng, shape, mean, scale, dtype),)

    return kernel


@register("RandomUniformLike", 1, traits=DRAWING)
def random_uniform_like(node: OpNode) -> Kernel:
    """RandomUniformLike: RandomUniform of the input's shape (and type, without ``dtype``)."""
    low, high = float(node.attr("low", 0.0)), float(node.attr("high", 1.0))
    if high < low:
        raise node.fail(f"{high} is below low {low}", "high")
    rng = _generator(node)
    elem = node.attr("dtype")

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        _input_type(node, x, None)
        return (_uniform(rng, x.shape, low, high, _output_type(node, elem, _FLOATS, x.dtype)),)

    return kernel


@register("RandomNormalLike", 1, traits=DRAWING)
def random_normal_like(node: OpNode) -> Kernel:
    """RandomNormalLike: RandomNormal of the input's shape (and type, without ``dtype``)."""
    mean, scale = float(node.attr("mean", 0.0)), float(node.attr("scale", 1.0))
    rng = _generator(node)
    elem = node.attr("dtype")

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        _input_type(node, x, None)
        return (_normal(rng, x.shape, mean, scale, _output_type(node, elem, _FLOATS, x.dtype)),)

    return kernel


@register("Multinomial", 7, traits=DRAWING)
def multinomial(node: OpNode) -> Kernel:
    """Multinomial: ``sample_size`` class indices per row, drawn by softmax probability: a row
    [0, -inf, 0] gives classes 0 and 2, each half the time, never 1."""
    samples = int(node.attr("sample_size", 1))
    if samples < 1:
        raise node.fail(f"{samples} must be at least 1", "sample_size")
    dtype = _output_type(node, node.attr("dtype", TensorProto.INT32), ("int32", "int64"))
    rng = _generator(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        _input_type(node, x, _FLOATS)
        if x.ndim != 2:
            raise node.fail(f"input 0 has shape {list(x.shape)}; Multinomial takes [batch_size, class_size]")
        logits = x.astype(np.float64)
        top = logits.max(axis=1, keepdims=True)
        if not np.all(np.isfinite(top)):
            raise node.fail("a row has no finite log-probability (all -inf, or +inf or NaN): it has no distribution")
        weights = np.exp(logits - top)
        cumulative = np.cumsum(weights, axis=1)
        draws = rng.random((len(x), samples)) * cumulative[:, -1:]
        picked = np.empty((len(x), samples), dtype=dtype)
        for row in range(len(x)):
            picked[row] = np.searchsorted(cumulative[row], draws[row], side="right")
        return (picked,)

    return kernel


@register("Bernoulli", 15, traits=DRAWING)
def bernoulli(node: OpNode) -> Kernel:
    """Bernoulli: 1 with probability p (u < p), else 0, in ``dtype`` or the input's type."""
    rng = _generator(node)
    elem = node.attr("dtype")
    outputs = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", *_FLOATS)

    def kernel(p: np.ndarray) -> tuple[np.ndarray, ...]:
        _input_type(node, p, _FLOATS)
        dtype = _output_type(node, elem, outputs, p.dtype)
        return ((rng.random(p.shape) < p.astype(np.float64)).astype(dtype),)

    return kernel
