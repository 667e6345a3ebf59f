"""``ovpool compare``: the difference rule on hand-computed arrays, and devices that diverge for a
reason known in advance: OpenVINO CPU at bf16 (8 significant bits, a relative error near 2**-9
per rounding) against numpy or CPU at f32 must name the first layer that computes in bf16, and
CPU at f32 must stay within 1e-4 of the largest magnitude, the tolerance the executor's own
tests hold OpenVINO and onnxruntime to."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_support import EXAMPLE, fake_gpu, invoke, ir_pools, random_input, save

from ovpool.check.compare import difference

pytestmark = pytest.mark.openvino


def _has_bf16() -> bool:
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


needs_bf16 = pytest.mark.skipif(not _has_bf16(), reason="this CPU has no bf16 (OPTIMIZATION_CAPABILITIES lacks BF16)")


def test_difference_rule_on_hand_computed_arrays():
    d = difference("y", np.array([1.0, 2.5]), np.array([1.0, 2.0]))
    assert (d.max_abs, d.max_rel, d.within, d.shape) == (0.5, 0.25, False, (2,))
    # allowed: atol 1e-6 + rtol 1e-4 * 10 = 0.001001
    assert difference("y", np.array([10.0, 0.001]), np.array([10.0, 0.0])).within
    assert not difference("y", np.array([10.0, 0.0011]), np.array([10.0, 0.0])).within
    assert difference("y", np.array([1.0, 2.0]), np.array([1.0, 2.5]), rtol=0.2, atol=0.0).within
    nan = difference("y", np.array([np.nan, np.inf, 1.0]), np.array([np.nan, np.inf, 1.0]))
    assert (nan.max_abs, nan.within) == (0.0, True)
    assert math.isinf(difference("y", np.array([np.nan, 1.0]), np.array([0.5, 1.0])).max_abs)
    assert not difference("i", np.array([3, 4]), np.array([3, 5])).within  # integers must be equal
    assert difference("i", np.array([3, 5], np.int32), np.array([3, 5])).within
    shape = difference("y", np.zeros((2, 3)), np.zeros((3, 2)))
    assert not shape.within and shape.note == "shape [2, 3] on the device, [3, 2] on the reference"
    assert difference("z", np.zeros(3), np.zeros(3)).max_rel == 0.0
    scalar = difference("s", np.float32(3.0), np.float64(4.0))
    assert (scalar.shape, scalar.max_abs, scalar.max_rel) == ((), 1.0, 0.25)


def _conv_model():
    """x (1x3x16x16) -> Conv 8x3x3x3 + bias -> Relu -> MaxPool 2x2: the Conv is where bf16 rounds."""
    rng = np.random.default_rng(0)
    weights = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weights, bias],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _ir_conv(path):
    """The same network as OpenVINO IR with f32 weights."""
    import openvino as ov
    from openvino import opset1

    rng = np.random.default_rng(0)
    x = opset1.parameter([1, 3, 16, 16], ov.Type.f32, name="x")
    weights = opset1.constant(rng.standard_normal((8, 3, 3, 3)).astype(np.float32))
    conv = opset1.convolution(x, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    conv.set_friendly_name("conv")
    relu = opset1.relu(conv)
    relu.set_friendly_name("relu")
    pool = opset1.max_pool(relu, [2, 2], [0, 0], [0, 0], [2, 2])
    ov.save_model(ov.Model([pool], [x]), str(path), compress_to_fp16=False)
    return path


def _json(capsys, *args):
    code, out, err = invoke(capsys, "compare", *args, "--json", "--no-cache")
    assert "Traceback" not in err
    return code, json.loads(out) if out else None, err


def test_onnx_cpu_f32_against_numpy_is_within_tolerance_per_layer(tmp_path, capsys):
    model = save(_conv_model(), tmp_path / "conv.onnx")
    code, doc, err = _json(capsys, model, "--device", "CPU", "--precision", "f32", "--random-inputs", "--per-layer")
    assert code == 0, err
    assert (doc["device"], doc["precision"], doc["reference"], doc["within"]) == ("CPU", "f32", "numpy", True)
    assert [o["name"] for o in doc["outputs"]] == ["y"] and doc["outputs"][0]["shape"] == [1, 8, 8, 8]
    assert doc["outputs"][0]["max_rel"] <= 1e-4
    layers = doc["per_layer"]
    assert (layers["steps"], layers["compared"], layers["first_beyond"]) == (3, 3, None)
    assert [(s["index"], s["name"], s["type"]) for s in layers["layers"]] == [
        (0, "conv", "Conv"),
        (1, "relu", "Relu"),
        (2, "pool", "MaxPool"),
    ]
    # the other way round: numpy as the device, OpenVINO CPU at f32 as the reference
    code, doc, err = _json(capsys, model, "--device", "numpy", "--reference", "CPU", "--random-inputs", "--per-layer")
    assert code == 0 and (doc["device"], doc["precision"], doc["reference"]) == ("numpy", "", "CPU"), err
    assert [s["name"] for s in doc["per_layer"]["layers"]] == ["conv", "relu", "pool"]


@needs_bf16
def test_onnx_cpu_bf16_names_the_conv_with_its_inputs_and_exits_1(tmp_path, capsys):
    model = save(_conv_model(), tmp_path / "conv.onnx")
    code, out, err = invoke(capsys, "compare", model, "--device", "CPU", "--precision", "bf16", "--random-inputs", "--per-layer")
    assert code == 1, err
    assert f"{model}: CPU at bf16 against numpy, rtol 0.0001, atol 1e-06" in out
    assert "first beyond tolerance: Conv 'conv' (step 1 of 3 in execution order;" in out
    assert "model input" in out and out.rstrip().endswith("beyond tolerance")
    code, doc, _ = _json(capsys, model, "--device", "CPU", "--precision", "bf16", "--random-inputs", "--per-layer")
    first = doc["per_layer"]["first_beyond"]
    assert code == 1 and not doc["within"] and first["name"] == "conv" and first["type"] == "Conv"
    assert [(i["name"], i["max_abs"], i["note"]) for i in first["inputs"]][0] == ("x", 0.0, "model input")
    assert [i["max_abs"] for i in first["inputs"][1:]] == [None, None]  # weights and bias: constants
    (own,) = first["outputs"]
    # bf16 keeps 8 significant bits: the Conv's error is near 2**-9 of its scale, far beyond 1e-4
    assert own["name"] == "c" and 1e-4 < own["max_rel"] < 3e-2
    # without --per-layer only the outputs are compared, still beyond
    code, doc, _ = _json(capsys, model, "--device", "CPU", "--precision", "bf16", "--random-inputs")
    assert code == 1 and doc["per_layer"] is None and not doc["outputs"][0]["within"]
    # a loose enough tolerance accepts bf16
    code, doc, _ = _json(capsys, model, "--device", "CPU", "--precision", "bf16", "--random-inputs", "--rtol", "0.05")
    assert code == 0 and doc["within"]


@needs_bf16
def test_ir_against_cpu_reference_names_the_convolution_layer(tmp_path, capsys):
    xml = _ir_conv(tmp_path / "conv.xml")
    args = (xml, "--device", "CPU", "--reference", "CPU", "--random-inputs", "--per-layer")
    code, doc, err = _json(capsys, *args, "--precision", "bf16")
    assert code == 1, err
    assert doc["reference"] == "CPU" and doc["precision"] == "bf16"
    first = doc["per_layer"]["first_beyond"]
    assert (first["name"], first["type"], first["index"]) == ("conv", "Convolution", 0)
    assert [(s["name"], s["type"]) for s in doc["per_layer"]["layers"]] == [
        ("conv", "Convolution"),
        ("relu", "Relu"),
        (doc["per_layer"]["layers"][2]["name"], "MaxPool"),
    ]
    code, doc, err = _json(capsys, *args, "--precision", "f32")
    assert code == 0 and doc["within"], err


def test_pooling_ir_against_numpy_and_cpu(tmp_path, capsys):
    """A pooling-only IR: numpy runs it (outputs by the IR's tensor names), CPU traces its layers."""
    xml = ir_pools(tmp_path / "pools.xml")
    code, doc, err = _json(capsys, xml, "--device", "CPU", "--precision", "f32", "--random-inputs")
    assert code == 0 and [o["within"] for o in doc["outputs"]] == [True, True], err
    code, doc, err = _json(capsys, xml, "--device", "CPU", "--reference", "CPU", "--random-inputs", "--per-layer")
    assert code == 0, err
    assert [s["type"] for s in doc["per_layer"]["layers"]] == ["MaxPool", "AvgPool"]
    assert [len(s["outputs"]) for s in doc["per_layer"]["layers"]] == [2, 1]  # MaxPool's values and indices
    code, doc, err = _json(capsys, xml, "--device", "CPU", "--precision", "f32", "--random-inputs", "--per-layer")
    assert code == 0, err
    assert [s["type"] for s in doc["per_layer"]["layers"]] == ["MaxPool", "AvgPool"]


@needs_bf16
def test_ir_against_the_numpy_reference_per_layer_names_the_convolution_at_bf16(tmp_path, capsys):
    """The numpy executor runs the whole IR and reports every layer: at bf16 the first layer
    beyond tolerance is the Convolution."""
    xml = _ir_conv(tmp_path / "conv.xml")
    args = (xml, "--device", "CPU", "--reference", "numpy", "--random-inputs", "--per-layer")
    code, doc, err = _json(capsys, *args, "--precision", "bf16")
    assert code == 1, err
    assert doc["reference"] == "numpy"
    first = doc["per_layer"]["first_beyond"]
    assert (first["name"], first["type"]) == ("conv", "Convolution")


def test_ir_against_the_numpy_reference_per_layer_is_within_at_f32(tmp_path, capsys):
    xml = _ir_conv(tmp_path / "conv.xml")
    args = (xml, "--device", "CPU", "--reference", "numpy", "--random-inputs", "--per-layer")
    code, doc, err = _json(capsys, *args, "--precision", "f32")
    assert code == 0 and doc["within"], err
    assert doc["reference"] == "numpy" and doc["per_layer"]["first_beyond"] is None
    assert [s["type"] for s in doc["per_layer"]["layers"]][:2] == ["Convolution", "ReLU"]


def test_inputs_from_files_and_text_report(tmp_path, capsys):
    np.savez(tmp_path / "in.npz", input=random_input((1, 3, 14, 14)))
    code, out, err = invoke(capsys, "compare", EXAMPLE, "--device", "CPU", "--precision", "f32", "--inputs", tmp_path / "in.npz")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"{EXAMPLE}: CPU at f32 against numpy, rtol 0.0001, atol 1e-06"
    assert lines[1].split() == ["output", "shape", "max", "abs", "max", "rel", "within"]
    assert [line.split()[0] for line in lines[2:4]] == ["output", "pool1_indices"]
    assert lines[-1] == "within tolerance"


def test_device_fallback_is_off_unless_asked(capsys, monkeypatch):
    code, out, err = invoke(capsys, "compare", EXAMPLE, "--device", "NPU", "--random-inputs")
    assert code == 1 and out == ""
    assert "error: device 'NPU' is not present; not falling back (--fallback none). Devices available: CPU, numpy" in err
    fake_gpu(monkeypatch)
    code, doc, err = _json(capsys, EXAMPLE, "--device", "GPU", "--fallback", "cpu", "--precision", "f32", "--random-inputs")
    assert code == 0 and doc["device"] == "CPU"
    assert "warning: device 'GPU' cannot compile" in err and "running on CPU instead" in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--device", "CPU", "--reference", "GPU", "--random-inputs"], 2, "error: reference 'GPU': expected one of numpy, CPU"),
        (["--device", "CPU", "--random-inputs", "--rtol", "-1"], 2, "error: --rtol -1.0: must be a finite number >= 0"),
        (["--device", "CPU"], 2, "error: no inputs: give --inputs in.npz, -i NAME=x.npy or --random-inputs"),
        (
            ["--device", "CPU", "--random-inputs", "--fallback", "far"],
            2,
            "error: fallback 'far': expected one of none, cpu, numpy",
        ),
        (["--device", "numpy", "--precision", "bf16", "--random-inputs"], 2, "precision 'bf16' applies to OpenVINO devices"),
        (["--device", "CPU", "-i", "input=missing.npy"], 2, "missing.npy"),
        (["--random-inputs"], 2, "--device"),
    ],
)
def test_bad_invocations_are_one_line_errors(capsys, args, code, message):
    got, out, err = invoke(capsys, "compare", EXAMPLE, *args)
    assert got == code and message in err and "Traceback" not in err and out == ""


