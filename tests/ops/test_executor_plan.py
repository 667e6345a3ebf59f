"""The numpy executor's plan: Conv + BatchNormalization folded at prepare time, element-wise
kernels writing into an input that dies at their node, and observed runs that still show every
node as the model states it.

Oracles: onnxruntime with graph optimisations off (each node as written), and, for the in-place
kernels, the executor's own unfused, non-donating plan (the observed run), which must give the
same bits: an in-place ufunc performs the same IEEE operations on the same values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from harness import drawn_rng, examples, model_of, run_ort, since_opsets, vi
from hypothesis import given
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from ovpool.engine.graph import GraphSession

RNG = np.random.default_rng(23)


def _tensor(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(value, name)


def _conv_bn(
    opset: int, bias: bool = True, group: int = 1, bn_attrs: dict[str, Any] | None = None, dtype: type = np.float32
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """x (1, 4, 6, 5) -> Conv (6 output channels, 3x3, pads 1) -> BatchNormalization -> y."""
    channels = 6
    w = RNG.standard_normal((channels, 4 // group, 3, 3)).astype(dtype)
    inits = [_tensor("w", w)]
    conv_inputs = ["x", "w"]
    if bias:
        inits.append(_tensor("b", RNG.standard_normal(channels).astype(dtype)))
        conv_inputs.append("b")
    stats = {
        "scale": RNG.uniform(0.5, 2, channels),
        "shift": RNG.standard_normal(channels),
        "mean": RNG.standard_normal(channels),
        "var": RNG.uniform(0.1, 3, channels),
    }
    inits += [_tensor(name, value.astype(dtype)) for name, value in stats.items()]
    nodes = [
        helper.make_node("Conv", conv_inputs, ["c"], name="conv", pads=[1, 1, 1, 1], group=group),
        helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["y"], name="bn", **(bn_attrs or {})),
    ]
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = model_of(nodes, [vi("x", elem, [1, 4, 6, 5])], ["y"], opset=opset, initializers=inits)
    return model, {"x": RNG.standard_normal((1, 4, 6, 5)).astype(dtype)}


def _observed(session: GraphSession, feeds: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The run's outputs and every node output the observer saw, copied."""
    seen: dict[str, np.ndarray] = {}

    def observe(node: onnx.NodeProto, values: tuple[Any, ...]) -> None:
        seen.update((name, np.array(value)) for name, value in zip(node.output, values) if name)

    return session.run(feeds, observe=observe), seen


@pytest.mark.parametrize("opset", since_opsets("BatchNormalization"))
@pytest.mark.parametrize("bias", [True, False])
def test_conv_batch_norm_folds_into_one_conv(opset: int, bias: bool) -> None:
    """Every since-version of BatchNormalization in inference form folds: one step, onnxruntime's
    values (each node as written) within float32 rounding."""
    model, feeds = _conv_bn(opset, bias=bias)
    session = GraphSession(model)
    assert len(session._graph._plan.steps) == 1
    (expected,) = run_ort(model, feeds)
    np.testing.assert_allclose(session.run(feeds)["y"], expected, rtol=1e-5, atol=1e-5)


def test_folded_weights_are_the_stated_rule() -> None:
    """W' = W * s, B' = (B - mean) * s + B_bn, s = scale / sqrt(var + epsilon): W 2, B 1, scale 3,
    var 8, epsilon 1, mean 0.5, B_bn 0.25 give s 1, so input 1 gives 2 + 0.75 = 2.75."""
    one = np.ones((1, 1, 1, 1), np.float32)
    inits = [_tensor(n, np.array(v, np.float32).reshape(s)) for n, v, s in [
        ("w", 2, (1, 1, 1, 1)), ("b", 1, (1,)), ("scale", 3, (1,)), ("shift", 0.25, (1,)), ("mean", 0.5, (1,)), ("var", 8, (1,))
    ]]  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
        helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["y"], name="bn", epsilon=1.0),
    ]
    session = GraphSession(model_of(nodes, [vi("x", shape=[1, 1, 1, 1])], ["y"], opset=15, initializers=inits))
    assert len(session._graph._plan.steps) == 1
    assert session.run({"x": one})["y"].item() == 2.75


def test_grouped_conv_folds() -> None:
    model, feeds = _conv_bn(15, group=2)
    session = GraphSession(model)
    assert len(session._graph._plan.steps) == 1
    (expected,) = run_ort(model, feeds)
    np.testing.assert_allclose(session.run(feeds)["y"], expected, rtol=1e-5, atol=1e-5)


