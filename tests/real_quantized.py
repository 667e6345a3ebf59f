"""Real float models of the suite, quantized by onnxruntime's ``quantize_static``, and how their
results are counted in quantization steps.

A :class:`QuantVariant` is one of ``ops/real_models.py``'s models with a quantization recipe: the
format (``QDQ``: DequantizeLinear -> float op -> QuantizeLinear around every quantized op;
``QOperator``: QLinearConv, QLinearMatMul, com.microsoft QLinearAdd, QLinearGlobalAveragePool, ...),
the activation and weight types (uint8 or int8) and per-tensor or per-channel weights. The file is
made on first use in a folder the caller owns (pytest's temporary folder, a benchmark's scratch
folder; never the checkout): the float model through ``quant_pre_process`` (ONNX shape inference and
onnxruntime's basic graph optimisations, which fold BatchNormalization into Conv; onnxruntime's
symbolic shape inference is skipped, it gives up on PP-OCR's dynamic dims), then ``quantize_static``
with MinMax calibration on ``CALIBRATION`` input sets drawn like the model's test inputs from seeds
1, 2, ... (the test inputs use seed 0, so the model is never run on its calibration data). Every
step is seeded: two runs make the same file.

**Steps.** A float output that a DequantizeLinear produces (through Identity, Reshape, Transpose,
Squeeze, Unsqueeze or Flatten) is counted in that DequantizeLinear's scale: the PP-OCR classifier's
softmax, dequantized at scale 1/255, is 0.0039216 per step, so two results 0.0078 apart are 2 steps
apart. An integer tensor is counted in integers (``steps``).

**Segments.** A quantized model is a chain of segments, each from integer tensors to an integer
tensor (a QuantizeLinear's or a QLinear op's output). ``cut`` rewrites the model so that every
integer tensor a node computes is a graph output, and every node reading it reads a graph input of
the same name instead; ``onnxruntime_values`` gives onnxruntime's value of every tensor, and feeding
those to the cut model makes a runtime compute each segment from onnxruntime's integers. A
one-step difference there is local (a near tie of a float before QuantizeLinear, or a float32
requantization in a QLinear op); the whole model's differences also carry earlier flips through the
following layers (a one-step flip of one activation of PP-OCRv3's detector grows to 173 steps of its
probability map, ``test_real_quantized_models.py`` gives the measured figures).

Per-channel variants of models older than opset 13 are made from the model converted to opset 13
first (``PER_CHANNEL_OPSET``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper, version_converter
from ops.real_models import MODELS, RealModel, onnxruntime_runner

from ovpool.onnx.model import default_opset

# calibration input sets per model (seeds 1..CALIBRATION)
CALIBRATION = 3
# per-channel weights need DequantizeLinear's axis; onnxruntime 1.31's quantizer writes it into an
# older model all the same (an invalid model, which onnxruntime refuses), so such models are first
# converted to this opset
PER_CHANNEL_OPSET = 13
# ops that pass a dequantized tensor on unchanged (its step is the DequantizeLinear's scale)
PASSTHROUGH = frozenset({"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"})
# the suffix of a cut model's computed integer tensors (``cut``)
COMPUTED = "#computed"
SHORT = {"uint8": "u8", "int8": "s8"}


@dataclass(frozen=True)
class QuantVariant:
    """``model`` quantized as ``fmt`` (``"QDQ"`` or ``"QOperator"``), activations ``activation``
    and weights ``weight`` (``"uint8"`` or ``"int8"``), weights per output channel or per tensor.
    ``model`` carries the input sizes it is calibrated and run at."""

    model: RealModel
    fmt: str
    activation: str
    weight: str
    per_channel: bool

    @property
    def name(self) -> str:
        """``ppocr-cls-qdq-u8s8-channel``: model, format, activation and weight types, granularity."""
        types = SHORT[self.activation] + SHORT[self.weight]
        return f"{self.model.name}-{self.fmt.lower()}-{types}-{'channel' if self.per_channel else 'tensor'}"

    def calibration(self) -> list[dict[str, np.ndarray]]:
        """The calibration input sets: the model's inputs drawn from seeds 1..CALIBRATION."""
        return [replace(self.model, seed=seed).feeds() for seed in range(1, CALIBRATION + 1)]

    def make(self, folder: Path) -> Path:
        """The quantized model's file in ``folder``, made on first use (``quantize_static``)."""
        out = folder / f"{self.name}-{'x'.join(map(str, _first_shape(self.model)))}.onnx"
        if not out.is_file():
            _quantize(self, _preprocessed(self.model, folder, PER_CHANNEL_OPSET if self.per_channel else 0), out)
        return out


