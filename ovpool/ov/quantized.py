"""Quantization in OpenVINO, exactly: the forms ``ovpool convert --exact-quantization`` writes.

OpenVINO's ONNX frontend writes QuantizeLinear as FakeQuantize, whose arithmetic maps through the
input range and lands one step away from ONNX's near ties (132.50002 gives 132 where ONNX gives
133); its CPU plugin divides by multiplying with the reciprocal (41 % of float32 quotients of a
uint8 range over 0.0371 differ in the last bit) and rewrites ``(q - zp) * s`` as ``q*s - zp*s``.
None of these is what ONNX computes. This module writes forms whose every operation is exact on
the CPU plugin at f32, so the result is ONNX's to the bit:

* **QuantizeLinear** (``quantize``): a first guess ``round(x * (1/s)) + zp`` is at most one step
  off, and two comparisons with the exact thresholds of its neighbours settle it: ``T[y]``, the
  least float32 ``x`` that ONNX quantizes to ``y`` or more, is a table computed here from
  ``ovpool.quant.quantize`` (uint8 over scale 0.05 at zero point 128: ``T[132]`` is float32
  0.175, which ONNX's float32 quotient rounds up to 4). ``y = guess + (x >= T[guess+1]) - (x < T[guess])``.
* **DequantizeLinear** (``dequantize``): the integer subtraction first, in i32, then one float32
  multiplication, as ONNX computes it.
* **a quantized pool** (``pool``, ``ovpool.quant.QuantizedPool``): each window's sum ``S`` of
  ``q - zero_point`` as an exact integer (a zero-padded, unpadded AvgPool times the kernel size,
  rounded), then ``round_half_even(S * s_in / (n * s_out))`` by the same guess-and-thresholds
  step over integers ``S``, per channel and divisor ``n``; a max pool picks the largest integer and
  maps it through a table of its requantized values (none when the scales are shared).

Speed and INT8 execution are the cost: none of these forms is FakeQuantize, so OpenVINO's
low-precision pipeline does not run the neighbouring layers in INT8 (docs/semantics.md gives the
measured cost). Static spatial dims are needed for a quantized pool (the divisors are a constant);
per-channel 16-bit quantization is refused (its tables would hold 65537 floats per channel).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from onnx import NodeProto
from openvino import Output, opset1, opset8, opset13

from ovpool import dtypes, shape
from ovpool.errors import OvpoolError, UnsupportedError
from ovpool.onnx import qdq
from ovpool.onnx.model import default_opset
from ovpool.ov import DOMAIN, lowering
from ovpool.ov.translate.registry import QUANTIZATION_OPS
from ovpool.quant import QUANT_TYPES, Quantization, QuantizedPool, QuantType, quantize, rescale
from ovpool.spec import Divisor, Padding, PoolKind, Rounding

# The most table entries a per-channel form may hold (4 MiB of float32).
MAX_TABLE = 1 << 20


def quantize_linear(x: Output, quant: Quantization) -> Output:
    """ONNX QuantizeLinear of ``x`` (float32) exactly: integers of ``quant.dtype``."""
    rank = x.get_partial_shape().rank.get_length()
    kind = quant.type
    scale, zero = quant.arrays(rank)
    reciprocal = (1.0 / scale.astype(np.float32)).astype(np.float32)
    guess = _clamp(opset1.add(opset13.round(opset1.multiply(x, _f32(reciprocal)), "half_to_even"), _f32(zero)), kind)
    table = np.stack([quantize_thresholds(s, z, kind) for s, z in zip(quant.scale, quant.zero_point)])
    levels = _settle(x, guess, table, _groups(quant, rank, table.shape[1]), kind)
    return opset1.convert(levels, _ov_type(kind)).output(0)


def dequantize_linear(q: Output, quant: Quantization) -> Output:
    """ONNX DequantizeLinear of the integers ``q`` exactly: ``(q - zp)`` in i32, then ``* s`` in float32."""
    rank = q.get_partial_shape().rank.get_length()
    scale, zero = quant.arrays(rank)
    centred = opset1.subtract(opset1.convert(q, "i32"), opset1.constant(zero.astype(np.int32)))
    return opset1.multiply(opset1.convert(centred, "f32"), _f32(scale)).output(0)


def pool(meaning: QuantizedPool, q: Output) -> Output:
    """The quantized pool of the integers ``q`` (N, C, *spatial), exactly: integers of the output type."""
    spec, source, target = meaning.spec, meaning.input, meaning.output
    where = f"node '{spec.name}'"
    rank = q.get_partial_shape().rank.get_length()
    spatial = lowering.spatial_dims(q, spec) if not spec.is_global else _spatial(q, spec, rank)
    if not shape.is_static(spatial):
        raise UnsupportedError(
            f"{where}: an exact quantized pool needs static spatial dims (they are {list(spatial)}); give them with --input"
        )
    channels = q.get_partial_shape()[1]
    if not source.per_tensor or not target.per_tensor:
        count = len(source.scale) if not source.per_tensor else len(target.scale)
        if not channels.is_static or channels.get_length() != count:
            raise UnsupportedError(f"{where}: {count} per-channel scales for an input of {channels} channels")
    window = spec.resolve_global(tuple(spatial))
    if window.kind is PoolKind.MAX:
        return _max(meaning, q, window, rank)
    return _average(meaning, q, window, tuple(spatial), rank)


def int8_within_a_step(meaning: QuantizedPool) -> bool:
    """Whether OpenVINO's INT8 execution of a QDQ pool pattern is within one step of its meaning
    (else the default form writes the exact one for that pattern alone).

    Not so for an include-pad average with padding: OpenVINO pools the integers padded with
    integer 0 where ONNX pads with the zero point (up to 96 steps off at uint8 zero point 128;
    a zero point of 0 is no shelter, as an int8 tensor a Convolution reads is made uint8 at zero
    point 128 on processors without AMX). Written as an exclude-pad average times the ratio of
    counted taps it would be within a step, but off by one at most border cells and by more
    towards a finer output scale, because OpenVINO then rounds the INT8 average to the input's
    grid before the ratio applies. Max pools and other averages are within a step."""
    spec = meaning.spec
    if spec.kind is not PoolKind.AVERAGE or spec.divisor is not Divisor.INCLUDE_PAD:
        return True
    padded = spec.padding in (Padding.SAME_UPPER, Padding.SAME_LOWER) or any(spec.pads_begin + spec.pads_end)
    return not (padded or spec.rounding is not Rounding.FLOOR)


def quantize_thresholds(scale: float, zero_point: int, kind: QuantType) -> np.ndarray:
    """``T[y - low]`` for ``y`` in ``low..high+1``: the least float32 ``x`` that ONNX quantizes to
    ``y`` or more (``-inf`` for ``low``, ``+inf`` past ``high``). uint8 at scale 0.05, zero point
    128: ``T[132]`` is float32 0.175 (its float32 quotient is 3.5, which rounds to 4)."""
    levels = np.arange(kind.low + 1, kind.high + 1)
    near = ((levels - zero_point - 0.5) * np.float64(np.float32(scale))).astype(np.float32)
    steps = np.arange(-4, 5)
    candidates = _ulp_steps(near, steps)
    reached = quantize(candidates, np.float32(scale), np.int64(zero_point), kind.name).astype(np.int64) >= levels[:, None]
    return _bounded(_first_true(candidates, reached), np.float32)


def total_thresholds(count: int, in_scale: float, out_scale: float, zero_point: int, kind: QuantType) -> np.ndarray:
    """``T[y - low]``: the least integer window sum ``S`` whose quantized average over ``count``
    taps is ``y`` or more (``ovpool.quant.rescale``). Shared scale, zero point 0, count 2: ``T[4]``
    is 7 (7/2 = 3.5 rounds to 4)."""
    levels = np.arange(kind.low + 1, kind.high + 1)
    ratio = np.float64(in_scale) / np.float64(out_scale)
    near = np.floor((levels - zero_point - 0.5) * count / ratio).astype(np.int64)
    candidates = near[:, None] + np.arange(-2, 4)
    got = rescale(candidates, count, np.float64(in_scale), np.float64(out_scale), np.int64(zero_point), kind.name)
    reached = got.astype(np.int64) >= levels[:, None]
    return _bounded(_first_true(candidates.astype(np.float64), reached), np.float64)


def _average(meaning: QuantizedPool, q: Output, window, spatial: tuple[int, ...], rank: int) -> Output:
    source, target = meaning.input, meaning.output
    kind = target.type
    in_zero = source.arrays(rank)[1]
    centred = opset1.convert(opset1.subtract(opset1.convert(q, "i32"), opset1.constant(in_zero.astype(np.int32))), "f32")
    pads_begin, pads_end = shape.resolved_pads(window, spatial)
    overhang = shape.ceil_overhang(window, spatial)
    padded = opset1.pad(
        centred,
        _i64([0, 0, *pads_begin]),
        _i64([0, 0, *(pe + extra for pe, extra in zip(pads_end, overhang))]),
        "constant",
        opset1.constant(np.float32(0)),
    )
    zeros = (0,) * len(spatial)
    plain = window.with_(padding=Padding.EXPLICIT, pads_begin=zeros, pads_end=zeros, rounding=Rounding.FLOOR)
    mean = lowering.lower(plain.with_(divisor=Divisor.EXCLUDE_PAD), padded.output(0)).outputs[0]
    total = opset13.round(opset1.multiply(mean, _f32(np.float32(np.prod(window.kernel)))), "half_to_even")
    counts = np.ones((), dtype=np.int64)
    for axis_counts in shape.divisor_counts(window, spatial):
        counts = np.multiply.outer(counts, axis_counts)
    divisors, divisor_index = np.unique(counts, return_inverse=True)
    in_scales, out_scales, out_zeros = _per_group(source, target)
    ratio = (in_scales / out_scales).reshape((1, -1) + (1,) * len(spatial))
    guess = _clamp(
        opset1.add(
            opset13.round(opset1.multiply(total, _f32(ratio / counts)), "half_to_even"),
            _f32(out_zeros.reshape((1, -1) + (1,) * len(spatial))),
        ),
        kind,
    )
    table = np.stack(
        [
            total_thresholds(int(n), s_in, s_out, int(z), kind)
            for s_in, s_out, z in zip(in_scales, out_scales, out_zeros)
            for n in divisors
        ]
    )
    if table.size > MAX_TABLE:
        raise UnsupportedError(f"node '{meaning.spec.name}': an exact quantized average would need {table.size} thresholds")
    group = np.arange(len(in_scales)).reshape((1, -1) + (1,) * len(spatial)) * len(divisors) + divisor_index.reshape(counts.shape)
    levels = _settle(total, guess, table, _f32(group * table.shape[1]), kind)
    return opset1.convert(levels, _ov_type(kind)).output(0)


def _per_group(source: Quantization, target: Quantization) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Input scales, output scales and output zero points, one per channel (or one, per tensor)."""
    count = max(len(source.scale), len(target.scale))
    return (
        np.broadcast_to(np.asarray(source.scale, np.float64), (count,)),
        np.broadcast_to(np.asarray(target.scale, np.float64), (count,)),
        np.broadcast_to(np.asarray(target.zero_point, np.int64), (count,)),
    )


