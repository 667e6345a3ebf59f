"""Quantized pools that OpenVINO's CPU plugin computes otherwise than written (``ovpool validate`` OVP501, OVP502).

OpenVINO CPU runs the AvgPool of a quantized model on integers: its low-precision transformations
(LPT) move the dequantization ``(q - zero_point) * scale`` past the pool, and the pool pads the
integers with 0, not with the zero point. A padded tap then weighs in as the real value
``-zero_point * scale`` instead of 0, and every window that reaches into the padding is off by
``zero_point * padded_taps / taps`` quantization steps: uint8 with zero point 128 under a 3x3
include-pad average with pads 1 is 128 x 5/9 = 71.1 steps low in the corners (72 measured after
rounding, OpenVINO 2026.4.1; docs/semantics.md has every measured pattern).

A layer is flagged when all three hold:

* **the CPU pools integers**: the layer runs as AvgPool-1 (``opset1``, or ``opset14``/``opset15``
  without ``ceil_torch``; AvgPool-16 and ``ceil_torch`` run in float) and the model has a
  FakeQuantize of 15, 16, 255 or 256 levels (without one LPT does not run);
* **windows reach into padding**: ``exclude-pad="false"`` with a non-zero pad (explicit, or
  ``same_*`` on known dims), or, for AvgPool-1 only, a zero Pad in front that the plugin fuses into
  the average (constant mode, value 0, no batch or channel pads, the Pad's only consumer, and the
  average ``exclude-pad="false"`` or without pads of its own);
* **the integers have a non-zero zero point**: the layer's input comes, through layers LPT moves a
  dequantization past (``PASS_THROUGH``: Reshape, Transpose, Concat, MaxPool, ...; not ReLU, which
  keeps a zero-pointed dequantization in float), from
  - a dequantization ``Convert(u8/i8 -> float) [-> Subtract zp] -> Multiply scale`` (what ONNX
    QDQ models become): the zero point is the Subtract's constant; or
  - a FakeQuantize, whose integers LPT picks from ``levels`` and the output range
    (``lpt_zero_points``);
  and int8 becomes uint8 (zero point + 128) when the tensor reaches a Convolution or a 4-D
  GroupConvolution through precision-preserving layers (``PRECISION_PRESERVING``): on processors
  without AMX or AVX2-VNNI-2 the plugin feeds those only uint8.

OVP502 (``reduce_batch_mixup``): a ReduceMean over the last axis of a 3-D tensor on such integers,
with a batch of 2 or more, is computed with batch and channels mixed up.

The checks read only the ``.xml`` and a few small constants of the ``.bin`` (``Constants``), and run
only for AvgPool layers with padding and 3-D ReduceMean layers in a model with a FakeQuantize, so
they add nothing measurable to other models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ovpool import dtypes, shape
from ovpool.axis import fewest_taps_inside
from ovpool.ir.reader import Edge, IRDocument, Layer, dim_bounds, ir_int, weights_file
from ovpool.spec import Divisor, PoolSpec

# Layers LPT moves a dequantization past, so that an average behind them still pools the integers
# (measured on OpenVINO CPU 2026.4.1 between a dequantization or FakeQuantize and the average).
PASS_THROUGH = frozenset(
    {
        "Reshape",
        "Squeeze",
        "Unsqueeze",
        "Transpose",
        "StridedSlice",
        "Split",
        "VariadicSplit",
        "Concat",
        "Gather",
        "Broadcast",
        "Clamp",
        "DepthToSpace",
        "ShuffleChannels",
        "MaxPool",
        "Interpolate",
    }
)
# Layers LPT marks precision-preserving (markup_precisions.cpp, and AvgPool): a convolution behind
# them constrains the integer type of the tensor in front of them.
PRECISION_PRESERVING = frozenset(
    {
        "AvgPool",
        "Concat",
        "DepthToSpace",
        "Interpolate",
        "MaxPool",
        "ReduceMax",
        "ReduceMin",
        "ReLU",
        "Pad",
        "Reshape",
        "Squeeze",
        "Split",
        "StridedSlice",
        "ShuffleChannels",
        "Transpose",
        "Unsqueeze",
        "VariadicSplit",
    }
)
LPT_LEVELS = frozenset({15, 16, 255, 256})  # int4 and int8, narrow and full range
MAX_CONST_BYTES = 1 << 16  # a constant read from the .bin: axes, pads, a per-channel range
_MAX_STEPS = 64  # layers looked at from an average back to its integers, or from those on to a convolution
_ZERO = 1e-6  # LPT's threshold for a range end that is zero


class Constants:
    """Values of a document's Const layers, read from the ``.bin`` beside it when asked for (the
    axes of a ReduceMean, a FakeQuantize's range); None where there is no ``.bin``, or the Const
    does not fit it or holds more than ``MAX_CONST_BYTES``."""

    def __init__(self, doc: IRDocument) -> None:
        self.doc = doc

    def ints(self, edge: Edge | None) -> tuple[int, ...] | None:
        """The values of the integer Const feeding ``edge``, or None."""
        layer = self.doc.layer(edge.from_layer) if edge is not None else None
        dtype = dtypes.from_ir_type(layer.data.get("element_type", "")) if layer is not None else None
        if layer is None or dtype is None or not dtype.startswith(("int", "uint")):
            return None
        values = self.values(layer)
        return None if values is None else tuple(int(v) for v in values)

    def values(self, layer: Layer) -> tuple[float, ...] | None:
        """The numbers a Const layer holds (``element_type``, ``shape``, ``offset``, ``size``): f16
        at offset 8, size 2, bytes 00 3C -> (1.0,); None if ``layer`` is no readable Const."""
        dtype = dtypes.from_ir_type(layer.data.get("element_type", "")) if layer.type == "Const" else None
        offset, size = ir_int(layer.data.get("offset", "")), ir_int(layer.data.get("size", ""))
        dims = [ir_int(d) for d in layer.data.get("shape", "").split(",") if d.strip()]
        if dtype is None or dtype == "bool" or offset is None or size is None or offset < 0 or size > MAX_CONST_BYTES:
            return None
        count = math.prod(d if d is not None and d > 0 else 0 for d in dims)
        if count < 1 or size != count * dtypes.itemsize(dtype):
            return None
        data = self._bin(offset, size)
        return dtypes.unpack(dtype, data) if len(data) == size else None

    def _bin(self, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset`` of the ``.bin`` (a regular file: ``weights_file``), or
        fewer where it has fewer: one constant, never the whole file."""
        path = weights_file(self.doc.path)
        if path is None:
            return b""
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                return handle.read(size)
        except OSError:
            return b""