def test_float64_folds() -> None:
    """onnxruntime has no float64 Conv: the oracle is the two nodes run apart (the observed run),
    each checked against onnxruntime in float32 by the per-op tests."""
    model, feeds = _conv_bn(15, dtype=np.float64)
    session = GraphSession(model)
    assert len(session._graph._plan.steps) == 1
    result = session.run(feeds)["y"]
    assert result.dtype == np.float64
    np.testing.assert_allclose(result, _observed(session, feeds)[0]["y"], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(
    "case",
    ["conv output read twice", "conv output is a graph output", "statistics are inputs", "spatial=0", "float16"],
)
def test_pairs_that_do_not_fold_run_as_written(case: str) -> None:
    if case == "spatial=0":
        model, feeds = _conv_bn(7, bn_attrs={"spatial": 0})
        stats_shape = [6, 6, 5]
        for init in model.graph.initializer:
            if init.name in ("scale", "shift", "mean", "var"):
                value = RNG.uniform(0.5, 2, stats_shape).astype(np.float32)
                init.CopyFrom(_tensor(init.name, value))
    elif case == "float16":
        model, feeds = _conv_bn(15, dtype=np.float16)
    else:
        model, feeds = _conv_bn(15)
    if case == "conv output read twice":
        model.graph.node.append(helper.make_node("Relu", ["c"], ["r"], name="relu"))
        model.graph.output.append(helper.make_empty_tensor_value_info("r"))
    elif case == "conv output is a graph output":
        model.graph.output.append(helper.make_empty_tensor_value_info("c"))
    elif case == "statistics are inputs":
        var = next(i for i in model.graph.initializer if i.name == "var")
        feeds["var"] = numpy_helper.to_array(var)
        model.graph.initializer.remove(var)
        model.graph.input.append(vi("var", shape=[6]))
    session = GraphSession(model)
    assert any("BatchNormalization" in step.label for step in session._graph._plan.steps)
    expected = run_ort(model, feeds)
    for actual, want in zip(session.run(feeds).values(), expected):
        np.testing.assert_allclose(
            actual, want, rtol=1e-3 if case == "float16" else 1e-5, atol=1e-3 if case == "float16" else 1e-5
        )


def test_observed_run_reports_the_unfused_nodes() -> None:
    """An observer sees the Conv's own output and the BatchNormalization's, as onnxruntime computes
    them node by node; the fused plan is not touched (its next unobserved run is the same)."""
    model, feeds = _conv_bn(15)
    session = GraphSession(model)
    fast = session.run(feeds)["y"]
    outputs, seen = _observed(session, feeds)
    assert set(seen) == {"c", "y"}
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.append(helper.make_empty_tensor_value_info("c"))
    conv, norm = run_ort(probe, feeds)[::-1]
    np.testing.assert_allclose(seen["c"], conv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(seen["y"], norm, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outputs["y"], seen["y"])
    np.testing.assert_array_equal(session.run(feeds)["y"], fast)


# ---------------------------------------------------------------- buffers written in place


def _chain_model() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Conv -> HardSwish as paddle writes it (Add 3, Clip 0..6, Mul, Div 6) -> Sigmoid -> Mul
    (SiLU) -> Relu, Sub, Exp: each element-wise node reads a value that dies there."""
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    scalars = {"three": 3.0, "zero": 0.0, "six": 6.0}
    inits = [_tensor("w", w)] + [_tensor(n, np.array(v, np.float32)) for n, v in scalars.items()]
    inits.append(_tensor("per_channel", RNG.standard_normal((4, 1, 1)).astype(np.float32)))
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        node("Add", ["c", "three"], ["a"]),
        node("Clip", ["a", "zero", "six"], ["k"]),
        node("Mul", ["c", "k"], ["m"]),
        node("Div", ["m", "six"], ["h"]),
        node("Sigmoid", ["h"], ["s"]),
        node("Mul", ["h", "s"], ["silu"]),
        node("Relu", ["silu"], ["r"]),
        node("Sub", ["per_channel", "r"], ["d"]),
        node("Exp", ["d"], ["y"]),
    ]
    model = model_of(nodes, [vi("x", shape=[2, 3, 7, 6])], ["y"], opset=13, initializers=inits)
    return model, {"x": RNG.standard_normal((2, 3, 7, 6)).astype(np.float32) * 3}


def test_chain_writes_in_place_with_the_same_bits() -> None:
    model, feeds = _chain_model()
    session = GraphSession(model)
    plan = session._graph._plan
    assert plan.donating == 7  # all but the Add and the Sigmoid, whose inputs are read again after them
    x = feeds["x"].copy()
    fast = session.run(feeds)["y"]
    observed, _ = _observed(session, feeds)
    np.testing.assert_array_equal(fast, observed["y"])
    np.testing.assert_array_equal(feeds["x"], x)  # the caller's input is never written
    (expected,) = run_ort(model, feeds)
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(session.run(feeds)["y"], fast)


def test_a_value_with_a_live_view_is_not_written() -> None:
    """Reshape returns a view of the Conv's output; the Relu that is the Conv output's last reader
    must not overwrite it while the view is still to be read."""
    w = RNG.standard_normal((2, 1, 1, 1)).astype(np.float32)
    shape = np.array([1, 2, 3, 3], np.int64)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w"], ["c"]),
        node("Reshape", ["c", "shape"], ["view"]),
        node("Relu", ["c"], ["r"]),
        node("Sub", ["view", "r"], ["y"]),
    ]
    model = model_of(
        nodes, [vi("x", shape=[1, 1, 3, 3])], ["y"], opset=14, initializers=[_tensor("w", w), _tensor("shape", shape)]
    )
    session = GraphSession(model)
    assert session._graph._plan.donating == 1  # the Sub, into the dying Relu output; not the Relu
    feeds = {"x": RNG.standard_normal((1, 1, 3, 3)).astype(np.float32)}
    (expected,) = run_ort(model, feeds)
    np.testing.assert_array_equal(session.run(feeds)["y"], expected)


def test_graph_inputs_outputs_and_broadcast_results_are_not_donated() -> None:
    """An input (the caller's array) and an output are never written; an Add whose result is larger
    than its dying input (broadcast) allocates."""
    node = helper.make_node
    nodes = [
        node("Relu", ["x"], ["r"]),
        node("Neg", ["r"], ["out"]),
        node("Abs", ["out"], ["u"]),
        node("Add", ["u", "wide"], ["y"]),
    ]
    inits = [_tensor("wide", RNG.standard_normal((4, 3)).astype(np.float32))]
    model = model_of(nodes, [vi("x", shape=[1, 3])], ["out", "y"], opset=14, initializers=inits)
    session = GraphSession(model)
    assert session._graph._plan.donating == 2  # Neg into r, Add into u (it falls back at run time)
    feeds = {"x": RNG.standard_normal((1, 3)).astype(np.float32)}
    x = feeds["x"].copy()
    result = session.run(feeds)
    np.testing.assert_array_equal(feeds["x"], x)
    for actual, expected in zip(result.values(), run_ort(model, feeds)):
        np.testing.assert_array_equal(actual, expected)


# ---------------------------------------------------------------- chains computed tile by tile


@pytest.mark.parametrize("tile", [50, 1 << 16])
def test_chains_tiled_give_the_same_bits(monkeypatch: pytest.MonkeyPatch, tile: int) -> None:
    """The HardSwish chain (Add, Clip, Mul, Div) is one step; with 50-element tiles its 336 values
    take 7 tiles, the last one partial; at the default tile size it is too small and runs node by
    node. The SiLU chain reads a per-channel constant (4, 1, 1): never tiled. Both give the bits of
    the observed (unfused, allocating) run and onnxruntime's values. (The compiled chains are
    left out here: numpy's tiles are under test.)"""
    from ovpool.engine import chains

    monkeypatch.setattr(chains, "chain_for", lambda dtype: None)
    monkeypatch.setattr(chains, "TILE", tile)
    tiled: list[tuple[int, ...]] = []
    run_tiles = chains._run_tiles
    monkeypatch.setattr(
        chains, "_run_tiles", lambda ops, args, out, block: (tiled.append(out.shape), run_tiles(ops, args, out, block))
    )
    model, feeds = _chain_model()
    session = GraphSession(model)
    labels = [step.label for step in session._graph._plan.steps]
    assert labels == [
        "node 'c' (Conv)",
        "node 'a' (Add) .. node 'h' (Div) (a chain of 4 element-wise nodes)",
        "node 's' (Sigmoid) .. node 'y' (Exp) (a chain of 5 element-wise nodes)",
    ]
    fast = session.run(feeds)["y"]
    assert tiled == ([(2, 4, 7, 6)] if tile == 50 else [])
    observed, _ = _observed(session, feeds)
    np.testing.assert_array_equal(fast, observed["y"])
    (expected,) = run_ort(model, feeds)
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-6)


_SCALARS = [0.0, -0.0, 3.0, 6.0, 0.5, -2.0, np.nan, np.inf]


@pytest.mark.skipif(
    __import__("ovpool.engine.native.compiled", fromlist=["chain_for"]).chain_for(np.dtype(np.float32)) is None,
    reason="ovpool's compiled kernels were not built here",
)
@examples(25)
@given(data=st.data())
def test_compiled_chains_give_the_bits_of_node_by_node(data: st.DataObject) -> None:
    """Chains of 1-5 Add, Sub, Mul, Div (the previous result on either side, the other operand x,
    a one-value constant or a constant of one value per plane of x's 64-300), Clip (Clip-6 attributes, or Clip-11 inputs with one omitted), Relu,
    HardSigmoid and HardSwish (rows that read the node's input again), Sqrt (of negatives too) and Pow by a constant 2, float32 or float64, over inputs holding NaN, infinities and signed zeros, run compiled
    (one call, blocks of 256, the extension's plain loops or its AVX2 ones): the observed run's
    values, node by node, zeros' signs included, and onnxruntime's in float32 (but for NaN clip
    bounds, where onnxruntime keeps x, and Clip-6 with min > max, which it refuses)."""
    from ovpool.engine import chains
    from ovpool.engine.native.compiled import plain_only

    compiled: list[int] = []
    run_compiled = chains._run_compiled
    double = data.draw(st.booleans())
    dtype, elem = (np.float64, onnx.TensorProto.DOUBLE) if double else (np.float32, onnx.TensorProto.FLOAT)
    opset = data.draw(st.sampled_from([10, 13, 14]))
    count = data.draw(st.integers(1, 5))
    planes, width = data.draw(st.integers(2, 12)), data.draw(st.integers(64, 300))
    width = max(width, -(-1024 // planes))  # at least 1024 positions
    nodes, inits = [], []
    previous = "x"
    nan_bound = crossed = False
    for k in range(count):
        kind = data.draw(st.sampled_from(["Add", "Sub", "Mul", "Div", "Clip", "Relu", "HardSigmoid", "HardSwish", "Sqrt", "Pow"]))
        out = "y" if k == count - 1 else f"t{k}"
        if kind == "HardSwish" and opset < 14:
            kind = "Relu"
        if kind in ("Relu", "HardSwish", "Sqrt"):
            nodes.append(helper.make_node(kind, [previous], [out]))
        elif kind == "Pow":  # by a constant 2: x * x
            inits.append(_tensor(f"e{k}", np.array(2, dtype)))
            nodes.append(helper.make_node(kind, [previous, f"e{k}"], [out]))
        elif kind == "HardSigmoid":
            alpha, beta = data.draw(st.sampled_from([0.2, 1 / 6, 0.5])), data.draw(st.sampled_from([0.5, 0.0, 0.1]))
            nodes.append(helper.make_node(kind, [previous], [out], alpha=alpha, beta=beta))
        elif kind == "Clip" and opset < 11:
            bounds = {name: data.draw(st.sampled_from([0.0, 6.0, -1.0])) for name in ("min", "max") if data.draw(st.booleans())}
            crossed = crossed or bounds.get("min", -np.inf) > bounds.get("max", np.inf)
            nodes.append(helper.make_node("Clip", [previous], [out], **bounds))
        elif kind == "Clip":
            names = []
            for bound in ("lo", "hi"):
                if data.draw(st.booleans()):
                    value = data.draw(st.sampled_from(_SCALARS))
                    nan_bound = nan_bound or np.isnan(value)
                    inits.append(_tensor(f"{bound}{k}", np.array(value, dtype)))
                    names.append(f"{bound}{k}")
                else:
                    names.append("")
            nodes.append(helper.make_node("Clip", [previous, *names] if names[-1] else [previous, names[0]], [out]))
        else:
            source = data.draw(st.sampled_from(["x", "scalar", "plane"]))
            other = "x" if source == "x" else f"c{k}"
            if source == "scalar":
                inits.append(_tensor(other, np.array(data.draw(st.sampled_from(_SCALARS)), dtype)))
            elif source == "plane":  # one value per plane (row), NaN, infinity or -0.0 among them
                inits.append(
                    _tensor(
                        other,
                        np.array(data.draw(st.lists(st.sampled_from(_SCALARS), min_size=planes, max_size=planes)), dtype).reshape(
                            planes, 1
                        ),
                    )
                )
            pair = [previous, other] if data.draw(st.booleans()) else [other, previous]
            nodes.append(helper.make_node(kind, pair, [out]))
        previous = out
    model = model_of(nodes, [vi("x", elem, [planes, width])], ["y"], opset=opset, initializers=inits)
    rng = drawn_rng(data.draw)
    x = (rng.standard_normal((planes, width)) * 8).astype(dtype)
    x.reshape(-1)[rng.integers(0, x.size, 6)] = [np.nan, np.inf, -np.inf, 0.0, -0.0, -3.0]
    session = GraphSession(model)
    plain_loops = data.draw(st.booleans())  # the extension's plain loops, or its AVX2 ones where there
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chains, "_run_compiled", lambda *a: (compiled.append(1), run_compiled(*a)))
        plain_only(plain_loops)
        try:
            fast = session.run({"x": x})["y"]
        finally:
            plain_only(False)
    slow = _observed(session, {"x": x})[0]["y"]
    if any("chain" in step.label for step in session._graph._plan.steps):
        assert compiled
    np.testing.assert_array_equal(fast, slow)
    numbers = ~np.isnan(slow)  # a NaN's sign is the hardware's choice of operand, in numpy too
    assert np.signbit(fast[numbers]).tolist() == np.signbit(slow[numbers]).tolist()
    if not double and not nan_bound and not crossed:  # onnxruntime's Clip keeps x where a bound is NaN, refuses min > max
        (expected,) = run_ort(model, {"x": x})
        finite = np.isfinite(expected)
        scale = float(np.abs(expected[finite]).max(initial=1.0))
        np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-6 * scale, equal_nan=True)


@pytest.mark.parametrize("compiled_here", [False, True])
@pytest.mark.parametrize(("side", "tile"), [(10, 50), (5, 50), (5, 1 << 16)])
def test_chain_with_per_channel_values_tiled_by_planes(
    monkeypatch: pytest.MonkeyPatch, side: int, tile: int, compiled_here: bool
) -> None:
    """Paddle's squeeze-excite tail: HardSigmoid of a (1, 8, 1, 1) gate, Mul by the features, Add
    the features, Add an (8, 1, 1) bias: one chain whose tiles are whole planes (100 cells: one a
    tile of 50; 25 cells: two), the HardSigmoid computed once over the 8 gate values. At the
    default tile size the tensor is too small and runs node by node. The observed run's bits and
    onnxruntime's values either way; compiled (where the extension is built), with one value per
    plane of 100 (side 10) or node by node (planes of 25, below ``COMPILED_PLANE``)."""
    from ovpool.engine import chains

    compiled: list[int] = []
    if compiled_here and chains.chain_for(np.dtype(np.float32)) is None:
        pytest.skip("ovpool's compiled kernels were not built here")
    if compiled_here:
        run_compiled = chains._run_compiled
        monkeypatch.setattr(chains, "_run_compiled", lambda *a: (compiled.append(a[-1]), run_compiled(*a)))
    else:
        monkeypatch.setattr(chains, "chain_for", lambda dtype: None)
    monkeypatch.setattr(chains, "TILE", tile)
    tiled: list[int] = []
    run_tiles = chains._run_tiles
    monkeypatch.setattr(
        chains, "_run_tiles", lambda ops, args, out, block: (tiled.append(block), run_tiles(ops, args, out, block))
    )
    w = RNG.standard_normal((8, 3, 1, 1)).astype(np.float32)
    bias = RNG.standard_normal((8, 1, 1)).astype(np.float32)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w"], ["c"]),
        node("HardSigmoid", ["g"], ["h"]),
        node("Mul", ["c", "h"], ["m"]),
        node("Add", ["c", "m"], ["a"]),
        node("Add", ["a", "bias"], ["y"]),
    ]
    inputs = [vi("x", shape=[1, 3, side, side]), vi("g", shape=[1, 8, 1, 1])]
    model = model_of(nodes, inputs, ["y"], opset=14, initializers=[_tensor("w", w), _tensor("bias", bias)])
    session = GraphSession(model)
    assert [step.label for step in session._graph._plan.steps][1:] == [
        "node 'h' (HardSigmoid) .. node 'y' (Add) (a chain of 4 element-wise nodes)"
    ]
    feeds = {
        "x": RNG.standard_normal((1, 3, side, side)).astype(np.float32),
        "g": RNG.standard_normal((1, 8, 1, 1)).astype(np.float32) * 4,
    }
    fast = session.run(feeds)["y"]
    by_planes = compiled_here and side * side >= chains.COMPILED_PLANE
    assert compiled == ([side * side] if by_planes else [])
    assert tiled == ([side * side] if tile == 50 and not by_planes else [])
    np.testing.assert_array_equal(fast, _observed(session, feeds)[0]["y"])
    (expected,) = run_ort(model, feeds)
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-6)


