"""OpenVINO 2026.4 defects on ONNX's backend node cases that ``ovpool.ov.frontend_fixes`` fixes
(issue 31, item 2): signed BitShift-28, SpaceToDepth's CRD mode, GRU/LSTM/RNN with ``layout=1``.

For each: a repro that stock OpenVINO (its own ONNX frontend, CPU at f32) still computes the
minimal model otherwise (when an upgrade fixes it, that test fails: the row may go); the fixed
path at every since-version of the op against onnxruntime or the schema computed here; and ONNX's
backend node cases of the op through ovpool's conversion on OpenVINO CPU and the IR on numpy
(``on_openvino.outcome_of``: CPU against the case's data, numpy against CPU)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from harness import _case_value, drawn_rng, examples, feeds_of, make_model, node_case_params, opsets, run_ort, since_opsets
from hypothesis import given
from hypothesis import strategies as st
from on_openvino import outcome_of
from onnx import helper

import ovpool
from ovpool.errors import OvpoolError
from ovpool.ov.from_onnx import onnx_to_ov_model

ov = pytest.importorskip("openvino")

pytestmark = pytest.mark.openvino

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def stock(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model read by OpenVINO's own ONNX frontend (no ovpool), on CPU at f32: its outputs."""
    core = ov.Core()
    with tempfile.TemporaryDirectory(prefix="ovpool-stock-") as folder:
        path = Path(folder) / "model.onnx"
        onnx.save_model(model, str(path))
        compiled = core.compile_model(core.read_model(str(path)), "CPU", F32)
        results = compiled(feeds)
        return [np.array(results[output]) for output in compiled.outputs]


def agrees(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], expected: list[Any], rtol: float = 1e-5, atol: float = 1e-6
) -> None:
    """``model`` converted by ovpool gives ``expected`` on OpenVINO CPU at f32, and its IR on numpy
    gives what OpenVINO CPU gives."""
    case, outcome, stage, detail = outcome_of(model, feeds, expected, rtol, atol)
    assert outcome == "agrees", f"{case.describe()}: {stage}: {detail}"