class GraphView:
    """What the checks read of a document: the edge into each input port, the edges out of each
    output port, and its constants."""

    def __init__(
        self, doc: IRDocument, producers: Mapping[tuple[str, str], Edge], consumers: Mapping[tuple[str, str], list[Edge]]
    ) -> None:
        self.doc, self.producers, self.consumers = doc, producers, consumers
        self.constants = Constants(doc)
        self._has_fake_quantize: bool | None = None

    def has_fake_quantize(self) -> bool:
        """Whether any layer is a FakeQuantize of 15, 16, 255 or 256 levels (the CPU plugin runs LPT
        only then: one of 2 or 128 levels leaves the model in float); looked up once."""
        if self._has_fake_quantize is None:
            self._has_fake_quantize = any(
                layer.type == "FakeQuantize" and ir_int(layer.data.get("levels", "")) in LPT_LEVELS
                for layer in self.doc.layers.values()
            )
        return self._has_fake_quantize

    def edge_into(self, layer: Layer, index: int) -> Edge | None:
        """The edge into the ``index``-th input port of ``layer``."""
        return self.producers.get((layer.id, layer.inputs[index].id)) if index < len(layer.inputs) else None

    def source(self, layer: Layer, index: int) -> Layer | None:
        """The layer feeding the ``index``-th input port of ``layer``."""
        edge = self.edge_into(layer, index)
        return self.doc.layer(edge.from_layer) if edge is not None else None

    def readers(self, layer: Layer) -> list[Edge]:
        """Every edge out of ``layer``'s output ports."""
        return [edge for port in layer.outputs for edge in self.consumers.get((layer.id, port.id), ())]

    def constant(self, edge: Edge | None) -> Layer | None:
        """The Const behind ``edge``, directly or through a Convert (f16 weights decompressed)."""
        layer = self.doc.layer(edge.from_layer) if edge is not None else None
        if layer is not None and layer.type == "Convert" and layer.inputs:
            layer = self.source(layer, 0)
        return layer if layer is not None and layer.type == "Const" else None

    def numbers(self, edge: Edge | None) -> tuple[float, ...] | None:
        """The values of the constant behind ``edge`` (``constant``), or None."""
        layer = self.constant(edge)
        return self.constants.values(layer) if layer is not None else None


