"""Tensor sequences: SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase,
SequenceLength, ConcatFromSequence and SplitToSequence (SequenceMap, which runs a body, is in
``control.py``).

A sequence is a Python list of arrays; the kernels never change a list they are given (an insert
or an erase returns a new list). Positions count from the back when negative, in ``[-n, n]`` for
SequenceInsert (n appends) and ``[-n, n - 1]`` for SequenceAt and SequenceErase: in ``[a, b, c]``,
position -1 is ``c``; inserting ``d`` at -1 gives ``[a, b, d, c]``. Every element of a sequence
has one element type: inserting an int64 tensor into a float32 sequence is the node's error.
An empty sequence (SequenceEmpty) is an empty list: its ``dtype`` attribute is checked, not kept.
The element types are the -11 schemas' (no bfloat16 nor 8-bit floats in a sequence; a bfloat16
SequenceEmpty, SequenceConstruct or SequenceInsert is the node's error).

SplitToSequence: no ``split`` cuts pieces of 1 along ``axis`` (squeezed away with ``keepdims=0``);
a scalar ``split`` of 2 cuts a length-5 axis into 2, 2, 1; a 1-D ``split`` gives the lengths,
which must add up to the axis (``keepdims`` is ignored when ``split`` is given). The schema asks
for positive lengths; a 1-D ``split`` of zeros is allowed as onnxruntime and ONNX's own
``test_sequence_model8`` allow it (``[0, 0, 0]`` of an empty tensor: three empty pieces).
bfloat16 comes with SplitToSequence-24.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, defs, helper

from ovpool.engine.ops.base import Kernel, OpNode, normalize_axis, outputs, register
from ovpool.engine.ops.checks import type_guard


def _position(node: OpNode, position: np.ndarray, low: int, high: int) -> int:
    """A position input as an index in ``[low, high]`` made non-negative (``low`` is ``-n``)."""
    array = np.asarray(position)
    if array.dtype not in (np.int32, np.int64) or array.size != 1:
        raise node.fail(f"position must be one int32 or int64 value, got {array.dtype} of shape {list(array.shape)}")
    value = int(array.reshape(()))
    if not low <= value <= high:
        raise node.fail(f"position {value} is outside [{low}, {high}] for a sequence of {-low} tensors")
    return value - low if value < 0 else value


def _sequence(node: OpNode, value: Any) -> list[np.ndarray]:
    if not isinstance(value, list):
        raise node.fail(f"input 0 must be a sequence, got {type(value).__name__}")
    return value


def _same_type(node: OpNode, sequence: list[np.ndarray], tensor: np.ndarray) -> None:
    if sequence and sequence[0].dtype != tensor.dtype:
        raise node.fail(f"the tensor has type {tensor.dtype}; the sequence holds {sequence[0].dtype}")


@register("SequenceEmpty", 11)
def sequence_empty(node: OpNode) -> Kernel:
    """SequenceEmpty: ``[]``; ``dtype`` (default float) must name a tensor element type."""
    dtype = int(node.attr("dtype", TensorProto.FLOAT))
    if dtype not in helper.get_all_tensor_dtypes() or dtype == TensorProto.UNDEFINED:
        raise node.fail(f"{dtype} is not an ONNX tensor element type", "dtype")
    allowed = next(c for c in defs.get_schema("SequenceEmpty", node.since).type_constraints if c.type_param_str == "S")
    name = TensorProto.DataType.Name(dtype).lower()
    if f"seq(tensor({name}))" not in allowed.allowed_type_strs:
        raise node.fail(f"{name} is not an element type of SequenceEmpty-{node.since}'s sequences", "dtype")

    def kernel() -> tuple[Any, ...]:
        return ([],)

    return kernel


@register("SequenceConstruct", 11)
def sequence_construct(node: OpNode) -> Kernel:
    """SequenceConstruct: the inputs as a sequence, in order; they must share one element type."""
    check = type_guard(node)

    def kernel(*tensors: np.ndarray) -> tuple[Any, ...]:
        if any(t is None for t in tensors):
            raise node.fail("an input is omitted; a sequence holds tensors")
        check(*tensors)
        return (list(tensors),)

    return kernel


@register("SequenceInsert", 11)
def sequence_insert(node: OpNode) -> Kernel:
    """SequenceInsert: a new sequence with ``tensor`` before ``position`` (default: at the back)."""

    check = type_guard(node)

    def kernel(sequence: Any, tensor: np.ndarray, position: np.ndarray | None = None) -> tuple[Any, ...]:
        items = _sequence(node, sequence)
        check(None, tensor, position)
        _same_type(node, items, tensor)
        n = len(items)
        at = n if position is None else _position(node, position, -n, n)
        return (items[:at] + [tensor] + items[at:],)

    return kernel


@register("SequenceAt", 11)
def sequence_at(node: OpNode) -> Kernel:
    """SequenceAt: the tensor at ``position``."""

    def kernel(sequence: Any, position: np.ndarray) -> tuple[Any, ...]:
        items = _sequence(node, sequence)
        return (items[_position(node, position, -len(items), len(items) - 1)],)

    return kernel


@register("SequenceErase", 11)
def sequence_erase(node: OpNode) -> Kernel:
    """SequenceErase: a new sequence without the tensor at ``position`` (default: the last)."""

    def kernel(sequence: Any, position: np.ndarray | None = None) -> tuple[Any, ...]:
        items = _sequence(node, sequence)
        n = len(items)
        if position is None:
            if not n:
                raise node.fail("the sequence is empty: there is no last tensor to erase")
            at = n - 1
        else:
            at = _position(node, position, -n, n - 1)
        return (items[:at] + items[at + 1 :],)

    return kernel


@register("SequenceLength", 11)
def sequence_length(node: OpNode) -> Kernel:
    """SequenceLength: the number of tensors, an int64 scalar."""

    def kernel(sequence: Any) -> tuple[np.ndarray, ...]:
        return (np.array(len(_sequence(node, sequence)), dtype=np.int64),)

    return kernel


@register("ConcatFromSequence", 11)
def concat_from_sequence(node: OpNode) -> Kernel:
    """ConcatFromSequence: the tensors joined on ``axis`` (required), or stacked on a new ``axis``
    with ``new_axis=1`` (then ``axis`` may be ``rank``: two [2, 3] tensors give [2, 3, 2] at axis
    2 or -1, [4, 3] joined at axis 0)."""
    if "axis" not in node.attrs:
        raise node.fail("is required", "axis")
    axis = int(node.attrs["axis"])
    new_axis = int(node.attr("new_axis", 0))
    if new_axis not in (0, 1):
        raise node.fail(f"{new_axis} must be 0 or 1", "new_axis")

    def kernel(sequence: Any) -> tuple[np.ndarray, ...]:
        items = _sequence(node, sequence)
        if not items:
            raise node.fail("the sequence is empty: there is nothing to concatenate")
        if len({t.dtype for t in items}) != 1:
            raise node.fail(f"the tensors have different types {sorted({str(t.dtype) for t in items})}")
        rank = items[0].ndim + new_axis
        if rank == 0:
            raise node.fail("the tensors are scalars: there is no axis to concatenate on (new_axis=1 stacks them)")
        where = normalize_axis(node, axis, rank)
        shapes = {t.shape[:where] + t.shape[where + 1 - new_axis :] for t in items}
        if len(shapes) != 1 or any(t.ndim != items[0].ndim for t in items):
            raise node.fail(f"the tensors' shapes {[list(t.shape) for t in items]} differ off axis {axis}")
        return outputs(np.stack(items, axis=where) if new_axis else np.concatenate(items, axis=where))

    return kernel


@register("SplitToSequence", 11)
def split_to_sequence(node: OpNode) -> Kernel:
    """SplitToSequence-11/24 (24 adds bfloat16): ``input`` cut along ``axis`` into the pieces
    ``split`` gives (module docstring)."""
    axis = int(node.attr("axis", 0))
    keepdims = int(node.attr("keepdims", 1))
    if keepdims not in (0, 1):
        raise node.fail(f"{keepdims} must be 0 or 1", "keepdims")
    check = type_guard(node)

    def kernel(x: np.ndarray, split: np.ndarray | None = None) -> tuple[Any, ...]:
        if x.dtype.name == "bfloat16" and node.since < 24:
            raise node.fail("input 0 has type bfloat16, which SplitToSequence allows from SplitToSequence-24")
        check(x, split)
        if x.ndim == 0:
            raise node.fail("the input is a scalar: there is no axis to split")
        where = normalize_axis(node, axis, x.ndim)
        length = x.shape[where]
        if split is None:
            pieces = np.split(x, length, axis=where) if length else []
            return ([p if keepdims else np.squeeze(p, axis=where) for p in pieces],)
        if split.ndim > 1:
            raise node.fail(f"split must be a scalar or 1-D, got shape {list(split.shape)}")
        sizes = [int(s) for s in split.reshape(-1)]
        if any(s < 0 for s in sizes) or (split.ndim == 0 and sizes[0] == 0):
            raise node.fail(f"split {sizes[0] if split.ndim == 0 else sizes} must hold positive lengths")
        if split.ndim == 0:
            sizes = [sizes[0]] * (length // sizes[0]) + ([length % sizes[0]] if length % sizes[0] else [])
        elif sum(sizes) != length:
            raise node.fail(f"split {sizes} adds up to {sum(sizes)}, not the length {length} of axis {axis}")
        return (np.split(x, np.cumsum(sizes)[:-1], axis=where) if sizes else [],)

    return kernel
