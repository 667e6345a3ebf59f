"""OpenVINO 2026.4 defects on ONNX's backend node cases that ``ovpool.ov.frontend_fixes`` fixes
(issue 31, item 2): signed BitShift-28, SpaceToDepth's CRD mode, GRU/LSTM/RNN with ``layout=1``.

For each: a repro that stock OpenVINO (its own ONNX frontend, CPU at f32) still computes the
minimal model otherwise (when an upgrade fixes it, that test fails: the row may go); the fixed
path at every since-version of the op against onnxruntime or the schema computed here; and ONNX's
backend node cases of the op through ovpool's conversion on OpenVINO CPU and the IR on numpy
(``on_openvino.outcome_of``: CPU against the case's data, numpy against CPU)."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from harness import _case_value, drawn_rng, examples, feeds_of, make_model, node_case_params, run_ort, since_opsets
from hypothesis import given
from hypothesis import strategies as st
from on_openvino import outcome_of

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