def test_plane_of_a_value_constant_over_planes() -> None:
    from ovpool.engine.chains import _plane_of

    assert _plane_of((96, 1, 1), (1, 96, 80, 80)) == 6400
    assert _plane_of((1, 96, 1, 1), (1, 96, 1, 80)) == 80
    assert _plane_of((2, 1), (2, 3)) == 3
    assert _plane_of((1, 96, 1, 1), (2, 96, 80, 80)) is None
    assert _plane_of((1, 96, 80, 1), (1, 96, 80, 80)) == 80
    assert _plane_of((1, 1, 80, 80), (1, 96, 80, 80)) is None
    assert _plane_of((1, 1, 1, 1, 1), (1, 96, 80, 80)) is None


@pytest.mark.skipif(
    __import__("ovpool.engine.native.compiled", fromlist=["chain_for"]).chain_for(np.dtype(np.float32)) is None,
    reason="ovpool's compiled kernels were not built here",
)
def test_compiled_chain_refuses_what_it_cannot_read() -> None:
    """The extension's ``chain`` checks its call before it reads anything: rows naming no
    argument, an unknown code, a last row that only saves, arguments of another dtype or length,
    non-contiguous or read-only buffers: a ValueError (or the buffer protocol's own error), never
    a read out of bounds. Good calls add, x + 3 over 8 values, and take square roots."""
    from ovpool.engine.native.compiled import chain_for

    chain = chain_for(np.dtype(np.float32))
    assert chain is not None
    x, three, out = np.arange(8, dtype=np.float32), np.array([3], np.float32), np.empty(8, np.float32)

    def rows(*values: int) -> np.ndarray:
        return np.array(values, np.int64).reshape(-1, 4)

    chain(out, 0, rows(1, 0, 1, 0), x, three)
    np.testing.assert_array_equal(out, x + 3)
    chain(out, 0, rows(7, 0, 0, 0), x)
    np.testing.assert_array_equal(out, np.sqrt(x))
    bad_calls = [
        (out, 0, rows(1, 0, 2, 0), x, three),  # argument 2 does not exist
        (out, 0, rows(1, -1, 0, 0), x),  # no previous result
        (out, 0, rows(1, 0, -2, 0), x),  # nothing saved
        (out, 0, rows(9, 0, 0, 0), x),  # no code 9
        (out, 0, rows(1, 0, 0, 0, 6, 0, 0, 0), x),  # ends on a save
        (out, 0, rows(5, 0, -1, 0), x),  # a clip bound that is not an argument
        (out, 0, rows(1, 0, 1, 0), x, np.arange(3, dtype=np.float32)),  # 3 values of 8
        (out, 4, rows(1, 0, 1, 0), x, np.arange(3, dtype=np.float32)),  # 3 planes of 4 in 8
        (out, 3, rows(1, 0, 0, 0), x),  # planes of 3 in 8
        (out, 0, rows(1, 0, 1, 0), x, np.array([3.0])),  # float64 into float32
        (out, 0, np.arange(4, dtype=np.int32), x),  # ops not int64
        (np.empty(8, np.int32), 0, rows(1, 0, 0, 0), x),  # out not float
    ]
    for call in bad_calls:
        with pytest.raises(ValueError):
            chain(*call)
    with pytest.raises((ValueError, BufferError)):
        chain(out, 0, rows(1, 0, 0, 0), np.arange(16, dtype=np.float32)[::2])
    frozen = np.empty(8, np.float32)
    frozen.flags.writeable = False
    with pytest.raises((ValueError, BufferError)):
        chain(frozen, 0, rows(1, 0, 0, 0), x)
    with pytest.raises(TypeError):
        chain(out, 0)