def variant(name: str, fmt: str, activation: str, weight: str, per_channel: bool, **sizes: tuple[int, ...]) -> QuantVariant:
    """The real model ``name`` (``ops/real_models.py``) quantized so; ``sizes`` replaces input
    shapes (``x=(1, 3, 48, 160)``: a shorter text line, for CI time), drawn as the model draws them."""
    model = next(m for m in MODELS if m.name == name)
    if sizes:
        inputs = {k: replace(spec, shape=sizes.get(k, spec.shape)) for k, spec in model.inputs.items()}
        model = replace(model, inputs=inputs, again={})
    return QuantVariant(model, fmt, activation, weight, per_channel)


def _first_shape(model: RealModel) -> tuple[int, ...]:
    return next(iter(model.inputs.values())).shape


def _preprocessed(model: RealModel, folder: Path, opset: int) -> Path:
    """The float model after ``quant_pre_process`` (made once per file and opset in ``folder``),
    first converted to ai.onnx ``opset`` if it imports an older one (``onnx.version_converter``)."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    source = onnx.load(str(model.path))
    upgrade = default_opset(source) < opset
    out = folder / f"{Path(model.file).stem}-{f'opset{opset}-' if upgrade else ''}preprocessed.onnx"
    if not out.is_file():
        if upgrade:
            converted = folder / f"{Path(model.file).stem}-opset{opset}.onnx"
            onnx.save(version_converter.convert_version(source, opset), str(converted))
        part = out.with_suffix(".part.onnx")
        quant_pre_process(str(converted if upgrade else model.path), str(part), skip_symbolic_shape=True)
        part.replace(out)
    return out


def _quantize(variant: QuantVariant, source: Path, out: Path) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    types = {"uint8": QuantType.QUInt8, "int8": QuantType.QInt8}

    class Reader(CalibrationDataReader):
        def __init__(self, sets: Sequence[dict[str, np.ndarray]]) -> None:
            self.sets = iter(sets)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.sets, None)

    part = out.with_suffix(".part.onnx")
    quantize_static(
        str(source),
        str(part),
        Reader(variant.calibration()),
        quant_format=QuantFormat.QDQ if variant.fmt == "QDQ" else QuantFormat.QOperator,
        per_channel=variant.per_channel,
        activation_type=types[variant.activation],
        weight_type=types[variant.weight],
    )
    part.replace(out)


def output_scales(proto: onnx.ModelProto) -> dict[str, float | None]:
    """Each graph output's step: the scale of the DequantizeLinear it comes from (through
    ``PASSTHROUGH`` ops), None for an integer output (counted in integers). A float output with no
    such DequantizeLinear, or a per-axis one, is a ``ValueError`` (its steps are not defined)."""
    producer = {o: n for n in proto.graph.node for o in n.output}
    constants = {t.name: t for t in proto.graph.initializer}
    for node in proto.graph.node:
        if node.op_type == "Constant" and node.attribute[0].name == "value":
            constants[node.output[0]] = node.attribute[0].t
    scales: dict[str, float | None] = {}
    for out in proto.graph.output:
        if out.type.tensor_type.elem_type in (onnx.TensorProto.UINT8, onnx.TensorProto.INT8):
            scales[out.name] = None
            continue
        node = producer.get(out.name)
        while node is not None and node.op_type in PASSTHROUGH:
            node = producer.get(node.input[0])
        if node is None or node.op_type != "DequantizeLinear" or node.input[1] not in constants:
            raise ValueError(f"output '{out.name}' does not come from a DequantizeLinear: its steps are not defined")
        scale = numpy_helper.to_array(constants[node.input[1]])
        if scale.size != 1:
            raise ValueError(f"output '{out.name}' comes from a per-axis DequantizeLinear ({scale.size} scales)")
        scales[out.name] = float(scale.reshape(()))
    return scales


def steps(actual: np.ndarray, expected: np.ndarray, scale: float | None) -> int:
    """The largest difference in steps: integers for ``scale`` None, else ``|a - e| / scale``
    rounded (values a DequantizeLinear made are whole steps apart: 0.0078431 / 0.0039216 is 2)."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if not actual.size:
        return 0
    difference = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    if scale is not None:
        difference = np.rint(difference / scale)
    return int(difference.max())


def share_over_one_step(actual: np.ndarray, expected: np.ndarray, scale: float | None) -> float:
    """The fraction of values more than one step apart (``steps``' counting): 0.002 when 2 of
    1000 probabilities differ by 2 or more steps."""
    if not actual.size:
        return 0.0
    difference = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    if scale is not None:
        difference = np.rint(difference / scale)
    return float(np.count_nonzero(difference > 1)) / actual.size


