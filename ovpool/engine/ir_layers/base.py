"""The IR layer table and what a builder knows of a layer (:class:`LayerNode`).

A builder gets a :class:`LayerNode` (the layer's ``<data>``, the values of its constant inputs,
how many outputs are read) when the graph is prepared and returns the kernel, called on every
run with the layer's input arrays in port order, returning its outputs as a tuple.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ovpool import dtypes
from ovpool.engine.ops.base import PLAIN, Kernel, OpNode, Traits, lookup
from ovpool.errors import ModelError, UnsupportedError
from ovpool.ir.reader import Layer

Builder = Callable[["LayerNode"], Kernel]

# Layers the executor itself handles: inputs, weights from the .bin, outputs.
STRUCTURAL: tuple[str, ...] = ("Parameter", "Const", "Result")
# Layers whose ``body`` runs once per iteration, prepared with its port map (``Iteration``).
ITERATING: tuple[str, ...] = ("Loop", "TensorIterator")

_TABLE: dict[tuple[str, str], Builder] = {}
_TRAITS: dict[tuple[str, str], Traits] = {}


def layer(layer_type: str, *versions: int, traits: Traits = PLAIN) -> Callable[[Builder], Builder]:
    """Register ``builder`` for ``layer_type`` at each opset version (``version="opset4"`` in the IR),
    with its ``traits`` (``ovpool.engine.ops.base.Traits``: the memory budget reads ``work``)."""

    def decorate(builder: Builder) -> Builder:
        for version in versions:
            _TABLE[(layer_type, f"opset{version}")] = builder
            _TRAITS[(layer_type, f"opset{version}")] = traits
        return builder

    return decorate


def layer_traits(layer_type: str, version: str) -> Traits:
    """The traits ``layer_type`` at ``version`` ("opset1") was registered with; ``PLAIN`` for a
    layer numpy does not run."""
    return _TRAITS.get((layer_type, version), PLAIN)


def layer_traits_named(layer_type: str) -> Traits:
    """The traits of ``layer_type`` where only its name is known (the memory budget's plan walk):
    those of its newest version; every version states the same ones (tests/test_op_traits.py)."""
    found = [(int(version.removeprefix("opset")), traits) for (name, version), traits in _TRAITS.items() if name == layer_type]
    return max(found, key=lambda pair: pair[0])[1] if found else PLAIN


def builder_for(layer_type: str, version: str) -> Builder | None:
    """The builder of ``layer_type`` at ``version`` ("opset1"), or None when numpy does not run it."""
    return _TABLE.get((layer_type, version))


# The ONNX operator each IR layer type computes, for the plan's rewrites (``ovpool.engine.plan``),
# which read that operator's traits: a kernel returning arrays of its own (Convolution computes
# Conv-11 on ovpool's kernels), a value of shapes only (ShapeOf is Shape; Subtract, Broadcast,
# Concat and Reshape of shape values are shape values). A layer type not listed has no ONNX
# operator's traits (its steps are left as they are).
COMPUTES: dict[str, str] = {
    "Convolution": "Conv", "GroupConvolution": "Conv", "BatchNormInference": "BatchNormalization",
    "ShapeOf": "Shape", "Add": "Add", "Subtract": "Sub", "Multiply": "Mul", "Divide": "Div",
    "Maximum": "Max", "Minimum": "Min", "Equal": "Equal", "Less": "Less", "LessEqual": "LessOrEqual",
    "Greater": "Greater", "GreaterEqual": "GreaterOrEqual", "LogicalAnd": "And", "LogicalOr": "Or",
    "LogicalNot": "Not", "Floor": "Floor", "Ceiling": "Ceil", "Abs": "Abs", "Negative": "Neg",
    "Convert": "Cast", "Select": "Where", "Concat": "Concat", "Reshape": "Reshape", "Squeeze": "Squeeze",
    "Unsqueeze": "Unsqueeze", "Gather": "Gather", "Broadcast": "Expand", "Range": "Range",
    "ReduceProd": "ReduceProd", "ReduceSum": "ReduceSum", "ReduceMax": "ReduceMax", "ReduceMin": "ReduceMin",
    "MatMul": "MatMul",  # transpose_a/b swap its operands' last axes first: a product all the same (remembered)
}  # fmt: skip


def computes(layer_type: str) -> str | None:
    """The ONNX operator an IR layer of ``layer_type`` computes (``"Convolution"`` -> ``"Conv"``), or None."""
    return COMPUTES.get(layer_type)


def supported() -> dict[str, tuple[int, ...]]:
    """Every layer type numpy runs with its opset versions, by type: ``{"Interpolate": (4, 11), ...}``
    (Parameter, Const and Result included)."""
    table: dict[str, list[int]] = {name: [1] for name in STRUCTURAL}
    for layer_type, version in _TABLE:
        table.setdefault(layer_type, []).append(int(version.removeprefix("opset")))
    return {name: tuple(sorted(versions)) for name, versions in sorted(table.items())}


def supported_markdown() -> str:
    """The README's list of layers, one line: ``Add-1, AvgPool-1/14/16, ...``."""
    return ", ".join(f"{name}-{'/'.join(map(str, versions))}" for name, versions in supported().items())


@dataclass(frozen=True)
class LayerNode:
    """What a builder knows of one layer when the graph is prepared: the layer, ``constants[i]``
    the value of input port ``i`` when known before any run (Const, folded layers) else None,
    ``n_outputs`` how many of its outputs are read (up to the last one read), ``bodies`` its
    compiled sub-graphs (If ``then_body``/``else_body``, Loop and TensorIterator ``body``):
    callables from a list of inputs in Parameter order to a list of outputs in Result order;
    ``iteration`` how a Loop or TensorIterator body meets the layer's ports."""

    layer: Layer
    constants: tuple[np.ndarray | None, ...] = ()
    n_outputs: int = 1
    bodies: Mapping[str, Body] = field(default_factory=dict)
    iteration: Iteration | None = None

    @property
    def label(self) -> str:
        """``layer 'conv1' (Convolution-opset1, line 40)``: how errors name the layer."""
        layer = self.layer
        return f"layer '{layer.name}' ({layer.type}-{layer.version}, line {layer.line})"

    def fail(self, message: str, attribute: str | None = None) -> ModelError:
        what = f": attribute '{attribute}'" if attribute else ""
        return ModelError(f"{self.label}{what}: {message}")

    def constant(self, index: int) -> np.ndarray | None:
        return self.constants[index] if index < len(self.constants) else None

    def text(self, name: str, default: str | None = None) -> str:
        """Attribute ``name`` as written; a missing one without a default is the layer's error."""
        value = self.layer.data.get(name, default)
        if value is None:
            raise self.fail("is required", name)
        return value

    def choice(self, name: str, default: str, allowed: Sequence[str]) -> str:
        """A lower-cased word among ``allowed`` (OpenVINO reads ``eps_mode="INSIDE_SQRT"`` too)."""
        value = self.text(name, default).strip().lower()
        if value not in allowed:
            raise self.fail(f"'{value}' is not one of {', '.join(allowed)}", name)
        return value

    def ints(self, name: str, default: Sequence[int] | None = None) -> tuple[int, ...]:
        """``"1, 2"`` -> (1, 2); ``""`` -> ()."""
        text = self.layer.data.get(name)
        if text is None:
            if default is None:
                raise self.fail("is required", name)
            return tuple(default)
        try:
            return tuple(int(v) for v in text.split(",") if v.strip())
        except ValueError:
            raise self.fail(f"'{text}' is not a list of integers", name) from None

    def number(self, name: str, default: float | None = None) -> float:
        text = self.text(name, None if default is None else repr(default))
        try:
            return float(text)
        except ValueError:
            raise self.fail(f"'{text}' is not a number", name) from None

    def integer(self, name: str, default: int | None = None) -> int:
        text = self.text(name, None if default is None else str(default))
        try:
            return int(text)
        except ValueError:
            raise self.fail(f"'{text}' is not an integer", name) from None

    def flag(self, name: str, default: bool) -> bool:
        text = self.text(name, "true" if default else "false").strip().lower()
        if text not in ("true", "false", "1", "0"):
            raise self.fail(f"'{text}' is neither true nor false", name)
        return text in ("true", "1")

    def element_type(self, name: str, default: str | None = None, narrow: bool = False) -> np.dtype:
        """An element-type attribute (``destination_type="f32"``) as a numpy dtype; with ``narrow``
        the 4-bit integers and 8-bit floats too (``"u4"``: ml_dtypes' uint4)."""
        text = self.text(name, default)
        found = dtypes.from_ir_type(text)
        if found is not None:
            return dtypes.np_dtype(found)
        row = dtypes.narrow_from_ir_type(text) if narrow else None
        if row is None:
            raise UnsupportedError(f"{self.label}: attribute '{name}': element type '{text}' is not one numpy runs")
        return dtypes.narrow_np_dtype(row)

    def onnx(
        self,
        op_type: str,
        since: int,
        attrs: Mapping[str, Any] | None = None,
        constants: Sequence[np.ndarray | None] = (),
        n_outputs: int = 1,
    ) -> Kernel:
        """The kernel of ONNX ``op_type``-``since`` from ovpool's operator library, for this layer."""
        row = lookup(op_type, since)
        if row is None:
            raise RuntimeError(f"ovpool's operator library has no {op_type}-{since}")
        return row.factory(self.as_onnx(op_type, since, attrs, constants, n_outputs))

    def as_onnx(
        self,
        op_type: str,
        since: int,
        attrs: Mapping[str, Any] | None = None,
        constants: Sequence[np.ndarray | None] = (),
        n_outputs: int = 1,
    ) -> OpNode:
        """This layer as a node of ONNX ``op_type``-``since``, whose errors name the layer."""
        return _LayerOp(
            name=self.layer.name,
            op_type=op_type,
            since=since,
            opset=since,
            attrs=dict(attrs or {}),
            constants=tuple(constants),
            n_outputs=n_outputs,
            layer=self,
        )


@dataclass(frozen=True)
class _LayerOp(OpNode):
    """An ONNX operator node standing for an IR layer: its errors name the layer."""

    layer: LayerNode | None = None

    @property
    def label(self) -> str:
        assert self.layer is not None
        return f"{self.layer.label} as ONNX {self.op_type}-{self.since}"


Body = Callable[[list[np.ndarray]], list[np.ndarray]]


@runtime_checkable
class Repeatable(Protocol):
    """A Loop or TensorIterator body that its layer calls once per iteration: ``repeated()`` is
    the body for the iterations of one run of the layer, which runs the layers reading only
    unchanged Parameters once and gives back repeated products (``ovpool.engine.repeat``)."""

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]: ...

    def repeated(self) -> Body: ...