def _max(meaning: QuantizedPool, q: Output, window, rank: int) -> Output:
    picked = _reduce_max(q, rank) if meaning.spec.is_global else lowering.lower(window, q).outputs[0]
    if meaning.shares_scales:
        return picked
    source, target = meaning.input, meaning.output
    kind = source.type
    in_scales, out_scales, out_zeros = _per_group(source, target)
    in_zeros = np.broadcast_to(np.asarray(source.zero_point, np.int64), in_scales.shape)
    values = np.arange(kind.low, kind.high + 1, dtype=np.int64)
    table = np.stack(
        [rescale(values - zi, 1, si, so, zo, target.dtype) for si, so, zi, zo in zip(in_scales, out_scales, in_zeros, out_zeros)]
    )
    offset = np.arange(len(in_scales), dtype=np.float32).reshape((1, -1) + (1,) * (rank - 2)) * kind.levels - kind.low
    index = opset1.convert(opset1.add(opset1.convert(picked, "f32"), _f32(offset)), "i32")
    mapped = opset8.gather(_f32(table.reshape(-1)), index, opset1.constant(np.int32(0)))
    return opset1.convert(mapped, _ov_type(target.type)).output(0)


def _reduce_max(q: Output, rank: int) -> Output:
    return opset1.reduce_max(q, _i64(list(range(2, rank))), True).output(0)


