"""Loop-5 and TensorIterator-1 on the numpy executor against OpenVINO's CPU plugin at
``INFERENCE_PRECISION_HINT=f32``: IRs built with OpenVINO's Python API over hypothesis-drawn port
maps (sliced inputs on any axis, forward and backward, parts of 1 or 2; merged and invariant
inputs; concatenated and last-value outputs; Loop's trip count, condition and current iteration).
ONNX Loop and Scan converted by ovpool run through tests/ops/test_ops_control.py's ``check``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ovpool.engine.ir_executor import IrGraph
from ovpool.errors import ModelError

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8  # noqa: E402

pytestmark = pytest.mark.openvino
# Each example compiles a model on the CPU plugin: 5 in CI, many more with HYPOTHESIS_PROFILE=deep.
EXAMPLES = max(5, settings.default.max_examples // 12)
F32 = ov.Type.f32


def saved(outputs: list, params: list, folder: str) -> Path:
    xml = Path(folder) / "m.xml"
    ov.save_model(ov.Model(outputs, params), str(xml), compress_to_fp16=False)
    return xml


def cpu(xml: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(feeds)
    return [np.asarray(result[o]) for o in compiled.outputs]


def check(outputs: list, params: list, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """numpy's outputs against the CPU plugin's (same shapes and types, floats within 1e-5)."""
    with tempfile.TemporaryDirectory() as folder:
        xml = saved(outputs, params, folder)
        got = list(IrGraph.read(xml).run(feeds).values())
        want = cpu(xml, feeds)
    assert len(got) == len(want)
    for i, (value, expected) in enumerate(zip(got, want)):
        assert value.shape == expected.shape and value.dtype == expected.dtype, (i, value.shape, expected.shape)
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6, err_msg=f"output {i}")
    return got


def body_of(part_shape: list[int]) -> tuple:
    """Body(x, s, w): s' = s * 0.5 + x * w, y = x - s; x the part of a sliced input."""
    x = opset1.parameter(part_shape, F32, name="x")
    s = opset1.parameter(part_shape, F32, name="s")
    w = opset1.parameter([], F32, name="w")
    s_next = opset1.add(opset1.multiply(s, opset1.constant(np.float32(0.5))), opset1.multiply(x, w))
    y = opset1.subtract(x, s)
    return x, s, w, opset1.result(s_next), opset1.result(y)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=2),
    length=st.integers(1, 3),
    axis=st.integers(0, 2),
    part=st.integers(1, 2),
    backward=st.booleans(),
    out_axis=st.integers(0, 2),
    out_backward=st.booleans(),
    seed=st.integers(0, 99),
)
def test_tensor_iterator(shape, length, axis, part, backward, out_axis, out_backward, seed):
    """Sliced, merged and invariant inputs; concatenated outputs either way and a last value."""
    axis %= len(shape) + 1
    full = list(shape)
    full.insert(axis, length * part)
    part_shape = list(shape)
    part_shape.insert(axis, part)
    rng = np.random.default_rng(seed)
    feeds = {
        "X": rng.standard_normal(full).astype(np.float32),
        "S": rng.standard_normal(part_shape).astype(np.float32),
        "W": np.float32(rng.uniform(0.5, 2)),
    }
    X, S, W = (opset1.parameter(list(v.shape), F32, name=n) for n, v in feeds.items())
    x, s, w, s_next, y = body_of(part_shape)
    ti = opset8.tensor_iterator()
    ti.set_function(ov.Model([s_next, y], [x, s, w]))
    start, end, stride = (-1, 0, -part) if backward else (0, -1, part)
    ti.set_sliced_input(x, X.output(0), start, stride, part, end, axis)
    ti.set_merged_input(s, S.output(0), s_next.output(0))
    ti.set_invariant_input(w, W.output(0))
    out_axis %= len(part_shape)
    out_part = part_shape[out_axis]
    o_start, o_end, o_stride = (-1, 0, -out_part) if out_backward else (0, -1, out_part)
    last = ti.get_iter_value(s_next.output(0), -1)
    joined = ti.get_concatenated_slices(y.output(0), o_start, o_stride, out_part, o_end, out_axis)
    check([last, joined], [X, S, W], feeds)


