"""DFT (17, 20), STFT-17, HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix (17)
against onnxruntime at every since-version, against the schema computed here in loops where
onnxruntime cannot run the case or departs from the schema, and ONNX's own node test cases
(the windows' ``_expanded`` ones too).

onnxruntime 1.31.1 sums float32 DFTs in float32 (ovpool in float64, rounded once), so float32
comparisons allow a few float32 steps of the spectrum's size; its twiddle factors use pi =
3.14159265, so float64 ones allow 1e-7. Where it departs from the schema:

- IRFFT (``onesided=1, inverse=1``) with a dft_length N whose one-sided size N//2 + 1 is not the
  input's bin count: it sums the first N input bins unmirrored, or takes the last one as Nyquist's;
  the schema (numpy's ``irfft``) cuts or zero-pads the bins to N//2 + 1 and mirrors them;
- STFT with frame_length equal to the signal's length (one frame): it refuses;
- the windows: it computes in float64 with pi = 3.14159265, the schema's function body in float32,
  so float64 windows differ in the eighth digit and integer ones where the value is 1 (Blackman of
  size 4 at n = 2: the body's float32 0.99999994, onnxruntime's float64 1); integer windows are held
  to the body run on onnxruntime (``expanded``);
- it has no float16/bfloat16 MelWeightMatrix, no double edges, no bfloat16 DFT.
"""

from __future__ import annotations

import cmath
import math
from typing import Any

import numpy as np
import pytest
from bodies import expanded, expanded_case_params
from harness import (
    assert_node_error,
    check,
    check_node_case,
    drawn_rng,
    examples,
    feeds_of,
    make_model,
    node_case_params,
    ort_of,
    ovpool_of,
    run_ort,
    run_ovpool,
    since_opsets,
)
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto

from ovpool.dtypes import np_dtype

SIGNAL_OPS = ("DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix")
WINDOWS = ("HannWindow", "HammingWindow", "BlackmanWindow")
DFT_VERSIONS = since_opsets("DFT")  # [17, 20]
BF16 = np_dtype("bfloat16")
F32 = {"rtol": 1e-4, "atol": 2e-5}  # onnxruntime's float32 sums
F64 = {"rtol": 1e-7, "atol": 1e-7}  # onnxruntime's float64 twiddles use pi = 3.14159265


# --- ONNX's node cases ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", node_case_params(SIGNAL_OPS))
def test_node_cases(case: Any) -> None:
    check_node_case(case, rtol=1e-5, atol=1e-5)


EXPANDED = expanded_case_params(SIGNAL_OPS)


def test_expanded_cases_exist() -> None:
    assert {p.id for p in EXPANDED} >= {f"test_{w.lower()}_expanded" for w in WINDOWS}


@pytest.mark.parametrize("case", EXPANDED)
def test_expanded_node_cases(case: Any) -> None:
    """The function bodies run on ovpool's own ops only (run_ovpool asserts no onnx.reference)."""
    check_node_case(case, rtol=1e-5, atol=1e-6)


# --- DFT: the schema's sums ---------------------------------------------------------------------------


