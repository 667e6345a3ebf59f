"""OpenVINO IR layers on the numpy executor: one table, layer type and opset version -> builder.

A builder gets a :class:`LayerNode` (the layer's ``<data>``, the values of its constant inputs,
how many outputs are read) when the graph is prepared and returns the kernel, called on every
run with the layer's input arrays in port order, returning its outputs as a tuple. Where an ONNX
operator version means what the IR layer means, the builder calls that operator's factory of
ovpool's library (:mod:`ovpool.runtime.ops`) with the ONNX attributes (Convolution is Conv-11
with ``pads = pads_begin + pads_end``, GroupConvolution the same with its ``[G, C_out/G, C_in/G,
k...]`` weights seen as ``[C_out, C_in/G, k...]`` and ``group=G``); where OpenVINO's meaning is
its own, this module computes it with numpy (Interpolate's modes, StridedSlice masks, MVN's
``eps_mode``, Pad's ``symmetric``, Gather's ``batch_dims``). What OpenVINO's rules say:

- Elementwise layers broadcast by ``auto_broadcast``: ``numpy`` (the default: (2, 3, 4) with (3, 1)
  gives (2, 3, 4)), ``none`` (equal shapes) or ``pdpd`` (B's dims, trailing ones dropped, line up
  with A's leading ones: (2, 3, 4, 5) with (2, 3, 1) gives (2, 3, 4, 5); an IR has no pdpd axis,
  OpenVINO reads it as 0).
- Divide of integers floors (``m_pythondiv``, the default): -7 / 2 = -4; with
  ``m_pythondiv="false"`` it truncates, -3. FloorMod has the divisor's sign (-7 mod 2 = 1), Mod
  the dividend's (-7 mod 2 = -1).
- Convert from a float to an integer type truncates toward zero and wraps: -2.5 -> -2, and 300 ->
  44 in u8, -9.2 -> 7 in u4 and i4; to the 8-bit floats it rounds to nearest even; to boolean, any
  non-zero is true. f16 weights followed by Convert to f32 (what ``ovc`` writes) are decompressed
  once, when the graph is prepared; u4/i4 weights are read two to a byte, the low nibble first.
- FakeQuantize-1 is the specification's formula computed in float32 operation by operation,
  rounding half to even (OpenVINO's reference implementation bit for bit): input range [0, 2.55]
  over 256 levels maps 1.005 to round(100.5) = 100. Integer Convolution (ConvInteger as the ONNX
  frontend writes it) is exact.
- Reshape with ``special_zero="true"``: a 0 copies the input's dim (ONNX Reshape's 0); ``false``:
  a 0 is an empty dim (ONNX ``allowzero=1``).
- StridedSlice masks (one flag per entry of ``begin``): ``begin_mask``/``end_mask`` 1 ignores that
  begin or end (the axis's start or end is taken), ``new_axis_mask`` inserts an axis of 1,
  ``shrink_axis_mask`` takes the single index ``begin`` and drops the axis, ``ellipsis_mask``
  stands for every axis not named: (4, 5, 6) with begin [1, 0], end [3, 0], masks begin [0, 1],
  end [0, 1], shrink [0, 0] gives x[1:3, :] of shape (2, 5, 6). With a negative stride a begin
  before the axis starts at its first element (begin -6, end -6, stride -1 on 5 elements keeps
  element 0; numpy's slice keeps none).
- BatchNormInference-1 takes (gamma, beta, data, mean, variance), -5 (data, gamma, beta, mean,
  variance). PRelu with a 1-D slope as long as the channel axis (axis 1) applies it per channel.
- ConvolutionBackpropData weights are ``[C_in, C_out, k...]`` (grouped: ``[G, C_in/G, C_out/G,
  k...]``); the full output ``s * (L - 1) + (k - 1) * d + 1 + output_padding`` is cropped by the pads;
  ``same_*`` without ``output_shape`` crops nothing (L=5, k=3, s=2: 11 outputs, not ONNX's 10);
  with ``output_shape``, the output starts at ``pads_begin`` (explicit), or at ``total - total //
  2`` (same_upper) or ``total // 2`` (same_lower) of ``total = full - output_shape``.
- Softmax-1/8 and LogSoftmax-5 normalise along one ``axis``. MVN-6 divides by
  ``sqrt(var + eps)`` (``eps_mode="inside_sqrt"``) or ``sqrt(var) + eps`` (``outside_sqrt``);
  NormalizeL2 by ``sqrt(max(sum(x^2), eps))`` (``eps_mode="max"``) or ``sqrt(sum(x^2) + eps)``.
- Reduce layers with an empty ``axes`` input return their input (no axis reduced).
- TopK sorts by value (``sort="value"``, the ``mode`` max or min first) or by index; ties keep
  the lower index first; indices are ``index_element_type`` (i32 by default).
- Interpolate-4/11: zero ``pads_begin``/``pads_end`` first; sizes from ``sizes`` or ``floor(L *
  (scale + 1e-6))`` in float32 (``shape_calculation_mode``); each output coordinate maps back by
  ``coordinate_transformation_mode`` with the scale given (``scales``) or ``out / in`` (``sizes``),
  and is the output coordinate itself on an axis whose scale is 1. ``nearest`` rounds it
  (``round_prefer_floor`` 2.5 -> 2, ``round_prefer_ceil`` 2.5 -> 3, ``floor``, ``ceil``, ``simple``:
  the ceiling on a shrinking axis, else truncation) and clips to the axis; ``linear_onnx`` clamps
  it into the axis and weighs the two neighbours; ``cubic`` weighs four (Keys, ``cube_coeff``),
  clipping their indices; ``linear`` is OpenVINO's triangle filter over the neighbours inside the
  axis, normalised by their weights, widened by ``1/scale`` on every axis when ``antialias`` is set
  and some axis shrinks; ``bilinear_pillow``/``bicubic_pillow`` are Pillow's resampling of the two
  ``axes`` (width first). 4 elements by ``scales`` 1.5, ``asymmetric``, ``nearest``/``floor`` give
  6 outputs reading 0 0 1 2 2 3. Integer data is computed in floats and rounded half to even at
  the end (as the CPU plugin does), by the Pillow modes half away from zero after each pass (as
  Pillow).
- If-8 runs ``then_body`` or ``else_body`` on its inputs; LSTMSequence/GRUSequence/RNNSequence-5
  are batch-first (``[batch, seq, input]``, outputs ``[batch, directions, seq, hidden]``), LSTM
  gates in the order f, i, c, o (ONNX: i, o, f, c), GRU z, r, h; ScaledDotProductAttention-13 is
  ``softmax(Q K^T * scale + mask) V`` with ``scale`` ``1/sqrt(E)`` by default, a boolean mask
  keeping where true, ``causal`` masking every key after the query's position.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ovpool import dtypes, kernels
from ovpool.errors import ModelError, SpecError, UnsupportedError
from ovpool.ir.adapter import spec_from_layer, template_for
from ovpool.ir.reader import Layer
from ovpool.ir.templates import versions_of
from ovpool.runtime.ops.base import Kernel, OpNode, lookup

Builder = Callable[["LayerNode"], Kernel]

# Layers the executor itself handles: inputs, weights from the .bin, outputs.
STRUCTURAL: tuple[str, ...] = ("Parameter", "Const", "Result")

_TABLE: dict[tuple[str, str], Builder] = {}


def layer(layer_type: str, *versions: int) -> Callable[[Builder], Builder]:
    """Register ``builder`` for ``layer_type`` at each opset version (``version="opset4"`` in the IR)."""

    def decorate(builder: Builder) -> Builder:
        for version in versions:
            _TABLE[(layer_type, f"opset{version}")] = builder
        return builder

    return decorate


def builder_for(layer_type: str, version: str) -> Builder | None:
    """The builder of ``layer_type`` at ``version`` ("opset1"), or None when numpy does not run it."""
    return _TABLE.get((layer_type, version))


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
    compiled sub-graphs (If ``then_body``/``else_body``): callables from a list of inputs in
    Parameter order to a list of outputs in Result order."""

    layer: Layer
    constants: tuple[np.ndarray | None, ...] = ()
    n_outputs: int = 1
    bodies: Mapping[str, Body] = field(default_factory=dict)

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
        node = _LayerOp(
            name=self.layer.name,
            op_type=op_type,
            since=since,
            opset=since,
            attrs=dict(attrs or {}),
            constants=tuple(constants),
            n_outputs=n_outputs,
            layer=self,
        )
        return row.factory(node)


@dataclass(frozen=True)
class _LayerOp(OpNode):
    """An ONNX operator node standing for an IR layer: its errors name the layer."""

    layer: LayerNode | None = None

    @property
    def label(self) -> str:
        assert self.layer is not None
        return f"{self.layer.label} as ONNX {self.op_type}-{self.since}"


Body = Callable[[list[np.ndarray]], list[np.ndarray]]


def _cached(build: Callable[..., Kernel]) -> Callable[..., Kernel]:
    """``build`` memoised on its (hashable) arguments: a kernel per distinct axis or shape value."""
    return functools.lru_cache(maxsize=16)(build)


def _ints_of(value: np.ndarray) -> tuple[int, ...]:
    """An integer input (0-D or 1-D) as a tuple: ``np.array(3)`` -> (3,)."""
    return tuple(int(v) for v in np.asarray(value).reshape(-1))