def node_case_agrees(case: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Every data set of ONNX's node test ``case`` through ovpool's conversion (``agrees``)."""
    for inputs, expected in case.data_sets:
        feeds = {info.name: _case_value(value) for info, value in zip(case.model.graph.input, inputs)}
        agrees(case.model, feeds, [_case_value(e) for e in expected], rtol, atol)


# --- BitShift-28 of signed integers ------------------------------------------------------------------


def _shifted(x: np.ndarray, s: np.ndarray, left: bool) -> np.ndarray:
    """BitShift-28's schema with Python integers: a signed right shift is arithmetic, a left shift
    keeps the type's low bits (as two's complement); a shift that is negative or by the width or
    more gives what the sign extension alone gives: -1 for a right shift of a negative x, else 0."""
    width = x.dtype.itemsize * 8
    out = []
    for a, b in np.broadcast(x, s):
        a, b = int(a), int(b)
        if not 0 <= b < width:
            out.append(-1 if (a < 0 and not left) else 0)
        elif left:
            low = (a << b) % 2**width
            out.append(low - 2**width if low >= 2 ** (width - 1) else low)
        else:
            out.append(a >> b)
    return np.array(out, x.dtype).reshape(np.broadcast(x, s).shape)


def test_stock_openvino_shifts_signed_integers_otherwise() -> None:
    """The repro: int8 -1 >> 1 is 0 (ONNX: -1) and 64 << 1 is 127 (ONNX wraps: -128)."""
    x, s = np.array([-1, 64], np.int8), np.array([1, 1], np.int8)
    for direction, want in (("RIGHT", [-1, 32]), ("LEFT", [-2, -128])):
        model = make_model("BitShift", 28, [x, s], {"direction": direction})
        assert _shifted(x, s, direction == "LEFT").tolist() == want
        (got,) = stock(model, feeds_of(model, [x, s]))
        assert got.tolist() != want, f"stock OpenVINO now shifts {direction} right: the signed BitShift row may go"


@pytest.mark.parametrize("opset", since_opsets("BitShift", lowest=28, highest=28))
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@examples(3)
@given(data=st.data())
def test_signed_bit_shift_is_the_schema(opset: int, dtype: type, direction: str, data: st.DataObject) -> None:
    """BitShift-28 of int8, int16, int32 (onnxruntime has no opset 28) against the schema computed
    with Python integers, shifts of -1, 0, width - 1, width, width + 1 and drawn ones included."""
    rng = drawn_rng(data.draw)
    info = np.iinfo(dtype)
    width = info.bits
    x = rng.integers(info.min, info.max, 12, endpoint=True, dtype=np.int64).astype(dtype)
    x[:4] = [-1, info.min, info.max, 2 ** (width - 2)]
    shifts = [-1, 0, width - 1, width, width + 1, *rng.integers(0, width, 7)]
    s = np.array(shifts, np.int64).clip(info.min, info.max).astype(dtype)[: x.size]
    model = make_model("BitShift", opset, [x, s], {"direction": direction})
    agrees(model, feeds_of(model, [x, s]), [_shifted(x, s, direction == "LEFT")])


@pytest.mark.parametrize("case", node_case_params(["BitShift"]))
def test_bit_shift_node_cases_through_openvino(case: Any) -> None:
    node_case_agrees(case)


# --- SpaceToDepth-28, mode="CRD" ---------------------------------------------------------------------


def _space_to_depth(x: np.ndarray, block: int, mode: str) -> np.ndarray:
    """SpaceToDepth-28's schema, the inverse of DepthToSpace's formula in the same mode: DCR
    reshapes to [N, C, H/b, b, W/b, b] and transposes to (0, 3, 5, 1, 2, 4), CRD to (0, 1, 3, 5, 2, 4)."""
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // block, block, w // block, block)
    order = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    return blocks.transpose(order).reshape(n, c * block * block, h // block, w // block)


def test_stock_openvino_computes_crd_as_dcr() -> None:
    """The repro: 2 channels of 2 x 2, blocksize 2: OpenVINO's CRD output is the DCR one."""
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    model = make_model("SpaceToDepth", 28, [x], {"blocksize": 2, "mode": "CRD"})
    (got,) = stock(model, feeds_of(model, [x]))
    assert not np.array_equal(got, _space_to_depth(x, 2, "CRD")), "stock OpenVINO now computes CRD: the row may go"
    np.testing.assert_array_equal(got, _space_to_depth(x, 2, "DCR"))


@pytest.mark.parametrize("opset", since_opsets("SpaceToDepth", lowest=28, highest=28))
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("static", [True, False])
@examples(3)
@given(data=st.data())
def test_space_to_depth_modes_are_the_schema(opset: int, mode: str, static: bool, data: st.DataObject) -> None:
    """Both modes against the schema, on static dims and on dims known only at run time."""
    rng = drawn_rng(data.draw)
    block = data.draw(st.integers(1, 3))
    dims = (
        data.draw(st.integers(1, 3)),
        data.draw(st.integers(1, 4)),
        block * data.draw(st.integers(1, 3)),
        block * data.draw(st.integers(1, 3)),
    )
    x = rng.standard_normal(dims).astype(np.float32)
    model = make_model("SpaceToDepth", opset, [x], {"blocksize": block, "mode": mode})
    if not static:
        for i, dim in enumerate(model.graph.input[0].type.tensor_type.shape.dim):
            dim.dim_param = f"d{i}"
    agrees(model, feeds_of(model, [x]), [_space_to_depth(x, block, mode)])


@pytest.mark.parametrize("case", node_case_params(["SpaceToDepth"]))
def test_space_to_depth_node_cases_through_openvino(case: Any) -> None:
    node_case_agrees(case)


# --- RNN, GRU, LSTM with layout=1 --------------------------------------------------------------------