def schema_dft(x: np.ndarray, axis: int, length: int, inverse: bool, onesided: bool) -> np.ndarray:
    """DFT-20's text, one output value at a time in Python complex numbers: y[k] = sum_n
    exp(-+2 pi j k n / N) x[n] (1/N for the inverse), x zero-padded or cut to N; RFFT keeps k <=
    N//2; IRFFT extends the bins 0..N//2 (cut or zero-padded) by y[N - k] = conj(y[k]) and keeps the
    real part."""
    values = x.astype(np.float64)
    signal = values[..., 0] + (1j * values[..., 1] if x.shape[-1] == 2 else 0)
    moved = np.moveaxis(signal, axis, -1)
    size = moved.shape[-1]
    sign = 1 if inverse else -1
    bins = length // 2 + 1 if onesided and not inverse else length
    out = np.zeros((*moved.shape[:-1], bins), np.complex128)
    for index in np.ndindex(*moved.shape[:-1]):
        row = [complex(moved[index + (n,)]) if n < size else 0j for n in range(length)]
        if onesided and inverse:
            half = row[: length // 2 + 1]
            full = [half[k] if k <= length // 2 else half[length - k].conjugate() for k in range(length)]
            row = full
        for k in range(bins):
            total = sum(row[n] * cmath.exp(sign * 2j * math.pi * k * n / length) for n in range(length))
            out[index + (k,)] = total / length if inverse else total
    out = np.moveaxis(out, -1, axis)
    if onesided and inverse:
        return out.real[..., None]
    return np.stack([out.real, out.imag], axis=-1)


def _dft_inputs(version: int, x: np.ndarray, length: int | None, axis: int) -> tuple[list[Any], dict[str, int]]:
    """DFT's inputs and attributes at ``version``: axis an attribute (17) or the third input (20)."""
    n = None if length is None else np.array(length, np.int64)
    if version < 20:
        return [x, n], {"axis": axis}
    return [x, n, np.array(axis, np.int64)], {}


@pytest.mark.parametrize("version", DFT_VERSIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape, axis, inverse, onesided, length",
    [
        ((2, 8, 1), 1, 0, 0, None),
        ((2, 8, 1), 1, 0, 1, None),
        ((2, 7, 1), 1, 0, 1, None),
        ((2, 6, 2), 1, 0, 0, None),
        ((2, 6, 2), 1, 1, 0, None),
        ((2, 5, 2), 1, 1, 1, None),  # IRFFT: 8 samples
        ((2, 5, 2), 1, 1, 1, 9),  # IRFFT: 9 samples of 5 bins
        ((2, 8, 1), 1, 0, 0, 12),  # zero-padded
        ((2, 8, 1), 1, 0, 0, 5),  # cut
        ((2, 8, 2), 1, 1, 0, 3),
        ((2, 8, 1), 1, 0, 1, 11),
        ((3, 4, 5, 2), 2, 0, 0, None),
        ((3, 4, 5, 2), -3, 1, 0, None),
        ((3, 4, 5, 1), 0, 0, 1, None),
        ((6, 1), 0, 0, 0, None),
    ],
)
def test_dft_against_onnxruntime(
    version: int, dtype: Any, shape: tuple[int, ...], axis: int, inverse: int, onesided: int, length: int | None
) -> None:
    x = np.random.default_rng(sum(shape) + axis).standard_normal(shape).astype(dtype)
    inputs, attrs = _dft_inputs(version, x, length, axis)
    attrs.update(inverse=inverse, onesided=onesided)
    check("DFT", version, inputs, attrs, **(F32 if dtype == np.float32 else F64))


@pytest.mark.parametrize("version", DFT_VERSIONS)
@pytest.mark.parametrize("length", [2, 4, 6, 12, 13])
def test_irfft_other_lengths_follow_the_schema(version: int, length: int) -> None:
    """IRFFT of 5 bins to N samples: the bins cut or zero-padded to N//2 + 1, mirrored (the
    schema; onnxruntime differs for N other than 8 and 9)."""
    x = np.random.default_rng(length).standard_normal((2, 5, 2))
    inputs, attrs = _dft_inputs(version, x, length, 1)
    (actual,) = ovpool_of("DFT", version, inputs, {**attrs, "inverse": 1, "onesided": 1})
    np.testing.assert_allclose(actual, schema_dft(x, 1, length, True, True), rtol=1e-12, atol=1e-12)


def test_irfft_where_onnxruntime_departs() -> None:
    """N = 4 of 5 bins: onnxruntime sums bins 0..3 unmirrored; the schema uses bins 0..2, mirrored."""
    x = np.zeros((1, 5, 2))
    x[0, 1, 0] = 1  # bin 1: cos(2 pi n / 4), twice (it and its mirror bin 3), over N
    inputs, attrs = _dft_inputs(20, x, 4, 1)
    (ours,) = ovpool_of("DFT", 20, inputs, {**attrs, "inverse": 1, "onesided": 1})
    np.testing.assert_allclose(ours[0, :, 0], [0.5, 0, -0.5, 0], atol=1e-15)
    (theirs,) = ort_of("DFT", 20, inputs, {**attrs, "inverse": 1, "onesided": 1})
    np.testing.assert_allclose(theirs[0, :, 0], [0.25, 0, -0.25, 0], atol=1e-15)


@pytest.mark.parametrize("version", DFT_VERSIONS)
@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_dft_half_types(version: int, dtype: Any) -> None:
    """float16 and bfloat16 sums in float64, rounded once: the schema's value rounded to the type."""
    x = np.random.default_rng(3).standard_normal((2, 6, 2)).astype(dtype)
    for inverse, onesided, axis in ((0, 0, 1), (1, 0, 1), (0, 0, 0)):
        inputs, attrs = _dft_inputs(version, x, None, axis)
        (actual,) = ovpool_of("DFT", version, inputs, {**attrs, "inverse": inverse, "onesided": onesided})
        expected = schema_dft(x, axis, x.shape[axis], bool(inverse), bool(onesided))
        assert actual.dtype == x.dtype
        # one rounding of the sum: within half a step of the type (a value at a tie may round either way)
        step = 2.0**-10 if dtype == np.float16 else 2.0**-7
        np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=step, atol=1e-3)


def test_dft_default_axis_of_each_version() -> None:
    """DFT-17's default axis is 1, DFT-20's -2: on a (3, 4, 5, 1) input they transform different axes."""
    x = np.random.default_rng(0).standard_normal((3, 4, 5, 1)).astype(np.float64)
    (v17,) = ovpool_of("DFT", 17, [x])
    (v20,) = ovpool_of("DFT", 20, [x])
    np.testing.assert_allclose(v17, schema_dft(x, 1, 4, False, False), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v20, schema_dft(x, 2, 5, False, False), rtol=1e-12, atol=1e-12)
    check("DFT", 17, [x.astype(np.float32)], **F32)
    check("DFT", 20, [x.astype(np.float32)], **F32)


@pytest.mark.parametrize("version", DFT_VERSIONS)
@pytest.mark.parametrize(
    "shape, inverse, onesided",
    [((2, 0, 1), 0, 0), ((2, 0, 2), 1, 0), ((2, 1, 2), 1, 1), ((0, 8, 1), 0, 1), ((3, 0, 4, 2), 0, 0)],
)
def test_dft_empty(version: int, shape: tuple[int, ...], inverse: int, onesided: int) -> None:
    """An empty axis (its default dft_length 0, or an IRFFT of one bin) and an empty batch."""
    x = np.ones(shape, np.float32)
    inputs, attrs = _dft_inputs(version, x, None, 1)
    check("DFT", version, inputs, {**attrs, "inverse": inverse, "onesided": onesided})


def test_rfft_of_an_empty_axis_is_one_zero_bin() -> None:
    """N = 0: bins 0..0, an empty sum (onnxruntime refuses the empty signal)."""
    (y,) = ovpool_of("DFT", 20, [np.ones((2, 0, 1), np.float32)], {"onesided": 1})
    np.testing.assert_array_equal(y, np.zeros((2, 1, 2), np.float32))


@st.composite
def dft_cases(draw: Any) -> tuple[Any, ...]:
    rng = drawn_rng(draw)
    rank = draw(st.integers(2, 4))
    dims = [draw(st.integers(1, 6)) for _ in range(rank - 1)]
    inverse, onesided = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    complex_input = (inverse or not onesided) and draw(st.booleans()) or (inverse and onesided)
    axis = draw(st.integers(0, rank - 2))
    if onesided and inverse and dims[axis] < 2:
        dims[axis] = 2
    negative = draw(st.booleans())
    length = draw(st.none() | st.integers(1, 10))
    if onesided and inverse and length is not None:
        length = 2 * (dims[axis] - 1) + draw(st.integers(0, 1))  # onnxruntime follows the schema there
    x = rng.standard_normal((*dims, 2 if complex_input else 1)).astype(np.float32)
    return x, axis - rank if negative else axis, inverse, onesided, length


@given(case=dft_cases(), version=st.sampled_from(DFT_VERSIONS))
@examples(25)
def test_dft_drawn(case: tuple[Any, ...], version: int) -> None:
    x, axis, inverse, onesided, length = case
    inputs, attrs = _dft_inputs(version, x, length, axis)
    check("DFT", version, inputs, {**attrs, "inverse": inverse, "onesided": onesided}, **F32)


# --- STFT ---------------------------------------------------------------------------------------------


def schema_stft(signal: np.ndarray, step: int, window: np.ndarray | None, length: int, onesided: bool) -> np.ndarray:
    """STFT-17's text: frames = floor((L - frame_length) / step) + 1, frame f from f * step,
    times the window, then its DFT of frame_length bins (the first frame_length // 2 + 1 if onesided)."""
    frames = (signal.shape[1] - length) // step + 1
    bins = length // 2 + 1 if onesided else length
    w = np.ones(length) if window is None else window.astype(np.float64)
    out = np.zeros((signal.shape[0], frames, bins, 2))
    for b in range(signal.shape[0]):
        for f in range(frames):
            frame = signal[b, f * step : f * step + length].astype(np.float64) * w[:, None]
            out[b, f] = schema_dft(frame[None], 1, length, False, onesided)[0]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape, step, window, length, onesided",
    [
        ((2, 16, 1), 4, None, 8, 1),
        ((2, 16, 1), 3, 6, None, 1),
        ((2, 16, 1), 3, 6, 6, 0),
        ((1, 17, 1), 5, 7, None, 1),
        ((2, 16, 2), 3, None, 5, 0),
        ((2, 16, 2), 2, 4, 4, 0),
        ((1, 10, 1), 1, None, 9, 1),
    ],
)
def test_stft_against_onnxruntime(
    dtype: Any, shape: tuple[int, ...], step: int, window: int | None, length: int | None, onesided: int
) -> None:
    rng = np.random.default_rng(sum(shape) + step)
    signal = rng.standard_normal(shape).astype(dtype)
    w = None if window is None else rng.random(window).astype(dtype)
    n = None if length is None else np.array(length, np.int64)
    # frame_step and frame_length constants, as in models (OpenVINO converts STFT only then)
    tol = F32 if dtype == np.float32 else F64
    check("STFT", 17, [signal, np.array(step, np.int64), w, n], {"onesided": onesided}, constant=(1, 3), **tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, BF16])