@dataclass(frozen=True)
class Slicing:
    """A port-map entry's slicing: ``axis``, ``start`` and ``end`` (both included, negative counted
    from the end), ``stride`` and ``part_size``. On an axis of 4, (axis, 0, -1, 1, 1) takes
    indices 0, 1, 2, 3 and (axis, -1, 0, -1, 1) takes 3, 2, 1, 0."""

    axis: int
    start: int
    end: int
    stride: int
    part_size: int


@dataclass(frozen=True)
class Iteration:
    """How a Loop or TensorIterator body meets its layer, by position: ``inputs`` (layer input
    index, body Parameter index, slicing or None), ``outputs`` (layer output index, body Result
    index, slicing or None), ``back_edges`` (Result index, Parameter index), Loop's special ports
    ``current_iteration`` (a Parameter index) and ``condition`` (a Result index), the
    ``iteration_type`` of the current-iteration Parameter, and each Result's ``result_dims`` and
    ``result_types`` (None where not static or not given: an empty concatenation's shape and type
    when nothing iterates)."""

    inputs: tuple[tuple[int, int, Slicing | None], ...]
    outputs: tuple[tuple[int, int, Slicing | None], ...]
    back_edges: tuple[tuple[int, int], ...]
    current_iteration: int | None
    condition: int | None
    iteration_type: np.dtype
    result_dims: tuple[tuple[int, ...] | None, ...]
    result_types: tuple[np.dtype | None, ...]