@needs_bf16
@pytest.mark.parametrize("name", ["ppocrv4-det", "yolov8n-nudenet"])
def test_real_model_bf16_names_a_layer_and_f32_is_within(name, tmp_path, capsys):
    """A real detector on its own kind of input (tests/ops/real_models.py): at bf16 the first layer
    named is a convolution; at f32 every output and every layer compared is within 1e-4."""
    from ops.real_models import MODELS

    (model,) = [m for m in MODELS if m.name == name]
    if not model.path.is_file():
        pytest.skip(f"{model.path} absent: run python tests/fetch_real_models.py")
    np.savez(tmp_path / "in.npz", **model.feeds())
    args = (model.path, "--device", "CPU", "--inputs", tmp_path / "in.npz", "--per-layer")
    code, doc, err = _json(capsys, *args, "--precision", "bf16")
    assert code == 1, err
    first = doc["per_layer"]["first_beyond"]
    assert first["type"] == "Conv" and all(i["within"] for i in first["inputs"])
    assert doc["per_layer"]["compared"] > 100
    code, doc, err = _json(capsys, *args, "--precision", "f32")
    assert code == 0 and doc["per_layer"]["first_beyond"] is None, err
    assert max(layer["outputs"][0]["max_rel"] for layer in doc["per_layer"]["layers"]) <= 1e-4