def test_stft_schema_cases(dtype: Any) -> None:
    """One frame as long as the signal (onnxruntime refuses it), no frame_length nor window
    (the whole signal), and the half types: the schema's loops."""
    rng = np.random.default_rng(5)
    signal = rng.standard_normal((2, 9, 1)).astype(dtype)
    window = rng.random(9).astype(dtype)
    for step, w, n in ((4, window, None), (1, None, None), (2, None, np.array(9)), (3, window[:4], np.array(4))):
        (actual,) = ovpool_of("STFT", 17, [signal, np.array(step, np.int64), w, n])
        length = len(w) if w is not None else int(n) if n is not None else 9
        expected = schema_stft(signal, step, w, length, True)
        assert actual.dtype == signal.dtype
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(dtype).astype(np.float64), rtol=1e-12, atol=1e-12)


# --- windows ------------------------------------------------------------------------------------------


WINDOW_TYPES = [
    TensorProto.FLOAT,
    TensorProto.DOUBLE,
    TensorProto.FLOAT16,
    TensorProto.INT32,
    TensorProto.UINT8,
    TensorProto.INT64,
]


@pytest.mark.parametrize("op", WINDOWS)
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("elem", WINDOW_TYPES)
def test_window_is_its_function_body(op: str, periodic: int, elem: int) -> None:
    """Sizes 0..12, 16, 31, 32 and 40 against the schema's function body run on onnxruntime (size as
    int64, and int32 for the odd ones): integer types exactly,
    floats within a float32 step (onnxruntime's float32 cosine is not correctly rounded; ovpool's is).
    A symmetric window of size 1 is NaN there and here."""
    attrs = {"periodic": periodic, "output_datatype": elem}
    for size in [*range(13), 16, 31, 32, 40]:
        for size_type in (np.int64, np.int32)[: 1 + size % 2]:
            inputs = [np.array(size, size_type)]
            model = make_model(op, 17, inputs, attrs)
            (body,) = run_ort(expanded(model), feeds_of(model, inputs))
            (ours,) = run_ovpool(model, feeds_of(model, inputs))
            assert ours.dtype == body.dtype and ours.shape == (size,)
            if body.dtype.kind == "f":
                np.testing.assert_allclose(ours, body, rtol=1.2e-7, atol=6e-8)
                assert np.isnan(ours).any() == (size == 1 and not periodic)
            else:
                np.testing.assert_array_equal(ours, body)