def cached(build: Callable[..., Kernel]) -> Callable[..., Kernel]:
    """``build`` memoised on its (hashable) arguments: a kernel per distinct axis or shape value."""
    return functools.lru_cache(maxsize=16)(build)


def ints_of(value: np.ndarray) -> tuple[int, ...]:
    """An integer input (0-D or 1-D) as a tuple: ``np.array(3)`` -> (3,)."""
    array = np.asarray(value).reshape(-1)
    if array.dtype.kind in "iu":
        return tuple(array.tolist())  # Python ints, as int() makes them, in one call
    return tuple(int(v) for v in array)


def int64(value: np.ndarray | None) -> np.ndarray | None:
    """An index input as the 1-D int64 tensor ONNX operators take (an int64 one as it is, viewed
    1-D: the operators read their inputs, never write them)."""
    return None if value is None else np.asarray(value).astype(np.int64, copy=False).reshape(-1)


def int64_input(node: LayerNode, index: int) -> tuple[np.ndarray | None, Callable[[np.ndarray | None], np.ndarray | None]]:
    """Input ``index`` as ``int64`` makes it, its constant converted once: ``(converted, convert)``,
    ``convert(value)`` giving ``converted`` itself for the constant (the ONNX kernel built with it
    knows it by identity and does not parse it again: a Slice's four index inputs) and
    ``int64(value)`` for any other value (a constant [1, 2] of i32 gives the same int64 [1, 2])."""
    constant = node.constant(index)
    converted = int64(constant)

    def convert(value: np.ndarray | None) -> np.ndarray | None:
        return converted if value is constant and constant is not None else int64(value)

    return converted, convert


def same_type(node: LayerNode, *arrays: np.ndarray) -> None:
    first = arrays[0].dtype
    for i, array in enumerate(arrays[1:], 1):
        if array.dtype != first:
            raise node.fail(f"input {i} is {array.dtype}, input 0 is {first}: the layer takes one element type")


def aligner(node: LayerNode) -> Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
    """How ``auto_broadcast`` lines B up with A before numpy broadcasts them (None: numpy as is)."""
    mode = node.choice("auto_broadcast", "numpy", ("numpy", "none", "pdpd"))
    if mode == "numpy":
        return None
    if mode == "none":

        def equal(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            if a.shape != b.shape:
                raise node.fail(f"shapes {list(a.shape)} and {list(b.shape)} differ (auto_broadcast none)", "auto_broadcast")
            return a, b

        return equal

    def pdpd(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dims = list(b.shape)
        while dims and dims[-1] == 1:
            dims.pop()
        if a.shape[: len(dims)] != tuple(dims):
            raise node.fail(f"B {list(b.shape)} does not fit A {list(a.shape)} from axis 0 (pdpd)", "auto_broadcast")
        return a, b.reshape(tuple(dims) + (1,) * (a.ndim - len(dims)))

    return pdpd