# ---------------------------------------------------------------------------------------------
# Quantized models: INT8 IRs, the runtime graph, every layer, the plot, the float source


@pytest.fixture(scope="module")
def int8(tmp_path_factory):
    """Small float CNNs (tests/quantized_models.py; with an AveragePool, and with a MaxPool in its
    place), their QDQ forms (onnxruntime, uint8) and the INT8 IRs ``ovpool convert`` writes."""
    from quantized_models import cnn, quantize_qdq, sample
    from quantized_models import save as save_model

    import ovpool

    folder = tmp_path_factory.mktemp("int8")
    files = {}
    for kind, avg in (("avg", True), ("max", False)):
        source = save_model(cnn(avg_pool=avg), folder / f"cnn_{kind}.onnx")
        qdq = quantize_qdq(source, folder / f"cnn_{kind}_u8.onnx", "u8")
        ovpool.convert(qdq, output_dir=folder)
        files.update({f"{kind} float": source, f"{kind} qdq": qdq, f"{kind} ir": folder / f"cnn_{kind}_u8.xml"})
    signed = quantize_qdq(files["max float"], folder / "cnn_max_s8.onnx", "s8-per-channel")
    ovpool.convert(signed, output_dir=folder)
    files["max s8 ir"] = folder / "cnn_max_s8.xml"
    np.savez(folder / "in.npz", x=sample(3))
    files["inputs"] = folder / "in.npz"
    return files