def _settle(value: Output, guess: Output, table: np.ndarray, groups: Output, kind: QuantType) -> Output:
    """The exact level: ``guess`` (at most one step off) moved by the thresholds of its level and the
    next in row ``groups`` of ``table`` (rows of ``high - low + 2`` thresholds, flattened)."""
    flat = _f32(table.reshape(-1).astype(np.float32))
    base = opset1.add(groups, opset1.subtract(guess, _f32(np.float32(kind.low))))
    lower_index = opset1.convert(base, "i32")
    upper_index = opset1.convert(opset1.add(base, _f32(np.float32(1))), "i32")
    axis = opset1.constant(np.int32(0))
    below = opset1.less(value, opset8.gather(flat, lower_index, axis))
    reached = opset1.greater_equal(value, opset8.gather(flat, upper_index, axis))
    step = opset1.subtract(opset1.convert(reached, "f32"), opset1.convert(below, "f32"))
    return opset1.add(guess, step).output(0)


def _groups(quant: Quantization, rank: int, width: int) -> Output:
    """Per element, the start of its channel's row of thresholds (0 for a per-tensor quantization)."""
    if quant.per_tensor:
        return _f32(np.float32(0))
    if quant.type.levels * len(quant.scale) > MAX_TABLE:
        raise UnsupportedError(
            f"{quant.where}: exact per-channel {quant.dtype} quantization would need {quant.type.levels * len(quant.scale)} thresholds"
        )
    shape_ = [1] * rank
    axis = quant.axis if quant.axis is not None else 0
    shape_[axis] = len(quant.scale)
    return _f32((np.arange(len(quant.scale), dtype=np.float32) * width).reshape(shape_))