@pytest.mark.parametrize("op", WINDOWS)
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("elem", [TensorProto.FLOAT, TensorProto.DOUBLE])
@pytest.mark.parametrize("size", [2, 3, 10, 64, 401])
def test_window_against_onnxruntime(op: str, periodic: int, elem: int, size: int) -> None:
    """onnxruntime's own kernels (float64 with pi = 3.14159265) within 3e-7 of the body's float32."""
    check(op, 17, [np.array(size, np.int64)], {"periodic": periodic, "output_datatype": elem}, rtol=3e-7, atol=3e-7)


def test_window_values() -> None:
    """The schema's coefficients: Hamming's a0 = 25/46 (0.5434782...), not 0.54."""
    (hamming,) = ovpool_of("HammingWindow", 17, [np.array(4, np.int64)])
    np.testing.assert_allclose(hamming, [4 / 46, 25 / 46, 1, 25 / 46], rtol=1e-6, atol=1e-7)
    (hann,) = ovpool_of("HannWindow", 17, [np.array(5, np.int64)], {"periodic": 0})
    np.testing.assert_allclose(hann, [0, 0.5, 1, 0.5, 0], atol=1e-7)
    (blackman,) = ovpool_of("BlackmanWindow", 17, [np.array(4, np.int64)], {"output_datatype": TensorProto.INT32})
    # float32: 0.42 + 0.5 is 0.91999996, + 0.08 is 0.99999994, truncated to 0 (onnxruntime's own kernel: 1)
    np.testing.assert_array_equal(blackman, [0, 0, 0, 0])