def loop_model(with_condition: bool) -> tuple[list, list]:
    """Loop(M, cond, v0): v' = v * 0.5 + i, the condition sum(v') < limit (or kept), scans v' and i."""
    M = opset1.parameter([], ov.Type.i64, name="M")
    C = opset1.parameter([], ov.Type.boolean, name="C")
    V = opset1.parameter([2], F32, name="V")
    limit = opset1.parameter([], F32, name="L")
    i = opset1.parameter([], ov.Type.i64, name="i")
    v = opset1.parameter([2], F32, name="v")
    bound = opset1.parameter([], F32, name="bound")
    v_next = opset1.add(opset1.multiply(v, opset1.constant(np.float32(0.5))), opset1.convert(i, "f32"))
    keep = (
        opset1.less(opset1.reduce_sum(v_next, opset1.constant(np.int64(0))), bound) if with_condition else opset1.constant(True)
    )
    r_cond, r_v = opset1.result(keep), opset1.result(v_next)
    r_i = opset1.result(opset1.unsqueeze(i, opset1.constant(np.int64(0))))
    loop = opset8.loop(M.output(0), C.output(0))
    loop.set_function(ov.Model([r_cond, r_v, r_i], [i, v, bound]))
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(v, V.output(0), r_v.output(0))
    loop.set_invariant_input(bound, limit.output(0))
    outputs = [loop.get_iter_value(r_v.output(0), -1), loop.get_concatenated_slices(r_i.output(0), 0, 1, 1, -1, 0)]
    return outputs, [M, C, V, limit]


@pytest.mark.parametrize("with_condition", [False, True])
@pytest.mark.parametrize("trips, start", [(4, True), (1, True), (-1, True), (6, False)])
def test_loop(with_condition, trips, start):
    """Trip count (negative: none, the body's condition ends it), the initial and body conditions,
    the current iteration, a merged value and a concatenated scan."""
    if trips < 0 and not with_condition:
        return  # neither bound ends it
    outputs, params = loop_model(with_condition)
    feeds = {"M": np.int64(trips), "C": np.bool_(start), "V": np.float32([1, 2]), "L": np.float32(12)}
    check(outputs, params, feeds)


def test_loop_by_example():
    """Trip count 3 on v0 = [1, 2]: v = [0.5, 1], then [1.25, 1.5], then [2.625, 2.75]; i = 0, 1, 2."""
    outputs, params = loop_model(False)
    with tempfile.TemporaryDirectory() as folder:
        got = IrGraph.read(saved(outputs, params, folder)).run(
            {"M": np.int64(3), "C": np.bool_(True), "V": np.float32([1, 2]), "L": np.float32(0)}
        )
    v, i = got.values()
    assert v.tolist() == [2.625, 2.75] and i.tolist() == [0, 1, 2]


def test_tensor_iterator_backward_by_example():
    """A [4] input sliced backward (start -1, end 0, stride -1) feeds 3, 2, 1, 0; the running sum
    concatenated forward is [3, 5, 6, 6]."""
    X = opset1.parameter([4], F32, name="X")
    S = opset1.parameter([1], F32, name="S")
    x, s = opset1.parameter([1], F32, name="x"), opset1.parameter([1], F32, name="s")
    total = opset1.result(opset1.add(s, x))
    ti = opset8.tensor_iterator()
    ti.set_function(ov.Model([total], [x, s]))
    ti.set_sliced_input(x, X.output(0), -1, -1, 1, 0, 0)
    ti.set_merged_input(s, S.output(0), total.output(0))
    (joined,) = check(
        [ti.get_concatenated_slices(total.output(0), 0, 1, 1, -1, 0)],
        [X, S],
        {"X": np.float32([0, 1, 2, 3]), "S": np.float32([0])},
    )
    assert joined.tolist() == [3, 5, 6, 6]