def test_int8_ir_per_layer_taps_only_what_the_runtime_graph_computes(int8, capsys):
    """On an INT8 IR the CPU plugin fuses FakeQuantize into the convolutions and folds the weights'
    dequantization away: those layers have no value of their own and are named, not compared. The
    tensors tapped leave the results as the untapped model gives them (the output's layer has the
    output's figures). Against numpy's run of the same IR the first layer beyond tolerance is the
    AveragePool's quantized output, one step off where the 2x2 average lands at a tie (the plugin
    averages the integers and rounds its own way)."""
    code, doc, err = _json(
        capsys, int8["avg ir"], "--device", "CPU", "--precision", "f32", "--inputs", int8["inputs"], "--all-layers"
    )
    assert code == 1 and "Traceback" not in err, err
    layers = doc["per_layer"]
    every = layers["every_layer"]
    assert len(every) == layers["steps"] and [e["index"] for e in every] == list(range(layers["steps"]))
    assert layers["compared"] == sum(1 for e in every if e["outputs"]) < layers["steps"]
    notes = [e["note"] for e in every if not e["outputs"]]
    assert any(n.startswith("fused into Convolution '") and n.endswith("on CPU: no value of its own") for n in notes)
    assert {e["type"] for e in every if "runtime graph" in e["note"]} >= {"Convert", "Multiply"}  # the weights' dequantization
    first = layers["first_beyond"]
    (own,) = first["outputs"]
    pool = next(e for e in every if e["type"] == "AvgPool")
    assert first["index"] > pool["index"] and own["steps"] == 1 and own["max_abs"] == 1
    assert all(e["within"] for e in every if e["index"] < first["index"])
    (output,) = doc["outputs"]
    (last,) = [o for e in every for o in e["outputs"] if o["name"] == output["name"]]
    assert last["max_abs"] == output["max_abs"] and last["steps"] <= 2
    assert layers["note"] == ""  # the traced run's outputs are the device's own