@pytest.mark.parametrize("op", WINDOWS)
def test_window_bfloat16(op: str) -> None:
    """bfloat16 (onnxruntime has none): the float32 window rounded once."""
    (wide,) = ovpool_of(op, 17, [np.array(12, np.int64)])
    (narrow,) = ovpool_of(op, 17, [np.array(12, np.int64)], {"output_datatype": TensorProto.BFLOAT16})
    assert narrow.dtype == BF16
    np.testing.assert_array_equal(narrow.astype(np.float32), wide.astype(BF16).astype(np.float32))


# --- MelWeightMatrix ------------------------------------------------------------------------------------


def _mel_inputs(m: int, n: int, rate: int, low: float, high: float, edge: Any = np.float32, index: Any = np.int64) -> list[Any]:
    return [np.array(m, index), np.array(n, index), np.array(rate, index), np.array(low, edge), np.array(high, edge)]


MEL_CASES = [
    (8, 16, 8000, 0.0, 4000.0),
    (20, 512, 16000, 100.0, 7000.0),
    (40, 400, 16000, 20.0, 8000.0),
    (3, 64, 22050, 0.0, 300.0),  # several filters on one bin
    (10, 1024, 44100, 500.0, 500.0),  # lower = upper: every filter a 1 on one bin
    (0, 32, 8000, 0.0, 4000.0),
    (128, 2048, 48000, 0.0, 24000.0),
]