@dataclass(frozen=True)
class Integers:
    """The integers an average pools on OpenVINO CPU: their type ("uint8"/"int8"), zero points (one,
    or one per channel), the layer that makes them (a FakeQuantize, or what feeds a dequantization:
    the Convert an ONNX QuantizeLinear becomes, a uint8 Parameter), and the Convolution that turned
    int8 into uint8 (None if none did)."""

    dtype: str
    zero_points: tuple[float, ...]
    source: Layer
    convolution: Layer | None = None
    per_channel: bool = False  # zero points or scales that differ between channels
    ranges: tuple[tuple[float, ...], ...] | None = None  # the FakeQuantize's input_low, input_high

    @property
    def zero_point(self) -> float:
        """The zero point of largest magnitude, with its sign: per channel 3 and 250 -> 250; -51 -> -51."""
        return max(self.zero_points, key=abs)


@dataclass(frozen=True)
class IntegerPadding:
    """One average OpenVINO CPU computes on zero-padded integers: its integers, the fused zero Pad
    (None if the padding is the average's own), and the taps of its worst window: ``padded`` of
    ``taps`` outside the input. Off by up to ``steps`` quantization steps: 128 x 5/9 = 71.1."""

    integers: Integers
    pad: Layer | None
    padded: int
    taps: int

    @property
    def steps(self) -> float:
        """The largest error in quantization steps of the input: zero point x padded / taps."""
        return abs(self.integers.zero_point) * self.padded / self.taps

    def message(self) -> str:
        """The finding's text: why, by how much, and the exact form."""
        ints = self.integers
        fused = f"fuses the zero Pad '{self.pad.name}' into this average and " if self.pad is not None else ""
        why = ""
        if ints.convolution is not None:
            why = (
                f" (int8 made uint8, zero point + 128, for {ints.convolution.type} '{ints.convolution.name}': "
                "the plugin feeds it only uint8 on processors without AMX or AVX2-VNNI-2)"
            )
        zero = ("zero points up to " if len(set(ints.zero_points)) > 1 else "zero point ") + _number(ints.zero_point)
        return (
            f"OpenVINO CPU {fused}averages the {ints.dtype} integers of {ints.source.type} '{ints.source.name}'{why} "
            f"padded with integer 0, not the {zero}: border windows are off by up to {_number(self.steps)} quantization "
            f"steps ({self.padded} of {self.taps} taps in padding); convert the ONNX source with ovpool convert, which "
            "writes a form OpenVINO CPU computes exactly, or write an exclude-pad AvgPool times the constant ratio of "
            "in-input to counted taps (within a step: OpenVINO rounds the INT8 average first)"
        )


def integer_padding(view: GraphView, layer: Layer, spec: PoolSpec) -> IntegerPadding | None:
    """The OVP501 verdict on an AvgPool ``layer`` whose ``spec`` has been checked: how OpenVINO CPU
    pads its integers, or None where it computes the layer as written (see the module text).
    Cheapest questions first: most averages fail the first two."""
    runs_as_v1 = layer.version == "opset1" or (
        layer.version in ("opset14", "opset15") and layer.data.get("rounding_type", "floor").strip().lower() != "ceil_torch"
    )
    include = spec.divisor is Divisor.FULL_KERNEL_IF_PADDED
    pad = view.source(layer, 0)
    if pad is not None and (pad.type != "Pad" or layer.version != "opset1"):
        pad = None
    if not runs_as_v1 or not (include or pad is not None) or not view.has_fake_quantize():
        return None
    integers = _integers(view, view.edge_into(pad or layer, 0), _Budget())
    if integers is None or integers.zero_point == 0:
        return None
    spatial = [_static(d) for d in layer.inputs[0].dims[2:]]
    begin, end = shape.resolved_pads(spec, spatial)
    if pad is None and not any(begin + end):
        return None
    if pad is not None:
        fused = _fused_pads(view, pad, layer)
        if fused is None or None in begin + end or not (include or not any(begin + end)):
            return None
        begin = tuple(b + p for b, p in zip(begin, fused[0]) if b is not None)
        end = tuple(e + p for e, p in zip(end, fused[1]) if e is not None)
        spatial = [None if d is None else d - b - e for d, b, e in zip(spatial, fused[0], fused[1])]
    inside = 1
    for axis, length in enumerate(spatial):
        k, s, pb, pe = spec.kernel[axis], spec.strides[axis], begin[axis] or 0, end[axis] or 0
        if length is None:  # an input at least one window long: the first or last window's pads
            inside *= max(0, k - max(pb, pe))
        else:
            out = shape.axis_output(length, k, s, 1, pb, pe, spec.rounding)
            inside *= fewest_taps_inside(length, out, k, s, pb) if out > 0 else 0
    taps = math.prod(spec.kernel)
    return IntegerPadding(integers, pad, taps - inside, taps) if inside < taps else None