def test_compiled_chain_reads_a_new_one_value_argument_at_each_run() -> None:
    """A chain's one-value argument fed by the caller (a new array each run, where a constant is
    the same one): each run reads its own value."""
    node = helper.make_node
    model = model_of(
        [node("Add", ["x", "s"], ["a"]), node("Mul", ["a", "s"], ["y"])],
        [vi("x", shape=[4096]), vi("s", shape=[])],
        ["y"],
        opset=13,
    )
    session = GraphSession(model)
    x = np.arange(4096, dtype=np.float32)
    for value in (2.0, -3.0, 0.5):
        s = np.array(value, np.float32)
        np.testing.assert_array_equal(session.run({"x": x, "s": s})["y"], (x + s) * s)


def test_chain_with_an_omitted_input_and_float64(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clip with no ``min`` (an omitted input) in a float64 chain, tiled, written into the dying
    input of the chain: the observed run's bits; the caller's input untouched."""
    from ovpool.engine import chains

    monkeypatch.setattr(chains, "TILE", 7)
    node = helper.make_node
    nodes = [
        node("Neg", ["x"], ["n"]),
        node("Exp", ["n"], ["e"]),
        node("Clip", ["e", "", "hi"], ["k"]),
        node("Sub", ["k", "n"], ["y"]),
    ]
    inits = [_tensor("hi", np.array(2.5, np.float64))]
    model = model_of(nodes, [vi("x", onnx.TensorProto.DOUBLE, [5, 6])], ["y"], opset=13, initializers=inits)
    session = GraphSession(model)
    assert [step.label for step in session._graph._plan.steps] == [
        "node 'n' (Neg)",
        "node 'e' (Exp) .. node 'y' (Sub) (a chain of 3 element-wise nodes)",
    ]
    feeds = {"x": RNG.standard_normal((5, 6))}
    x = feeds["x"].copy()
    fast = session.run(feeds)["y"]
    np.testing.assert_array_equal(feeds["x"], x)
    np.testing.assert_array_equal(fast, _observed(session, feeds)[0]["y"])
    np.testing.assert_allclose(fast, np.minimum(np.exp(-x), 2.5) + x, rtol=1e-15)


@pytest.mark.parametrize("opset", since_opsets("HardSwish"))
def test_large_hard_swish_in_chunks_and_in_place(opset: int) -> None:
    """A HardSwish over 300000 values goes a chunk at a time; after a Relu it writes into the
    Relu's output. Both match onnxruntime and each other's bits."""
    node = helper.make_node
    nodes = [node("HardSwish", ["x"], ["h"]), node("Relu", ["x"], ["r"]), node("HardSwish", ["r"], ["y"])]
    model = model_of(nodes, [vi("x", shape=[1, 4, 300, 250])], ["h", "y"], opset=opset)
    session = GraphSession(model)
    assert session._graph._plan.donating == 1
    feeds = {"x": RNG.standard_normal((1, 4, 300, 250)).astype(np.float32) * 4}
    result = session.run(feeds)
    for actual, expected in zip(result.values(), run_ort(model, feeds)):
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(result["y"], np.where(feeds["x"] > 0, result["h"], 0))


def test_chains_across_branches_and_one_that_cannot_move(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two SiLU branches listed Sigmoid, Sigmoid, Mul, Mul become two chains, each where its Mul
    stood (the second takes the Add too). A Sigmoid whose input a Neg between it and its Mul frees
    (and overwrites in place) stays where it is. Same bits as node by node, onnxruntime's values."""
    from ovpool.engine import chains

    monkeypatch.setattr(chains, "TILE", 50)
    w = RNG.standard_normal((4, 2, 1, 1)).astype(np.float32)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w"], ["c1"]),
        node("Conv", ["x", "w"], ["c2"]),
        node("Conv", ["x", "w"], ["c3"]),
        node("Sigmoid", ["c1"], ["s1"]),
        node("Sigmoid", ["c2"], ["s2"]),
        node("Mul", ["c1", "s1"], ["m1"]),
        node("Mul", ["c2", "s2"], ["m2"]),
        node("Add", ["m1", "m2"], ["sum"]),
        node("Sigmoid", ["c3"], ["s3"]),
        node("Neg", ["c3"], ["n3"]),
        node("Mul", ["s3", "s3"], ["m3"]),
        node("Sub", ["sum", "m3"], ["d"]),
        node("Add", ["d", "n3"], ["y"]),
    ]
    model = model_of(nodes, [vi("x", shape=[1, 2, 10, 10])], ["y"], opset=14, initializers=[_tensor("w", w)])
    session = GraphSession(model)
    assert [step.label for step in session._graph._plan.steps][3:] == [
        "node 's1' (Sigmoid) .. node 'm1' (Mul) (a chain of 2 element-wise nodes)",
        "node 's2' (Sigmoid) .. node 'sum' (Add) (a chain of 3 element-wise nodes)",
        "node 's3' (Sigmoid)",
        "node 'n3' (Neg)",
        "node 'm3' (Mul) .. node 'y' (Add) (a chain of 3 element-wise nodes)",
    ]
    feeds = {"x": RNG.standard_normal((1, 2, 10, 10)).astype(np.float32)}
    fast = session.run(feeds)["y"]
    np.testing.assert_array_equal(fast, _observed(session, feeds)[0]["y"])
    (expected,) = run_ort(model, feeds)
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- drawn element-wise graphs

