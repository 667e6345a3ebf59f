"""onnxruntime's com.microsoft QOperator ops as what they mean: ai.onnx DequantizeLinear nodes for the
quantized inputs, the float op, and a QuantizeLinear node for the output.

``QLinearAdd(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point)`` is

    DequantizeLinear(A, A_scale, A_zero_point) ─┐
                                                ├─ Add ─ QuantizeLinear(·, C_scale, C_zero_point)
    DequantizeLinear(B, B_scale, B_zero_point) ─┘

``QOPERATORS`` is the one table of these ops (their input positions read from onnxruntime 1.31's
contrib schemas, ``onnxruntime/core/graph/contrib_ops/quantization_defs.cc``), read by
``expand_model`` (so that OpenVINO's frontend and every other reader sees only ai.onnx operators)
and by the numpy executor's com.microsoft kernels (``ovpool.engine.ops.quantized``):

| op | float op | quantized inputs (value, scale, zero point) | output (scale, zero point) |
|---|---|---|---|
| QLinearAdd, QLinearMul | Add, Mul | A 0,1,2; B 3,4,5 | 6, 7 |
| QLinearSigmoid, QLinearLeakyRelu | Sigmoid, LeakyRelu (alpha 0.01) | X 0,1,2 | 3, 4 |
| QLinearAveragePool | AveragePool (AveragePool-11's attributes) | X 0,1,2 | 3, 4 |
| QLinearGlobalAveragePool | GlobalAveragePool | X 0,1,2 | 3, 4 |
| QLinearSoftmax | Softmax (``opset`` says which version's meaning) | X 0,1,2 | 3, 4 |
| QLinearReduceMean | ReduceMean | data 0,1,2 | 3, 4 |
| QLinearConcat | Concat | each input i: 2+3i, 3+3i, 4+3i | 0, 1 |
| QLinearWhere | Where (condition 0 as it is) | X 1,2,3; Y 4,5,6 | 7, 8 |
| QGemm | Gemm | A 0,1,2; B 3,4,5 (per column); C 6 (int32) | 7, 8, or float |
| QLinearConv | Conv | x 0,1,2; w 3,4,5 (per output channel); B 8 (int32) | 6, 7 |

Rules beyond the table, each the onnxruntime kernel's:

* A zero point left out is 0 (the output's has the input's type: an int8 QLinearAdd without
  ``C_zero_point`` quantizes to int8 with zero point 0).
* ``channels_last=1`` (QLinearAveragePool, QLinearGlobalAveragePool, QLinearConv) works on
  (N, *spatial, C): the quantized input is transposed to (N, C, *spatial) before it is
  dequantized and the quantized output back after, so the DequantizeLinear -> op -> QuantizeLinear
  pattern stays whole.
* QGemm: ``Y = quantize(alpha * a_scale * b_scale * ((A - a_zp)(B - b_zp) + C))``; the int32 bias C
  is dequantized with scale ``a_scale * b_scale`` (float32 product; per column with a per-column
  b_scale) and zero point 0, and alpha multiplies it too: Gemm(alpha, beta=alpha). Without
  y_scale and y_zero_point the output is the float Gemm. b_scale/b_zero_point per column are
  along B's axis 1, or 0 with ``transB``. QLinearConv's int32 bias likewise, with scale
  ``x_scale * w_scale`` per output channel.
* QLinearSoftmax: ``opset`` (required) picks Softmax's meaning (below 13: over the 2-D coercion at
  ``axis``; 13 and up: along ``axis``); ``axis`` defaults to -1 for both, the schema's default,
  which is what onnxruntime 1.31's kernel reads (not Softmax-11's 1): a (1, 2, 2) input of opset
  11 without ``axis`` is softmaxed over its last axis. In a model whose ai.onnx opset has the other
  meaning the coercion is written out (Flatten -> Softmax -> Reshape) or, for an axis that is not
  the last, refused.
* QLinearAveragePool's ``dilations`` (quantizers copy it from AveragePool-19) is ignored by
  onnxruntime and applied by AveragePool-19: dilations other than 1 are refused.

Per-channel scales (QGemm's B, QLinearConv's w and their int32 biases) are DequantizeLinear with
``axis`` from opset 13. Before 13 DequantizeLinear has no axis: a constant per-channel scale is
written ``Cast -> Sub(zero point) -> Mul(scale)`` with the constants shaped along the axis (the
same float32 values: the integers and their difference are exact in float32, the product is
rounded once; and the Convert -> Subtract -> Multiply form OpenVINO reads as dequantization), and a
scale known only at run time is written per tensor (DequantizeLinear-10 then refuses a vector).
Every model needs opset 10 (DequantizeLinear). A constant 1-element scale is per tensor (onnxruntime
reads ``[0.05]`` as ``0.05``) and is written as a scalar.

``expand_model`` expands an ai.onnx QLinearConv too (com.microsoft's row) when its w_scale is per
output channel (1-D), and an ai.onnx QLinearMatMul (``ONNX_QOPERATORS``: ``MatMul``, a 0,1,2; b
3,4,5 per column; output 6, 7) when its b_scale is per column, which OpenVINO's frontend gets
wrong or refuses (``expands``).

Names: the float op keeps the node's name; the others are ``name/dequantize_a``,
``name/quantize``, ``name/transpose_x``... (fresh: ``name/quantize_1`` if taken); the output keeps
its tensor name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, helper, numpy_helper

from ovpool.attributes import attributes
from ovpool.axis import is_last_axis
from ovpool.errors import ModelError, UnsupportedError
from ovpool.names import FreshNames
from ovpool.onnx.graphs import default_opset, graphs
from ovpool.onnx.qdq import MS_DOMAIN, constants, node_label

# ai.onnx element types of the quantized tensors of QOperator ops (and int32 biases)
_QUANTIZED = {TensorProto.UINT8, TensorProto.INT8}


@dataclass(frozen=True)
class Operand:
    """One quantized input of the float op: the positions of its integers, scale and zero point
    among the node's inputs. ``axis`` (of the integers' tensor) is where a scale with more than one
    value lies (QGemm's B per column, QLinearConv's w per output channel); ``axis_with`` names the
    attribute that moves it (QGemm ``transB``: axis 0 instead of 1)."""

    name: str
    value: int
    scale: int
    zero_point: int
    axis: int | None = None
    axis_with: str | None = None


@dataclass(frozen=True)
class Bias:
    """An int32 bias at ``value``, dequantized with the product of the scales at ``scales`` and zero
    point 0 (QGemm's C: a_scale * b_scale; QLinearConv's B: x_scale * w_scale)."""

    name: str
    value: int
    scales: tuple[int, int]


@dataclass(frozen=True)
class Plain:
    """An input passed to the float op as it is (QLinearWhere's condition)."""

    value: int


Input = Operand | Bias | Plain


@dataclass(frozen=True)
class QOperator:
    """One com.microsoft QOperator op: the float op it stands for, the float op's inputs in order,
    and where the output's scale and zero point are (``None``: the output may be float, QGemm).
    ``variadic``: the op takes any number of (value, scale, zero point) triples from that position
    (QLinearConcat). ``drop``: attributes of the QOperator node that the float op does not take."""

    op_type: str
    float_op: str
    inputs: tuple[Input, ...]
    output: tuple[int, int]
    variadic: int | None = None
    drop: tuple[str, ...] = ()
    channels_last: bool = False


def _unary(op_type: str, float_op: str, drop: tuple[str, ...] = (), channels_last: bool = False) -> QOperator:
    return QOperator(op_type, float_op, (Operand("x", 0, 1, 2),), (3, 4), drop=drop, channels_last=channels_last)


def _binary(op_type: str, float_op: str) -> QOperator:
    return QOperator(op_type, float_op, (Operand("a", 0, 1, 2), Operand("b", 3, 4, 5)), (6, 7))


QOPERATORS: dict[str, QOperator] = {
    row.op_type: row
    for row in (
        _binary("QLinearAdd", "Add"),
        _binary("QLinearMul", "Mul"),
        _unary("QLinearSigmoid", "Sigmoid"),
        _unary("QLinearLeakyRelu", "LeakyRelu"),
        _unary("QLinearAveragePool", "AveragePool", drop=("channels_last",), channels_last=True),
        _unary("QLinearGlobalAveragePool", "GlobalAveragePool", drop=("channels_last",), channels_last=True),
        _unary("QLinearSoftmax", "Softmax", drop=("opset",)),
        _unary("QLinearReduceMean", "ReduceMean"),
        QOperator("QLinearConcat", "Concat", (), (0, 1), variadic=2),
        QOperator("QLinearWhere", "Where", (Plain(0), Operand("x", 1, 2, 3), Operand("y", 4, 5, 6)), (7, 8)),
        QOperator(
            "QGemm",
            "Gemm",
            (Operand("a", 0, 1, 2), Operand("b", 3, 4, 5, axis=1, axis_with="transB"), Bias("c", 6, (1, 4))),
            (7, 8),
        ),
        QOperator(
            "QLinearConv",
            "Conv",
            (Operand("x", 0, 1, 2), Operand("w", 3, 4, 5, axis=0), Bias("bias", 8, (1, 4))),
            (6, 7),
            drop=("channels_last",),
            channels_last=True,
        ),
    )
}

# The ai.onnx ops ``expand_model`` expands where OpenVINO's frontend gets them wrong (``expands``):
# QLinearConv as com.microsoft's row, QLinearMatMul with b per column (its last axis).
ONNX_QOPERATORS: dict[str, QOperator] = {
    "QLinearConv": QOPERATORS["QLinearConv"],
    "QLinearMatMul": QOperator("QLinearMatMul", "MatMul", (Operand("a", 0, 1, 2), Operand("b", 3, 4, 5, axis=-1)), (6, 7)),
}

# The ai.onnx opset the numpy executor expands com.microsoft nodes at: every float op's meaning
# there is the one the table states (Softmax-13 along an axis, ReduceMean-18 with axes as input).
NUMPY_OPSET = 21


@dataclass
class Expansion:
    """What replaces one node: ai.onnx ``nodes`` in order and the new ``initializers`` they read."""

    nodes: list[NodeProto] = field(default_factory=list)
    initializers: list[TensorProto] = field(default_factory=list)


def is_qoperator(node: NodeProto) -> bool:
    """A com.microsoft node the table knows."""
    return node.domain == MS_DOMAIN and node.op_type in QOPERATORS


def expands(node: NodeProto, known: Mapping[str, np.ndarray] | None = None, every: bool = False) -> bool:
    """Whether ``expand_model`` replaces ``node``: a com.microsoft QOperator node, or an ai.onnx
    QLinearConv / QLinearMatMul whose constant w_scale / b_scale is a 1-D tensor, per output
    channel or column (``known``: the graph's constants; None: any such ai.onnx node may be), with
    QLinearMatMul's a_scale one value. OpenVINO 2026.4's ONNX frontend dequantizes QLinearConv's
    weights along axis 1 (input channels) instead of 0: a 4 -> 4 1x1 QLinearConv with w_scale
    0.01, 0.02, 0.04, 0.08 comes out up to 150 steps off, silently, and a 1-D w_scale of another
    length than the input channels (a 16 -> 1 conv's one-element w_scale too) fails to convert; it
    refuses a per-column QLinearMatMul ("Scalar value can't be derived from a node with [360]").
    The expansion dequantizes the weights along their channels, as ONNX does. ``every``: every
    ai.onnx QLinearConv / QLinearMatMul (``convert --exact-quantization``, whose QuantizeLinear and
    DequantizeLinear are then exact; OpenVINO would run them on its own INT8 kernels)."""
    if is_qoperator(node):
        return True
    if node.op_type not in ONNX_QOPERATORS or node.domain not in ("", "ai.onnx"):
        return False
    if known is None or every:
        return True
    scale = known.get(node.input[4]) if len(node.input) > 4 else None
    if scale is None or np.ndim(scale) != 1:
        return False
    if node.op_type == "QLinearMatMul":
        a_scale = known.get(node.input[1])
        return a_scale is not None and np.size(a_scale) == 1
    return True


def expand_model(model: ModelProto, every: bool = False) -> ModelProto:
    """``model`` with every com.microsoft QOperator node and per-channel ai.onnx QLinearConv /
    QLinearMatMul (``expands``; main graph and subgraphs) replaced by its ai.onnx DequantizeLinear
    -> op -> QuantizeLinear nodes, at the model's ai.onnx opset (a model importing none gets
    ``NUMPY_OPSET``); ``model`` itself when it has no candidate. A node with no exact expansion is
    an ``UnsupportedError`` (or ``ModelError`` for a node the schema does not allow) naming it.
    ``every``: every ai.onnx QLinearConv / QLinearMatMul too (``expands``)."""
    if not any(expands(node, every=every) for graph in graphs(model.graph) for node in graph.node):
        return model
    expanded = ModelProto()
    expanded.CopyFrom(model)
    if not any(entry.domain in ("", "ai.onnx") for entry in expanded.opset_import):
        # a model of com.microsoft nodes only: its expansion is the first ai.onnx it holds
        expanded.opset_import.append(helper.make_opsetid("", NUMPY_OPSET))
        expanded.ir_version = max(expanded.ir_version, helper.find_min_ir_version_for([expanded.opset_import[-1]]))
    opset = default_opset(expanded)
    names = FreshNames(_all_names(expanded.graph))
    _expand_graph(expanded.graph, opset, {}, names, every)
    return expanded


def expand_node(
    node: NodeProto,
    opset: int,
    known: Mapping[str, np.ndarray],
    names: FreshNames,
    types: Mapping[str, int] | None = None,
    ranks: Mapping[str, int] | None = None,
) -> Expansion:
    """The ai.onnx nodes (and initializers) one QOperator ``node`` means at ai.onnx ``opset``.
    ``known`` holds the constant inputs (scales decide per tensor or per channel), ``types`` the
    ONNX element types of its inputs where known (an omitted output zero point takes the input's
    type), ``ranks`` their ranks (channels_last needs one)."""
    row = QOPERATORS[node.op_type] if node.domain == MS_DOMAIN else ONNX_QOPERATORS[node.op_type]
    return _Expander(node, row, opset, known, names, types or {}, ranks or {}).run()


# ---------------------------------------------------------------------------------- the expander


class _Expander:
    def __init__(
        self,
        node: NodeProto,
        row: QOperator,
        opset: int,
        known: Mapping[str, np.ndarray],
        names: FreshNames,
        types: Mapping[str, int],
        ranks: Mapping[str, int],
    ) -> None:
        self.node, self.row, self.opset, self.known, self.names = node, row, opset, known, names
        self.types, self.ranks = types, ranks
        self.where = node_label(node)
        self.base = node.name or (node.output[0] if node.output else node.op_type)
        self.attrs = attributes(node, text=False)
        self.out = Expansion()

    # -- helpers

    def fail(self, message: str) -> ModelError:
        return ModelError(f"{self.where}: {message}")

    def unsupported(self, message: str) -> UnsupportedError:
        return UnsupportedError(f"{self.where}: {message}")

    def input(self, index: int) -> str:
        return self.node.input[index] if index < len(self.node.input) else ""

    def required(self, index: int, what: str) -> str:
        name = self.input(index)
        if not name:
            raise self.fail(f"input {index} ({what}) is missing")
        return name

    def fresh(self, suffix: str) -> str:
        return self.names.fresh(f"{self.base}/{suffix}")

    def add(self, op_type: str, inputs: Sequence[str], suffix: str, output: str | None = None, **attrs: Any) -> str:
        """Append an ai.onnx node named ``base/suffix`` (fresh); its output is ``output`` or the
        node's own (fresh) name."""
        name = self.fresh(suffix)
        target = output if output is not None else name
        self.out.nodes.append(helper.make_node(op_type, list(inputs), [target], name=name, **attrs))
        return target

    def constant(self, suffix: str, value: np.ndarray) -> str:
        name = self.fresh(suffix)
        self.out.initializers.append(numpy_helper.from_array(value, name))
        return name

    def scale_values(self, name: str) -> np.ndarray | None:
        value = self.known.get(name)
        return None if value is None else np.asarray(value)

    # -- the expansion

    def run(self) -> Expansion:
        row, node = self.row, self.node
        if self.opset < 10:
            raise self.unsupported(
                f"its meaning needs DequantizeLinear, from opset 10; the model imports ai.onnx opset {self.opset}"
            )
        if not node.output or not node.output[0]:
            raise self.fail("has no output")
        channels_last = row.channels_last and bool(self.attrs.get("channels_last", 0))
        rank = self.channels_last_rank() if channels_last else None
        float_inputs = self.float_inputs(channels_last, rank)
        out_scale, out_zero = self.output_quantization()
        if out_scale is None:
            self.float_op(float_inputs, node.output[0])
            return self.out
        result = self.float_op(float_inputs, self.fresh("float"))
        target = node.output[0]
        if channels_last:
            assert rank is not None
            quantized = self.add("QuantizeLinear", self.zero_inputs(result, out_scale, out_zero), "quantize")
            self.add("Transpose", [quantized], "transpose_y", output=target, perm=_from_channels_first(rank))
        else:
            self.add("QuantizeLinear", self.zero_inputs(result, out_scale, out_zero), "quantize", output=target)
        return self.out

    def zero_inputs(self, value: str, scale: str, zero: str) -> list[str]:
        return [value, scale, zero] if zero else [value, scale]

    def float_inputs(self, channels_last: bool, rank: int | None) -> list[str]:
        row = self.row
        operands: list[Input] = list(row.inputs)
        if row.variadic is not None:
            extra = len(self.node.input) - row.variadic
            if extra < 3 or extra % 3:
                raise self.fail(
                    f"has {len(self.node.input)} inputs; {row.op_type} takes 2 + 3 per input (value, scale, zero point)"
                )
            operands = [
                Operand(str(i), row.variadic + 3 * i, row.variadic + 3 * i + 1, row.variadic + 3 * i + 2)
                for i in range(extra // 3)
            ]
        names = []
        for operand in operands:
            if isinstance(operand, Plain):
                names.append(self.required(operand.value, "condition"))
            elif isinstance(operand, Bias):
                names.append(self.bias(operand))
            else:
                names.append(self.dequantize(operand, channels_last and operand.value == 0, rank))
        while names and not names[-1]:
            names.pop()
        return names

    def dequantize(self, operand: Operand, transpose: bool, rank: int | None) -> str:
        value = self.required(operand.value, operand.name)
        scale = self.required(operand.scale, f"{operand.name}_scale")
        zero = self.input(operand.zero_point)
        if transpose:
            assert rank is not None
            value = self.add("Transpose", [value], f"transpose_{operand.name}", perm=_to_channels_first(rank))
        axis = operand.axis
        if axis is not None and operand.axis_with and self.attrs.get(operand.axis_with, 0):
            axis = 1 - axis
        scale, per_channel = self.scale_input(scale, zero, per_channel=axis is not None, what=f"{operand.name}_scale")
        if per_channel is False:
            axis = None
        attrs: dict[str, Any] = {}
        if axis is not None and self.opset >= 13:
            attrs["axis"] = axis
        if zero and per_channel is False:
            zero = self.scalar_zero(zero)
        elif zero and per_channel:
            zero = self.channel_zero(zero, scale)
        if per_channel and self.opset < 13:
            assert axis is not None
            return self.arithmetic_dequantize(operand, value, scale, zero, axis)
        return self.add("DequantizeLinear", self.zero_inputs(value, scale, zero), f"dequantize_{operand.name}", **attrs)

    def arithmetic_dequantize(self, operand: Operand, value: str, scale: str, zero: str, axis: int) -> str:
        """Per-channel dequantization before opset 13 (DequantizeLinear has no axis there) as
        ``Cast(value) - Cast(zero) -> Mul(scale)`` with the constant scale and zero point shaped to
        broadcast along ``axis``: the same float32 result (the integers and their difference are
        exact in float32, the product is rounded once), and the Convert -> Subtract -> Multiply
        form OpenVINO reads as dequantization. ``name/dequantize_w`` is the Mul."""
        rank = self.value_rank(operand, value)
        where = axis % rank
        shape = [1] * rank
        shape[where] = -1
        scales = self.scale_values(scale)
        assert scales is not None
        shaped_scale = self.constant(f"dequantize_{operand.name}/scale", scales.astype(np.float32).reshape(shape))
        floats = self.add("Cast", [value], f"dequantize_{operand.name}/cast", to=TensorProto.FLOAT)
        zeros = self.scale_values(zero) if zero else None
        if zero and zeros is None:
            raise self.unsupported(
                f"{operand.name}'s zero point is not a constant; its per-channel dequantization before opset 13 needs one"
            )
        if zeros is not None and np.any(zeros):
            shaped_zero = self.constant(
                f"dequantize_{operand.name}/zero_point", np.broadcast_to(zeros.astype(np.float32), scales.shape).reshape(shape)
            )
            floats = self.add("Sub", [floats, shaped_zero], f"dequantize_{operand.name}/subtract")
        return self.add("Mul", [floats, shaped_scale], f"dequantize_{operand.name}")

    def value_rank(self, operand: Operand, value: str) -> int:
        known = self.known.get(value)
        if known is not None:
            return int(np.ndim(known))
        if value in self.ranks:
            return self.ranks[value]
        kernel = self.attrs.get("kernel_shape")
        if self.row.op_type == "QGemm":
            return 2
        if kernel:
            return len(kernel) + 2
        raise self.unsupported(
            f"the rank of {operand.name} is not known; its per-channel dequantization before opset 13 needs it"
        )

    def scale_input(self, scale: str, zero: str, per_channel: bool, what: str) -> tuple[str, bool | None]:
        """The scale to write and whether it is per channel (None: known only at run time). A
        constant 1-element scale becomes a scalar; more than one value needs ``per_channel`` and
        opset 13."""
        values = self.scale_values(scale)
        if values is None:
            if per_channel and self.opset < 13:
                return scale, False
            return scale, None
        if values.dtype.kind != "f":
            raise self.fail(f"{what} is {values.dtype.name}, not a float tensor")
        if values.size == 1:
            if values.ndim:
                return self.constant(what, values.reshape(())), False
            return scale, False
        if not per_channel:
            raise self.fail(f"{what} has {values.size} values; {self.node.op_type} takes one per tensor")
        if values.ndim != 1:
            raise self.fail(f"{what} has shape {list(values.shape)}; per-channel scales are 1-D")
        zeros = self.scale_values(zero) if zero else None
        if zeros is not None and zeros.size not in (1, values.size):
            raise self.fail(f"{what} has {values.size} values but its zero point {zeros.size}")
        return scale, True

    def scalar_zero(self, zero: str) -> str:
        values = self.scale_values(zero)
        if values is None or values.ndim == 0:
            return zero
        if values.size != 1:
            raise self.fail(f"zero point '{zero}' has {values.size} values; this input is quantized per tensor")
        return self.constant("zero_point", values.reshape(()))

    def channel_zero(self, zero: str, scale: str) -> str:
        """A constant per-tensor zero point beside per-channel scales, written out per channel
        (DequantizeLinear wants the scale's shape; onnxruntime's QGemm and QLinearConv broadcast it)."""
        values = self.scale_values(zero)
        scales = self.scale_values(scale)
        if values is None or scales is None or values.size != 1 or scales.size == 1:
            return zero
        return self.constant("zero_point", np.full(scales.size, values.reshape(-1)[0], dtype=values.dtype))

    def bias(self, operand: Bias) -> str:
        value = self.input(operand.value)
        if not value:
            return ""
        scales = [self.required(i, "scale") for i in operand.scales]
        known = [self.scale_values(s) for s in scales]
        per_channel = False
        if known[0] is not None and known[1] is not None:
            first, second = (np.asarray(k, dtype=np.float32).reshape(-1) for k in known)
            product = (first * second).astype(np.float32)
            per_channel = product.size > 1
            scale = self.constant(f"{operand.name}_scale", product if per_channel else product.reshape(()))
        else:
            scale = self.add("Mul", scales, f"{operand.name}_scale")
            second_known = known[1]
            per_channel = second_known is not None and np.asarray(second_known).size > 1
        attrs: dict[str, Any] = {}
        if per_channel:
            bias = self.known.get(value)
            weight_scale = known[1]
            assert weight_scale is not None  # per channel: b's (w's) scales are known
            channels = int(weight_scale.size)
            if bias is not None and (np.ndim(bias) == 0 or np.shape(bias)[-1] != channels):
                raise self.unsupported(
                    f"the int32 bias of shape {list(np.shape(bias))} does not run along the per-channel scales; "
                    "no DequantizeLinear expresses it"
                )
            if self.opset < 13:  # no axis: Cast -> Mul, the same float32 product (see arithmetic_dequantize)
                floats = self.add("Cast", [value], f"dequantize_{operand.name}/cast", to=TensorProto.FLOAT)
                return self.add("Mul", [floats, scale], f"dequantize_{operand.name}")
            attrs["axis"] = -1 if self.row.op_type == "QGemm" else 0
        elif self.opset >= 13 and known[1] is None:
            attrs["axis"] = -1 if self.row.op_type == "QGemm" else 0
        return self.add("DequantizeLinear", [value, scale], f"dequantize_{operand.name}", **attrs)

    def output_quantization(self) -> tuple[str | None, str]:
        scale_at, zero_at = self.row.output
        scale, zero = self.input(scale_at), self.input(zero_at)
        if self.row.op_type == "QGemm":
            if not scale and not zero:
                return None, ""
            if not scale or not zero:
                raise self.fail("has one of y_scale and y_zero_point; a quantized output needs both, a float output neither")
        if not scale:
            raise self.fail(f"input {scale_at} (the output's scale) is missing")
        scale, _ = self.scale_input(scale, zero, per_channel=False, what="y_scale")
        if zero:
            return scale, self.scalar_zero(zero)
        elem = self.value_type()
        if elem is None:
            raise self.unsupported(
                "its output zero point is left out and the element type of its quantized input is not declared; "
                "ovpool cannot tell int8 from uint8"
            )
        dtype = helper.tensor_dtype_to_np_dtype(elem)
        return scale, self.constant("y_zero_point", np.zeros((), dtype=dtype))

    def value_type(self) -> int | None:
        """The element type of the quantized input(s): a constant zero point's or a declared one."""
        row = self.row
        positions: list[tuple[int, int]] = [(o.value, o.zero_point) for o in row.inputs if isinstance(o, Operand)]
        if row.variadic is not None:
            positions = [(i, i + 2) for i in range(row.variadic, len(self.node.input), 3)]
        for value, zero in positions:
            zero_name = self.input(zero)
            if zero_name and zero_name in self.known:
                return helper.np_dtype_to_tensor_dtype(np.asarray(self.known[zero_name]).dtype)
            declared = self.types.get(self.input(value))
            if declared in _QUANTIZED:
                return declared
        return None

    def channels_last_rank(self) -> int:
        kernel = self.attrs.get("kernel_shape")
        if kernel:
            return len(kernel) + 2
        weights = self.known.get(self.input(3)) if self.row.op_type == "QLinearConv" else None
        if weights is not None:
            return int(np.ndim(weights))
        rank = self.ranks.get(self.input(0))
        if rank is None:
            raise self.unsupported("channels_last needs the rank of its input, which the model does not declare")
        if rank < 3:
            raise self.fail(f"channels_last input of rank {rank}; it needs (N, *spatial, C)")
        return rank

    def float_op(self, inputs: list[str], output: str) -> str:
        build = _BUILDERS.get(self.row.op_type, _plain_op)
        build(self, inputs, output)
        return output

    def emit_float(self, inputs: Sequence[str], output: str, attrs: Mapping[str, Any] | None = None) -> None:
        """The float op, named as the node, with ``attrs`` (default: the node's own attributes
        without the dropped ones)."""
        if attrs is None:
            attrs = {k: v for k, v in self.attrs.items() if k not in self.row.drop}
        self.out.nodes.append(helper.make_node(self.row.float_op, list(inputs), [output], name=self.node.name, **attrs))


def _plain_op(expander: _Expander, inputs: list[str], output: str) -> None:
    expander.emit_float(inputs, output)


def _average_pool(expander: _Expander, inputs: list[str], output: str) -> None:
    attrs = {k: v for k, v in expander.attrs.items() if k not in expander.row.drop}
    dilations = attrs.pop("dilations", None)
    if dilations is not None and any(int(d) != 1 for d in dilations):
        raise expander.unsupported(
            f"attribute 'dilations' = {list(dilations)}: onnxruntime's QLinearAveragePool ignores it and AveragePool-19 "
            "applies it; there is no one meaning"
        )
    expander.emit_float(inputs, output, attrs)


def _gemm(expander: _Expander, inputs: list[str], output: str) -> None:
    attrs = {k: v for k, v in expander.attrs.items() if k in ("transA", "transB", "alpha")}
    alpha = float(attrs.get("alpha", 1.0))
    if len(inputs) > 2:
        attrs["beta"] = alpha
    if expander.opset < 11 and len(inputs) < 3:
        inputs = [*inputs, expander.constant("c", np.zeros((), dtype=np.float32))]
        attrs["beta"] = 0.0
    expander.emit_float(inputs, output, attrs)


def _softmax(expander: _Expander, inputs: list[str], output: str) -> None:
    attrs = expander.attrs
    if "opset" not in attrs:
        raise expander.fail("attribute 'opset' is required (the Softmax version whose meaning it has)")
    meaning = int(attrs["opset"])
    coerced = meaning < 13
    axis = int(attrs.get("axis", -1))
    if coerced == (expander.opset < 13) or axis == -1:
        expander.emit_float(inputs, output, {"axis": axis})
        return
    if coerced:
        # the 2-D coercion at `axis`, written out in a model whose Softmax works along one axis
        flat = expander.add("Flatten", inputs, "flatten", axis=axis)
        soft = expander.fresh("softmax")
        expander.emit_float([flat], soft, {"axis": -1})
        shape = expander.add("Shape", inputs, "shape")
        expander.out.nodes.append(helper.make_node("Reshape", [soft, shape], [output], name=expander.fresh("reshape")))
        return
    rank = expander.ranks.get(expander.input(0))
    if rank is not None and is_last_axis(axis, rank):
        expander.emit_float(inputs, output, {"axis": axis})
        return
    raise expander.unsupported(
        f"opset {meaning}'s Softmax along axis {axis} has no Softmax in ai.onnx opset {expander.opset} "
        "(which coerces to 2-D) unless the axis is the last"
    )


def _reduce_mean(expander: _Expander, inputs: list[str], output: str) -> None:
    attrs = dict(expander.attrs)
    axes = attrs.pop("axes", None)
    keepdims = int(attrs.pop("keepdims", 1))
    if axes is not None and expander.opset >= 18:
        inputs = [*inputs, expander.constant("axes", np.asarray(list(axes), dtype=np.int64))]
        expander.emit_float(inputs, output, {"keepdims": keepdims})
    else:
        extra = {"axes": list(axes)} if axes is not None else {}
        expander.emit_float(inputs, output, {"keepdims": keepdims, **extra})


def _concat(expander: _Expander, inputs: list[str], output: str) -> None:
    if "axis" not in expander.attrs:
        raise expander.fail("attribute 'axis' is required")
    axis = int(expander.attrs["axis"])
    if axis < 0 and expander.opset < 11:
        raise expander.unsupported(
            f"attribute 'axis' = {axis}: Concat takes a negative axis from opset 11; the model imports {expander.opset}"
        )
    expander.emit_float(inputs, output, {"axis": axis})


_BUILDERS: dict[str, Callable[[_Expander, list[str], str], None]] = {
    "QLinearAveragePool": _average_pool,
    "QGemm": _gemm,
    "QLinearSoftmax": _softmax,
    "QLinearReduceMean": _reduce_mean,
    "QLinearConcat": _concat,
}


def _to_channels_first(rank: int) -> list[int]:
    """(N, *spatial, C) -> (N, C, *spatial): rank 4 is [0, 3, 1, 2]."""
    return [0, rank - 1, *range(1, rank - 1)]


def _from_channels_first(rank: int) -> list[int]:
    """(N, C, *spatial) -> (N, *spatial, C): rank 4 is [0, 2, 3, 1]."""
    return [0, *range(2, rank), 1]


# ------------------------------------------------------------------------------- model walking


def _expand_graph(graph: GraphProto, opset: int, outer: Mapping[str, np.ndarray], names: FreshNames, every: bool = False) -> None:
    known = {**outer, **constants(graph)}
    types, ranks = _declared(graph)
    nodes: list[NodeProto] = []
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                _expand_graph(attribute.g, opset, known, names, every)
            for sub in attribute.graphs:
                _expand_graph(sub, opset, known, names, every)
        if not expands(node, known, every):
            nodes.append(node)
            continue
        expansion = expand_node(node, opset, known, names, types, ranks)
        nodes.extend(expansion.nodes)
        graph.initializer.extend(expansion.initializers)
        known.update((t.name, numpy_helper.to_array(t)) for t in expansion.initializers)
    del graph.node[:]
    graph.node.extend(nodes)


def _declared(graph: GraphProto) -> tuple[dict[str, int], dict[str, int]]:
    """Element types and ranks the graph declares (inputs, value_info, outputs, initializers)."""
    types: dict[str, int] = {}
    ranks: dict[str, int] = {}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        tensor = info.type.tensor_type
        if info.type.HasField("tensor_type"):
            if tensor.elem_type:
                types[info.name] = tensor.elem_type
            if tensor.HasField("shape"):
                ranks[info.name] = len(tensor.shape.dim)
    for init in graph.initializer:
        types[init.name] = init.data_type
        ranks[init.name] = len(init.dims)
    return types, ranks


def _all_names(graph: GraphProto) -> set[str]:
    """Every node and tensor name of the graph and its subgraphs."""
    taken: set[str] = set()
    for sub in graphs(graph):
        taken.update(i.name for i in sub.input)
        taken.update(o.name for o in sub.output)
        taken.update(t.name for t in sub.initializer)
        taken.update(v.name for v in sub.value_info)
        for node in sub.node:
            taken.add(node.name)
            taken.update(node.input)
            taken.update(node.output)
    taken.discard("")
    return taken


def check_qoperator_nodes(model: ModelProto) -> None:
    """Refuse, naming the node, a QOperator node (main graph or subgraph) whose constant scale is
    zero or not finite, or has more values than its tensor is quantized with (one, except QGemm's B
    and QLinearConv's w: one per channel), or whose constant zero point is not uint8/int8 or has
    another count than its scale; or whose required scale is missing."""
    for graph, known in _graphs_with_constants(model.graph, {}):
        for node in graph.node:
            if not is_qoperator(node):
                continue
            row = QOPERATORS[node.op_type]
            where = node_label(node)
            operands = [o for o in row.inputs if isinstance(o, Operand)]
            if row.variadic is not None:
                operands = [Operand(str(i), at, at + 1, at + 2) for i, at in enumerate(range(row.variadic, len(node.input), 3))]
            pairs = [(o.scale, o.zero_point, o.axis is not None) for o in operands] + [(*row.output, False)]
            for scale_at, zero_at, per_channel in pairs:
                _check_pair(node, where, known, scale_at, zero_at, per_channel)


def _check_pair(
    node: NodeProto, where: str, known: Mapping[str, np.ndarray], scale_at: int, zero_at: int, per_channel: bool
) -> None:
    scale_name = node.input[scale_at] if len(node.input) > scale_at else ""
    zero_name = node.input[zero_at] if len(node.input) > zero_at else ""
    if not scale_name:
        if node.op_type == "QGemm" and scale_at == QOPERATORS["QGemm"].output[0]:
            return  # a float output
        raise ModelError(f"{where}: input {scale_at} (a scale) is missing")
    scale = known.get(scale_name)
    if scale is not None:
        values = np.asarray(scale)
        if values.dtype.kind != "f":
            raise ModelError(f"{where}: scale '{scale_name}' is {values.dtype.name}, not a float tensor")
        wide = values.astype(np.float64)
        bad = wide[~np.isfinite(wide) | (wide == 0)]
        if bad.size:
            raise ModelError(f"{where}: scale {float(bad.reshape(-1)[0]):g} must be finite and non-zero")
        if values.size > 1 and not per_channel:
            raise ModelError(
                f"{where}: scale '{scale_name}' has {values.size} values; {node.op_type} quantizes that tensor per tensor"
            )
    zero = known.get(zero_name) if zero_name else None
    if zero is not None:
        points = np.asarray(zero)
        if points.dtype.name not in ("uint8", "int8"):
            raise ModelError(f"{where}: zero point '{zero_name}' is {points.dtype.name}; {node.op_type} takes uint8 or int8")
        if scale is not None and points.size not in (1, np.size(scale)):
            raise ModelError(f"{where}: {np.size(scale)} scale(s) but {points.size} zero point(s)")


def _graphs_with_constants(
    graph: GraphProto, outer: Mapping[str, np.ndarray]
) -> Iterable[tuple[GraphProto, Mapping[str, np.ndarray]]]:
    known = _LazyConstants(graph, outer)
    yield graph, known
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                yield from _graphs_with_constants(attribute.g, known)
            for sub in attribute.graphs:
                yield from _graphs_with_constants(sub, known)


class _LazyConstants(Mapping[str, np.ndarray]):
    """A graph's constants (initializers, Constant ``value`` outputs, then the enclosing graphs'),
    each converted to numpy only when read: checking a few scales reads a few small tensors, not
    every weight of the model."""

    def __init__(self, graph: GraphProto, outer: Mapping[str, np.ndarray]) -> None:
        self._outer = outer
        self._protos: dict[str, TensorProto] = {t.name: t for t in graph.initializer if t.data_location != TensorProto.EXTERNAL}
        for node in graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
                for attribute in node.attribute:
                    if attribute.name == "value" and attribute.type == AttributeProto.TENSOR:
                        self._protos[node.output[0]] = attribute.t

    def __getitem__(self, name: str) -> np.ndarray:
        proto = self._protos.get(name)
        if proto is None:
            return self._outer[name]
        return numpy_helper.to_array(proto)

    def __iter__(self) -> Iterator[str]:
        yield from self._protos
        yield from (name for name in self._outer if name not in self._protos)

    def __len__(self) -> int:
        return len(set(self._protos) | set(self._outer))