def test_stock_openvino_computes_batch_first_gru_otherwise() -> None:
    """The repro: a GRU-14 of 2 batches, 2 steps, hidden size 1 at layout=1 against onnxruntime's
    layout-0 GRU on the inputs swapped."""
    x = np.array([[[1.0], [2.0]], [[3.0], [4.0]]], np.float32)
    w, r = np.full((1, 3, 1), 0.5, np.float32), np.full((1, 3, 1), 0.25, np.float32)
    sequence_first = make_model("GRU", 14, [x.swapaxes(0, 1), w, r], {"hidden_size": 1}, n_outputs=2)
    expected = run_ort(sequence_first, feeds_of(sequence_first, [x.swapaxes(0, 1), w, r]))
    model = make_model("GRU", 14, [x, w, r], {"hidden_size": 1, "layout": 1}, n_outputs=2)
    y, _ = stock(model, feeds_of(model, [x, w, r]))
    assert not np.allclose(y, expected[0].transpose(2, 0, 1, 3), atol=1e-3), (
        "stock OpenVINO now computes layout=1: the row may go"
    )


@pytest.mark.parametrize(("op", "opset"), [(op, opset) for op in ("RNN", "GRU", "LSTM") for opset in since_opsets(op, lowest=14)])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("lengths", [None, [3, 1, 2]])
def test_batch_first_recurrences_are_the_sequence_first_ones_transposed(
    op: str, opset: int, direction: str, lengths: list[int] | None
) -> None:
    """layout=1 (onnxruntime has no batch-first kernel) against onnxruntime's layout-0 node on the
    inputs swapped, its outputs swapped back: Y by (2, 0, 1, 3), Y_h and Y_c by (1, 0, 2)."""
    from test_ops_recurrent import _inputs

    seq_first = _inputs(op, np.random.default_rng(5), direction, 3, 3, 2, 3, lengths=lengths, initial=True)
    n = 3 if op == "LSTM" else 2
    attrs = {"hidden_size": 3, "direction": direction}
    model = make_model(op, opset, seq_first, attrs, n_outputs=n)
    expected = run_ort(model, feeds_of(model, seq_first))
    batch_first = [None if v is None else (v.swapaxes(0, 1) if i in (0, 5, 6) else v) for i, v in enumerate(seq_first)]
    model = make_model(op, opset, batch_first, {**attrs, "layout": 1}, n_outputs=n)
    want = [expected[0].transpose(2, 0, 1, 3), *(e.swapaxes(0, 1) for e in expected[1:])]
    agrees(model, feeds_of(model, batch_first), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", node_case_params(["RNN", "GRU", "LSTM"]))
def test_recurrent_node_cases_through_openvino(case: Any) -> None:
    """Every case agrees, but LSTM's peepholes, which ovpool refuses by name (an earlier row)."""
    if case.name == "test_lstm_with_peepholes":
        inputs, expected = case.data_sets[0]
        feeds = {info.name: _case_value(value) for info, value in zip(case.model.graph.input, inputs)}
        _, outcome, _, detail = outcome_of(case.model, feeds, [_case_value(e) for e in expected], 1e-5, 1e-5)
        assert outcome == "refused" and "peepholes" in detail, detail
        return
    node_case_agrees(case, rtol=1e-5, atol=1e-5)


# --- Tile with repeats known only at run time --------------------------------------------------------


def _tile_of_shape(x: np.ndarray, repeats: np.ndarray, opset: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Tile(x, Shape(r)) with ``r`` a graph input of dims ``repeats``, not static in the model: the
    repeats computed at run time."""
    r = np.zeros(tuple(int(v) for v in repeats), np.float32)
    graph = helper.make_graph(
        [helper.make_node("Shape", ["r"], ["reps"], name="reps"), helper.make_node("Tile", ["x", "reps"], ["y"], name="tile")],
        "g",
        [
            helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape)),
            helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, [f"r{i}" for i in range(r.ndim)]),
        ],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, {"x": x, "r": r}


def test_stock_openvino_leaves_a_runtime_tile_uninitialised() -> None:
    """The repro: repeats [7, 6, 4, 2] of a [2, 3, 4, 5] input, from a graph input and from Shape."""
    x = np.random.default_rng(0).random((2, 3, 4, 5)).astype(np.float32) + 1
    repeats = np.array([7, 6, 4, 2], np.int64)
    model = make_model("Tile", 13, [x, repeats], {})
    (got,) = stock(model, feeds_of(model, [x, repeats]))
    assert not np.array_equal(got, np.tile(x, repeats)), "stock OpenVINO now tiles runtime repeats right: the row may go"
    model, feeds = _tile_of_shape(x, repeats, 13)
    (got,) = stock(model, feeds)
    assert not np.array_equal(got, np.tile(x, repeats)), "stock OpenVINO now tiles Shape repeats right: the row may go"


@pytest.mark.parametrize("opset", since_opsets("Tile", lowest=6))
@pytest.mark.parametrize("source", ["input", "shape"])
@examples(4)
@given(data=st.data())
def test_tile_of_runtime_repeats_is_onnxruntimes(opset: int, source: str, data: st.DataObject) -> None:
    """Repeats from a graph input or Shape of one, against onnxruntime: ranks 0 to 4, repeats of 0
    included, and the repro's large output."""
    rng = drawn_rng(data.draw)
    if data.draw(st.booleans()):
        dims, repeats = (2, 3, 4, 5), [7, 6, 4, 2]
    else:
        dims = tuple(data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4)))
        repeats = data.draw(st.lists(st.integers(0, 3), min_size=len(dims), max_size=len(dims)))
    x = rng.standard_normal(dims).astype(np.float32)
    reps = np.array(repeats, np.int64)
    if source == "input":
        model = make_model("Tile", opset, [x, reps], {})
        feeds = feeds_of(model, [x, reps])
    else:
        model, feeds = _tile_of_shape(x, reps, opset)
    agrees(model, feeds, run_ort(model, feeds))