@dataclass(frozen=True)
class BatchMixup:
    """A ReduceMean over the last axis of a 3-D tensor (a 1-D global average pool) that OpenVINO CPU
    computes on integers with batch and channels mixed up: ``per_channel`` quantization applied
    along the batch axis, or (False) a batch larger than the channels."""

    integers: Integers
    batch: int
    channels: int | None
    per_channel: bool

    def message(self) -> str:
        """The finding's text: why, and the form OpenVINO computes exactly."""
        ints = self.integers
        if self.per_channel:
            why = f"applying its per-channel quantization along the batch axis (batch {self.batch})"
        else:
            wrong = (
                f"batch {self.channels} comes"
                if self.batch == (self.channels or 0) + 1
                else f"batches {self.channels} to {self.batch - 1} come"
            )
            why = f"with a batch of {self.batch} over {self.channels} channels: {wrong} out wrong"
        return (
            f"OpenVINO CPU averages this 3-D tensor as the {ints.dtype} integers of {ints.source.type} '{ints.source.name}' "
            f"{why}; write an AvgPool whose kernel is the whole axis, which it computes exactly (ovpool convert writes "
            "it from the ONNX source on static dims)"
        )


def reduce_batch_mixup(view: GraphView, layer: Layer) -> BatchMixup | None:
    """The OVP502 verdict on a ReduceMean over the last axis of a 3-D tensor (a global pool), or
    None. Measured on OpenVINO CPU 2026.4.1 with batch N >= 2 (batch 1 is always exact):

    * quantization per channel (zero points or scales that differ) on the input integers or in the
      FakeQuantize reading the output is applied along the batch axis: wrong, unless both sides
      are quantized alike with a zero point and N <= C;
    * per tensor, N > C: batches C and on come out wrong unless a FakeQuantize reads the output and
      the zero point is 0 or C is 1 (2x2x3 and 2x3x3 exact, 3x2x3 off by up to 191 steps)."""
    if layer.type != "ReduceMean" or len(layer.inputs) < 1 or len(layer.inputs[0].dims) != 3:
        return None
    batch, channels = (_static(d) for d in layer.inputs[0].dims[:2])
    if batch is None or batch < 2 or not view.has_fake_quantize():
        return None
    integers = _integers(view, view.edge_into(layer, 0), _Budget())
    if integers is None:
        return None
    reader = next((view.doc.layer(e.to_layer) for e in view.readers(layer) if _is_type(view, e.to_layer, "FakeQuantize")), None)
    out_ranges = _ranges(view, reader, 1) if reader is not None else None
    out_per_channel = out_ranges is not None and len(set(zip(*out_ranges))) > 1
    if integers.per_channel or out_per_channel:
        alike = integers.ranges == out_ranges and integers.zero_point != 0 and channels is not None and batch <= channels
        return None if alike else BatchMixup(integers, batch, channels, True)
    if channels is not None and batch > channels and (reader is None or (integers.zero_point != 0 and channels >= 2)):
        return BatchMixup(integers, batch, channels, False)
    return None


def _is_type(view: GraphView, layer_id: str, layer_type: str) -> bool:
    layer = view.doc.layer(layer_id)
    return layer is not None and layer.type == layer_type


