"""Quantized IRs on the numpy executor: FakeQuantize-1, 4-bit and 8-bit-float weights and Convert,
integer Convolution, and the whole IRs OpenVINO's ONNX frontend writes for quantized ONNX models.

Oracles, none of them ovpool:

* OpenVINO's reference implementation of each layer (``Node.evaluate``, the code OpenVINO folds
  constants with), compared exactly;
* the specification's FakeQuantize formula computed here element by element in float32;
* the CPU plugin at ``INFERENCE_PRECISION_HINT=f32`` (a graph with FakeQuantize runs in low
  precision whatever the hint), and onnxruntime on the quantized ONNX model.

Quantized values are compared in quantization steps (the difference divided by the step of the
FakeQuantize that made them, ``(output_high - output_low) / (levels - 1)``), not by a float
tolerance. The CPU plugin computes FakeQuantize as ``round(x * scale + shift) * scale' + shift'``
with scales and shifts precomputed in float32, so it lands one step from the specification's
arithmetic where that arithmetic is within float32 rounding of a tie, and nowhere else.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ovpool.engine.ir_executor import IrGraph
from ovpool.errors import ModelError

ov = pytest.importorskip("openvino")
ml_dtypes = pytest.importorskip("ml_dtypes")
from openvino import op, opset1  # noqa: E402

pytestmark = pytest.mark.openvino
OV_EXAMPLES = max(10, settings.default.max_examples // 3)
F32 = np.float32


def _save(outputs: Sequence, params: Sequence, folder: str) -> Path:
    xml = Path(folder) / "m.xml"
    ov.save_model(ov.Model(list(outputs), list(params)), str(xml), compress_to_fp16=False)
    return xml


def _numpy(xml: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return next(iter(IrGraph.read(xml).run(feeds).values()))


def _cpu(xml: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    compiled = ov.Core().compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return np.asarray(compiled(feeds)[compiled.outputs[0]])


def _reference(node, inputs: Sequence[np.ndarray], out_type, out_shape: Sequence[int]) -> np.ndarray:
    """OpenVINO's reference implementation of ``node`` on ``inputs`` (``Node.evaluate``)."""
    out = [ov.Tensor(out_type, ov.Shape(list(out_shape)))]
    assert node.evaluate(out, [ov.Tensor(np.ascontiguousarray(a)) for a in inputs])
    return out[0].data.copy()


# ---------------------------------------------------------------------------------------------
# FakeQuantize-1


def spec_fake_quantize(x: np.ndarray, ranges: Sequence[np.ndarray], levels: int) -> np.ndarray:
    """The specification's formula, element by element, each operation rounded to float32."""
    lo, hi, o_lo, o_hi = (np.broadcast_to(np.asarray(r, F32), x.shape) for r in ranges)
    out = np.empty(x.shape, F32)
    steps = F32(levels - 1)
    for i in np.ndindex(x.shape):
        v, a, b, c, d = F32(x[i]), lo[i], hi[i], o_lo[i], o_hi[i]
        if v <= min(a, b):
            out[i] = c
        elif v > max(a, b):
            out[i] = d
        else:
            out[i] = F32(F32(F32(np.rint(F32(F32(F32(v - a) / F32(b - a)) * steps)) / steps) * F32(d - c)) + c)
    return out


def _planted(rng: np.random.Generator, shape: tuple[int, ...], low: np.ndarray, high: np.ndarray, levels: int) -> np.ndarray:
    """Data over the input range and beyond it, half of it at (the float32 nearest to) the
    midpoints between two levels, where rounding is decided by the last bits."""
    lo, hi = (np.broadcast_to(np.asarray(r, np.float64), shape) for r in (low, high))
    width = np.abs(hi - lo) + 0.5
    x = rng.uniform(np.minimum(lo, hi) - width / 4, np.maximum(lo, hi) + width / 4)
    ties = lo + (rng.integers(0, max(levels - 1, 1), shape) + 0.5) * (hi - lo) / (levels - 1)
    return np.where(rng.random(shape) < 0.5, ties, x).astype(F32)