@pytest.mark.parametrize("case", node_case_params(["Tile"]))
def test_tile_node_cases_through_openvino(case: Any) -> None:
    node_case_agrees(case)


# --- DFT-20 ------------------------------------------------------------------------------------------


def _dft_model(
    opset: int, dims: tuple[int, ...], attrs: dict[str, int], axis: int | None, length: int | None, axis_source: str
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One DFT node of x (graph input), dft_length (a constant, when given) and the axis: at DFT-17
    the attribute, at DFT-20 an input (a graph input, a constant) or omitted (-2)."""
    x = np.random.default_rng(sum(dims)).standard_normal(dims).astype(np.float32)
    inputs: list[Any] = [x]
    constant = set()
    if opset >= 20:
        inputs.append(None if length is None else np.array(length, np.int64))
        constant.add(1)
        if axis is not None:
            inputs.append(np.array(axis, np.int64))
            if axis_source == "constant":
                constant.add(2)
    else:
        attrs = {**attrs, "axis": 1 if axis is None else axis}
        inputs.append(None if length is None else np.array(length, np.int64))
        constant.add(1)
    model = make_model("DFT", opset, inputs, attrs, constant=tuple(constant))
    return model, feeds_of(model, inputs)


def test_stock_openvino_ignores_a_runtime_dft_axis_and_misshapes_onesided() -> None:
    """The repro: DFT-20 of [1, 3, 4, 1] over the axis 2 fed at run time gives the transform over
    axis 1's values' shape... (other values), and rfft over axis 1 a rank-5 output."""
    model, feeds = _dft_model(20, (1, 3, 4, 1), {}, 2, None, "input")
    expected = run_ort(model, feeds)
    (got,) = stock(model, feeds)
    assert not np.allclose(got, expected[0], atol=1e-4), "stock OpenVINO now reads the axis: the DFT-20 row may go"
    model, feeds = _dft_model(20, (1, 4, 3, 1), {"onesided": 1}, 1, None, "input")
    (got,) = stock(model, feeds)
    assert got.shape != run_ort(model, feeds)[0].shape, "stock OpenVINO now shapes rfft right: the DFT-20 row may go"


@pytest.mark.parametrize("opset", since_opsets("DFT", lowest=17, highest=20))
@pytest.mark.parametrize("mode", ["dft", "inverse", "rfft", "irfft"])
@pytest.mark.parametrize("axis_source", ["input", "constant", "omitted"])
@examples(6)
@given(data=st.data())
def test_dft_is_onnxruntimes(opset: int, mode: str, axis_source: str, data: st.DataObject) -> None:
    """Every since-version against onnxruntime: real and complex inputs, each axis (negative ones
    from DFT-20), dft_length omitted, shorter or longer; at DFT-17 the axis is the attribute (an
    irfft of one bin without a dft_length is of length 0, which OpenVINO CPU's IRDFT dies computing)."""
    if opset < 20 and axis_source != "input":
        return  # DFT-17's axis is an attribute: one form
    rank = data.draw(st.integers(3, 4))
    dims = [data.draw(st.integers(1, 5)) for _ in range(rank - 1)]
    complex_input = mode in ("inverse", "irfft") or (mode == "dft" and data.draw(st.booleans()))
    dims.append(2 if complex_input else 1)
    axis = None if axis_source == "omitted" else data.draw(st.integers(1, rank - 2))
    if axis is not None and opset >= 20 and data.draw(st.booleans()):
        axis -= rank
    along = dims[(axis if axis is not None else -2) % rank]
    length = data.draw(st.sampled_from([None, max(1, along - 1), along + 2]))
    attrs = {"inverse": int(mode in ("inverse", "irfft")), "onesided": int(mode in ("rfft", "irfft"))}
    model, feeds = _dft_model(opset, tuple(dims), attrs, axis, length, axis_source)
    expected = run_ort(model, feeds)
    if mode == "irfft" and length is not None:
        expected = [_irfft_schema(feeds["x0"], length, (axis if axis is not None else -2) % rank)]
    agrees(model, feeds, expected, rtol=1e-4, atol=1e-4)


def _irfft_schema(x: np.ndarray, length: int, axis: int) -> np.ndarray:
    """DFT's irfft (onesided, inverse) of a given dft_length: the real signal of that length whose
    one-sided spectrum is the input's first ``length // 2 + 1`` values along ``axis`` (zero-padded
    when fewer), Hermitian-extended, 1/length scaled; numpy's ``irfft(n=length)``, as ONNX's
    reference computes it. onnxruntime 1.31 reads the input otherwise when the length is not
    2 * (m - 1): x [1, 2, 2] at length 1 gives -0.248 where the schema's DC term gives -0.802."""
    signal = x[..., 0].astype(np.float64) + 1j * x[..., 1].astype(np.float64)
    return np.fft.irfft(signal, n=length, axis=axis)[..., None].astype(np.float32)


@pytest.mark.parametrize("case", node_case_params(["DFT"]))
def test_dft_node_cases_through_openvino(case: Any) -> None:
    """Float32 transforms of 10 values whose sums reach 450: within 5e-4 absolute, about 2**-20
    of that (the cases' zeros come out near 6e-5, test_dft_axis's -3.63271 as -3.63257)."""
    node_case_agrees(case, rtol=1e-5, atol=5e-4)


# --- QuantizeLinear with a scale or zero point fed at run time ---------------------------------------


def test_stock_openvino_adds_a_runtime_zero_point_before_rounding() -> None:
    """The repro: uint16 3.0 over scale 2 at zero point 32767, both fed: round(32768.5) = 32768
    where ONNX gives round(1.5) + 32767 = 32769."""
    inputs = [np.array([3.0, 1.0], np.float32), np.float32(2.0), np.uint16(32767)]
    model = make_model("QuantizeLinear", 21, inputs, {})
    assert run_ort(model, feeds_of(model, inputs))[0].tolist() == [32769, 32767]
    (got,) = stock(model, feeds_of(model, inputs))
    assert got.tolist() != [32769, 32767], "stock OpenVINO now rounds before the zero point: the row may go"


@pytest.mark.parametrize("opset", opsets("QuantizeLinear"))
@pytest.mark.parametrize("constant", [(), (2,), (1,)])
@examples(3)
@given(data=st.data())
def test_quantize_linear_of_runtime_scales_is_onnxruntimes(opset: int, constant: tuple[int, ...], data: st.DataObject) -> None:
    """Scale and zero point fed (or one a constant), per tensor or per axis (13+), 8-bit and from
    21 16-bit types, at every since-version onnxruntime runs, against onnxruntime. The scales are
    powers of two, so that OpenVINO CPU's division (1 ulp off on about a quarter of float32
    quotients otherwise: the CPU deviation row of QuantizeLinear) is exact: x on the ties k + 0.5
    and drawn values. QuantizeLinear-10 has no Round to lower to: OpenVINO's conversion, warned of."""
    rng = drawn_rng(data.draw)
    kinds = [np.uint8, np.int8] + ([np.uint16, np.int16] if opset >= 21 else [])
    kind = data.draw(st.sampled_from(kinds))
    per_axis = opset >= 13 and data.draw(st.booleans())
    dims = (2, 3, 4)
    count = dims[1] if per_axis else 1
    scale = (2.0 ** rng.integers(-3, 3, count)).astype(np.float32)
    info = np.iinfo(kind)
    zero = rng.integers(max(info.min, -300), min(info.max, 40000), count, endpoint=True).astype(kind)
    ties = (rng.integers(-40, 40, dims) + 0.5).astype(np.float32) * (scale.reshape(1, -1, 1) if per_axis else scale[0])
    x = np.where(rng.random(dims) < 0.5, ties, rng.standard_normal(dims).astype(np.float32) * 50).astype(np.float32)
    inputs = [x, scale if per_axis else scale.reshape(()), zero if per_axis else zero.reshape(())]
    model = make_model("QuantizeLinear", opset, inputs, {"axis": 1} if per_axis else {}, constant=constant)
    feeds = feeds_of(model, inputs)
    if opset < 11:
        with pytest.warns(UserWarning, match="QuantizeLinear"):
            onnx_to_ov_model(model)
        return
    agrees(model, feeds, run_ort(model, feeds), 0, 0)


@pytest.mark.parametrize("case", node_case_params(["QuantizeLinear"]))
def test_quantize_linear_node_cases_through_openvino(case: Any) -> None:
    """The 8 and 16-bit integer cases agree; the float8, 4 and 2-bit ones (their values cross to
    OpenVINO as raw bits through ``ovpool.run``) agree or are refused by name, as is
    blocked_symmetric (OpenVINO's conversion fails on its shapes)."""
    exotic = any(t in case.name for t in ("e4m3", "e5m2", "int4", "uint4", "int2", "uint2", "float4", "blocked_symmetric"))
    if not exotic:
        node_case_agrees(case, 0, 0)
        return
    inputs, expected = case.data_sets[0]
    feeds = {info.name: _case_value(value) for info, value in zip(case.model.graph.input, inputs)}
    try:
        got = ovpool.run(case.model, feeds, device="CPU", fallback="none")
    except OvpoolError as refused:
        assert case.name in str(refused) or "input '" in str(refused), refused
        return
    for value, want in zip(got.values(), expected):
        np.testing.assert_array_equal(np.asarray(value).astype(np.float64), np.asarray(_case_value(want)).astype(np.float64))


@pytest.mark.parametrize("case", node_case_params(["DynamicQuantizeLinear"]))
def test_dynamic_quantize_linear_node_cases_through_openvino(case: Any) -> None:
    """Two cases agree; test_dynamicquantizelinear is one step off on OpenVINO CPU (its Divide, 1 ulp
    off: -127.5 where ONNX's quotient is -127.49999), the known runtime deviation of DynamicQuantizeLinear."""
    from openvino_known import match

    inputs, expected = case.data_sets[0]
    feeds = {info.name: _case_value(value) for info, value in zip(case.model.graph.input, inputs)}
    found, outcome, stage, detail = outcome_of(case.model, feeds, [_case_value(e) for e in expected], 0, 0)
    if case.name == "test_dynamicquantizelinear":
        row = match(found, stage, detail)
        assert outcome == "disagrees" and row is not None and "Divide is 1 ulp off" in row.reason, detail
        return
    assert outcome == "agrees", detail


@pytest.mark.parametrize(("opset", "axis_source"), [(17, "input"), (20, "input"), (20, "constant")])
def test_irfft_of_one_bin_is_empty_not_a_crash(opset: int, axis_source: str) -> None:
    """irfft over an axis of one bin without dft_length: the length 2 * (1 - 1) = 0, an empty
    output (OpenVINO CPU dies computing an IRDFT of length 0: ovpool computes length 1, sliced to 0)."""
    model, feeds = _dft_model(opset, (2, 1, 2), {"inverse": 1, "onesided": 1}, 1, None, axis_source)
    agrees(model, feeds, [np.zeros((2, 0, 1), np.float32)])
