"""The ONNX model zoo's AlexNet and ZFNet-512 graphs, with their LRN nodes, on every ovpool path.

No PyPI wheel is known to ship a real-weight ONNX model with LRN (tests/lrn_model.py); the onnx
wheel itself ships the model zoo's graphs in its backend test data
(``onnx/backend/test/data/light``): the Caffe2 exports of BVLC AlexNet (LRN size 5, alpha 1e-4,
bias 1) and ZFNet-512 (size 5, alpha 5e-4, bias 2), opset 9, with every weight and bias replaced by
a ``ConstantOfShape`` of 0.02. With equal weights the 1000 class scores are equal (the softmax is
0.001 everywhere), so the graphs are cut at their LRN nodes, whose outputs are compared: their
channels still differ (AlexNet's grouped conv2 gives two halves, and the windows are clipped at
the first and last two channels), and the second LRN's squared sums are large (alpha / 5 * 5 *
92^2 = 0.85 against bias 1), where a window on the wrong axis is off by half the output.

``tests/lrn_model.py`` (a GoogLeNet-style model with random weights) stays the case that needs no
file; these run where the installed onnx has the light models and are skipped otherwise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from runtime_support import invoke

from ovpool.engine.graph import GraphSession
from ovpool.engine.ir_executor import IrGraph
from ovpool.execution.policy import compile_config

ov = pytest.importorskip("openvino")

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
RTOL = 1e-4  # of the output's largest magnitude, as tests/ops/real_models.py


def zoo_graph(name: str) -> onnx.ModelProto:
    """The light model ``name`` up to its LRN nodes, whose outputs are the graph's outputs (the
    fully connected layers after them would add 200 MB of constant weights and test nothing: their
    scores are equal)."""
    path = LIGHT / f"light_{name}.onnx"
    if not path.is_file():
        pytest.skip(f"the installed onnx {onnx.__version__} has no {path.name}")
    model = onnx.load(str(path))
    lrn = [node.output[0] for node in model.graph.node if node.op_type == "LRN"]
    constants = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in constants]
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)  # the cut points' shapes
    return onnx.utils.Extractor(inferred).extract_model(inputs, lrn)


def feeds_for(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Uniform [0, 1) pixels for the image input (the graphs' other inputs are initializers)."""
    constants = {t.name for t in model.graph.initializer}
    (image,) = [i for i in model.graph.input if i.name not in constants]
    shape = [d.dim_value for d in image.type.tensor_type.shape.dim]
    return {image.name: np.random.default_rng(21).uniform(0, 1, shape).astype(np.float32)}


def assert_close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, f"{what}: {got.shape} {got.dtype}, want {want.shape} {want.dtype}"
    scale = max(float(np.max(np.abs(want))), 1e-30)
    error = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    assert error <= RTOL * scale, f"{what}: max error {error:.3g} > {RTOL} * {scale:.3g}"


@pytest.mark.parametrize("name", ["bvlc_alexnet", "zfnet512"])
def test_zoo_lrn_graph_on_numpy_ir_and_cpu(tmp_path, capsys, name):
    """The graph up to its two LRN nodes on the numpy executor agrees with onnxruntime
    (optimisations off) on both LRN outputs; ``ovpool convert --verify`` writes IR with two LRN layers, and the
    IR on numpy agrees with the CPU plugin at f32 and with onnxruntime."""
    model = zoo_graph(name)
    feeds = feeds_for(model)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    want = dict(zip(names, session.run(names, feeds)))
    numpy = GraphSession(model).run(feeds)
    for output in names:
        assert_close(np.asarray(numpy[output]), want[output], f"numpy executor, {output}")

    src, xml = tmp_path / f"{name}.onnx", tmp_path / f"{name}.xml"
    onnx.save(model, str(src))
    code, _, err = invoke(capsys, "convert", src, "-o", xml, "--verify")
    assert code == 0, err
    assert xml.read_text().count('type="LRN"') == 2
    ir = IrGraph.read(xml).run(feeds)
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", compile_config("f32", cache=False))
    cpu = compiled(feeds)
    for port, output in zip(compiled.outputs, names):
        assert_close(np.asarray(ir[output]), np.asarray(cpu[port]), f"IR on numpy against CPU, {output}")
        assert_close(np.asarray(ir[output]), want[output], f"IR on numpy against onnxruntime, {output}")