def onnxruntime_values(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's value of every node output of the model (the oracle's settings: one thread,
    graph optimisations off)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(proto)
    declared = {o.name for o in probe.graph.output}
    for node in probe.graph.node:
        probe.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in node.output if n and n not in declared)
    return onnxruntime_runner(probe)(feeds)


def integer_tensors(proto: onnx.ModelProto, values: Mapping[str, np.ndarray]) -> list[str]:
    """The int8/uint8 tensors the model's nodes compute, in node order (``values``: every node
    output's value, for its type)."""
    return [o for n in proto.graph.node for o in n.output if o in values and values[o].dtype in (np.uint8, np.int8)]


def cut(proto: onnx.ModelProto, values: Mapping[str, np.ndarray]) -> tuple[onnx.ModelProto, list[str]]:
    """The model with each of its ``integer_tensors`` ``t`` computed into a graph output
    ``t#computed`` and read from a graph input ``t`` (its type and shape ``values[t]``'s), and
    those names. Fed ``values``, a runtime computes every segment from those integers."""
    names = integer_tensors(proto, values)
    cut_set = set(names)
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    for node in model.graph.node:
        for index, name in enumerate(node.output):
            if name in cut_set:
                node.output[index] = name + COMPUTED
    kept = [o for o in model.graph.output if o.name not in cut_set]
    del model.graph.output[:]
    model.graph.output.extend(kept)
    for name in names:
        value = values[name]
        model.graph.input.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape))
        model.graph.output.append(helper.make_empty_tensor_value_info(name + COMPUTED))
    return model, names


def constants(proto: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The model's initializers and Constant nodes' values, by name."""
    found = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    for node in proto.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            found[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return found


def unexplained_flips(
    proto: onnx.ModelProto, names: Sequence[str], expected: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray]
) -> list[str]:
    """The QuantizeLinear outputs among ``names`` where ``actual`` (a runtime's values, cut outputs
    under ``t#computed``) differs from ``expected`` (onnxruntime's) without a rounding tie between
    the two runtimes' float inputs: at each differing element, the float32 quotients ``x / scale``
    of onnxruntime's ``x`` and the runtime's must lie on either side of a half-integer (or on it).
    PP-OCRv3's detector (uint8): ``batch_norm_33.tmp_3_QuantizeLinear`` at (0, 3, 11, 6) gives 87
    on onnxruntime (quotient -49.500008, plus zero point 137) and 88 on numpy (-49.499996): their
    float32 convolutions sum in other orders, the tie -49.5 lies between, the flip is explained;
    quotients -49.2 and -49.3 would not explain one. Each problem is one line naming the tensor, the
    element and the two quotients."""
    known = constants(proto)
    producer = {o: n for n in proto.graph.node for o in n.output}
    problems = []
    for name in names:
        node = producer[name]
        got, want = actual[name + COMPUTED], expected[name]
        if node.op_type != "QuantizeLinear" or np.array_equal(got, want):
            continue
        x = node.input[0]
        rank = want.ndim
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        scale = np.asarray(known[node.input[1]], np.float32)
        if scale.size > 1:
            scale = scale.reshape([-1 if d == axis % rank else 1 for d in range(rank)])
        quotients = [(np.asarray(v[x], np.float32) / scale).astype(np.float64) for v in (expected, actual)]
        low, high = np.minimum(*quotients), np.maximum(*quotients)
        tie = np.floor(high - 0.5) + 0.5  # the largest half-integer <= high
        bad = (got != want) & (tie < low)
        for index in zip(*np.nonzero(bad)):
            problems.append(
                f"{name} at {tuple(int(i) for i in index)}: {int(got[index])} where onnxruntime gives {int(want[index])}, "
                f"quotients {quotients[1][index]:.6f} and onnxruntime's {quotients[0][index]:.6f} (no tie between)"
            )
    return problems


def segment_ops(proto: onnx.ModelProto, names: Sequence[str]) -> dict[str, frozenset[str]]:
    """The op types each segment computes: the nodes from its inputs (the cut tensors ``names``,
    graph inputs, constants) to the cut tensor, by name. A MaxPool segment of a QDQ model is
    ``{"DequantizeLinear", "MaxPool", "QuantizeLinear"}``."""
    producer = {o: n for n in proto.graph.node for o in n.output}
    cut_set = set(names)
    found = {}
    for name in names:
        ops: set[str] = set()
        stack, seen = [name], set()
        while stack:
            tensor = stack.pop()
            node = producer.get(tensor)
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            ops.add(node.op_type)
            stack.extend(i for i in node.input if i and i not in cut_set)
        found[name] = frozenset(ops)
    return found