@pytest.mark.parametrize("case", MEL_CASES)
@pytest.mark.parametrize(
    "elem", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.UINT8, TensorProto.INT64, TensorProto.UINT16]
)
def test_mel_against_onnxruntime(case: tuple[Any, ...], elem: int) -> None:
    for index in (np.int64, np.int32):
        check("MelWeightMatrix", 17, _mel_inputs(*case, index=index), {"output_datatype": elem}, rtol=0, atol=0)


@pytest.mark.parametrize("case", [MEL_CASES[0], MEL_CASES[2], (64, 1024, 32000, 0.0, 16000.0)])
def test_mel_types_onnxruntime_lacks(case: tuple[Any, ...]) -> None:
    """float16 and bfloat16 outputs: onnxruntime's float64 values rounded once; double, float16 and
    bfloat16 edges that each of them holds exactly (20, 4000, 8000, 16000 Hz): onnxruntime's
    float32-edge matrix."""
    (wide,) = ort_of("MelWeightMatrix", 17, _mel_inputs(*case), {"output_datatype": TensorProto.DOUBLE})
    for elem, dtype in ((TensorProto.FLOAT16, np.float16), (TensorProto.BFLOAT16, BF16)):
        (narrow,) = ovpool_of("MelWeightMatrix", 17, _mel_inputs(*case), {"output_datatype": elem})
        assert narrow.dtype == dtype
        np.testing.assert_array_equal(narrow.astype(np.float32), wide.astype(dtype).astype(np.float32))
    (single,) = ort_of("MelWeightMatrix", 17, _mel_inputs(*case))
    for edge in (np.float64, np.float16, BF16):
        (ours,) = ovpool_of("MelWeightMatrix", 17, _mel_inputs(*case, edge=edge))
        np.testing.assert_array_equal(ours, single)


def test_mel_matrix_shape_and_peaks() -> None:
    """The docstring's case: 8 filters over 9 bins, each peaking at 1 on its centre bin."""
    (matrix,) = ovpool_of("MelWeightMatrix", 17, _mel_inputs(8, 16, 8000, 0.0, 4000.0))
    assert matrix.shape == (9, 8)
    np.testing.assert_array_equal(matrix.max(axis=0), np.ones(8))
    np.testing.assert_array_equal(matrix.argmax(axis=0), [0, 0, 1, 1, 2, 3, 4, 5])


# --- refusals -------------------------------------------------------------------------------------------

X8 = np.zeros((2, 8, 1), np.float32)
XC = np.zeros((2, 5, 2), np.float32)
STEP = np.array(2, np.int64)
SIG = np.zeros((1, 8, 1), np.float32)
SIZE = np.array(4, np.int64)