def _spatial(q: Output, spec, rank: int) -> tuple[int | None, ...]:
    pshape = q.get_partial_shape()
    shape.check_input_rank(spec, rank)
    return tuple(d.get_length() if d.is_static else None for d in list(pshape)[2:])


def _ulp_steps(values: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """``values`` moved by each of ``steps`` float32 ulps: shape (len(values), len(steps))."""
    bits = values.astype(np.float32).view(np.int32).astype(np.int64)
    # the ordered integer of a float32: negative floats count down from zero
    ordered = np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    moved = ordered[:, None] + steps[None, :]
    back = np.where(moved < 0, (-moved) | (-(2**31)), moved).astype(np.int64)
    return back.astype(np.int32).view(np.float32)


def _first_true(candidates: np.ndarray, reached: np.ndarray) -> np.ndarray:
    """Per row, the first candidate that reaches its level (each row increases, and must start
    short of it and end past it)."""
    if not (reached[:, -1].all() and not reached[:, 0].any()):
        raise UnsupportedError("no exact threshold in the searched range (scale too large or small for float32)")
    return candidates[np.arange(len(candidates)), reached.argmax(axis=1)]


def _bounded(thresholds: np.ndarray, dtype: type) -> np.ndarray:
    return np.concatenate([[-np.inf], thresholds.astype(dtype), [np.inf]])


def _clamp(value, kind: QuantType) -> Output:
    return opset1.clamp(value, float(kind.low), float(kind.high)).output(0)


def _ov_type(kind: QuantType) -> str:
    return dtypes.any_ir_type(kind.name)


def _f32(values) -> Output:
    return opset1.constant(np.asarray(values, dtype=np.float32)).output(0)


def _i64(values: Sequence[int]) -> Output:
    return opset1.constant(np.asarray(values, dtype=np.int64)).output(0)


class QuantExtensions:
    """The exact forms of one ONNX model's quantization, for OpenVINO's frontend.

    The model is rewritten first (``model``): each QDQ pool pattern (com.microsoft QLinear pools
    are one once ``ovpool.onnx.qoperator`` expanded them) becomes one ``ai.ovpool.QuantizedPool``
    node from its integers to its integers, and each QuantizeLinear / DequantizeLinear with constant scales
    and zero points (positive float32 scales) an ``ai.ovpool`` node of the same name, each with an
    ``index`` attribute into ``meanings``; ``extensions()`` converts them by this module's exact forms. Nodes whose
    quantization is not a constant (or is blocked) are left to OpenVINO. Every rewritten node keeps
    its name and output tensor names.

    Without ``exact``, only what OpenVINO's own forms get wrong: the 16-bit QuantizeLinear and
    DequantizeLinear nodes (its CPU plugin cannot compile a 16-bit FakeQuantize feeding a
    DequantizeLinear: "replace_output_update_name" fails in its low-precision pass), the pool
    patterns ``int8_within_a_step`` rejects, and the DequantizeLinear of a ConvTranspose's weights
    with a zero point other than 0 (the CPU plugin's low-precision pass computes that
    ConvTranspose wrong when its input's zero point is 0: 233 steps off for uint8 weights at zero
    point 127; the weights become float32 constants, and that ConvTranspose ran in f32 anyway).
    ``kinds``, each tensor's (element type, rank), are the conversion's when it inferred them
    already (``ModelFacts.tensor_kinds``), else inferred here (``qdq.tensor_kinds``)."""

    def __init__(self, proto, exact: bool = True, kinds: Mapping[str, tuple[str | None, int | None]] | None = None) -> None:
        from onnx import helper

        self.meanings: list[object] = []
        self.errors: list[OvpoolError] = []
        model = type(proto)()
        model.CopyFrom(proto)
        graph = model.graph
        opset = default_opset(model)
        known = qdq.constants(graph)
        kinds = kinds if kinds is not None else qdq.tensor_kinds(model)  # a conversion's: ModelFacts.tensor_kinds
        replaced: dict[str, NodeProto | None] = {}  # a node's first output -> its replacement (None: removed)
        transposed_weights = {node.input[1] for node in graph.node if node.op_type == "ConvTranspose" and len(node.input) > 1}
        for pattern in qdq.find_qdq_pools(model):
            if not exact and int8_within_a_step(pattern.meaning):
                continue
            replaced[pattern.quantize.output[0]] = self._node(
                helper, "QuantizedPool", pattern.quantize, [pattern.dequantize.input[0]], pattern.meaning
            )
            replaced[pattern.pool.output[0]] = None
        for node in graph.node:
            if node.output[0] not in replaced and node.domain in ("", "ai.onnx") and node.op_type in qdq.QDQ_OPS:
                rank = kinds.get(node.input[0], (None, None))[1]
                quantized = node.output[0] if node.op_type == "QuantizeLinear" else node.input[0]
                found = qdq.node_quantization(node, opset, known, rank, _quant_name(kinds.get(quantized, (None, None))[0]))
                wanted = found is not None and (
                    exact or found.type.levels > 256 or (node.output[0] in transposed_weights and any(found.zero_point))
                )
                if found is not None and wanted and found.increasing and _float32_scale(node, known):
                    replaced[node.output[0]] = self._node(helper, node.op_type, node, node.input[:1], found)
        kept = [replaced.get(node.output[0], node) if node.output else node for node in graph.node]
        used = {name for node in kept if node is not None for name in node.input} | {o.name for o in graph.output}
        nodes = [
            node
            for node in kept
            if node is not None and not (node.op_type == "DequantizeLinear" and not used.intersection(node.output))
        ]
        del graph.node[:]
        graph.node.extend(nodes)
        if self.meanings and not any(o.domain == DOMAIN for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
        self.model = model

    @property
    def changed(self) -> bool:
        return bool(self.meanings)

    def _node(self, helper, op_type: str, node: NodeProto, inputs, meaning: object) -> NodeProto:
        self.meanings.append(meaning)
        return helper.make_node(
            op_type, list(inputs), list(node.output[:1]), name=node.name, domain=DOMAIN, index=len(self.meanings) - 1
        )

    op_types = QUANTIZATION_OPS

    @property
    def reported_op_types(self) -> frozenset[str]:
        """The op types as OpenVINO's failure report names them: ``ai.ovpool.QuantizeLinear``."""
        return frozenset(f"{DOMAIN}.{op}" for op in self.op_types)

    def extensions(self) -> list[object]:
        from openvino.frontend.onnx import ConversionExtension

        return [ConversionExtension(op, DOMAIN, self.converter(op)) for op in self.op_types]

    def converter(self, op_type: str):
        """The converter of ``ai.ovpool.<op_type>`` nodes (the registry's ``quantization`` entries use it)."""

        def convert(context) -> list:
            meaning = self.meanings[int(context.get_attribute("index"))]
            data = context.get_input(0)
            try:
                if op_type == "QuantizeLinear":
                    assert isinstance(meaning, Quantization)
                    return [quantize_linear(_as_f32(data), meaning)]
                if op_type == "DequantizeLinear":
                    assert isinstance(meaning, Quantization)
                    return [dequantize_linear(data, meaning)]
                assert isinstance(meaning, QuantizedPool)
                return [pool(meaning, data)]
            except OvpoolError as exc:
                self.errors.append(exc)
                raise

        return convert


def _float32_scale(node, known) -> bool:
    """A Q/DQ node whose scale is float32: the exact forms compute in float32 (a float16 scale's
    DequantizeLinear outputs float16, which is OpenVINO's to compute)."""
    scale = known.get(node.input[1]) if len(node.input) > 1 else None
    return scale is not None and scale.dtype == np.float32


def _as_f32(data: Output) -> Output:
    return data if data.get_element_type().get_type_name() == "f32" else opset1.convert(data, "f32").output(0)


def _quant_name(dtype: str | None) -> str | None:
    return dtype if dtype in QUANT_TYPES else None