def lpt_zero_points(
    levels: int, lows: Sequence[float], highs: Sequence[float], uint8_only: bool = False
) -> tuple[str, tuple[float, ...]]:
    """The integers LPT quantizes a FakeQuantize's output to: type and zero point per channel
    (``LayerTransformation::getPrecisionDetails`` and the FakeQuantize decomposition).

    A range that is signed and as asymmetric as int8 is (low / high = -levels / (levels - 2) for 16
    and 256 levels, -1 for 15 and 255, within 0.2 %) is int8 without a zero point; one from 0 (|low|
    < 1e-6) uint8 without one. Anything else, and int8 where only uint8 is taken
    (``uint8_only``), is uint8 whose integer 0 is ``low``: zero point ``-low / step`` with ``step =
    (high - low) / (levels - 1)``. -1..2 at 256 levels: uint8, zero point 85; -6.4..6.35: int8, 0;
    -6.35..6.35: uint8, 127.5 (the ratio -1 is 0.8 % off -256/254)."""
    full_range_ratio = -levels / (levels - 2.0) if levels in (16, 256) else -1.0
    zero_point = signed = unsigned = False
    normal = False
    for low, high in zip(lows, highs):
        if abs(low) < _ZERO and abs(high) < _ZERO:
            continue
        normal = True
        if math.copysign(1, low) != math.copysign(1, high) and abs(low) >= _ZERO:
            signed = True
            ratio = low / high if high != 0 else 0.0
            if high == 0 or abs((ratio - full_range_ratio) / min(ratio, full_range_ratio)) > 0.002:
                zero_point = True
        else:
            unsigned = True
            zero_point = zero_point or abs(low) >= _ZERO
    if not normal:
        signed = any(low < 0 for low in lows)
        unsigned = not signed
    if not zero_point and signed != unsigned and not (signed and uint8_only):
        return ("int8" if signed else "uint8"), tuple(0.0 for _ in lows)
    return "uint8", tuple(-low * (levels - 1) / (high - low) if high != low else 0.0 for low, high in zip(lows, highs))


class _Budget:
    """How many more layers a walk may look at (``_MAX_STEPS`` in all): a walk back through Concats
    branches, and a Concat chain of 64 layers must not cost 2**64 steps."""

    def __init__(self) -> None:
        self.left = _MAX_STEPS

    def take(self) -> bool:
        """Use one step; False when none is left."""
        self.left -= 1
        return self.left >= 0


def _integers(view: GraphView, edge: Edge | None, budget: _Budget) -> Integers | None:
    """The integers behind ``edge`` as OpenVINO CPU's LPT sees them, or None (float, or unknown)."""
    layer = view.doc.layer(edge.from_layer) if edge is not None else None
    if layer is None or not budget.take():
        return None
    if layer.type == "Multiply":
        return _dequantized(view, layer)
    if layer.type == "FakeQuantize":
        return _fake_quantized(view, layer)
    if layer.type not in PASS_THROUGH or not layer.inputs:
        return None
    if layer.type == "Interpolate" and layer.data.get("mode", "").strip().lower() != "nearest":
        return None
    if layer.type == "MaxPool" and layer.outputs and edge.from_port != layer.outputs[0].id:  # type: ignore[union-attr]
        return None  # MaxPool-8/14 indices
    if layer.type != "Concat":
        return _integers(view, view.edge_into(layer, 0), budget)
    found = [_integers(view, view.edge_into(layer, index), budget) for index in range(len(layer.inputs))]
    if any(item is None for item in found) or len({item.dtype for item in found if item is not None}) != 1:
        return None
    first = found[0]
    assert first is not None
    zero_points = tuple(z for item in found if item is not None for z in item.zero_points)
    per_channel = len(set(zero_points)) > 1 or any(item.per_channel for item in found if item is not None)
    return Integers(first.dtype, zero_points, first.source, first.convolution, per_channel)


def _dequantized(view: GraphView, multiply: Layer) -> Integers | None:
    """``Convert(u8/i8 -> float) [-> Subtract zp] -> Multiply scale``: its integers, or None."""
    if len(multiply.inputs) != 2:
        return None
    constant = [view.constant(view.edge_into(multiply, index)) is not None for index in (0, 1)]
    if constant.count(True) != 1:
        return None
    data = view.source(multiply, constant.index(False))
    scales = view.numbers(view.edge_into(multiply, constant.index(True)))
    zero_points: tuple[float, ...] | None = (0.0,)
    if data is not None and data.type == "Subtract" and len(data.inputs) == 2:
        zero_points = view.numbers(view.edge_into(data, 1))
        data = view.source(data, 0)
    if zero_points is None or scales is None or data is None or data.type != "Convert" or not data.inputs:
        return None
    dtype = dtypes.from_ir_precision(data.inputs[0].precision)
    quantize = view.source(data, 0)
    if dtype not in ("uint8", "int8") or quantize is None:
        return None
    fake_quantize = view.source(quantize, 0) if quantize.type == "Convert" else None
    if fake_quantize is not None and fake_quantize.type != "FakeQuantize":
        fake_quantize = None
    per_channel = len(set(zero_points)) > 1 or len(set(scales)) > 1
    ranges = _ranges(view, fake_quantize, 1) if fake_quantize is not None else None
    if dtype == "int8" and fake_quantize is not None:
        convolution = _uint8_convolution(view, multiply)
        if convolution is not None:
            return Integers("uint8", tuple(z + 128 for z in zero_points), quantize, convolution, per_channel, ranges)
    return Integers(dtype, zero_points, quantize, None, per_channel, ranges)


