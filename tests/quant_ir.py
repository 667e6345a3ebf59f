"""Hand-written quantized IR graphs for the OVP501 tests: a tiny IR writer (layers, edges, a .bin of
constants) and the pieces quantized models are made of (FakeQuantize, the dequantization ONNX
QDQ models become, AvgPool of every version, Pad), plus their run on OpenVINO CPU."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from ir_fixtures import dims_xml

from ovpool import shape
from ovpool.ir.adapter import read_layer, template_for

_STRUCT = {
    "f32": ("f", "FP32"),
    "f16": ("e", "FP16"),
    "i64": ("q", "I64"),
    "i32": ("i", "I32"),
    "u8": ("B", "U8"),
    "i8": ("b", "I8"),
}


class Out(NamedTuple):
    """An output port: layer id, port id, dims, precision."""

    layer: str
    port: str
    dims: tuple
    precision: str


class Graph:
    """An IR v11 document built layer by layer; ``write`` saves ``model.xml`` and ``model.bin``."""

    def __init__(self) -> None:
        self.layers: list[str] = []
        self.edges: list[str] = []
        self.bin = bytearray()
        self.names: dict[str, str] = {}

    def _add(self, layer_type, version, inputs, outputs, data=None, name=None) -> list[Out]:
        lid = str(len(self.layers))
        name = name or f"{layer_type.lower()}{lid}"
        attrs = "".join(f' {k}="{v}"' for k, v in (data or {}).items())
        ins = "".join(f'<port id="{i}" precision="{o.precision}">{dims_xml(o.dims)}</port>' for i, o in enumerate(inputs))
        outs = [Out(lid, str(len(inputs) + j), tuple(d), p) for j, (d, p) in enumerate(outputs)]
        out_xml = "".join(f'<port id="{o.port}" precision="{o.precision}">{dims_xml(o.dims)}</port>' for o in outs)
        self.layers.append(
            f'<layer id="{lid}" name="{name}" type="{layer_type}" version="{version}"><data{attrs}/>'
            + (f"<input>{ins}</input>" if inputs else "")
            + (f"<output>{out_xml}</output>" if outs else "")
            + "</layer>"
        )
        for i, o in enumerate(inputs):
            self.edges.append(f'<edge from-layer="{o.layer}" from-port="{o.port}" to-layer="{lid}" to-port="{i}"/>')
        self.names[name] = lid
        return outs

    def parameter(self, dims, element_type="f32", name="x") -> Out:
        return self._add(
            "Parameter",
            "opset1",
            [],
            [(dims, _STRUCT[element_type][1])],
            {"shape": ",".join(map(str, dims)), "element_type": element_type},
            name,
        )[0]

    def const(self, values, element_type="f32", dims=None) -> Out:
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        dims = tuple(dims) if dims is not None else (() if len(values) == 1 else (len(values),))
        code, precision = _STRUCT[element_type]
        offset = len(self.bin)
        self.bin += struct.pack(f"<{len(values)}{code}", *values)
        data = {"element_type": element_type, "shape": ",".join(map(str, dims)), "offset": offset, "size": len(self.bin) - offset}
        return self._add("Const", "opset1", [], [(dims, precision)], data)[0]

    def op(self, layer_type, inputs, data=None, version="opset1", dims=None, precision=None, name=None, outputs=1) -> Out:
        dims = inputs[0].dims if dims is None else tuple(dims)
        precision = precision or inputs[0].precision
        return self._add(layer_type, version, inputs, [(dims, precision)] * outputs, data, name)[0]

    def result(self, out: Out) -> None:
        self._add("Result", "opset1", [out], [], None, f"result{len(self.layers)}")

    def write(self, folder: Path, name="model") -> Path:
        text = '<?xml version="1.0"?>\n<net name="q" version="11">\n<layers>\n' + "\n".join(self.layers)
        text += "\n</layers>\n<edges>\n" + "\n".join(self.edges) + "\n</edges>\n</net>\n"
        path = folder / f"{name}.xml"
        path.write_text(text)
        path.with_suffix(".bin").write_bytes(bytes(self.bin))
        return path


def channels(values, x: Out):
    """Per-channel constant dims for ``x`` (N, C, 1, ...), or scalar dims for one value."""
    return (1, len(values)) + (1,) * (len(x.dims) - 2) if isinstance(values, (list, tuple)) else ()


def fake_quantize(g: Graph, x: Out, input_low, input_high, output_low, output_high, levels=256, name="fq") -> Out:
    ranges = [g.const(v, dims=channels(v, x)) for v in (input_low, input_high, output_low, output_high)]
    return g.op("FakeQuantize", [x, *ranges], {"levels": levels, "auto_broadcast": "numpy"}, name=name)


INT_RANGE = {"u8": (0, 255), "i8": (-128, 127)}


def quantize_dequantize(g: Graph, x: Out, element_type="u8", zero_point=128, scale=0.05, subtract=None, name="q") -> Out:
    """What OpenVINO's ONNX frontend makes of QuantizeLinear -> DequantizeLinear: a FakeQuantize to
    the integer range, Convert to the integer type (``name``) and back, Subtract the zero point (a
    Const of the integer type, converted; left out for zero points 0 unless ``subtract``), Multiply
    by the scale. A list of zero points or scales is per channel."""
    lo, hi = INT_RANGE[element_type]
    per_channel = [v for v in (zero_point, scale) if isinstance(v, (list, tuple))]
    count = len(per_channel[0]) if per_channel else 1
    zps = zero_point if isinstance(zero_point, (list, tuple)) else [zero_point] * count
    scales = scale if isinstance(scale, (list, tuple)) else [scale] * count
    lows = [(lo - z) * s for z, s in zip(zps, scales)]
    highs = [(hi - z) * s for z, s in zip(zps, scales)]
    shaped = (lambda v: v) if per_channel else (lambda v: v[0])
    q = fake_quantize(g, x, shaped(lows), shaped(highs), float(lo), float(hi), name=f"fq_{name}")
    q = g.op("Convert", [q], {"destination_type": element_type}, precision=_STRUCT[element_type][1], name=name)
    y = g.op("Convert", [q], {"destination_type": "f32"}, precision="FP32")
    if subtract or (subtract is None and any(zps)):
        zc = g.op(
            "Convert", [g.const(zero_point, element_type, channels(zero_point, x))], {"destination_type": "f32"}, precision="FP32"
        )
        y = g.op("Subtract", [y, zc], {"auto_broadcast": "numpy"})
    return g.op("Multiply", [y, g.const(scale, dims=channels(scale, x))], {"auto_broadcast": "numpy"}, name=f"dq_{name}")


def avg_pool(
    g: Graph,
    x: Out,
    kernel,
    strides=None,
    pads_begin=None,
    pads_end=None,
    exclude_pad=False,
    rounding="floor",
    auto_pad="explicit",
    version="opset1",
    name="pool",
    dims=None,
) -> Out:
    """An AvgPool layer; its output dims from the shape engine unless ``dims`` gives them."""
    rank = len(kernel)
    data = {
        "kernel": ",".join(map(str, kernel)),
        "strides": ",".join(map(str, strides or [1] * rank)),
        "pads_begin": ",".join(map(str, pads_begin or [0] * rank)),
        "pads_end": ",".join(map(str, pads_end or [0] * rank)),
        **({"dilations": ",".join(["1"] * rank)} if version == "opset16" else {}),
        "exclude-pad": "true" if exclude_pad else "false",
        "rounding_type": rounding,
        "auto_pad": auto_pad,
    }
    if dims is None:
        issues, spec = read_layer(template_for("AvgPool", version), data, len(x.dims))
        assert not issues, issues
        dims = shape.output_shape(spec, x.dims)
    return g.op("AvgPool", [x], data, version, dims=dims, name=name)


def pad(g: Graph, x: Out, pads_begin, pads_end, value=0.0, mode="constant", version="opset12", name="pad") -> Out:
    dims = tuple(d + b + e for d, b, e in zip(x.dims, pads_begin, pads_end))
    inputs = [x, g.const(list(pads_begin), "i64"), g.const(list(pads_end), "i64")]
    if value is not None:
        inputs.append(g.const(value))
    return g.op("Pad", inputs, {"pad_mode": mode}, version, dims=dims, name=name)


def cpu_output(path: Path, x):
    """The first output of the IR at ``path`` on OpenVINO CPU (f32 inference precision), float64."""
    import numpy as np
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return np.asarray(compiled(x)[compiled.output(0)], np.float64)