_UNARY = ("Relu", "Sigmoid", "Neg", "Exp", "Tanh", "HardSigmoid", "HardSwish", "Abs")
_BINARY = ("Add", "Sub", "Mul", "Div")


@st.composite
def _elementwise_graphs(draw: st.DrawFn) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A Relu of the input, then up to 8 element-wise nodes, each reading one of the last three
    values (branches) and maybe an earlier value, a scalar, a per-channel constant or a Reshape (a
    view) of an earlier value; some values are graph outputs too."""
    rng = drawn_rng(draw)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(1, 9)))
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inits = [
        _tensor("scalar", np.array(rng.uniform(0.5, 2), dtype)),
        _tensor("channel", rng.uniform(0.5, 2, (shape[1], 1, 1)).astype(dtype)),
        _tensor("shape", np.array(shape, np.int64)),
        _tensor("lo", np.array(-1.5, dtype)),
        _tensor("hi", np.array(2.5, dtype)),
    ]
    nodes = [helper.make_node("Relu", ["x"], ["v0"])]
    names = ["v0"]
    outputs = []
    for index in range(1, draw(st.integers(1, 8)) + 1):
        last, name = draw(st.sampled_from(names[-3:])), f"v{index}"
        kind = draw(st.sampled_from(["unary", "binary", "clip", "view"]))
        if kind == "unary":
            nodes.append(helper.make_node(draw(st.sampled_from(_UNARY)), [last], [name]))
        elif kind == "clip":
            nodes.append(helper.make_node("Clip", [last, "lo", "hi"], [name]))
        elif kind == "view":
            nodes.append(helper.make_node("Reshape", [draw(st.sampled_from(names)), "shape"], [name]))
        else:
            other = draw(st.sampled_from([*names, "scalar", "channel"]))
            pair = [last, other] if draw(st.booleans()) else [other, last]
            nodes.append(helper.make_node(draw(st.sampled_from(_BINARY)), pair, [name]))
        names.append(name)
        if draw(st.integers(0, 4)) == 0:
            outputs.append(name)
    model = model_of(nodes, [vi("x", elem, list(shape))], [*outputs, names[-1]], opset=14, initializers=inits)
    return model, {"x": rng.standard_normal(shape).astype(dtype) * 3}


@examples(12)
@given(case=_elementwise_graphs(), tile=st.sampled_from([7, 1 << 16]))
def test_drawn_graphs_give_the_bits_of_the_observed_run(case: tuple[onnx.ModelProto, dict[str, np.ndarray]], tile: int) -> None:
    """Whatever the plan writes in place or tiles (7-element tiles: every chain of 28 values and
    more is tiled), the outputs are the observed run's bits and the caller's input is untouched."""
    from ovpool.engine import chains

    model, feeds = case
    x = feeds["x"].copy()
    saved, chains.TILE = chains.TILE, tile
    try:
        session = GraphSession(model)
        fast = session.run(feeds)
        again = session.run(feeds)
    finally:
        chains.TILE = saved
    observed, _ = _observed(session, feeds)
    np.testing.assert_array_equal(feeds["x"], x)
    for name in observed:
        np.testing.assert_array_equal(fast[name], observed[name], err_msg=name)
        np.testing.assert_array_equal(again[name], observed[name], err_msg=name)


# ---------------------------------------------------------------- per-node cost


@pytest.mark.parametrize(("op", "since", "good", "bad"), [
    ("Add", 14, (np.float32, np.float32), (np.float32, np.int64)),
    ("Relu", 6, (np.float32,), (np.int32,)),
    ("Clip", 13, (np.float32, np.float32, np.float32), (np.float32, np.float32, np.float64)),
])  # fmt: skip
def test_remembered_dtypes_still_refuse_others(op: str, since: int, good: tuple[type, ...], bad: tuple[type, ...]) -> None:
    """The type check remembers dtypes that passed; other dtypes on a later call are still the
    node's error."""
    from ovpool.engine.ops.base import OpNode, lookup
    from ovpool.errors import ModelError

    row = lookup(op, since)
    assert row is not None
    kernel = row.factory(OpNode(name="n", op_type=op, since=since, opset=since, constants=(None,) * len(good)))
    for _ in range(2):
        kernel(*(np.ones((), t) for t in good))
    with pytest.raises(ModelError, match=f"node 'n' \\({op}-{since}\\): input"):
        kernel(*(np.ones((), t) for t in bad))