def test_int8_ir_without_ties_is_exact_on_every_layer(int8, capsys):
    """With a MaxPool instead of the AveragePool nothing lands at a tie: at f32 every tensor the CPU
    plugin computes (integers and dequantized floats) equals numpy's. At the CPU's own precision
    (bf16 where it has it) the float parts round to 8 bits, and a quantized tensor may land one
    step away, never more."""
    args = (int8["max ir"], "--device", "CPU", "--inputs", int8["inputs"], "--all-layers")
    code, doc, err = _json(capsys, *args, "--precision", "f32")
    assert code == 0 and doc["within"], err
    compared = [o for e in doc["per_layer"]["every_layer"] for o in e["outputs"]]
    assert len(compared) > 5 and all(o["max_abs"] == 0 for o in compared)
    code, doc, err = _json(capsys, *args, "--precision", "default")
    assert code in (0, 1) and "Traceback" not in err, err
    assert max(o["steps"] or 0 for e in doc["per_layer"]["every_layer"] for o in e["outputs"]) <= 1


def test_all_layers_table_and_plot(int8, tmp_path, capsys):
    """``--all-layers`` prints a line per step in execution order; ``--plot`` writes the SVG (one
    point per layer compared, a grey tick per layer not), refuses to replace it without ``--force``
    and never writes over an input."""
    from xml.etree import ElementTree

    svg = tmp_path / "layers.svg"
    args = (int8["avg ir"], "--device", "CPU", "--precision", "f32", "--inputs", int8["inputs"])
    code, out, err = invoke(capsys, "compare", *args, "--all-layers", "--plot", svg)
    assert code == 1 and "Traceback" not in err, err
    lines = out.splitlines()
    head = lines.index("every layer, in execution order (steps: the error in quantization steps of a quantized tensor):")
    rows = lines[head + 2 : -2]
    steps = int(next(line for line in lines if line.startswith("per layer:")).split()[4])
    assert [int(row.split()[0]) for row in rows] == list(range(1, steps + 1))
    assert any(row.split()[-1] == "NO" for row in rows) and lines[-1] == f"wrote {svg}"
    root = ElementTree.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    points = [c for c in root.iter(f"{ns}circle") if c.get("fill") in ("#2e86c1", "#c0392b")]
    compared = sum(1 for row in rows if row.split()[-1] in ("yes", "NO"))
    assert len(points) == compared and root.find(f"{ns}text").text.endswith("per layer")
    assert any("first beyond tolerance (circled)" in (t.text or "") for t in root.iter(f"{ns}text"))
    before = svg.read_bytes()
    code, out, err = invoke(capsys, "compare", *args, "--plot", svg)
    assert code == 2 and "exists (use --force to replace it)" in err and out == "" and svg.read_bytes() == before
    code, _, err = invoke(capsys, "compare", *args, "--plot", svg, "--force")
    assert code == 1 and ElementTree.parse(svg).getroot().tag == f"{ns}svg", err
    for source in (int8["avg ir"], int8["avg ir"].with_suffix(".bin"), int8["inputs"]):
        stamp = source.read_bytes()
        code, _, err = invoke(capsys, "compare", *args, "--plot", source, "--force")
        assert code == 2 and "refusing to overwrite an input file" in err and source.read_bytes() == stamp
    code, _, err = invoke(capsys, "compare", *args, "--force")
    assert code == 2 and "--force replaces an existing --plot file" in err


