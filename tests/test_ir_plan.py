"""The IR executor's plan rewrites (``ovpool.engine.plan``): a BatchNormInference folded into the
Convolution before it, groups of shape values, in-place work and chains, on IRs OpenVINO builds
and saves. The oracles: OpenVINO's CPU plugin at f32 (``check_ir``), and the observed run, which
follows the plan of every layer as the IR states it (no rewrite): the rewrites that keep the bits
give the observed run's bits; the folded BatchNormInference differs from it by rounding only."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from ovpool.engine import ir_executor
from ovpool.engine.ir_executor import IrGraph
from ovpool.engine.ir_layers import LayerNode, builder_for
from ovpool.engine.ir_layers.elementwise import _relu6_over_6

ov = pytest.importorskip("openvino")
from openvino import opset1, opset4, opset5, opset12  # noqa: E402
from test_ir_numpy import check_ir, normal, param  # noqa: E402


def _saved(outputs: list, params: list, folder: str) -> Path:
    xml = Path(folder) / "m.xml"
    ov.save_model(ov.Model(outputs, params), str(xml), compress_to_fp16=False)
    return xml


def _observed(graph: IrGraph, feeds: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The outputs of an observed run, and the layer types it showed by layer name."""
    shown: dict[str, str] = {}
    outputs = graph.run(feeds, observe=lambda layer, values: shown.setdefault(layer.name, layer.type))
    return outputs, shown