RANGE_SHAPES = {
    "tensor": lambda shape: (),
    "ones": lambda shape: (1,) * len(shape),
    "channel": lambda shape: (1, shape[1]) + (1,) * (len(shape) - 2),
    "trailing": lambda shape: shape[-1:],
    "full": lambda shape: shape,
}


@st.composite
def fake_quantize_cases(draw):
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    levels = draw(st.sampled_from([2, 3, 16, 255, 256, 65536]) | st.integers(2, 300))
    kinds = draw(st.lists(st.sampled_from(sorted(RANGE_SHAPES)), min_size=4, max_size=4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    shapes = [RANGE_SHAPES[k](shape) for k in kinds]
    low = rng.uniform(-3, 1, shapes[0]).astype(F32)
    order = draw(st.sampled_from(["increasing", "equal", "decreasing"]))
    width = rng.uniform(0.01, 6, shapes[1]).astype(F32)
    high = low.copy() if order == "equal" else low + width if order == "increasing" else low - width
    out_low = rng.choice([F32(0), F32(-128), F32(rng.uniform(-5, 5))], shapes[2]).astype(F32)
    out_high = (out_low.reshape(-1)[0] + rng.choice([F32(levels - 1), F32(rng.uniform(-5, 5))], shapes[3])).astype(F32)
    x = _planted(rng, shape, low, np.asarray(high, F32), levels)
    return x, (low, np.asarray(high, F32), out_low, out_high), levels


def _fake_quantize_ir(folder: str, x: np.ndarray, ranges: Sequence[np.ndarray], levels: int, mode: str = "numpy"):
    param = opset1.parameter(list(x.shape), ov.Type(x.dtype), name="x")
    node = opset1.fake_quantize(param, *(op.Constant(ov.Tensor(np.asarray(r))) for r in ranges), levels, auto_broadcast=mode)
    return _save([node], [param], folder), node


@settings(max_examples=OV_EXAMPLES, deadline=None)
@given(fake_quantize_cases())
def test_fake_quantize_is_the_specification_and_openvinos_reference(case):
    """Exactly the formula computed element by element, and exactly OpenVINO's reference
    implementation, on every levels count, range shape and order (binarization's equal ranges,
    decreasing ranges) and on data at the ties."""
    x, ranges, levels = case
    with tempfile.TemporaryDirectory() as folder:
        xml, node = _fake_quantize_ir(folder, x, ranges, levels)
        got = _numpy(xml, {"x": x})
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_array_equal(got, spec_fake_quantize(x, ranges, levels))
    np.testing.assert_array_equal(got, _reference(node, [x, *ranges], ov.Type.f32, x.shape))


def test_fake_quantize_of_half_precision_data_computes_in_float32():
    """f16 data and ranges: the formula in float32, rounded to f16 once at the end, as the
    reference implementation (f16 arithmetic step by step differs on a quarter of these values)."""
    rng = np.random.default_rng(4)
    ranges = [np.array(v, np.float16) for v in (-1.3, 2.1, -128, 127)]
    x = _planted(rng, (2, 3, 8, 8), ranges[0], ranges[1], 256).astype(np.float16)
    with tempfile.TemporaryDirectory() as folder:
        xml, node = _fake_quantize_ir(folder, x, ranges, 256)
        got = _numpy(xml, {"x": x})
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, spec_fake_quantize(x, ranges, 256).astype(np.float16))
    np.testing.assert_array_equal(got, _reference(node, [x, *ranges], ov.Type.f16, x.shape))


def _steps(a: np.ndarray, b: np.ndarray, step: np.ndarray) -> np.ndarray:
    """``|a - b|`` in quantization steps."""
    return np.abs(a.astype(np.float64) - b.astype(np.float64)) / np.abs(step.astype(np.float64))


@pytest.mark.parametrize("levels", [256, 255, 16, 2])
@pytest.mark.parametrize("per_channel", [False, True])
def test_fake_quantize_on_the_cpu_plugin_is_one_step_off_only_at_ties(levels, per_channel):
    """The CPU plugin at f32 against the numpy result: never more than one step apart, and one
    step only where the specification's ``(x - input_low) / (input_high - input_low) * (levels - 1)``
    lies within 1e-4 of a half (float32 rounding decides it, and the plugin rounds other operations)."""
    rng = np.random.default_rng(levels + per_channel)
    shape = (2, 4, 6, 6)
    rshape = (1, 4, 1, 1) if per_channel else ()
    low = rng.uniform(-2, 0, rshape).astype(F32)
    high = (low + rng.uniform(0.5, 3, rshape)).astype(F32)
    out_low, out_high = np.full(rshape, -128, F32), np.full(rshape, 127, F32)
    x = _planted(rng, shape, low, high, levels)
    with tempfile.TemporaryDirectory() as folder:
        xml, _ = _fake_quantize_ir(folder, x, (low, high, out_low, out_high), levels)
        got, cpu = _numpy(xml, {"x": x}), _cpu(xml, {"x": x})
    step = np.broadcast_to((out_high - out_low) / F32(levels - 1), shape)
    off = np.rint(_steps(got, cpu, step))
    assert off.max() <= 1
    position = (x.astype(np.float64) - low) / (high.astype(np.float64) - low) * (levels - 1)
    near_tie = np.abs(position - np.floor(position) - 0.5) < 1e-4
    assert not np.any(off[~near_tie]), "one step off away from a tie"
    if levels > 2:
        assert off.sum() > 0  # the planted ties do land on the other side now and then


def test_fake_quantize_pdpd_broadcast_follows_the_specification():
    """``auto_broadcast="pdpd"``: ranges of shape (2, 3) line up with the data's leading axes.
    OpenVINO's reference implementation ignores the mode (it broadcasts numpy-style, reading
    element 0 everywhere here) and the CPU plugin refuses the layer, so the formula is the oracle."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, (2, 3, 4, 5)).astype(F32)
    low = rng.uniform(-1.5, -0.5, (2, 3)).astype(F32)
    ranges = (low, low + 2, np.full((2, 3), -1, F32), np.full((2, 3), 3, F32))
    with tempfile.TemporaryDirectory() as folder:
        xml, _ = _fake_quantize_ir(folder, x, ranges, 11, mode="pdpd")
        got = _numpy(xml, {"x": x})
    np.testing.assert_array_equal(got, spec_fake_quantize(x, [r.reshape(2, 3, 1, 1) for r in ranges], 11))


def _fake_quantize_text(levels: str, low_shape: Sequence[int] = ()) -> str:
    dims = "".join(f"<dim>{d}</dim>" for d in low_shape)
    return f"""<?xml version="1.0"?>
<net name="fq" version="11">
  <layers>
    <layer id="0" name="x" type="Parameter" version="opset1">
      <data shape="2,3" element_type="f32"/>
      <output><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></output>
    </layer>
    <layer id="1" name="low" type="Const" version="opset1">
      <data element_type="f32" shape="{",".join(map(str, low_shape))}" offset="0" size="{4 * int(np.prod(low_shape))}"/>
      <output><port id="0" precision="FP32">{dims}</port></output>
    </layer>
    <layer id="2" name="high" type="Const" version="opset1">
      <data element_type="f32" shape="" offset="0" size="4"/>
      <output><port id="0" precision="FP32"/></output>
    </layer>
    <layer id="3" name="fq" type="FakeQuantize" version="opset1">
      <data levels="{levels}" auto_broadcast="numpy"/>
      <input>
        <port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port>
        <port id="1" precision="FP32">{dims}</port>
        <port id="2" precision="FP32"/><port id="3" precision="FP32"/><port id="4" precision="FP32"/>
      </input>
      <output><port id="5" precision="FP32"><dim>2</dim><dim>3</dim></port></output>
    </layer>
    <layer id="4" name="out" type="Result" version="opset1">
      <input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="3" to-port="0"/>
    <edge from-layer="1" from-port="0" to-layer="3" to-port="1"/>
    <edge from-layer="2" from-port="0" to-layer="3" to-port="2"/>
    <edge from-layer="2" from-port="0" to-layer="3" to-port="3"/>
    <edge from-layer="2" from-port="0" to-layer="3" to-port="4"/>
    <edge from-layer="3" from-port="5" to-layer="4" to-port="0"/>
  </edges>
</net>
"""


@pytest.mark.parametrize(
    "levels, low_shape, message",
    [
        ("1", (), r"layer 'fq' \(FakeQuantize-opset1, line \d+\): attribute 'levels': 1 is not between 2 and 2\*\*64 - 1"),
        ("many", (), r"layer 'fq' \(FakeQuantize-opset1, line \d+\): attribute 'levels': 'many' is not an integer"),
        (
            "256",
            (4,),
            r"layer 'fq' \(FakeQuantize-opset1, line \d+\): input_low of shape \[4\] does not broadcast to the data's shape \[2, 3\]",
        ),
    ],
)
def test_bad_fake_quantize_is_one_error_naming_the_file_layer_and_attribute(tmp_path, levels, low_shape, message):
    xml = tmp_path / "fq.xml"
    xml.write_text(_fake_quantize_text(levels, low_shape))
    (tmp_path / "fq.bin").write_bytes(np.zeros(max(1, int(np.prod(low_shape))), F32).tobytes())
    with pytest.raises(ModelError, match=f"fq.xml: {message}"):
        IrGraph.read(xml).run({"x": np.zeros((2, 3), F32)})


# ---------------------------------------------------------------------------------------------
# 4-bit and 8-bit-float weights, Convert, integer Convolution


@pytest.mark.parametrize("element", ["u4", "i4"])
@pytest.mark.parametrize("count", [1, 6, 7])
def test_4_bit_weights_unpack_low_nibble_first(element, count):
    """A u4/i4 Const is read two to a byte, the first element in the low nibble (an odd count
    leaves the last high nibble unused), and Convert to f32 gives the values; the CPU plugin agrees."""
    rng = np.random.default_rng(count)
    kind = getattr(ov.Type, element)
    values = rng.integers(0, 16, count) if element == "u4" else rng.integers(-8, 8, count)
    tensor = ov.Tensor(kind, ov.Shape([count]))
    nibbles = (values & 0x0F).astype(np.uint8)
    packed = np.zeros(tensor.data.size, np.uint8)
    packed[: (count + 1) // 2] |= nibbles[0::2]
    packed[: count // 2] |= nibbles[1::2] << 4
    tensor.data[:] = packed
    param = opset1.parameter([count], ov.Type.f32, name="x")
    node = opset1.add(opset1.convert(op.Constant(tensor), ov.Type.f32), param)
    feeds = {"x": np.zeros(count, F32)}
    with tempfile.TemporaryDirectory() as folder:
        xml = _save([node], [param], folder)
        got = _numpy(xml, feeds)
        np.testing.assert_array_equal(got, values.astype(F32))
        np.testing.assert_array_equal(got, _cpu(xml, feeds))


@pytest.mark.parametrize("target", ["u4", "i4", "f8e4m3", "f8e5m2", "u8", "i8"])
def test_convert_to_narrow_types_truncates_wraps_or_rounds_as_the_reference(target):
    """f32 -> u4/i4 truncates toward zero and keeps the low four bits (-9.2 -> -9 -> 7 in both),
    f32 -> f8e4m3/f8e5m2 rounds to nearest even (f8e4m3 has no infinity: 500 -> NaN), and back to
    f32: equal to OpenVINO's reference Convert. (The CPU plugin keeps eight bits of a 4-bit
    activation: -9.2 gives -9 in i4, 300 gives 44.)"""
    x = np.array([1.7, -9.2, 7.5, -8.5, 300, -2.5, 15.9, 16.2, 0.1, 460, 500, 1e9, -1e-9], F32)
    kind = getattr(ov.Type, target)
    param = opset1.parameter([x.size], ov.Type.f32, name="x")
    narrow = opset1.convert(param, kind)
    with tempfile.TemporaryDirectory() as folder:
        got = _numpy(_save([opset1.convert(narrow, ov.Type.f32)], [param], folder), {"x": x})
    converted = [ov.Tensor(kind, ov.Shape([x.size]))]
    assert narrow.evaluate(converted, [ov.Tensor(x)])
    back = [ov.Tensor(ov.Type.f32, ov.Shape([x.size]))]
    assert opset1.convert(op.Constant(converted[0]), ov.Type.f32).evaluate(back, converted)
    np.testing.assert_array_equal(got, back[0].data)


def test_f8_weights_and_convert_from_them():
    """f8e4m3 and f8e5m2 Consts (one byte each) converted to f32, as the CPU plugin reads them."""
    for kind, wide in ((ov.Type.f8e4m3, ml_dtypes.float8_e4m3fn), (ov.Type.f8e5m2, ml_dtypes.float8_e5m2)):
        values = np.array([0.1, -1.25, 448, 3e-3, -57344 if kind == ov.Type.f8e5m2 else -448], F32).astype(wide)
        tensor = ov.Tensor(kind, ov.Shape([values.size]))
        tensor.data[:] = values.view(np.uint8)
        param = opset1.parameter([values.size], ov.Type.f32, name="x")
        feeds = {"x": np.zeros(values.size, F32)}
        with tempfile.TemporaryDirectory() as folder:
            xml = _save([opset1.add(opset1.convert(op.Constant(tensor), ov.Type.f32), param)], [param], folder)
            got = _numpy(xml, feeds)
            np.testing.assert_array_equal(got, values.astype(F32))
            np.testing.assert_array_equal(got, _cpu(xml, feeds))


def test_integer_convolution_is_exact():
    """ConvInteger as the ONNX frontend writes it: u8 data and weights converted to i32, zero
    points subtracted, an i32 Convolution; every sum exact, equal to the CPU plugin's."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (1, 3, 9, 9)).astype(np.uint8)
    w = rng.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8)
    param = opset1.parameter([1, 3, 9, 9], ov.Type.u8, name="x")
    data = opset1.subtract(opset1.convert(param, ov.Type.i32), op.Constant(np.array(131, np.int32)))
    weights = opset1.subtract(opset1.convert(op.Constant(ov.Tensor(w)), ov.Type.i32), op.Constant(np.array(7, np.int32)))
    conv = opset1.convolution(data, weights, [2, 2], [1, 1], [1, 0], [1, 1])
    with tempfile.TemporaryDirectory() as folder:
        xml = _save([conv], [param], folder)
        got = _numpy(xml, {"x": x})
        cpu = _cpu(xml, {"x": x})
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, cpu)
    expected = np.zeros((1, 4, 5, 4), np.int64)
    padded = np.pad(x.astype(np.int64) - 131, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for o, i, j in np.ndindex(4, 5, 4):
        expected[0, o, i, j] = np.sum(padded[0, :, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3] * (w[o].astype(np.int64) - 7))
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------------------------
# Whole IRs of quantized ONNX models (onnxruntime's quantizer, ovpool convert and ovc)


@pytest.fixture(scope="module")
def quantized(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """``{name: {"onnx": QDQ model, "ovpool": IR, "ovc": IR}}`` for the small CNN (with its
    AveragePool and with a MaxPool instead) in each 8-bit scheme of ``quantized_models.SCHEMES``,
    the opset-21 CNN with 16-bit activations and 4-bit weights, and the CNN quantized dynamically
    (ConvInteger, MatMulInteger)."""
    import os
    import subprocess
    import sys

    from quantized_models import SCHEMES, cnn, quantize_dynamic, quantize_qdq, save

    import ovpool

    folder = tmp_path_factory.mktemp("quantized")
    made: dict[str, dict[str, Path]] = {}
    sources = {"avg": save(cnn(True), folder / "avg.onnx"), "max": save(cnn(False), folder / "max.onnx")}
    sources["op21"] = save(cnn(False, opset=21), folder / "op21.onnx")
    for kind in ("avg", "max"):
        for scheme in SCHEMES:
            made[f"{kind}-{scheme}"] = {"onnx": quantize_qdq(sources[kind], folder / f"{kind}-{scheme}.onnx", scheme)}
    for scheme in ("u16-u4", "s16-s4"):
        made[f"op21-{scheme}"] = {"onnx": quantize_qdq(sources["op21"], folder / f"op21-{scheme}.onnx", scheme)}
    made["max-dynamic"] = {"onnx": quantize_dynamic(sources["max"], folder / "max-dynamic.onnx")}
    script = "import sys, openvino as ov\nfor s, t in zip(sys.argv[1::2], sys.argv[2::2]): ov.save_model(ov.convert_model(s), t, compress_to_fp16=False)"
    pairs = []
    for name, files in made.items():
        ovpool.convert(files["onnx"], output_dir=folder / "ovpool")
        files["ovpool"] = folder / "ovpool" / f"{name}.xml"
        files["ovc"] = folder / "ovc" / f"{name}.xml"
        pairs += [str(files["onnx"]), str(files["ovc"])]
    done = subprocess.run(
        [sys.executable, "-c", script, *pairs], capture_output=True, text=True, env={**os.environ, "CI": "true"}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return made


def _onnxruntime(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _output_step(path: Path) -> float:
    """The scale of the QDQ model's output (its last DequantizeLinear's)."""
    import onnx

    model = onnx.load(str(path))
    scales = {t.name: t for t in model.graph.initializer}
    last = [n for n in model.graph.node if n.op_type == "DequantizeLinear"][-1]
    return float(onnx.numpy_helper.to_array(scales[last.input[1]]))


CONVERTERS = ["ovpool", "ovc"]
EIGHT_BIT = [f"{kind}-{scheme}" for kind in ("avg", "max") for scheme in ("u8", "s8-per-channel", "u8-s8-per-channel")]


@pytest.mark.parametrize("converter", CONVERTERS)
@pytest.mark.parametrize("name", EIGHT_BIT)
def test_int8_ir_on_numpy_against_the_cpu_plugin_and_onnxruntime(quantized, name, converter):
    """The INT8 IR of a QDQ CNN on numpy, on 12 inputs, in steps of the output's scale: with a
    MaxPool nothing lands at a tie and numpy, the CPU plugin and onnxruntime agree exactly; with
    the AveragePool a 2x2 average of integers lands at ties, which each of the three rounds its own
    way (numpy by the FakeQuantize specification, onnxruntime by QuantizeLinear's divide and round
    half to even, the plugin on the integers), and one step there reaches two at the output."""
    from quantized_models import sample

    files = quantized[name]
    graph = IrGraph.read(files[converter])
    step = _output_step(files["onnx"])
    allowed = 0 if name.startswith("max") else 2
    worst = {"cpu": 0.0, "onnxruntime": 0.0}
    for seed in range(12):
        feeds = {"x": sample(seed)}
        got = graph.run(feeds)["y"]
        worst["cpu"] = max(worst["cpu"], float(_steps(got, _cpu(files[converter], feeds), np.array(step)).max()))
        worst["onnxruntime"] = max(
            worst["onnxruntime"], float(_steps(got, _onnxruntime(files["onnx"], feeds), np.array(step)).max())
        )
    assert round(worst["cpu"]) <= allowed and round(worst["onnxruntime"]) <= allowed, worst


@pytest.mark.parametrize("converter", CONVERTERS)
@pytest.mark.parametrize("name", ["op21-u16-u4", "op21-s16-s4"])
def test_16_bit_activations_and_4_bit_weights_on_numpy_match_onnxruntime(quantized, name, converter):
    """opset-21 QDQ with 16-bit activations (FakeQuantize of 65536 levels) and 4-bit weights (u4/i4
    Consts): numpy within one step of onnxruntime. (The CPU plugin removes 16-bit FakeQuantize
    layers, "QDQ stripping", and with them the clipping of a Relu the quantizer folded into the
    range: it is far from both, so it is not the oracle here.)"""
    from quantized_models import sample

    files = quantized[name]
    graph = IrGraph.read(files[converter])
    step = _output_step(files["onnx"])
    for seed in range(6):
        feeds = {"x": sample(seed)}
        off = _steps(graph.run(feeds)["y"], _onnxruntime(files["onnx"], feeds), np.array(step))
        assert np.rint(off).max() <= 1  # whole steps: float rounding of a dequantized value is ~0.002 of a 16-bit step


@pytest.mark.parametrize("converter", CONVERTERS)
def test_dynamically_quantized_ir_on_numpy(quantized, converter):
    """quantize_dynamic's ConvInteger, MatMulInteger and DynamicQuantizeLinear, as the ONNX
    frontend writes them (integer Convolution and MatMul, Round, Clamp, ReduceMin/Max): numpy
    equals the CPU plugin and onnxruntime within float rounding (1e-5 of the output's scale)."""
    from quantized_models import sample

    files = quantized["max-dynamic"]
    graph = IrGraph.read(files[converter])
    for seed in range(4):
        feeds = {"x": sample(seed)}
        got = graph.run(feeds)["y"]
        for want in (_cpu(files[converter], feeds), _onnxruntime(files["onnx"], feeds)):
            assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


# ---------------------------------------------------------------------------------------------
# Real models of the suite, quantized by onnxruntime (tests/fetch_real_models.py)

REAL = [
    ("orientation", "u8"),
    ("orientation", "s8-per-channel"),
    ("yolov8n-nudenet", "u8"),
    ("yolov8n-nudenet", "s8-per-channel"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, scheme", REAL, ids=[f"{n}-{s}" for n, s in REAL])
def test_real_quantized_model_diverges_first_by_one_step(tmp_path, name, scheme):
    """A real model quantized by ``quantize_static`` (QDQ, calibrated on four seeded inputs of its
    own kind), converted by ``ovpool convert``: its IR runs on numpy, and against the CPU plugin at
    f32, layer by layer (``compare --per-layer``), the first tensor beyond tolerance is a quantized
    one a single step off: the two part ways only where a value lands at a tie, never by a layer
    computed otherwise. (From there the step grows through the model: see docs/semantics.md.)"""
    import onnxruntime.quantization as q
    from ops.real_models import MODELS

    import ovpool
    from ovpool.check.compare import compare, open_sides
    from ovpool.execution import open_model

    (model,) = [m for m in MODELS if m.name == name]
    if not model.path.is_file():
        pytest.skip(f"{model.path} absent: run python tests/fetch_real_models.py")
    activation, weight, per_channel = {"u8": ("QUInt8", "QUInt8", False), "s8-per-channel": ("QInt8", "QInt8", True)}[scheme]
    feeds = model.feeds()

    class Reader(q.CalibrationDataReader):
        def __init__(self) -> None:
            noise = [np.random.default_rng(seed).normal(0, 0.05, feeds[k].shape) for seed, k in enumerate(feeds)]
            self.data = iter([{k: (v + i * n).astype(v.dtype) for (k, v), n in zip(feeds.items(), noise)} for i in range(4)])

        def get_next(self):
            return next(self.data, None)

    qdq = tmp_path / f"{name}-{scheme}.onnx"
    q.quantize_static(
        str(model.path),
        str(qdq),
        Reader(),
        quant_format=q.QuantFormat.QDQ,
        activation_type=getattr(q.QuantType, activation),
        weight_type=getattr(q.QuantType, weight),
        per_channel=per_channel,
    )
    ovpool.convert(qdq, output_dir=tmp_path)
    loaded = open_model(tmp_path / f"{name}-{scheme}.xml")
    opened, reference = open_sides(loaded, "CPU", "numpy", "f32", "none", False, True)
    result = compare(loaded, opened.session, reference, feeds, per_layer=True, cache=False)
    first = result.first_beyond
    assert first is not None and first.worst is not None
    assert first.worst.steps is not None and round(first.worst.steps) == 1, first