def _int64(value: np.ndarray | None) -> np.ndarray | None:
    """An index input as the 1-D int64 tensor ONNX operators take."""
    return None if value is None else np.asarray(value).astype(np.int64).reshape(-1)


def _same_type(node: LayerNode, *arrays: np.ndarray) -> None:
    first = arrays[0].dtype
    for i, array in enumerate(arrays[1:], 1):
        if array.dtype != first:
            raise node.fail(f"input {i} is {array.dtype}, input 0 is {first}: the layer takes one element type")


# ---------------------------------------------------------------------------------------------
# Elementwise: broadcasting, arithmetic, comparisons, logic


def _aligner(node: LayerNode) -> Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
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


def _binary(op_type: str, since: int, attrs: Mapping[str, Any] | None = None) -> Builder:
    """A two-input layer computed by ONNX ``op_type``-``since`` after ``auto_broadcast``."""

    def build(node: LayerNode) -> Kernel:
        kernel = node.onnx(op_type, since, attrs)
        align = _aligner(node)
        if align is None:
            return kernel
        return lambda a, b: kernel(*align(a, b))

    return build


for _type, _onnx, _since in (
    ("Add", "Add", 14),
    ("Subtract", "Sub", 14),
    ("Multiply", "Mul", 14),
    ("Power", "Pow", 15),
    ("Maximum", "Max", 13),
    ("Minimum", "Min", 13),
    ("Equal", "Equal", 19),
    ("Less", "Less", 13),
    ("LessEqual", "LessOrEqual", 16),
    ("Greater", "Greater", 13),
    ("GreaterEqual", "GreaterOrEqual", 16),
    ("LogicalAnd", "And", 7),
    ("LogicalOr", "Or", 7),
):
    layer(_type, 1)(_binary(_onnx, _since))
layer("LogicalXor", 2)(_binary("Xor", 7))