def _fake_quantized(view: GraphView, layer: Layer) -> Integers | None:
    """A FakeQuantize's integers as LPT decomposes it (``lpt_zero_points``), or None."""
    levels = ir_int(layer.data.get("levels", ""))
    output = _ranges(view, layer, 3)
    if levels not in LPT_LEVELS or output is None:
        return None
    lows, highs = output
    per_channel = len(set(zip(lows, highs))) > 1
    dtype, zero_points = lpt_zero_points(levels, lows, highs)
    convolution = _uint8_convolution(view, layer) if dtype == "int8" else None
    if convolution is not None:
        dtype, zero_points = lpt_zero_points(levels, lows, highs, uint8_only=True)
    return Integers(dtype, zero_points, layer, convolution, per_channel, _ranges(view, layer, 1))


def _ranges(view: GraphView, fake_quantize: Layer, first: int) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """A FakeQuantize's input range (``first`` 1) or output range (3): (lows, highs) of one length,
    a single value repeated to the other's; None if unreadable, not finite or of lengths that differ."""
    lows = view.numbers(view.edge_into(fake_quantize, first))
    highs = view.numbers(view.edge_into(fake_quantize, first + 1))
    if lows is None or highs is None or not all(map(math.isfinite, lows + highs)):
        return None
    if len(lows) != len(highs):
        if 1 not in (len(lows), len(highs)):
            return None
        lows, highs = (lows * len(highs), highs) if len(lows) == 1 else (lows, highs * len(lows))
    return lows, highs


def _uint8_convolution(view: GraphView, start: Layer) -> Layer | None:
    """A Convolution or 4-D GroupConvolution that reads ``start``'s output through
    precision-preserving layers (which on processors without AMX or AVX2-VNNI-2 makes LPT quantize
    it to uint8), or None; the nearest ``_MAX_STEPS`` readers are looked at."""
    seen = {start.id}
    frontier = [start]
    budget = _Budget()
    while frontier:
        nxt = []
        for layer in frontier:
            for edge in view.readers(layer):
                reader = view.doc.layer(edge.to_layer)
                if reader is None or reader.id in seen:
                    continue
                if not budget.take():
                    return None
                seen.add(reader.id)
                first_port = reader.inputs[0].id if reader.inputs else None
                if reader.type == "Convolution" and edge.to_port == first_port:
                    return reader
                if reader.type == "GroupConvolution" and edge.to_port == first_port and len(reader.inputs[0].dims) == 4:
                    return reader
                if reader.type in PRECISION_PRESERVING:
                    nxt.append(reader)
        frontier = nxt
    return None


def _fused_pads(view: GraphView, pad: Layer, pool: Layer) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The spatial (begin, end) pads of a zero Pad that OpenVINO's PadFusion merges into the
    AvgPool-1 ``pool`` it alone feeds (constant mode, value 0, no batch or channel pads, none
    negative), or None."""
    if pad.data.get("pad_mode", "").strip().lower() != "constant" or len(pad.inputs) < 3 or len(view.readers(pad)) != 1:
        return None
    value = view.numbers(view.edge_into(pad, 3)) if len(pad.inputs) > 3 else (0.0,)
    begin, end = view.constants.ints(view.edge_into(pad, 1)), view.constants.ints(view.edge_into(pad, 2))
    rank = len(pool.inputs[0].dims)
    if value is None or value[:1] != (0.0,) or begin is None or end is None or len(begin) != rank or len(end) != rank:
        return None
    if begin[:2] != (0, 0) or end[:2] != (0, 0) or min(begin + end) < 0:
        return None
    return begin[2:], end[2:]


def _static(text: str) -> int | None:
    bound = dim_bounds(text)
    return bound[0] if bound is not None and bound[0] == bound[1] else None


def _number(value: float) -> str:
    """128.0 -> "128", 71.111 -> "71.1", 127.5 -> "127.5"."""
    return str(int(value)) if value == int(value) else f"{value:.3g}"