def test_tensor_iterator_stride_other_than_part_size_is_the_core_count(tmp_path):
    """Stride 1 with parts of 2 on [6] (start 0, end -1): OpenVINO's core counts (|end - start| + 1)
    // part_size = 3 iterations (the IR declares [6] for the parts concatenated), which take [0, 1],
    [1, 2], [2, 3]; numpy runs that, the CPU plugin refuses to compile it (it counts 6 for the
    input, one per stride, and 3 for the output)."""
    X = opset1.parameter([6], F32, name="X")
    x = opset1.parameter([2], F32, name="x")
    scaled = opset1.result(opset1.multiply(x, opset1.constant(np.float32(10))))
    ti = opset8.tensor_iterator()
    ti.set_function(ov.Model([scaled], [x]))
    ti.set_sliced_input(x, X.output(0), 0, 1, 2, -1, 0)
    xml = saved([ti.get_concatenated_slices(scaled.output(0), 0, 2, 2, -1, 0)], [X], str(tmp_path))
    assert list(ov.Core().read_model(str(xml)).outputs[0].get_shape()) == [6]
    (joined,) = IrGraph.read(xml).run({"X": np.arange(6, dtype=np.float32)}).values()
    assert joined.tolist() == [0, 10, 10, 20, 20, 30]
    with pytest.raises(RuntimeError, match="iterations numbers"):
        cpu(xml, {"X": np.arange(6, dtype=np.float32)})