def test_quantized_ir_against_its_float_source(int8, capsys):
    """``--reference-model``: the INT8 IR on the device, its float ONNX source on numpy; a float
    tensor is compared with the quantized copy the INT8 model carries of it (``r1`` with the
    dequantized output of the FakeQuantize reading it), with its error in that tensor's steps."""
    args = (int8["avg ir"], "--device", "numpy", "--inputs", int8["inputs"], "--reference-model", int8["avg float"])
    code, doc, err = _json(capsys, *args, "--all-layers", "--rtol", "0.5")
    assert code == 0 and "Traceback" not in err, err
    assert doc["reference"] == f"numpy running {int8['avg float']}"
    rows = {e["name"]: e for e in doc["per_layer"]["every_layer"]}
    (relu,) = rows["relu1"]["outputs"]
    assert relu["name"] == "r1" and relu["note"].startswith("the device's ") and relu["steps"] is not None
    assert 0 < relu["max_rel"] < 0.2  # the quantization error, not a wrong tensor
    assert rows["conv1"]["outputs"] == []  # the quantized model has no tensor c1 (Relu went into the quantization)


def test_difference_counts_quantization_steps():
    """With the tensor's quantization step, ``steps`` is the largest difference in steps, per
    tensor or per channel; a step that does not fit the tensor gives none."""
    d = difference("q", np.array([1.0, 1.5]), np.array([1.0, 1.0]), quantum=0.25)
    assert (d.max_abs, d.steps, d.within) == (0.5, 2.0, False)
    got = np.array([[0.0, 0.1, 0.2], [0.0, 3.0, 0.0]])
    per_channel = difference("q", got, np.zeros((2, 3)), quantum=np.array([[0.1], [1.0]]))
    assert per_channel.steps == pytest.approx(3.0)
    assert difference("q", got, np.zeros((2, 3)), quantum=np.ones(4)).steps is None
    assert difference("q", got, got).steps is None and difference("q", got, got, quantum=0.5).steps == 0.0
    assert difference("q", got, got, quantum=0.5).record()["steps"] == 0.0


def test_plot_of_a_comparison_made_by_hand():
    """``render_plot``: a point per layer compared (red beyond tolerance, the first beyond circled
    and named), a grey tick per layer not compared, a bar per quantized tensor in the steps panel,
    names escaped, a <title> on every mark."""
    from xml.etree import ElementTree

    from ovpool.check.compare import Comparison, LayerDifference
    from ovpool.check.plot import render_plot
    from ovpool.execution.policy import Step

    def entry(index, name, rel=None, steps=None, note=""):
        outputs = () if rel is None else (difference(name, np.array([1.0 + rel]), np.array([1.0]), quantum=steps),)
        return LayerDifference(index, Step(name, "Conv", (), (name,)), (), outputs, note)

    every = (
        entry(0, "c<1>&", 0.0),
        entry(1, "fused", note="fused into Convolution 'c' on CPU: no value of its own"),
        entry(2, "q", 0.02, steps=0.01),
        entry(3, "r", 1e-7),
    )
    compared = tuple(e for e in every if e.outputs)
    c = Comparison("m.xml", "CPU", "f32", "numpy", 1e-4, 1e-6, (), compared, 4, every)
    root = ElementTree.fromstring(render_plot(c))
    ns = "{http://www.w3.org/2000/svg}"
    points = [x for x in root.iter(f"{ns}circle") if x.get("fill") != "none"]
    assert [p.get("fill") for p in points] == ["#2e86c1", "#c0392b", "#2e86c1"]
    rings = [x for x in root.iter(f"{ns}circle") if x.get("fill") == "none"]
    assert len(rings) == 1 and rings[0].get("cx") == points[1].get("cx")
    titles = [t.text for t in root.iter(f"{ns}title")]
    assert "step 1 of 4: Conv 'c<1>&': max abs 0, max rel 0, within" in titles
    assert "step 2 of 4: Conv 'fused': fused into Convolution 'c' on CPU: no value of its own" in titles
    assert any(t.startswith("step 3: Conv 'q': max abs 0.02, max rel 0.02, 2 steps, BEYOND") for t in titles)
    texts = [t.text or "" for t in root.iter(f"{ns}text")]
    assert "first beyond tolerance (circled): Conv 'q', step 3 of 4" in texts
    bars = [r for r in root.iter(f"{ns}rect") if r.get("fill") in ("#2e86c1", "#c0392b")]
    assert len(bars) == 1