@pytest.mark.parametrize(
    "op, opset, inputs, attrs, match",
    [
        ("DFT", 17, [X8], {"onesided": 2}, "attribute 'onesided'"),
        ("DFT", 17, [X8], {"inverse": -1}, "attribute 'inverse'"),
        ("DFT", 17, [X8], {"axis": 2}, "attribute 'axis' is 2"),
        ("DFT", 17, [X8], {"axis": -1}, "attribute 'axis' is -1"),
        ("DFT", 17, [X8], {"axis": -4}, "attribute 'axis' is -4"),
        ("DFT", 20, [X8, None, np.array(2)], {}, "input 'axis' is 2"),
        ("DFT", 20, [X8, None, np.array([1, 1])], {}, "input 'axis' must be one integer"),
        ("DFT", 20, [X8, None, np.array(1, np.int32)], {}, "input 'axis' has type int32"),
        ("DFT", 20, [XC], {"onesided": 1}, "attribute 'onesided': 1 \\(RFFT\\) takes a real input"),
        ("DFT", 20, [X8], {"onesided": 1, "inverse": 1}, "attribute 'onesided': 1 with inverse=1"),
        ("DFT", 20, [X8, np.array(0)], {}, "input 'dft_length' is 0"),
        ("DFT", 20, [np.zeros((2, 0, 2), np.float32)], {"onesided": 1, "inverse": 1}, "default dft_length is -2"),
        ("DFT", 20, [np.zeros((2, 8, 3), np.float32)], {}, "last axis must be 1"),
        ("DFT", 17, [X8.astype(np.int32)], {}, "input 0 has type int32"),
        ("STFT", 17, [np.zeros((1, 8, 2), np.float32), STEP, None, SIZE], {}, "attribute 'onesided': 1 takes a real signal"),
        ("STFT", 17, [SIG, STEP], {"onesided": 3}, "attribute 'onesided'"),
        ("STFT", 17, [SIG, np.array(0, np.int64), None, SIZE], {}, "input 'frame_step' is 0"),
        ("STFT", 17, [SIG, STEP, np.ones(3, np.float32), SIZE], {}, "'window' has 3 values and frame_length is 4"),
        ("STFT", 17, [SIG, STEP, None, np.array(9, np.int64)], {}, "frames of 9 samples do not fit a signal of 8"),
        ("STFT", 17, [SIG, STEP, np.ones((2, 2), np.float32)], {}, "'window' has shape \\[2, 2\\]"),
        ("STFT", 17, [np.zeros((8, 1), np.float32), STEP], {}, "'signal' has shape \\[8, 1\\]"),
        ("HannWindow", 17, [SIZE], {"output_datatype": TensorProto.BOOL}, "attribute 'output_datatype': 9"),
        ("HammingWindow", 17, [SIZE], {"output_datatype": TensorProto.STRING}, "attribute 'output_datatype': 8"),
        ("BlackmanWindow", 17, [SIZE], {"periodic": 2}, "attribute 'periodic'"),
        ("HannWindow", 17, [np.array(-1, np.int64)], {}, "input 'size' is -1"),
        ("HannWindow", 17, [np.array(4.0, np.float32)], {}, "input 0 has type float32"),
        ("MelWeightMatrix", 17, _mel_inputs(8, 16, 8000, 0.0, 4000.0), {"output_datatype": 9}, "'output_datatype': 9"),
        ("MelWeightMatrix", 17, _mel_inputs(8, 16, 8000, 0.0, 4500.0), {}, "'upper_edge_hertz' is 4500.0 Hz, bin 9"),
        ("MelWeightMatrix", 17, _mel_inputs(8, 16, 8000, -700.0, 4000.0), {}, "'lower_edge_hertz' is -700.0 Hz"),
        ("MelWeightMatrix", 17, _mel_inputs(8, 16, 8000, 3000.0, 1000.0), {}, "lower_edge_hertz 3000.0 is above"),
        ("MelWeightMatrix", 17, _mel_inputs(8, 16, 0, 0.0, 1.0), {}, "input 'sample_rate' is 0"),
        ("MelWeightMatrix", 17, _mel_inputs(-1, 16, 8000, 0.0, 1.0), {}, "input 'num_mel_bins' is -1"),
    ],
)
def test_refused(op: str, opset: int, inputs: list[Any], attrs: dict[str, Any], match: str) -> None:
    assert_node_error(op, opset, inputs, attrs, match=f"{op.lower()}_node.*{match}")