def test_bad_port_map_names_the_layer(tmp_path):
    """A port map naming a body layer that does not exist: one line naming the layer."""
    X = opset1.parameter([4], F32, name="X")
    S = opset1.parameter([1], F32, name="S")
    x, s = opset1.parameter([1], F32, name="x"), opset1.parameter([1], F32, name="s")
    total = opset1.result(opset1.add(s, x))
    ti = opset8.tensor_iterator()
    ti.set_function(ov.Model([total], [x, s]))
    ti.set_sliced_input(x, X.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(s, S.output(0), total.output(0))
    ti.set_friendly_name("running")
    xml = saved([ti.get_iter_value(total.output(0), -1)], [X, S], str(tmp_path))
    text = xml.read_text()
    broken = text.replace('internal_layer_id="0"', 'internal_layer_id="77"', 1)
    xml.write_text(broken)
    with pytest.raises(ModelError, match=r"TensorIterator 'running' .*port_map names body Parameter 77"):
        IrGraph.read(xml)


def test_port_map_attribute_not_an_integer(tmp_path):
    """A port map's ``axis="x"``: one line naming the body and the attribute."""
    X = opset1.parameter([4], F32, name="X")
    x = opset1.parameter([1], F32, name="x")
    doubled = opset1.result(opset1.multiply(x, opset1.constant(np.float32(2))))
    ti = opset8.tensor_iterator()
    ti.set_function(ov.Model([doubled], [x]))
    ti.set_sliced_input(x, X.output(0), 0, 1, 1, -1, 0)
    xml = saved([ti.get_concatenated_slices(doubled.output(0), 0, 1, 1, -1, 0)], [X], str(tmp_path))
    xml.write_text(xml.read_text().replace('axis="0"', 'axis="x"', 1))
    with pytest.raises(ModelError, match=r"TensorIterator .* body: port_map input attribute 'axis' is 'x', not an integer"):
        IrGraph.read(xml)


def invariant_loop() -> tuple[list, list]:
    """Loop(M) over x (1, 3) with A (6,) and W (3, 2) read by its body as OpenVINO's ONNX frontend
    passes outer values: ``a`` invariant, ``w`` merged with a Result of itself. Each step emits
    y = x @ w + sum(Relu(reshape(a, (2, 3))) @ w) and carries x + 0 (as paddle2onnx does)."""
    M, C = opset1.parameter([], ov.Type.i64, name="M"), opset1.parameter([], ov.Type.boolean, name="C")
    X, A, W = (opset1.parameter(shape, F32, name=name) for name, shape in (("X", [1, 3]), ("A", [6]), ("W", [3, 2])))
    i = opset1.parameter([], ov.Type.i64, name="i")
    x, a, w = (opset1.parameter(shape, F32, name=name) for name, shape in (("x", [1, 3]), ("a", [6]), ("w", [3, 2])))
    h = opset1.relu(opset1.reshape(a, opset1.constant(np.int64([2, 3])), False))
    s = opset1.reduce_sum(opset1.matmul(h, w, False, False), opset1.constant(np.int64([0, 1])), False)
    y = opset1.result(opset1.add(opset1.matmul(x, w, False, False), s))
    r_x, r_w = opset1.result(opset1.add(x, opset1.constant(np.float32(0)))), opset1.result(w)
    r_cond = opset1.result(opset1.constant(True))
    loop = opset8.loop(M.output(0), C.output(0))
    loop.set_function(ov.Model([r_cond, y, r_x, r_w], [i, x, a, w]))
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(x, X.output(0), r_x.output(0))
    loop.set_invariant_input(a, A.output(0))
    loop.set_merged_input(w, W.output(0), r_w.output(0))
    outputs = [loop.get_concatenated_slices(y.output(0), 0, 1, 1, -1, 0), loop.get_iter_value(r_x.output(0), -1)]
    return outputs, [M, C, X, A, W]


def test_loop_body_hoisted_and_remembered_gives_the_plain_bits(monkeypatch):
    """The Reshape, ReLU, MatMul and ReduceSum of the unchanged ``a`` and ``w`` run once for the
    loop's 6 steps; x0 holds -0.0, which x + 0 turns into 0.0, so x @ w is computed at the first
    two steps and given back at the other four (``ovpool.engine.repeat``). The outputs agree with
    OpenVINO's CPU plugin and are, bit for bit, those of the body run whole at every step."""
    from ovpool.engine import ir_executor, repeat

    hoisted: list[list[str]] = []
    made: list[repeat.Remembered] = []
    original_hoisting, original_init = ir_executor.hoisting, repeat.Remembered.__init__

    def spy_hoisting(*args):
        result = original_hoisting(*args)
        if result is not None:
            hoisted.append([step.label.split("(")[-1].split("-")[0] for step in result[0].steps])
        return result

    def spy_init(self, *args):
        original_init(self, *args)
        made.append(self)

    monkeypatch.setattr(ir_executor, "hoisting", spy_hoisting)
    monkeypatch.setattr(repeat.Remembered, "__init__", spy_init)
    outputs, params = invariant_loop()
    feeds = {
        "M": np.int64(6),
        "C": np.bool_(True),
        "X": np.float32([[-0.0, 1.5, -2.0]]),
        "A": np.linspace(-2, 3, 6, dtype=np.float32),
        "W": np.arange(6, dtype=np.float32).reshape(3, 2) - 2.5,
    }
    got = check(outputs, params, feeds)
    assert hoisted == [["Reshape", "ReLU", "MatMul", "ReduceSum"]]
    assert [(r.calls, r.repeats) for r in made] == [(2, 4)]
    monkeypatch.setattr(ir_executor._Graph, "repeated", lambda self: self)  # the body run whole at every step
    with tempfile.TemporaryDirectory() as folder:
        plain = list(IrGraph.read(saved(outputs, params, folder)).run(feeds).values())
    assert len(made) == 1  # no body was run repeated
    for value, expected in zip(got, plain):
        assert value.dtype == expected.dtype and value.tobytes() == expected.tobytes()