def test_qdq_onnx_model_per_layer_on_the_cpu_against_numpy(int8, capsys):
    """A QDQ ONNX model runs on OpenVINO as the INT8 IR does (the frontend writes FakeQuantize):
    its ONNX nodes are traced where the runtime graph computes them, QuantizeLinear outputs have
    their error in steps (integers: a step is 1), and the first beyond tolerance is the
    AveragePool's QuantizeLinear, one step off at a tie."""
    args = (int8["avg qdq"], "--device", "CPU", "--precision", "f32", "--inputs", int8["inputs"], "--all-layers")
    code, doc, err = _json(capsys, *args)
    assert code == 1 and "Traceback" not in err, err
    first = doc["per_layer"]["first_beyond"]
    assert (first["type"], first["name"]) == ("QuantizeLinear", "p1_QuantizeLinear")
    assert first["outputs"][0]["steps"] == 1 and doc["per_layer"]["note"] == ""
    every = doc["per_layer"]["every_layer"]
    assert any(e["type"] == "AveragePool" and e["note"].startswith("fused into Pooling") for e in every)


def test_onnx_quanta_are_the_scales_along_the_axis():
    """``onnx_quanta``: QuantizeLinear outputs step by 1, a DequantizeLinear output by its scale,
    per axis as a shape that broadcasts against the output (a rank-4 output, axis 1: (1, C, 1, 1))."""
    from onnx import TensorProto, helper, numpy_helper

    from ovpool.check.compare import onnx_quanta

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], axis=1),
        helper.make_node("DequantizeLinear", ["q", "s1", "z1"], ["e"]),
    ]
    inits = [
        numpy_helper.from_array(np.float32([0.5, 0.25, 2.0]), "s"),
        numpy_helper.from_array(np.uint8([0, 1, 2]), "z"),
        numpy_helper.from_array(np.float32(-0.1), "s1"),
        numpy_helper.from_array(np.uint8(3), "z1"),
    ]
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 2, 2]) for n in ("d", "e")]
    graph = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 2])], info, inits)
    quanta = onnx_quanta(helper.make_model(graph))
    assert quanta["q"] == 1 and quanta["d"].shape == (1, 3, 1, 1) and list(quanta["d"].ravel()) == [0.5, 0.25, 2.0]
    assert float(quanta["e"]) == pytest.approx(0.1)


@needs_bf16
def test_a_tap_the_plugin_cannot_compile_is_left_out_and_named(int8, capsys):
    """At bf16 the CPU plugin (2026.4.1) cannot compile the int8 per-channel IR with the MaxPool's
    i8 output as an extra output: that tap is found by halving and named, the others are compared."""
    args = (int8["max s8 ir"], "--device", "CPU", "--precision", "bf16", "--inputs", int8["inputs"], "--all-layers")
    code, doc, err = _json(capsys, *args)
    assert code in (0, 1) and "Traceback" not in err, err
    if doc is None:  # one line naming the model, as for any model the device cannot compile
        assert code == 1 and "cannot compile" in err and err.count("\n") == 1, err
        pytest.skip("this processor's CPU plugin cannot compile the IR at bf16 even untapped (measured with AMX)")
    every = doc["per_layer"]["every_layer"]
    refused = [e for e in every if e["note"].startswith("not tapped: CPU cannot compile the model with it as an output")]
    assert 1 <= len(refused) < sum(1 for e in every if e["outputs"])