def test_quiet_kernels_run_under_the_plans_errstate() -> None:
    """The plan's element-wise kernels leave the floating-point state to the run loop: overflow
    (exp(1000) in Sigmoid of -1000, 3e38 * 3e38 in Mul) gives the IEEE values without a warning,
    in the plan, in an If branch, and from a kernel called on its own (its ``ignoring_fp`` form)."""
    import warnings

    from ovpool.engine.ops.base import OpNode, lookup

    branch = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["b"], name="square")], "then", [], [helper.make_empty_tensor_value_info("b")]
    )
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["s"], name="sigmoid"),
        helper.make_node("Mul", ["s", "x"], ["m"], name="mul"),
        helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch, else_branch=branch),
    ]
    model = model_of(nodes, [vi("x", shape=[2]), vi("c", onnx.TensorProto.BOOL, [])], ["m", "y"])
    session = GraphSession(model)
    assert session._graph._plan.quiet
    feeds = {"x": np.array([-1000, 3e38], np.float32), "c": np.array(True)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = session.run(feeds)
        row = lookup("Sigmoid", 13)
        assert row is not None
        alone = row.factory(OpNode(name="n", op_type="Sigmoid", since=13, opset=13, constants=(None,)))(feeds["x"])[0]
    np.testing.assert_array_equal(out["m"], np.array([-0.0, 3e38], np.float32))
    np.testing.assert_array_equal(out["y"], np.array([1e6, np.inf], np.float32))
    np.testing.assert_array_equal(alone, [0, 1])