@pytest.mark.parametrize("grouped", [False, True])
def test_batch_norm_folds_into_the_convolution_before_it(grouped):
    """Convolution (or GroupConvolution) -> BatchNormInference -> ReLU: the plan runs the
    convolution with the scaled weights, then the Add of the shifted bias and the ReLU in place
    on its output; within rounding of the layers run apart (the observed run shows them all)."""
    rng = np.random.default_rng(0)
    x = param("x", [1, 4, 9, 9])
    if grouped:
        weights = opset1.constant(rng.standard_normal((2, 2, 2, 3, 3)).astype(np.float32))
        conv = opset1.group_convolution(x, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    else:
        weights = opset1.constant(rng.standard_normal((4, 4, 3, 3)).astype(np.float32))
        conv = opset1.convolution(x, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    gamma, beta, mean = (opset1.constant(rng.standard_normal(4).astype(np.float32)) for _ in range(3))
    var = opset1.constant(rng.uniform(0.5, 2, 4).astype(np.float32))
    norm = opset5.batch_norm_inference(conv, gamma, beta, mean, var, 1e-3)
    feeds = {"x": normal((1, 4, 9, 9))}
    with tempfile.TemporaryDirectory() as folder:
        xml = _saved([opset1.relu(norm)], [x], folder)
        got = check_ir(xml, feeds)
        graph = IrGraph.read(xml)
    plan = graph._graph.plan
    assert "BatchNormInference" not in {entry.kind for entry in plan.producers.values()}
    assert plan.donating >= 1  # the Add writes into the convolution's output
    unfused, shown = _observed(graph, feeds)
    assert "BatchNormInference" in shown.values()
    for name, value in got.items():
        np.testing.assert_allclose(value, unfused[name], rtol=0, atol=1e-5 * float(np.abs(unfused[name]).max()))


def test_shape_values_chains_and_in_place_keep_the_bits():
    """A dynamic-shape model whose bias is reshaped through ShapeOf -> Subtract -> Broadcast ->
    Concat -> Reshape by the rank of the input (``ovpool convert`` writes it of an ONNX Conv's
    bias with the convolution's output, whose rank is known when prepared:
    test_bias_reshaped_by_the_convolutions_rank_folds_and_fuses), then Sigmoid and Multiply
    (SiLU): one step of shape values, the Add in place, and the outputs bit for bit those of the
    observed run, which rewrites nothing."""
    rng = np.random.default_rng(1)
    x = opset1.parameter([-1, 3, -1, -1], ov.Type.f32, name="x")
    conv = opset1.convolution(
        x, opset1.constant(rng.standard_normal((8, 3, 3, 3)).astype(np.float32)), [1, 1], [1, 1], [1, 1], [1, 1]
    )
    rank = opset4.shape_of(opset4.shape_of(x))
    ones = opset4.broadcast(
        opset1.constant(np.array([1], np.int64)), opset1.subtract(rank, opset1.constant(np.array([2], np.int64)))
    )
    target = opset1.concat([opset1.constant(np.array([1], np.int64)), opset1.constant(np.array([8], np.int64)), ones], 0)
    bias = opset1.reshape(opset1.constant(rng.standard_normal(8).astype(np.float32)), target, False)
    added = opset1.add(conv, bias)
    silu = opset1.multiply(added, opset1.sigmoid(added))
    feeds = {"x": normal((1, 3, 40, 40))}
    with tempfile.TemporaryDirectory() as folder:
        xml = _saved([silu], [x], folder)
        got = check_ir(xml, feeds)
        graph = IrGraph.read(xml)
    plan = graph._graph.plan
    assert plan.grouped == 1
    assert plan.donating >= 1
    again = graph.run(feeds)
    plain, _ = _observed(graph, feeds)
    for name, value in got.items():
        assert value.tobytes() == plain[name].tobytes() == again[name].tobytes()


def test_hswish_in_place_and_by_tiles_gives_the_formula_bits():
    """HSwish-4's kernel allocating, writing into its input and by tiles: the bits of
    x * (min(max(x + 3, 0), 6) / 6), NaN, infinities and signed zeros included."""
    rng = np.random.default_rng(2)
    values = [np.nan, np.inf, -np.inf, -3.0, 3.0, 0.0, -0.0, 1e38, -1e38]
    x = np.concatenate([rng.normal(0, 4, 4096), values]).astype(np.float32).reshape(1, -1)
    layer = _hswish_layer(x.shape)
    kernel = builder_for("HSwish", "opset4")(LayerNode(layer, (None,), 1))
    with np.errstate(all="ignore"):
        want = x * _relu6_over_6(x)
        donated = x.copy()
        kernel.donating(0)(donated)
        tiled = np.empty_like(x)
        kernel.tile(tiled, x)
        for got in (kernel(x)[0], donated, tiled):
            assert got.view(np.uint32).tobytes() == want.view(np.uint32).tobytes()


def _hswish_layer(shape: tuple[int, ...]):
    """The HSwish layer of an IR OpenVINO saves."""
    from ovpool.ir.reader import read_ir

    x = param("x", list(shape))
    with tempfile.TemporaryDirectory() as folder:
        xml = _saved([opset4.hswish(x)], [x], folder)
        document = read_ir(xml)
    return next(layer for layer in document.layers.values() if layer.type == "HSwish")


@pytest.mark.parametrize("shape", [(1, 4, 8, 8), (1, 4, 256, 256)])
def test_hard_swish_as_five_layers_runs_in_place_with_the_bits(shape):
    """x * min(max(x + 3, 0), 6) / 6 as OpenVINO writes paddle's hard_swish (Add, Maximum,
    Minimum, Multiply, Divide) on a Convolution's output: each layer writes into the dying value
    before it (a chain of tiles on the larger tensor), and the outputs are bit for bit those of
    the observed run, which runs every layer allocating."""
    rng = np.random.default_rng(3)
    x = param("x", list(shape))
    conv = opset1.convolution(
        x, opset1.constant(rng.standard_normal((4, 4, 1, 1)).astype(np.float32)), [1, 1], [0, 0], [0, 0], [1, 1]
    )
    shifted = opset1.add(conv, opset1.constant(np.float32(3)))
    clipped = opset1.minimum(opset1.maximum(shifted, opset1.constant(np.float32(0))), opset1.constant(np.float32(6)))
    swish = opset1.divide(opset1.multiply(conv, clipped), opset1.constant(np.float32(6)))
    feeds = {"x": normal(shape)}
    with tempfile.TemporaryDirectory() as folder:
        xml = _saved([swish], [x], folder)
        got = check_ir(xml, feeds)
        graph = IrGraph.read(xml)
    plain, _ = _observed(graph, feeds)
    assert graph._graph.plan.donating >= 3 or len(graph._graph.plan.steps) < 6
    for name, value in got.items():
        assert value.tobytes() == plain[name].tobytes()


def test_maximum_and_minimum_in_a_chain_keep_numpys_bits_on_nan_zeros_and_infinities():
    """Add(3) -> Maximum(0) -> Minimum(6) -> Multiply(x) -> Divide(6) of a Parameter holding NaN,
    infinities and signed zeros, large enough to run by tiles (or compiled): the bits of the
    layers run one by one (the observed run), numpy's maximum and minimum included."""
    values = np.array([np.nan, np.inf, -np.inf, -3.0, 3.0, 0.0, -0.0, -6.0, 6.0, 1e38], np.float32)
    data = np.resize(np.concatenate([values, np.random.default_rng(4).normal(0, 4, 1000).astype(np.float32)]), (1, 4, 256, 256))
    x = param("x", list(data.shape))
    shifted = opset1.add(x, opset1.constant(np.float32(3)))
    clipped = opset1.minimum(opset1.maximum(shifted, opset1.constant(np.float32(-0.0))), opset1.constant(np.float32(6)))
    swish = opset1.divide(opset1.multiply(x, clipped), opset1.constant(np.float32(6)))
    with tempfile.TemporaryDirectory() as folder:
        graph = IrGraph.read(_saved([swish], [x], folder))
    assert any("chain" in step.label for step in graph._graph.plan.steps)
    with np.errstate(all="ignore"):
        (got,) = graph.run({"x": data}).values()
        (plain,) = _observed(graph, {"x": data})[0].values()
    assert got.tobytes() == plain.tobytes()


@pytest.mark.parametrize("shape", [(1, 8, 6, 6), (1, 8, 200, 200)])
def test_hard_sigmoid_gate_chains_with_the_bits(shape):
    """HardSigmoid-1 (alpha 0.2, beta 0.5) then Multiply by its input, as squeeze-excite gates and
    paddle's hard_swish are written: one chain step (compiled, or by tiles on the larger tensor),
    bit for bit the layers run one by one, NaN and infinities included."""
    x = param("x", list(shape))
    gate = opset1.hard_sigmoid(x, opset1.constant(np.float32(0.2)), opset1.constant(np.float32(0.5)))
    data = normal(shape)
    data.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    with tempfile.TemporaryDirectory() as folder:
        graph = IrGraph.read(_saved([opset1.multiply(x, gate)], [x], folder))
    assert len(graph._graph.plan.steps) == 1
    with np.errstate(all="ignore"):
        (got,) = graph.run({"x": data}).values()
        (plain,) = _observed(graph, {"x": data})[0].values()
    assert got.tobytes() == plain.tobytes()


def _kinds(graph: IrGraph) -> set[str]:
    """The layer types of the steps of ``graph``'s plan."""
    return {entry.kind for entry in graph._graph.plan.producers.values()}


def _unfused_bias(monkeypatch: pytest.MonkeyPatch, xml: Path) -> IrGraph:
    """The IR at ``xml`` prepared with no convolution bias fused (``fuse_ir_conv_biases`` left out)."""
    with monkeypatch.context() as patch:
        patch.setattr(ir_executor, "fuse_ir_conv_biases", lambda prepared, *rest: (list(prepared), {}))
        return IrGraph.read(xml)


@pytest.mark.parametrize(
    ("grouped", "bias_first", "shape"),
    [(False, False, (1, 4, 9, 9)), (True, False, (1, 4, 9, 9)), (False, True, (2, 4, 5, 7)), (True, True, (1, 4, 40, 40))],
)
def test_convolution_bias_add_is_one_step_with_the_bits(monkeypatch, grouped, bias_first, shape):
    """Convolution (or GroupConvolution) -> Add of a (1, C, 1, 1) constant (either side) -> ReLU:
    the Add runs inside the convolution's step (ONNX Conv's kernel with B), and the
    outputs are bit for bit those of the plan with the Add its own step, NaN, infinities and signed
    zeros in the data, infinities and signed zeros in the bias."""
    rng = np.random.default_rng(5)
    x = param("x", list(shape))
    if grouped:
        weights = opset1.constant(rng.standard_normal((2, 2, 2, 3, 3)).astype(np.float32))
        conv = opset1.group_convolution(x, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    else:
        weights = opset1.constant(rng.standard_normal((4, 4, 3, 3)).astype(np.float32))
        conv = opset1.convolution(x, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    values = [np.inf, -0.0, 0.5, -np.inf] if bias_first else [-np.inf, np.inf, -0.0, 0.0]
    bias = opset1.constant(np.array(values, np.float32).reshape(1, 4, 1, 1))
    added = opset1.add(bias, conv) if bias_first else opset1.add(conv, bias)
    data = normal(shape)
    data.flat[:5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    data[..., -1, :] = 0.0  # sums of zeros: signed zeros meet the bias
    with tempfile.TemporaryDirectory() as folder:
        xml = _saved([opset1.relu(added)], [x], folder)
        graph, plain = IrGraph.read(xml), _unfused_bias(monkeypatch, xml)
    assert _kinds(graph) == {"Convolution" if not grouped else "GroupConvolution", "ReLU"}
    assert "Add" in _kinds(plain)
    with np.errstate(all="ignore"):
        (got,) = graph.run({"x": data}).values()
        (expected,) = plain.run({"x": data}).values()
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("bias_first", [False, True])
def test_convolution_bias_with_nan_stays_its_own_step(bias_first):
    """An Add of a bias holding a NaN after a Convolution is not fused (a NaN sum plus a NaN bias
    keeps one operand's sign and payload, which compiled loops may swap): the Add stays a step."""
    x = param("x", [1, 2, 4, 4])
    conv = opset1.convolution(x, opset1.constant(np.ones((2, 2, 1, 1), np.float32)), [1, 1], [0, 0], [0, 0], [1, 1])
    bias = opset1.constant(np.array([np.nan, 1.0], np.float32).reshape(1, 2, 1, 1))
    added = opset1.add(bias, conv) if bias_first else opset1.add(conv, bias)
    with tempfile.TemporaryDirectory() as folder:
        graph = IrGraph.read(_saved([opset1.relu(added)], [x], folder))
    assert "Add" in _kinds(graph)


@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_constant_first_maximum_chains_compiled_with_numpys_bits(monkeypatch, zero):
    """Add(3) -> Maximum(0, .) -> Minimum(6, .) -> Multiply(x) -> Divide(6), the constants first
    as OpenVINO writes paddle's hard_swish in picodet and SLANet: one chain, compiled (a clip),
    bit for bit the layers run one by one on NaN, infinities and signed zeros; a zero first is a
    clip only where numpy returns the second input on ties (x86)."""
    from ovpool.engine import chains
    from ovpool.engine.ir_layers.elementwise import _ties_to_second

    values = np.array([np.nan, np.inf, -np.inf, -3.0, 3.0, 0.0, -0.0, -6.0, 6.0, 1e38], np.float32)
    data = np.resize(np.concatenate([values, np.random.default_rng(6).normal(0, 4, 500).astype(np.float32)]), (1, 4, 64, 64))
    x = param("x", list(data.shape))
    shifted = opset1.add(x, opset1.constant(np.float32(3)))
    clipped = opset1.minimum(opset1.constant(np.float32(6)), opset1.maximum(opset1.constant(np.float32(zero)), shifted))
    swish = opset1.divide(opset1.multiply(x, clipped), opset1.constant(np.float32(6)))
    with tempfile.TemporaryDirectory() as folder:
        graph = IrGraph.read(_saved([swish], [x], folder))
    compiled: list[object] = []
    run_compiled = chains._run_compiled
    monkeypatch.setattr(chains, "_run_compiled", lambda *args: compiled.append(args[1]) or run_compiled(*args))
    with np.errstate(all="ignore"):
        (got,) = graph.run({"x": data}).values()
        (plain,) = _observed(graph, {"x": data})[0].values()
    assert got.tobytes() == plain.tobytes()
    assert len(graph._graph.plan.steps) == 1
    if _ties_to_second() and chains.chain_for(np.dtype(np.float32)) is not None:
        assert compiled


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
@pytest.mark.parametrize("given", [True, False])
def test_pad_runs_onnx_pads_kernel_with_numpys_bits(mode, given):
    """Pad-12 with constant pads (run by ONNX Pad-11's kernel, its pads parsed once) or pads given
    at run time, negative pads cropping first: bit for bit numpy's pad of the cropped input, NaN,
    infinities and signed zeros included."""
    begin, end = np.array([0, 2, -1], np.int64), np.array([1, -1, 2], np.int64)
    x = param("x", [2, 4, 5])
    if given:
        pads = [ov.opset1.parameter([3], ov.Type.i64, name=n) for n in ("begin", "end")]
        feeds = {"begin": begin, "end": end}
    else:
        pads = [opset1.constant(begin), opset1.constant(end)]
        feeds = {}
    value = opset1.constant(np.float32(-0.0)) if mode == "constant" else None
    node = opset12.pad(x, pads[0], pads[1], mode, value)
    data = normal((2, 4, 5))
    data.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    with tempfile.TemporaryDirectory() as folder:
        graph = IrGraph.read(_saved([node], [x, *pads] if given else [x], folder))
    (got,) = graph.run({"x": data, **feeds}).values()
    cropped = data[:, :3, 1:]
    expected = np.pad(cropped, [(0, 1), (2, 0), (0, 2)], mode=mode, **({"constant_values": -0.0} if mode == "constant" else {}))
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("grouped", [False, True])
def test_bias_reshaped_by_the_convolutions_rank_folds_and_fuses(monkeypatch, grouped):
    """The ONNX frontend's Conv bias on data of unknown dims: Reshape(B, Concat(1, ShapeOf(B),
    Broadcast(1, ShapeOf(ShapeOf(y)) - 2))) then Add(y, .). ShapeOf(ShapeOf(y)) is y's rank (the
    weights'), so the Reshape folds when prepared, the ShapeOf of y leaves the plan and the Add
    joins the convolution: bit for bit the plan without the fusion and the observed run (every
    layer as stated), NaN, infinities and signed zeros in the data."""
    rng = np.random.default_rng(7)
    x = ov.opset1.parameter(ov.PartialShape([-1, 4, -1]), ov.Type.f32, name="x")
    if grouped:
        weights = opset1.constant(rng.standard_normal((2, 2, 2, 3)).astype(np.float32))
        y = opset1.group_convolution(x, weights, [1], [1], [1], [1])
    else:
        weights = opset1.constant(rng.standard_normal((4, 4, 3)).astype(np.float32))
        y = opset1.convolution(x, weights, [1], [1], [1], [1])
    bias = opset1.constant(np.array([np.inf, -0.0, 0.5, -2.0], np.float32))
    rank = opset4.shape_of(opset4.shape_of(y))
    ones = opset4.broadcast(
        opset1.constant(np.array([1], np.int64)), opset1.subtract(rank, opset1.constant(np.array([2], np.int64)))
    )
    target = opset1.concat([opset1.constant(np.array([1], np.int64)), opset4.shape_of(bias), ones], 0)
    added = opset1.add(y, opset1.reshape(bias, target, False))
    data = normal((2, 4, 7))
    data.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    data[..., -1] = 0.0
    with tempfile.TemporaryDirectory() as folder:
        xml = _saved([opset1.relu(added)], [x], folder)
        graph, plain = IrGraph.read(xml), _unfused_bias(monkeypatch, xml)
    assert _kinds(graph) == {"GroupConvolution" if grouped else "Convolution", "ReLU"}
    with np.errstate(all="ignore"):
        (got,) = graph.run({"x": data}).values()
        (unfused,) = plain.run({"x": data}).values()
        (observed,) = _observed(graph, {"x": data})[0].values()
    assert got.tobytes() == unfused.tobytes() == observed.tobytes()