def _numpy_binary(function: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Builder:
    """A two-input layer computed by ``function`` on inputs of one element type, after ``auto_broadcast``."""

    def build(node: LayerNode) -> Kernel:
        align = _aligner(node)

        def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
            _same_type(node, a, b)
            if align is not None:
                a, b = align(a, b)
            if a.dtype.kind in "iu" and function in (np.mod, np.fmod, np.floor_divide) and not np.all(b):
                raise node.fail("integer division by zero (the divisor input holds 0)")
            with np.errstate(all="ignore"):
                return (np.asarray(function(a, b)),)

        return kernel

    return build


layer("FloorMod", 1)(_numpy_binary(np.mod))
layer("Mod", 1)(_numpy_binary(np.fmod))
layer("NotEqual", 1)(_numpy_binary(np.not_equal))


@layer("Divide", 1)
def divide(node: LayerNode) -> Kernel:
    """Divide-1: a / b; integers floor (``m_pythondiv="true"``, the default: -7 / 2 = -4) or
    truncate (``"false"``: -3, ONNX Div)."""
    floor = node.flag("m_pythondiv", True)
    div = _binary("Div", 14)(node)
    floor_div = _numpy_binary(np.floor_divide)(node)

    def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        return floor_div(a, b) if floor and a.dtype.kind in "iu" else div(a, b)

    return kernel


@layer("SquaredDifference", 1)
def squared_difference(node: LayerNode) -> Kernel:
    """SquaredDifference-1: (a - b)^2: 1 and 4 give 9."""
    sub = _binary("Sub", 14)(node)
    return lambda a, b: (np.square(sub(a, b)[0]),)


@layer("Select", 1)
def select(node: LayerNode) -> Kernel:
    """Select-1: ``then`` where the boolean ``cond`` holds, ``else`` elsewhere (ONNX Where), numpy
    broadcasting (``auto_broadcast="none"``: equal shapes)."""
    where = node.onnx("Where", 16)
    mode = node.choice("auto_broadcast", "numpy", ("numpy", "none"))

    def kernel(cond: np.ndarray, then: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, ...]:
        if mode == "none" and not cond.shape == then.shape == other.shape:
            raise node.fail(f"shapes {[list(a.shape) for a in (cond, then, other)]} differ (auto_broadcast none)")
        return where(cond, then, other)

    return kernel


@layer("LogicalNot", 1)
def logical_not(node: LayerNode) -> Kernel:
    return node.onnx("Not", 1)


def _unary(op_type: str, since: int) -> Builder:
    return lambda node: node.onnx(op_type, since)


for _type, _onnx, _since in (
    ("ReLU", "Relu", 14),
    ("Sigmoid", "Sigmoid", 13),
    ("Tanh", "Tanh", 13),
    ("Exp", "Exp", 13),
    ("Sqrt", "Sqrt", 13),
    ("Erf", "Erf", 13),
    ("Abs", "Abs", 13),
    ("Negative", "Neg", 13),
    ("Floor", "Floor", 13),
    ("Ceiling", "Ceil", 13),
    ("Log", "Log", 13),
    ("Sin", "Sin", 7),
    ("Cos", "Cos", 7),
    ("Sign", "Sign", 13),
):
    layer(_type, 1)(_unary(_onnx, _since))
layer("Mish", 4)(_unary("Mish", 18))


@layer("Round", 5)
def round_(node: LayerNode) -> Kernel:
    """Round-5: ``half_to_even`` (2.5 -> 2, ONNX Round) or ``half_away_from_zero`` (2.5 -> 3, -2.5 -> -3)."""
    even = node.choice("mode", "half_to_even", ("half_to_even", "half_away_from_zero")) == "half_to_even"
    onnx_round = node.onnx("Round", 11)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if even or x.dtype.kind in "iu":
            return onnx_round(x) if x.dtype.kind not in "iu" else (x,)
        return ((np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(x.dtype),)

    return kernel


layer("SoftPlus", 4)(_unary("Softplus", 1))
layer("SoftSign", 9)(_unary("Softsign", 1))


def _float_formula(formula: Callable[[np.ndarray], np.ndarray]) -> Builder:
    """A one-input float layer computed by ``formula`` (float16 through float32)."""

    def build(node: LayerNode) -> Kernel:
        def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
            if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
                raise node.fail(f"input 0 is {x.dtype}; the layer takes floating-point types")
            work = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
            with np.errstate(all="ignore"):
                return (np.asarray(formula(work)).astype(x.dtype, copy=False),)

        return kernel

    return build


def _relu6_over_6(x: np.ndarray) -> np.ndarray:
    """min(max(x + 3, 0), 6) / 6."""
    y = x + 3
    np.clip(y, 0, 6, out=y)
    y /= 6
    return y


layer("HSigmoid", 5)(_float_formula(_relu6_over_6))
layer("HSwish", 4)(_float_formula(lambda x: x * _relu6_over_6(x)))


@layer("HardSigmoid", 1)
def hard_sigmoid(node: LayerNode) -> Kernel:
    """HardSigmoid-1: max(0, min(1, alpha * x + beta)) with alpha and beta as inputs: alpha 0.2,
    beta 0.5 give 0.7 for 1."""

    def kernel(x: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, ...]:
        _same_type(node, x, alpha, beta)
        y = x * alpha.reshape(()) + beta.reshape(())
        return (np.clip(y, 0, 1).astype(x.dtype, copy=False),)

    return kernel


@layer("Swish", 4)
def swish(node: LayerNode) -> Kernel:
    """Swish-4: x * sigmoid(beta * x), beta an optional input (1 when absent): 1 -> 0.7311."""
    sigmoid = node.onnx("Sigmoid", 13)

    def kernel(x: np.ndarray, beta: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        scaled = x if beta is None else x * beta.reshape(()).astype(x.dtype)
        return (x * sigmoid(scaled)[0],)

    return kernel


@layer("Gelu", 2, 7)
def gelu(node: LayerNode) -> Kernel:
    """Gelu-2 (erf) and Gelu-7 (``approximation_mode`` erf or tanh), ONNX Gelu-20: 1 -> 0.8413."""
    mode = node.choice("approximation_mode", "erf", ("erf", "tanh")) if node.layer.version == "opset7" else "erf"
    return node.onnx("Gelu", 20, {"approximate": "none" if mode == "erf" else "tanh"})


@layer("Elu", 1)
def elu(node: LayerNode) -> Kernel:
    """Elu-1: x for x > 0, alpha * (e^x - 1) otherwise."""
    return node.onnx("Elu", 6, {"alpha": node.number("alpha")})


@layer("Clamp", 1)
def clamp(node: LayerNode) -> Kernel:
    """Clamp-1: x clipped to [min, max]; on integers to [ceil(min), floor(max)]: 0.5..2.5 keeps 1 and 2."""
    low, high = node.number("min"), node.number("max")
    if low > high:
        raise node.fail(f"min {low} is above max {high}", "min")
    clip = node.onnx("Clip", 13)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        bounds: tuple[float, float] = (low, high)
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            bounds = (max(math.ceil(low), info.min), min(math.floor(high), info.max))
        return clip(x, np.array(bounds[0], x.dtype), np.array(bounds[1], x.dtype))

    return kernel


@layer("PReLU", 1)
def prelu(node: LayerNode) -> Kernel:
    """PRelu-1: x for x >= 0, slope * x otherwise; a 1-D slope as long as axis 1 of a rank-2+ input
    is per channel, any other slope broadcasts numpy-style."""
    onnx_prelu = node.onnx("PRelu", 16)

    def kernel(x: np.ndarray, slope: np.ndarray) -> tuple[np.ndarray, ...]:
        if slope.ndim == 1 and x.ndim >= 2 and slope.shape[0] == x.shape[1] and slope.shape[0] > 1:
            slope = slope.reshape((-1,) + (1,) * (x.ndim - 2))
        return onnx_prelu(x, slope)

    return kernel


@layer("Selu", 1)
def selu(node: LayerNode) -> Kernel:
    """Selu-1: lambda * (x if x > 0 else alpha * (e^x - 1)), alpha and lambda as inputs."""

    def kernel(x: np.ndarray, alpha: np.ndarray, lambda_: np.ndarray) -> tuple[np.ndarray, ...]:
        _same_type(node, x, alpha, lambda_)
        with np.errstate(over="ignore"):
            y = np.where(x > 0, x, alpha.reshape(()) * np.expm1(x)) * lambda_.reshape(())
        return (y.astype(x.dtype, copy=False),)

    return kernel


@layer("Convert", 1)
def convert(node: LayerNode) -> Kernel:
    """Convert-1 to ``destination_type``: floats to integers truncate toward zero and wrap (-2.5
    -> -2; 300 -> 44 in u8; -9.2 -> -9 -> 7 in i4 and u4), to the 8-bit floats ``f8e4m3``/``f8e5m2``
    round to nearest even (460 -> 448, 500 -> NaN in f8e4m3, which has no infinity), anything to
    boolean is ``!= 0``."""
    target = node.element_type("destination_type", narrow=True)
    return lambda x: (_converted(x, target),)


@layer("ConvertLike", 1)
def convert_like(node: LayerNode) -> Kernel:
    """ConvertLike-1: ``data`` converted (as Convert) to the element type of ``like``."""
    return lambda x, like: (_converted(x, like.dtype),)


_NARROW_INTEGERS = {"int4": np.dtype(np.int8), "uint4": np.dtype(np.uint8)}


def _converted(x: np.ndarray, target: np.dtype) -> np.ndarray:
    if x.dtype == target:
        return x
    if x.dtype.name in _NARROW_INTEGERS:  # 4-bit integers: their values, held in 8 bits
        x = x.astype(_NARROW_INTEGERS[x.dtype.name])
    elif x.dtype.name.startswith("float8"):
        x = x.astype(np.float32)
    if target == np.bool_:
        return np.asarray(x != 0)
    if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
        if target.kind in "iu" or target.name in _NARROW_INTEGERS:
            with np.errstate(invalid="ignore"):
                return np.trunc(x.astype(np.float64)).astype(np.int64).astype(target)
    if target.name in _NARROW_INTEGERS:
        return x.astype(np.int64).astype(target)
    return x.astype(target)


# ---------------------------------------------------------------------------------------------
# Quantization


_FQ_RANGES = ("input_low", "input_high", "output_low", "output_high")


def _fitted(
    node: LayerNode,
    x: np.ndarray,
    r: np.ndarray,
    name: str,
    align: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None,
) -> np.ndarray:
    """A range input lined up with the data ``x`` (``auto_broadcast``, leading unit dims beyond
    its rank dropped); one that does not broadcast to ``x``'s shape is the layer's error."""
    if align is not None:
        r = align(x, r)[1]
    while r.ndim > x.ndim and r.shape[0] == 1:
        r = r.reshape(r.shape[1:])
    try:
        fits = np.broadcast_shapes(r.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise node.fail(f"{name} of shape {list(r.shape)} does not broadcast to the data's shape {list(x.shape)}")
    return r


@layer("FakeQuantize", 1)
def fake_quantize(node: LayerNode) -> Kernel:
    """FakeQuantize-1: ``x`` mapped onto ``levels`` evenly spaced values of the output range, by
    the specification's formula computed operation by operation in float32 (float64 for f64 data),
    rounding half to even, then cast to the data's type (the arithmetic of OpenVINO's reference
    implementation)::

        x <= min(input_low, input_high): output_low
        x >  max(input_low, input_high): output_high
        otherwise: round((x - input_low) / (input_high - input_low) * (levels - 1))
                   / (levels - 1) * (output_high - output_low) + output_low

    The four range inputs broadcast to the shape of ``x`` by ``auto_broadcast`` (leading unit dims
    beyond its rank dropped), which is the output's shape. Input range [0, 2.55],
    output range [0, 255], 256 levels: 1.004 gives round(100.4) = 100, 1.005 gives round(100.5) =
    100 (half to even), the next float32 up 101, and 3 gives 255."""
    levels = node.integer("levels")
    if not 2 <= levels < 2**64:
        raise node.fail(f"{levels} is not between 2 and 2**64 - 1 (OpenVINO holds it in 64 bits)", "levels")
    align = _aligner(node)

    def kernel(
        x: np.ndarray, low: np.ndarray, high: np.ndarray, out_low: np.ndarray, out_high: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        _same_type(node, x, low, high, out_low, out_high)
        if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
            raise node.fail(f"input 0 is {x.dtype}; the layer takes floating-point types")
        ranges = [_fitted(node, x, r, name, align) for r, name in zip((low, high, out_low, out_high), _FQ_RANGES)]
        work = np.dtype(np.float64 if x.dtype == np.float64 else np.float32)
        v, lo, hi, o_lo, o_hi = (a.astype(work, copy=False) for a in (x, *ranges))
        steps = work.type(levels - 1)
        with np.errstate(all="ignore"):  # an empty input range divides by 0 where it is not used
            inside = np.rint((v - lo) / (hi - lo) * steps) / steps * (o_hi - o_lo) + o_lo
        y = np.where(v <= np.minimum(lo, hi), o_lo, np.where(v > np.maximum(lo, hi), o_hi, inside))
        return (np.asarray(y).astype(x.dtype, copy=False),)

    return kernel


# ---------------------------------------------------------------------------------------------
# Shapes and layout


@layer("Concat", 1)
def concat(node: LayerNode) -> Kernel:
    """Concat-1 along ``axis`` (negative counts from the end)."""
    return node.onnx("Concat", 13, {"axis": node.integer("axis")})


@layer("Reshape", 1)
def reshape(node: LayerNode) -> Kernel:
    """Reshape-1: ``special_zero="true"`` copies the input's dim for a 0 ((2, 3, 4) to [0, -1]:
    (2, 12)); ``"false"`` makes it an empty dim. One -1 takes what is left."""
    zero_copies = node.flag("special_zero", False)
    kernel = node.onnx("Reshape", 14, {"allowzero": 0 if zero_copies else 1}, (None, _int64(node.constant(1))))
    return lambda x, shape: kernel(x, _int64(shape))


@layer("Squeeze", 1, 15)
def squeeze(node: LayerNode) -> Kernel:
    """Squeeze-1/15: drop the axes of length 1 named by the optional ``axes`` input (all of them
    when absent); Squeeze-15 with ``allow_axis_skip`` passes over a named axis that is not 1."""
    skip = node.layer.version == "opset15" and node.flag("allow_axis_skip", False)
    kernel = node.onnx("Squeeze", 13, {}, (None, None if skip else _int64(node.constant(1))))

    def run(x: np.ndarray, axes: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        chosen = _int64(axes)
        if skip and chosen is not None:
            chosen = np.array([a for a in chosen if -x.ndim <= a < x.ndim and x.shape[a] == 1], np.int64)
            if not chosen.size:
                return (x,)
        return kernel(x, chosen)

    return run


@layer("Unsqueeze", 1)
def unsqueeze(node: LayerNode) -> Kernel:
    """Unsqueeze-1: insert axes of length 1 at the positions of the output named by ``axes``."""
    kernel = node.onnx("Unsqueeze", 13, {}, (None, _int64(node.constant(1))))
    return lambda x, axes: kernel(x, _int64(axes))


@layer("Transpose", 1)
def transpose(node: LayerNode) -> Kernel:
    """Transpose-1: output axis i is input axis ``order[i]``; an empty order reverses the axes."""
    by_order = _cached(lambda perm: node.onnx("Transpose", 13, {"perm": list(perm)}))

    def kernel(x: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, ...]:
        perm = _ints_of(order) or tuple(range(x.ndim - 1, -1, -1))
        return by_order(perm)(x)

    return kernel


def _space_blocks(node: LayerNode, x: np.ndarray, block: int) -> tuple[int, int]:
    """Spatial rank and block count of a DepthToSpace/SpaceToDepth input ``[N, C, D1, ...]``."""
    if x.ndim < 3:
        raise node.fail(f"input {list(x.shape)} needs N, C and a spatial axis")
    if block < 1:
        raise node.fail(f"{block} is below 1", "block_size")
    return x.ndim - 2, block ** (x.ndim - 2)


@layer("DepthToSpace", 1)
def depth_to_space(node: LayerNode) -> Kernel:
    """DepthToSpace-1: ``[N, C * b^k, D1, ...]`` to ``[N, C, D1 * b, ...]``, the channel read as
    ``[b, ..., b, C]`` (``blocks_first``) or ``[C, b, ..., b]`` (``depth_first``): 4 channels of 1x1
    with b=2 become a 2x2 plane, channel 0 top left, 1 top right, 2 bottom left."""
    block = node.integer("block_size", 1)
    first = node.choice("mode", "blocks_first", ("blocks_first", "depth_first")) == "blocks_first"

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        k, blocks = _space_blocks(node, x, block)
        n, c, dims = x.shape[0], x.shape[1], x.shape[2:]
        if c % blocks:
            raise node.fail(f"{c} channels do not split into {blocks} blocks of block_size {block}")
        depth = c // blocks
        if first:
            y = x.reshape((n,) + (block,) * k + (depth,) + dims)
            order = [0, k + 1] + [a for i in range(k) for a in (k + 2 + i, 1 + i)]
        else:
            y = x.reshape((n, depth) + (block,) * k + dims)
            order = [0, 1] + [a for i in range(k) for a in (2 + k + i, 2 + i)]
        return (y.transpose(order).reshape((n, depth) + tuple(d * block for d in dims)),)

    return kernel


@layer("SpaceToDepth", 1)
def space_to_depth(node: LayerNode) -> Kernel:
    """SpaceToDepth-1, the inverse of DepthToSpace: ``[N, C, D1 * b, ...]`` to ``[N, C * b^k, D1, ...]``."""
    block = node.integer("block_size", 1)
    first = node.choice("mode", "blocks_first", ("blocks_first", "depth_first")) == "blocks_first"

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        k, blocks = _space_blocks(node, x, block)
        n, c = x.shape[:2]
        if any(d % block for d in x.shape[2:]):
            raise node.fail(f"spatial dims {list(x.shape[2:])} are not multiples of block_size {block}")
        dims = tuple(d // block for d in x.shape[2:])
        y = x.reshape((n, c) + tuple(v for d in dims for v in (d, block)))
        blocks_axes = [3 + 2 * i for i in range(k)]
        dim_axes = [2 + 2 * i for i in range(k)]
        order = [0] + (blocks_axes + [1] if first else [1] + blocks_axes) + dim_axes
        return (y.transpose(order).reshape((n, c * blocks) + dims),)

    return kernel


@layer("StridedSlice", 1)
def strided_slice(node: LayerNode) -> Kernel:
    """StridedSlice-1: numpy's basic indexing with OpenVINO's masks (see the module text)."""
    masks = {
        name: node.ints(name, ()) for name in ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")
    }
    if sum(masks["ellipsis_mask"]) > 1:
        raise node.fail(f"{list(masks['ellipsis_mask'])} sets more than one ellipsis", "ellipsis_mask")

    def bit(name: str, i: int) -> bool:
        return i < len(masks[name]) and masks[name][i] != 0

    def kernel(x: np.ndarray, begin: np.ndarray, end: np.ndarray, stride: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        b, e = _ints_of(begin), _ints_of(end)
        s = _ints_of(stride) if stride is not None else (1,) * len(b)
        if not len(b) == len(e) == len(s):
            raise node.fail(f"begin {list(b)}, end {list(e)} and stride {list(s)} differ in length")
        if 0 in s:
            raise node.fail(f"stride {list(s)} holds 0")
        consumed = sum(1 for i in range(len(b)) if not bit("new_axis_mask", i) and not bit("ellipsis_mask", i))
        items: list[Any] = []
        axis = 0
        for i in range(len(b)):
            if bit("ellipsis_mask", i):
                items.append(Ellipsis)
                axis += x.ndim - consumed
            elif bit("new_axis_mask", i):
                items.append(None)
            elif bit("shrink_axis_mask", i):
                items.append((0 if s[i] > 0 else -1) if bit("begin_mask", i) else b[i])
                axis += 1
            else:
                start = None if bit("begin_mask", i) else b[i]
                if start is not None and s[i] < 0 and axis < x.ndim:
                    dim = x.shape[axis]  # a negative stride starts inside the axis: begin -6 of 5 is 0, not empty
                    start = min(max(start + dim if start < 0 else start, 0), dim - 1)
                items.append(slice(start, None if bit("end_mask", i) else e[i], s[i]))
                axis += 1
        try:
            return (np.asarray(x[tuple(items)]),)
        except IndexError as exc:
            raise node.fail(f"begin {list(b)} on shape {list(x.shape)}: {exc}") from None

    return kernel


@layer("Slice", 8)
def slice_(node: LayerNode) -> Kernel:
    """Slice-8 (data, start, stop, step, axes): ONNX Slice-13 (data, starts, ends, axes, steps)."""
    c = [_int64(node.constant(i)) for i in range(5)]
    kernel = node.onnx("Slice", 13, {}, (None, c[1], c[2], c[4], c[3]))

    def run(
        x: np.ndarray, start: np.ndarray, stop: np.ndarray, step: np.ndarray, axes: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        return kernel(x, _int64(start), _int64(stop), _int64(axes), _int64(step))

    return run


@layer("Split", 1)
def split(node: LayerNode) -> Kernel:
    """Split-1: ``num_splits`` equal parts along the ``axis`` input ((6, 4) in 3 along 0: three (2, 4))."""
    parts = node.integer("num_splits")
    by_axis = _cached(lambda axis: node.onnx("Split", 13, {"axis": axis}, n_outputs=parts))

    def kernel(x: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
        return by_axis(_ints_of(axis)[0])(x)

    return kernel


@layer("VariadicSplit", 1)
def variadic_split(node: LayerNode) -> Kernel:
    """VariadicSplit-1: parts of ``split_lengths`` along ``axis``, one -1 taking the rest:
    lengths [2, -1] of 5 give 2 and 3."""
    by_axis = _cached(lambda axis, n: node.onnx("Split", 13, {"axis": axis}, n_outputs=n))

    def kernel(x: np.ndarray, axis: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, ...]:
        a = _ints_of(axis)[0]
        sizes = list(_ints_of(lengths))
        if not -x.ndim <= a < x.ndim:
            raise node.fail(f"axis {a} is outside a rank-{x.ndim} input")
        d = x.shape[a]
        if sizes.count(-1) > 1:
            raise node.fail(f"split_lengths {sizes} has more than one -1")
        if -1 in sizes:
            sizes[sizes.index(-1)] = d - sum(v for v in sizes if v != -1)
        if any(v < 0 for v in sizes) or sum(sizes) != d:
            raise node.fail(f"split_lengths {list(_ints_of(lengths))} do not add up to axis {a} of length {d}")
        return by_axis(a, len(sizes))(x, np.array(sizes, np.int64))

    return kernel


@layer("Gather", 1, 7, 8)
def gather(node: LayerNode) -> Kernel:
    """Gather-1/7/8 along the ``axis`` input, negative indices counting from the end; ``batch_dims``
    (7, 8) leading axes of data and indices are walked together: data (2, 3, 4), indices (2, 5),
    axis 1, batch_dims 1 give (2, 5, 4) with out[b, i] = data[b, indices[b, i]]."""
    batch_dims = node.integer("batch_dims", 0) if node.layer.version != "opset1" else 0
    by_axis = _cached(lambda axis: node.onnx("Gather", 13, {"axis": axis}))

    def kernel(data: np.ndarray, indices: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
        a = _ints_of(axis)[0]
        a = a + data.ndim if a < 0 else a
        b = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
        if not 0 <= b <= min(a, indices.ndim) or a >= data.ndim:
            raise node.fail(
                f"axis {a} and batch_dims {batch_dims} do not fit data {list(data.shape)}, indices {list(indices.shape)}"
            )
        if b == 0:
            return by_axis(a)(data, indices)
        if data.shape[:b] != indices.shape[:b]:
            raise node.fail(f"the first {b} dims of data {list(data.shape)} and indices {list(indices.shape)} differ")
        lead = data.shape[:b]
        flat_data = data.reshape((-1,) + data.shape[b:])
        flat_indices = indices.reshape((-1,) + indices.shape[b:])
        gather_axis = by_axis(a - b)
        parts = [gather_axis(d, i)[0] for d, i in zip(flat_data, flat_indices)]
        out_shape = data.shape[b:a] + indices.shape[b:] + data.shape[a + 1 :]
        stacked = np.stack(parts) if parts else np.zeros((0,) + out_shape, data.dtype)
        return (stacked.reshape(lead + out_shape),)

    return kernel


@layer("ShapeOf", 1, 3)
def shape_of(node: LayerNode) -> Kernel:
    """ShapeOf-1 (i64) and -3 (``output_type`` i64 or i32): the input's dims."""
    dtype = node.element_type("output_type", "i64") if node.layer.version == "opset3" else np.dtype(np.int64)
    return lambda x: (np.array(x.shape, dtype),)


@layer("Broadcast", 1, 3)
def broadcast(node: LayerNode) -> Kernel:
    """Broadcast-1/3 to ``target_shape``: ``numpy`` (the input's dims line up with the target's
    trailing ones), ``bidirectional`` (3; the result is the broadcast of both shapes: (3, 1) to
    [2, 1, 4] gives (2, 3, 4)), ``explicit`` (input axis i goes to output axis ``axes_mapping[i]``)."""
    modes = ("numpy", "explicit", "none") + (("bidirectional",) if node.layer.version == "opset3" else ())
    mode = node.choice("mode", "numpy", modes)
    mode = "explicit" if mode == "none" else mode  # Broadcast-1 writes explicit as "none"

    def kernel(x: np.ndarray, target: np.ndarray, axes_mapping: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        shape = _ints_of(target)
        if mode == "explicit":
            if axes_mapping is None:
                raise node.fail("mode explicit needs the axes_mapping input")
            axes = _ints_of(axes_mapping)
            if len(axes) != x.ndim or any(not 0 <= a < len(shape) for a in axes) or list(axes) != sorted(axes):
                raise node.fail(f"axes_mapping {list(axes)} does not place a rank-{x.ndim} input in {list(shape)}")
            placed = [1] * len(shape)
            for a, dim in zip(axes, x.shape):
                placed[a] = dim
            x = x.reshape(placed)
        elif mode == "bidirectional":
            try:
                shape = np.broadcast_shapes(x.shape, shape)
            except ValueError:
                raise node.fail(f"input {list(x.shape)} and target {list(shape)} do not broadcast") from None
        try:
            return (np.broadcast_to(x, shape).copy(),)
        except ValueError:
            raise node.fail(f"input {list(x.shape)} does not broadcast to {list(shape)} (mode {mode})") from None

    return kernel


@layer("Tile", 1)
def tile(node: LayerNode) -> Kernel:
    """Tile-1: ``repeats`` copies along each axis, the shorter of rank and ``repeats`` padded with
    leading ones: (2, 3) by [2] gives (2, 6), by [2, 1, 1] (2, 2, 3)."""

    def kernel(x: np.ndarray, repeats: np.ndarray) -> tuple[np.ndarray, ...]:
        counts = _ints_of(repeats)
        if any(c < 0 for c in counts):
            raise node.fail(f"repeats {list(counts)} has a negative count")
        return (np.tile(x, counts),)

    return kernel


_NUMPY_PAD_MODES: dict[str, Any] = {"edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


@layer("Pad", 1, 12)
def pad(node: LayerNode) -> Kernel:
    """Pad-1/12: ``pads_begin``/``pads_end`` per axis (negative ones crop), ``pad_mode`` constant
    (``pad_value``, 0 when absent), edge, reflect (the edge not repeated) or symmetric (repeated):
    [1, 2, 3] padded 2 at the start gives [0, 0, 1, 2, 3], [1, 1, 1, 2, 3], [3, 2, 1, 2, 3], [2, 1, 1, 2, 3]."""
    mode = node.choice("pad_mode", "constant", ("constant", "edge", "reflect", "symmetric"))

    def kernel(x: np.ndarray, begin: np.ndarray, end: np.ndarray, value: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        pb, pe = _ints_of(begin), _ints_of(end)
        if len(pb) != x.ndim or len(pe) != x.ndim:
            raise node.fail(f"pads_begin {list(pb)} and pads_end {list(pe)} need {x.ndim} values for {list(x.shape)}")
        crop = tuple(slice(max(0, -b), d - max(0, -e)) for b, e, d in zip(pb, pe, x.shape))
        x = x[crop]
        widths = [(max(0, b), max(0, e)) for b, e in zip(pb, pe)]
        if mode in ("reflect", "symmetric"):
            for (b, e), d in zip(widths, x.shape):
                if max(b, e) > d - (mode == "reflect"):
                    raise node.fail(f"pads {list(pb)}, {list(pe)} reach beyond {list(x.shape)} in mode {mode}")
        if mode == "constant":
            fill = 0 if value is None else value.reshape(()).astype(x.dtype)
            return (np.pad(x, widths, mode="constant", constant_values=fill),)
        return (np.pad(x, widths, mode=_NUMPY_PAD_MODES[mode]),)

    return kernel


@layer("Range", 1, 4)
def range_(node: LayerNode) -> Kernel:
    """Range-1/4: ``ceil((stop - start) / step)`` values start + i * step, of the inputs' type (1)
    or ``output_type`` (4); an integer output rounds them half to even: start 0.5, stop 5.5, step
    0.75 in i32 give [0, 1, 2, 3, 4, 4, 5]."""
    given = node.element_type("output_type") if node.layer.version == "opset4" else None

    def kernel(start: np.ndarray, stop: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, ...]:
        dtype = given if given is not None else start.dtype
        first, last, delta = (float(v.reshape(())) for v in (start, stop, step))
        if delta == 0:
            raise node.fail("step is 0")
        count = max(0, math.ceil((last - first) / delta))
        values = first + np.arange(count) * delta
        return ((np.rint(values) if dtype.kind in "iu" else values).astype(dtype),)

    return kernel


@layer("Identity", 16)
def identity(node: LayerNode) -> Kernel:
    return lambda x: (x,)


# ---------------------------------------------------------------------------------------------
# Reductions, normalisation, softmax


def _reduction(op_type: str, since: int) -> Builder:
    """Reduce layers (``axes`` input, ``keep_dims``) as ONNX's input-axes form; empty axes reduce nothing."""

    def build(node: LayerNode) -> Kernel:
        attrs = {"keepdims": int(node.flag("keep_dims", False)), "noop_with_empty_axes": 1}
        kernel = node.onnx(op_type, since, attrs, (None, _int64(node.constant(1))))
        return lambda x, axes: kernel(x, _int64(axes))

    return build


for _type, _onnx, _since, _version in (
    ("ReduceMean", "ReduceMean", 18, 1),
    ("ReduceMax", "ReduceMax", 18, 1),
    ("ReduceMin", "ReduceMin", 18, 1),
    ("ReduceSum", "ReduceSum", 13, 1),
    ("ReduceProd", "ReduceProd", 18, 1),
    ("ReduceL1", "ReduceL1", 18, 4),
    ("ReduceL2", "ReduceL2", 18, 4),
):
    layer(_type, _version)(_reduction(_onnx, _since))


def _logical_reduction(function: Callable[..., np.ndarray]) -> Builder:
    def build(node: LayerNode) -> Kernel:
        keep = node.flag("keep_dims", False)

        def kernel(x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
            chosen = tuple(a % x.ndim for a in _ints_of(axes)) if x.ndim else ()
            return (np.asarray(function(x, axis=chosen, keepdims=keep)),)

        return kernel

    return build


layer("ReduceLogicalAnd", 1)(_logical_reduction(np.all))
layer("ReduceLogicalOr", 1)(_logical_reduction(np.any))


@layer("SoftMax", 1, 8)
def softmax(node: LayerNode) -> Kernel:
    """SoftMax-1/8 along ``axis`` (default 1; -1 is the last axis from 8)."""
    return node.onnx("Softmax", 13, {"axis": node.integer("axis", 1)})


@layer("LogSoftmax", 5)
def log_softmax(node: LayerNode) -> Kernel:
    """LogSoftmax-5 along ``axis`` (default 1)."""
    return node.onnx("LogSoftmax", 13, {"axis": node.integer("axis", 1)})


def _normalize_axes(node: LayerNode, axes: Sequence[int], rank: int) -> tuple[int, ...]:
    if any(not -rank <= a < rank for a in axes):
        raise node.fail(f"axes {list(axes)} fall outside a rank-{rank} input")
    return tuple(sorted({a % rank for a in axes}))


def _mvn(node: LayerNode, x: np.ndarray, axes: tuple[int, ...], variance: bool, eps: float, inside: bool) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) (inside) or / (sqrt(var) + eps), over ``axes``, in float64."""
    if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
        raise node.fail(f"input 0 is {x.dtype}; the layer takes floating-point types")
    work = x.astype(np.float64)
    centred = work - work.mean(axis=axes, keepdims=True)
    if variance:
        var = np.square(centred).mean(axis=axes, keepdims=True)
        centred /= np.sqrt(var + eps) if inside else np.sqrt(var) + eps
    return centred.astype(x.dtype)


@layer("MVN", 6)
def mvn_6(node: LayerNode) -> Kernel:
    """MVN-6: mean (and variance, ``normalize_variance``) over the ``axes`` input; ``eps_mode``
    inside_sqrt or outside_sqrt: [1, 3] gives [-1, 1] with eps 0."""
    variance = node.flag("normalize_variance", True)
    eps = node.number("eps")
    inside = node.choice("eps_mode", "inside_sqrt", ("inside_sqrt", "outside_sqrt")) == "inside_sqrt"

    def kernel(x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
        return (_mvn(node, x, _normalize_axes(node, _ints_of(axes), x.ndim), variance, eps, inside),)

    return kernel


@layer("MVN", 2)
def mvn_1(node: LayerNode) -> Kernel:
    """MVN-1 (opset2): over ``reduction_axes``, or the spatial axes (and channels when
    ``across_channels``); eps added to the variance, inside the square root."""
    variance = node.flag("normalize_variance", True)
    eps = node.number("eps")
    given = node.ints("reduction_axes", ())
    across = node.flag("across_channels", False)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        axes = _normalize_axes(node, given, x.ndim) if given else tuple(range(1 if across else 2, x.ndim))
        return (_mvn(node, x, axes, variance, eps, inside=True),)

    return kernel


@layer("NormalizeL2", 1)
def normalize_l2(node: LayerNode) -> Kernel:
    """NormalizeL2-1: x / sqrt(max(sum(x^2), eps)) (``eps_mode="max"``) or sqrt(sum(x^2) + eps)
    (``add``) over the ``axes`` input: [3, 4] gives [0.6, 0.8]."""
    eps = node.number("eps")
    add = node.choice("eps_mode", "add", ("add", "max")) == "add"

    def kernel(x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
        chosen = _normalize_axes(node, _ints_of(axes), x.ndim)
        work = x.astype(np.float64)
        total = np.square(work).sum(axis=chosen, keepdims=True)
        norm = np.sqrt(total + eps) if add else np.sqrt(np.maximum(total, eps))
        return ((work / norm).astype(x.dtype),)

    return kernel


@layer("BatchNormInference", 1, 5)
def batch_norm(node: LayerNode) -> Kernel:
    """BatchNormInference: gamma * (x - mean) / sqrt(var + epsilon) + beta per channel (axis 1);
    version 1 takes (gamma, beta, data, mean, variance), 5 (data, gamma, beta, mean, variance)."""
    order = (2, 0, 1, 3, 4) if node.layer.version == "opset1" else (0, 1, 2, 3, 4)
    constants = tuple(node.constant(i) for i in order)
    kernel = node.onnx("BatchNormalization", 15, {"epsilon": node.number("epsilon")}, constants)
    return lambda *inputs: kernel(*(inputs[i] for i in order))


@layer("TopK", 1, 3, 11)
def top_k(node: LayerNode) -> Kernel:
    """TopK-1/3/11: the ``k`` largest (``mode="max"``) or smallest values along ``axis`` and their
    indices (``index_element_type``, i32 by default), ordered by value or (``sort="index"``) by index."""
    axis = node.integer("axis")
    largest = node.choice("mode", "max", ("max", "min")) == "max"
    by_index = node.choice("sort", "none", ("value", "index", "none")) == "index"
    index_type = node.element_type("index_element_type", "i32")
    onnx_top_k = node.onnx("TopK", 11, {"axis": axis, "largest": int(largest), "sorted": 1}, n_outputs=2)

    def kernel(x: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, ...]:
        values, indices = onnx_top_k(x, _int64(k))
        if by_index:
            order = np.argsort(indices, axis=axis, kind="stable")
            values, indices = np.take_along_axis(values, order, axis), np.take_along_axis(indices, order, axis)
        return values, indices.astype(index_type)

    return kernel


@layer("MatMul", 1)
def matmul(node: LayerNode) -> Kernel:
    """MatMul-1: ONNX MatMul after ``transpose_a``/``transpose_b`` swap the last two axes of a
    rank-2+ input (a 1-D input is never transposed)."""
    swap = (node.flag("transpose_a", False), node.flag("transpose_b", False))
    b_const = node.constant(1)
    if b_const is not None and swap[1] and b_const.ndim >= 2:
        b_const = np.ascontiguousarray(np.swapaxes(b_const, -1, -2))
    onnx_matmul = node.onnx("MatMul", 13, {}, (None, b_const))

    def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        if swap[0] and a.ndim >= 2:
            a = np.swapaxes(a, -1, -2)
        if swap[1] and b.ndim >= 2:
            b = np.swapaxes(b, -1, -2)
        return onnx_matmul(a, b)

    return kernel


# ---------------------------------------------------------------------------------------------
# Convolutions and pooling


_AUTO_PADS = {"explicit": "NOTSET", "notset": "NOTSET", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER", "valid": "VALID"}


def _conv_attrs(node: LayerNode) -> dict[str, Any]:
    """Convolution's attributes as ONNX Conv's: ``pads = pads_begin + pads_end`` when explicit."""
    auto_pad = _AUTO_PADS[node.choice("auto_pad", "explicit", tuple(_AUTO_PADS))]
    attrs: dict[str, Any] = {
        "strides": list(node.ints("strides")),
        "dilations": list(node.ints("dilations")),
        "auto_pad": auto_pad,
    }
    if auto_pad == "NOTSET":
        attrs["pads"] = list(node.ints("pads_begin") + node.ints("pads_end"))
    return attrs


def _backprop_window(
    node: LayerNode, full: Sequence[int], output_shape: Sequence[int] | None
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Where ConvolutionBackpropData's output lies in the full output (``full`` per spatial axis,
    output_padding included): (starts, sizes). Without ``output_shape``: explicit pads crop
    (start ``pads_begin``, size ``full - pads_begin - pads_end``), ``valid`` and ``same_*`` crop
    nothing. With it, the size is ``output_shape`` and the start ``pads_begin`` (explicit), 0
    (valid), ``total - total // 2`` (same_upper) or ``total // 2`` (same_lower), ``total = full -
    output_shape``: full 11, output_shape 8, same_upper starts at 2. A window past the full output
    reads zeros."""
    auto_pad = node.choice("auto_pad", "explicit", tuple(_AUTO_PADS))
    rank = len(full)
    begin = node.ints("pads_begin", (0,) * rank) if auto_pad in ("explicit", "notset") else (0,) * rank
    if output_shape is None:
        end = node.ints("pads_end", (0,) * rank) if auto_pad in ("explicit", "notset") else (0,) * rank
        return tuple(begin), tuple(f - b - e for f, b, e in zip(full, begin, end))
    if len(output_shape) != rank:
        raise node.fail(f"output_shape {list(output_shape)} has {len(output_shape)} values for {rank} spatial axes")
    totals = [f - o for f, o in zip(full, output_shape)]
    if auto_pad == "same_upper":
        begin = tuple(t - t // 2 for t in totals)
    elif auto_pad == "same_lower":
        begin = tuple(t // 2 for t in totals)
    return tuple(begin), tuple(output_shape)


def _window(y: np.ndarray, starts: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """``y``'s spatial axes cut to ``sizes`` from ``starts``, zeros where that runs past ``y``."""
    if all(s == 0 for s in starts) and tuple(sizes) == y.shape[2:]:
        return y
    out = np.zeros(y.shape[:2] + tuple(sizes), y.dtype)
    source, target = [slice(None)] * 2, [slice(None)] * 2
    for start, size, length in zip(starts, sizes, y.shape[2:]):
        low, high = max(start, 0), min(start + size, length)
        if high <= low:
            return out
        source.append(slice(low, high))
        target.append(slice(low - start, high - start))
    out[tuple(target)] = y[tuple(source)]
    return out


def _grouped(weights: np.ndarray) -> np.ndarray:
    """Grouped weights in ONNX's layout: [G, C_out/G, C_in/G, k...] -> [C_out, C_in/G, k...]
    (backprop: [G, C_in/G, C_out/G, k...] -> [C_in, C_out/G, k...]): the first two axes merged."""
    return weights.reshape((weights.shape[0] * weights.shape[1],) + weights.shape[2:])


class _Held:
    """A constant weight passed through a memoised builder by identity (arrays are not hashable)."""

    def __init__(self, value: np.ndarray | None) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Held) and other.value is self.value


def _convolution(grouped: bool, transposed: bool) -> Builder:
    """Convolution (ONNX Conv-11) and ConvolutionBackpropData (the full output of ONNX
    ConvTranspose with no pads, then ``_backprop_window``), and their grouped forms (``group`` =
    the weights' first dim). Constant weights are laid out once; a kernel is built per group count.
    Integer data and weights (ONNX ConvInteger as OpenVINO writes it: i32 after subtracting the zero
    points) are convolved exactly, in float64 (every product and partial sum of 8-bit values is a
    whole number far below 2**53), and the sums are cast to the data's type."""

    def build(node: LayerNode) -> Kernel:
        if transposed:
            padding = node.ints("output_padding", ())
            attrs = {"strides": list(node.ints("strides")), "dilations": list(node.ints("dilations")), "auto_pad": "VALID"}
            op, since = "ConvTranspose", 11
        else:
            attrs, op, since = _conv_attrs(node), "Conv", 11

        @_cached
        def by_group(group: int, held: _Held) -> Kernel:
            return node.onnx(op, since, {**attrs, "group": group}, (None, held.value))

        w_const = node.constant(1)
        if w_const is not None and w_const.dtype.kind in "iu":
            w_const = w_const.astype(np.float64)
        ready = _Held(_grouped(w_const) if grouped and w_const is not None else w_const)

        def kernel(x: np.ndarray, w: np.ndarray, output_shape: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
            group = w.shape[0] if grouped else 1
            integer = x.dtype if x.dtype.kind in "iu" else None
            if integer is not None:
                _same_type(node, x, w)
                x, w = x.astype(np.float64), w.astype(np.float64)
            weights = ready.value if ready.value is not None else (_grouped(w) if grouped else w)
            y = by_group(group, ready)(x, weights)[0]
            if integer is not None:
                y = np.rint(y).astype(np.int64).astype(integer)
            if not transposed:
                return (y,)
            full = [f + p for f, p in zip(y.shape[2:], padding or (0,) * (y.ndim - 2))]
            starts, sizes = _backprop_window(node, full, None if output_shape is None else _ints_of(output_shape))
            if any(n < 1 for n in sizes):
                raise node.fail(f"the pads leave no output of the full output {full}")
            return (_window(y, starts, sizes),)

        return kernel

    return build


layer("Convolution", 1)(_convolution(grouped=False, transposed=False))
layer("GroupConvolution", 1)(_convolution(grouped=True, transposed=False))
layer("ConvolutionBackpropData", 1)(_convolution(grouped=False, transposed=True))
layer("GroupConvolutionBackpropData", 1)(_convolution(grouped=True, transposed=True))


def _pooling(node: LayerNode) -> Kernel:
    """AvgPool/MaxPool of every templated version with the IR's meaning (``ceil`` keeps a window
    that lies in the padding, ``exclude-pad="false"`` divides by the whole kernel), on ovpool's
    pooling kernels; MaxPool-8/14 computes its indices only when they are read."""
    layer_ = node.layer
    template = template_for(layer_.type, layer_.version, node.label)
    with_indices = node.n_outputs > 1

    @functools.lru_cache(maxsize=8)
    def spec_for(rank: int, dtype: str) -> Any:
        try:
            return spec_from_layer(template, layer_.data, rank, dtype, layer_.name, with_indices=with_indices)
        except SpecError as exc:
            raise exc.at(node.label) from None

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        spec = spec_for(x.ndim, x.dtype.name)
        try:
            result = kernels.pool(x, spec)
        except SpecError as exc:
            raise exc.at(node.label) from None
        return result if isinstance(result, tuple) else (result,)

    return kernel


for _type in ("AvgPool", "MaxPool"):
    layer(_type, *(t.since for t in versions_of(_type)))(_pooling)


# ---------------------------------------------------------------------------------------------
# Interpolate


_TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
_F32 = np.float32


def _source_coordinates(transform: str, n_out: int, n_in: int, scale: np.float32) -> np.ndarray:
    """The input coordinate of each output position, in float32 as OpenVINO computes it: the
    position itself where the scale is 1 or the lengths agree."""
    x = np.arange(n_out, dtype=_F32)
    if scale == 1 or n_out == n_in:
        return x
    half = _F32(0.5)
    if transform == "half_pixel":
        return (x + half) / scale - half
    if transform == "pytorch_half_pixel":
        return (x + half) / scale - half if n_out > 1 else np.zeros(n_out, _F32)
    if transform == "asymmetric":
        return x / scale
    if transform == "tf_half_pixel_for_nn":
        return (x + half) / scale
    return x * _F32(n_in - 1) / _F32(n_out - 1) if n_out > 1 else np.zeros(n_out, _F32)


def _nearest_index(mode: str, c: np.ndarray, shrinking: bool) -> np.ndarray:
    if mode == "round_prefer_floor":
        halfway = c == np.trunc(c) + _F32(0.5)
        return np.where(halfway, np.floor(c), np.sign(c) * np.floor(np.abs(c) + _F32(0.5)))
    if mode == "round_prefer_ceil":
        return np.sign(c) * np.floor(np.abs(c) + _F32(0.5))
    if mode == "floor":
        return np.floor(c)
    if mode == "ceil" or shrinking:
        return np.ceil(c)
    return np.trunc(c)


@dataclass(frozen=True)
class _Taps:
    """One resized axis: output = sum over t of weights[t] * input[indices[t]] along ``axis``
    (weights None: a plain gather of indices[0])."""

    axis: int
    indices: tuple[np.ndarray, ...]
    weights: tuple[np.ndarray, ...] | None


def _cubic_coefficients(s: np.ndarray, a: float) -> tuple[np.ndarray, ...]:
    """Keys' weights of the taps at -1, 0, 1, 2 for the fraction ``s``."""
    a32 = _F32(a)
    s = np.abs(s)
    p, q, r = s + 1, 1 - s, 2 - s
    return (
        ((a32 * p - 5 * a32) * p + 8 * a32) * p - 4 * a32,
        ((a32 + 2) * s - (a32 + 3)) * s * s + 1,
        ((a32 + 2) * q - (a32 + 3)) * q * q + 1,
        ((a32 * r - 5 * a32) * r + 8 * a32) * r - 4 * a32,
    )


def _axis_taps(rule: Mapping[str, Any], axis: int, n_in: int, n_out: int, scale: np.float32, antialias: bool) -> _Taps:
    c = _source_coordinates(rule["transform"], n_out, n_in, scale)
    mode = rule["mode"]
    if mode == "nearest":
        index = _nearest_index(rule["nearest"], c, bool(scale < 1))
        return _Taps(axis, (np.clip(index, 0, n_in - 1).astype(np.intp),), None)
    if mode == "linear_onnx":
        c = np.clip(c, 0, _F32(n_in - 1))
        low = np.minimum(c.astype(np.intp), n_in - 1)
        high = np.minimum(low + 1, n_in - 1)
        d_low, d_high = np.abs(c - low), np.abs(c - high)
        same = low == high
        d_low, d_high = np.where(same, _F32(0.5), d_low), np.where(same, _F32(0.5), d_high)
        return _Taps(axis, (low, high), (d_high, d_low))
    if mode == "cubic":
        base = np.floor(c)
        weights = _cubic_coefficients(c - base, rule["cube_coeff"])
        indices = tuple(np.clip(base.astype(np.intp) + k - 1, 0, n_in - 1) for k in range(4))
        return _Taps(axis, indices, weights)
    a = scale if antialias else _F32(1)
    r = 2 if scale > 1 else math.ceil(2 / float(a))
    nearest = np.sign(c) * np.floor(np.abs(c) + _F32(0.5))
    offsets = [nearest.astype(np.intp) + k - r for k in range(2 * r + 1)]
    triangle = [np.where((o >= 0) & (o < n_in), np.maximum(_F32(0), 1 - np.abs(a * (c - o))), _F32(0)) for o in offsets]
    total = np.sum(triangle, axis=0)
    safe = np.where(total == 0, _F32(1), total)
    normal = tuple(np.where(total == 0, _F32(0), w / safe) for w in triangle)
    return _Taps(axis, tuple(np.clip(o, 0, n_in - 1) for o in offsets), normal)


def _pillow_taps(axis: int, n_in: int, n_out: int, bicubic: bool, a: float) -> _Taps:
    """Pillow's resampling filter along one axis (``bilinear_pillow``: triangle, support 1;
    ``bicubic_pillow``: Keys with ``cube_coeff``, support 2), widened by ``n_in / n_out`` when
    shrinking, centred on ``(x + 0.5) * n_in / n_out``, normalised over the taps inside the axis.
    4 to 2, bilinear: each output averages 4 inputs with weights 1/8, 3/8, 3/8, 1/8."""
    scale = n_in / n_out
    stretch = max(scale, 1.0)
    support = (2.0 if bicubic else 1.0) * stretch
    size = math.ceil(support) * 2 + 1
    centres = (np.arange(n_out) + 0.5) * scale
    low = np.maximum(np.trunc(centres - support + 0.5).astype(np.intp), 0)
    count = np.minimum(np.trunc(centres + support + 0.5).astype(np.intp), n_in) - low
    k = np.arange(size)[:, None]
    d = np.abs((k + low - centres + 0.5) / stretch)
    if bicubic:
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = (((d - 5) * d + 8) * d - 4) * a
        weights = np.where(d < 1, near, np.where(d < 2, far, 0.0))
    else:
        weights = np.maximum(1 - d, 0.0)
    weights = np.where(k < count, weights, 0.0)
    total = weights.sum(axis=0)
    weights = np.where(total != 0, weights / np.where(total != 0, total, 1), weights)
    return _Taps(axis, tuple(np.clip(j + low, 0, n_in - 1) for j in range(size)), tuple(weights))


def _integer(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Whole-number ``values`` as ``dtype``, clipped to its range."""
    info = np.iinfo(dtype)
    return np.clip(values, info.min, info.max).astype(dtype)


def _apply_taps(x: np.ndarray, taps: _Taps) -> np.ndarray:
    if taps.weights is None:
        return np.take(x, taps.indices[0], axis=taps.axis)
    shape = [1] * x.ndim
    shape[taps.axis] = -1
    total = np.zeros(x.shape[: taps.axis] + (taps.indices[0].size,) + x.shape[taps.axis + 1 :], np.float64)
    for index, weight in zip(taps.indices, taps.weights):
        total += np.take(x, index, axis=taps.axis) * weight.astype(np.float64).reshape(shape)
    return total


@layer("Interpolate", 4, 11)
def interpolate(node: LayerNode) -> Kernel:
    """Interpolate-4 (data, sizes, scales, axes) and -11 (data, scales_or_sizes, axes); the rules
    are in the module text."""
    v11 = node.layer.version == "opset11"
    modes = ("nearest", "linear", "linear_onnx", "cubic") + (("bilinear_pillow", "bicubic_pillow") if v11 else ())
    rule: dict[str, Any] = {
        "mode": node.choice("mode", "nearest", modes),
        "transform": node.choice("coordinate_transformation_mode", "half_pixel", _TRANSFORMS),
        "nearest": node.choice("nearest_mode", "round_prefer_floor", _NEAREST),
        "cube_coeff": node.number("cube_coeff", -0.75),
    }
    pillow = rule["mode"].endswith("_pillow")
    by_sizes = node.choice("shape_calculation_mode", "sizes" if not v11 else "scales", ("sizes", "scales")) == "sizes"
    antialias = node.flag("antialias", False)
    pads = (node.ints("pads_begin", (0,)), node.ints("pads_end", (0,)))

    @functools.lru_cache(maxsize=16)
    def plan(shape: tuple[int, ...], values: tuple[float, ...], axes: tuple[int, ...]) -> tuple[_Taps, ...]:
        if len(values) != len(axes):
            raise node.fail(f"{len(values)} {'sizes' if by_sizes else 'scales'} for axes {list(axes)}")
        scales, outs = [], []
        for value, a in zip(values, axes):
            n = shape[a]
            if by_sizes:
                outs.append(int(value))
                scales.append(_F32(value) / _F32(n) if n else _F32(1))
            else:
                scales.append(_F32(value))
                outs.append(int(_F32(n) * (_F32(value) + _F32(1e-6))))
        if any(o < 0 for o in outs):
            raise node.fail(f"output sizes {outs} are negative")
        if pillow:
            if len(axes) != 2:
                raise node.fail(f"mode {rule['mode']} resizes two axes (height, width), not {list(axes)}")
            bicubic = rule["mode"] == "bicubic_pillow"
            taps = [_pillow_taps(a, shape[a], o, bicubic, rule["cube_coeff"]) for a, o in zip(axes, outs) if o != shape[a]]
            return tuple(reversed(taps))  # the width first, as Pillow
        shrinking = antialias and any(s < 1 for s in scales)
        return tuple(
            _axis_taps(rule, a, shape[a], o, s, shrinking) for a, o, s in zip(axes, outs, scales) if o != shape[a] or s != 1
        )

    def kernel(x: np.ndarray, *inputs: np.ndarray | None) -> tuple[np.ndarray, ...]:
        if v11:
            given, axes_input = inputs[0], inputs[1] if len(inputs) > 1 else None
        else:
            given = inputs[0] if by_sizes else inputs[1]
            axes_input = inputs[2] if len(inputs) > 2 else None
        assert given is not None
        axes = tuple(range(x.ndim))
        if axes_input is not None:
            axes = _ints_of(axes_input)
            if any(not -x.ndim <= a < x.ndim for a in axes) or len(set(a % x.ndim for a in axes)) < len(axes):
                raise node.fail(f"axes {list(axes)} do not name distinct axes of a rank-{x.ndim} input")
            axes = tuple(a % x.ndim for a in axes)
        begin = (pads[0] + (0,) * x.ndim)[: x.ndim]
        end = (pads[1] + (0,) * x.ndim)[: x.ndim]
        if any(begin) or any(end):
            x = np.pad(x, list(zip(begin, end)))
        values = tuple(float(v) for v in np.asarray(given).reshape(-1))
        y: np.ndarray = x
        for taps in plan(x.shape, values, axes):
            y = _apply_taps(y, taps)
            if pillow and x.dtype.kind in "iu":  # each pass rounds half away from zero and clips
                y = _integer(np.sign(y) * np.floor(np.abs(y) + 0.5), x.dtype)
        if y.dtype != x.dtype:
            y = _integer(np.rint(y), x.dtype) if x.dtype.kind in "iu" else y.astype(x.dtype)
        return (y,)

    return kernel


# ---------------------------------------------------------------------------------------------
# Sequences, attention, control flow


_GATES = {"LSTMSequence": ("LSTM", 4, (1, 3, 0, 2)), "GRUSequence": ("GRU", 3, (0, 1, 2)), "RNNSequence": ("RNN", 1, (0,))}


def _reordered(w: np.ndarray | None, gates: int, order: Sequence[int]) -> np.ndarray | None:
    """Gate blocks along axis 1 of ``[directions, gates*hidden, ...]`` reordered: OpenVINO's LSTM f, i,
    c, o as ONNX's i, o, f, c."""
    if w is None:
        return None
    blocks = np.split(w, gates, axis=1)
    return np.ascontiguousarray(np.concatenate([blocks[i] for i in order], axis=1))


def _onnx_bias(b: np.ndarray | None, op: str, gates: int, order: Sequence[int], linear_before_reset: bool) -> np.ndarray | None:
    """OpenVINO's one bias ``[directions, gates*hidden]`` (GRU with linear_before_reset: 4 blocks,
    the last the recurrent h bias) as ONNX's ``[directions, 2*gates*hidden]`` (Wb then Rb)."""
    if b is None:
        return None
    if op == "GRU" and linear_before_reset:
        z, r, wh, rh = np.split(b, 4, axis=1)
        zeros = np.zeros_like(z)
        return np.concatenate([z, r, wh, zeros, zeros, rh], axis=1)
    reordered = _reordered(b, gates, order)
    assert reordered is not None
    return np.concatenate([reordered, np.zeros_like(reordered)], axis=1)


def _sequence(node: LayerNode) -> Kernel:
    """LSTMSequence/GRUSequence/RNNSequence-5 on ONNX LSTM/GRU/RNN-14 with ``layout=1``: inputs
    (X, H0[, C0], sequence_lengths, W, R, B), outputs Y ``[batch, directions, seq, hidden]``, Ho[, Co]."""
    op, gates, order = _GATES[node.layer.type]
    lstm = op == "LSTM"
    direction = node.choice("direction", "forward", ("forward", "reverse", "bidirectional"))
    directions = 2 if direction == "bidirectional" else 1
    names = [n.strip().capitalize() for n in node.text("activations", "").split(",") if n.strip()]
    linear_before_reset = op == "GRU" and node.flag("linear_before_reset", False)
    attrs: dict[str, Any] = {"hidden_size": node.integer("hidden_size"), "direction": direction, "layout": 1}
    if names:
        attrs["activations"] = names * directions
    for name, onnx_name in (("activations_alpha", "activation_alpha"), ("activations_beta", "activation_beta")):
        values = [float(v) for v in node.text(name, "").split(",") if v.strip()]
        if values:
            attrs[onnx_name] = values
    clip = node.number("clip", 0.0)
    if clip > 0:
        attrs["clip"] = clip
    if linear_before_reset:
        attrs["linear_before_reset"] = 1
    w_at = 4 if lstm else 3
    weights = tuple(node.constant(w_at + i) for i in range(3))
    prepared = (
        _reordered(weights[0], gates, order),
        _reordered(weights[1], gates, order),
        _onnx_bias(weights[2], op, gates, order, linear_before_reset),
    )
    onnx_seq = node.onnx(op, 14, attrs, (None, *prepared), n_outputs=3 if lstm else 2)

    def kernel(x: np.ndarray, h0: np.ndarray, *rest: np.ndarray) -> tuple[np.ndarray, ...]:
        c0 = rest[0] if lstm else None
        lengths, w, r, b = rest[1:] if lstm else rest
        w_, r_, b_ = (
            p if p is not None else f(v)
            for p, v, f in zip(
                prepared,
                (w, r, b),
                (
                    lambda v: _reordered(v, gates, order),
                    lambda v: _reordered(v, gates, order),
                    lambda v: _onnx_bias(v, op, gates, order, linear_before_reset),
                ),
            )
        )
        results = onnx_seq(x, w_, r_, b_, lengths.astype(np.int32), h0, *((c0,) if lstm else ()))
        y = np.ascontiguousarray(results[0].transpose(0, 2, 1, 3))
        return (y, *results[1:])

    return kernel


for _type in _GATES:
    layer(_type, 5)(_sequence)


@layer("ScaledDotProductAttention", 13)
def scaled_dot_product_attention(node: LayerNode) -> Kernel:
    """ScaledDotProductAttention-13: softmax(Q K^T * scale + mask) V (see the module text)."""
    causal = node.flag("causal", False)
    product = node.onnx("MatMul", 13)
    normalise = node.onnx("Softmax", 13, {"axis": -1})

    def kernel(
        q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None, scale: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        _same_type(node, q, k, v)
        factor = q.dtype.type(1 / math.sqrt(q.shape[-1])) if scale is None else scale.reshape(()).astype(q.dtype)
        scores = product(q, np.swapaxes(k, -1, -2))[0] * factor
        length, keys = scores.shape[-2:]
        if causal:
            scores = np.where(np.tril(np.ones((length, keys), bool)), scores, -np.inf)
        elif mask is not None:
            scores = np.where(mask, scores, -np.inf) if mask.dtype == np.bool_ else scores + mask.astype(scores.dtype)
        return product(normalise(scores.astype(q.dtype, copy=False))[0], v)

    return kernel


@layer("If", 8)
def if_(node: LayerNode) -> Kernel:
    """If-8: ``then_body`` when the condition (input 0) is true, else ``else_body``, on the layer's
    other inputs; outputs in port order."""
    then_body, else_body = node.bodies["then_body"], node.bodies["else_body"]

    def kernel(cond: np.ndarray, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        if cond.size != 1:
            raise node.fail(f"the condition has {cond.size} values, not one")
        body = then_body if bool(cond.reshape(())) else else_body
        return tuple(body(list(inputs)))

    return kernel


@layer("GridSample", 9)
def grid_sample(node: LayerNode) -> Kernel:
    """GridSample-9: 4-D data sampled at a normalized grid (``align_corners``, ``mode`` bilinear,
    bicubic or nearest, ``padding_mode`` zeros, border or reflection), with OpenVINO's reference
    meaning, which is ONNX GridSample-22's: pixel coordinates in the grid's float type, nearest
    rounded half to even, padding applied to each pixel read (a single pixel reflects onto itself)."""
    from ovpool.runtime.ops import gridsample

    mode = node.choice("mode", "bilinear", ("bilinear", "bicubic", "nearest"))
    padding = node.choice("padding_mode", "zeros", ("zeros", "border", "reflection"))
    rule = gridsample.Sampling(
        {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode), padding, node.flag("align_corners", False), 4
    )

    def kernel(data: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, ...]:
        with np.errstate(invalid="ignore", over="ignore"):
            return (gridsample.grid_sample(data, grid, rule, node),)

    return kernel
