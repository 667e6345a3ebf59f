"""Signal operators on numpy: DFT (17, 20), STFT-17, HannWindow, HammingWindow, BlackmanWindow and
MelWeightMatrix (17).

**DFT**: ``X[k] = sum_n x[n] exp(-2 pi i k n / N)`` along one axis, ``N = dft_length`` (the
input zero-padded up to it, or its first N values); inverse ``x[n] = 1/N sum_k X[k] exp(2 pi i k
n / N)``. The last input axis holds 1 (real) or 2 (real, imaginary) values; the output's last axis
is 2, or 1 for the IRFFT. ``onesided=1``, forward: a real input's bins ``0..N//2`` (RFFT; a complex
input is refused, as the schema allows only real ones); inverse: the real signal of length N whose
spectrum is the input's bins ``0..N//2`` (zero-padded or cut to N//2 + 1, as dft_length says),
extended by ``X[N - k] = conj(X[k])`` (IRFFT, numpy's ``irfft``; default N ``2 * (bins - 1)``; a real
input is refused). onnxruntime 1.31 agrees where N//2 + 1 is the input's bin count; for another N
it sums the input's first N bins unmirrored (N = 4 of 5 bins) or takes its last bin as the Nyquist
one (N = 12 of 5 bins), which the schema does not say. numpy's FFT computes these sums: [1, 2, 3, 4] gives [10, -2+2i, -2, -2-2i].
The sums are computed in float64 (complex128) and rounded once to the input's type; onnxruntime
sums float32 inputs in float32 (radix-2 for powers of two, else the plain sum), so it differs by a
few float32 steps on long signals, and its twiddles use pi = 3.14159265, so its float64 results
differ from the sums in the eighth digit. DFT-17 takes ``axis`` as an attribute (default 1), DFT-20 as an
optional scalar input (default -2); both accept ``[-r, -2]`` and ``[0, r - 2]`` for an input of rank r.

**STFT**: ``frames = floor((L - frame_length) / frame_step) + 1`` frames of the signal (B, L, 1|2),
frame ``f`` starting at ``f * frame_step``, each multiplied by ``window`` (all ones when absent) and
transformed as DFT with N = frame_length; output (B, frames, bins, 2) with ``bins = frame_length // 2
+ 1`` for ``onesided=1`` (the default; refused for a complex signal), else frame_length.

**Windows**: the function body of the schema, in float32 as it computes:
``w[n] = a0 - a1 cos(n t) + a2 cos(2 n t)``, ``t = 6.2831855 / D`` with ``D = size`` (periodic,
the default) or ``size - 1`` (symmetric), then Cast to ``output_datatype`` (default 1, float).
Hann a = (0.5, 0.5, 0), Hamming (0.54347825, 0.45652175, 0) (25/46 and 21/46), Blackman
(0.42, 0.5, 0.08). Hann of size 4: [0, 0.5, 1, 0.5]. A symmetric window of size 1 divides by 0:
NaN, as the body computes. The cosine is float32's correctly rounded one. onnxruntime computes in
float64 with pi = 3.14159265, so its float64 windows differ from the body's in the eighth digit, and
its integer windows may differ where the value is 1: Blackman of size 4 at n = 2 is 0.99999994 in
the body's float32 (0.42 + 0.5 rounds to 0.91999996), int 0, and 1 in onnxruntime's float64.

**MelWeightMatrix**: the (dft_length // 2 + 1, num_mel_bins) matrix of triangular filters, computed in
float64 as onnxruntime does: ``mel(f) = 2595 log10(1 + f / 700)``; M + 2 points ``p_i = mel(lower) + i
(mel(upper) - mel(lower)) / (M + 2)`` (i = 0..M+1: the step divides by M + 2, so the last point
stays below ``upper``), each back in hertz (``700 (10^(p / 2595) - 1)``) and to the bin ``b_i =
floor((dft_length + 1) hz / sample_rate)``. Filter m rises ``(j - b_m) / (b_{m+1} - b_m)`` over
bins ``b_m..b_{m+1}`` and falls ``(b_{m+2} - j) / (b_{m+2} - b_{m+1})`` over ``b_{m+1}..b_{m+2} - 1``,
its peak 1 (a filter with ``b_m == b_{m+1}`` is 1 at b_{m+1}). 8 bins, dft_length 16, 8000 Hz,
0..4000 Hz: bins 0, 0, 0, 1, 1, 2, 3, 4, 5, 6 (of 0, 147, 324, 539, 799, 1114, 1494, 1955, 2511,
3185 Hz: 17 * hz / 8000 floored). The values are cast to ``output_datatype`` (integer types truncate: 1 at the
peaks only); the lower and upper edges must give bins inside the matrix.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper

from ovpool.engine.ops.base import Kernel, OpNode, outputs, register
from ovpool.engine.ops.casts import cast
from ovpool.engine.ops.checks import int_attr, type_guard
from ovpool.memory import check_tensor

_TAU = np.float32(6.2831855)  # the body's Tau constant
# (a0, a1, a2) of each window, the float32 constants of the schema's function bodies
_COSINE_SUMS = {
    "HannWindow": (np.float32(0.5), np.float32(0.5), np.float32(0.0)),
    "HammingWindow": (np.float32(25 / 46), np.float32(21 / 46), np.float32(0.0)),
    "BlackmanWindow": (np.float32(0.42), np.float32(0.5), np.float32(0.08)),
}


def _scalar(node: OpNode, value: np.ndarray, what: str, least: int | None = None) -> int:
    """Input ``what``: one integer (0-D or of one value), at least ``least`` when given."""
    array = np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "iu":
        raise node.fail(f"input '{what}' must be one integer, got {array.dtype} of shape {list(array.shape)}")
    result = int(array.reshape(-1)[0])
    if least is not None and result < least:
        raise node.fail(f"input '{what}' is {result}; it must be at least {least}")
    return result


def _complex(x: np.ndarray) -> np.ndarray:
    """``x`` (..., 1|2) in float64 without its last axis: real, or complex128 for (real, imaginary) pairs."""
    wide = x.astype(np.float64)
    return wide[..., 0] if x.shape[-1] == 1 else wide[..., 0] + 1j * wide[..., 1]


def _pairs(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Complex ``values`` as (..., 2) of ``dtype``, rounded once."""
    return np.stack([values.real, values.imag], axis=-1).astype(dtype)


def dft(x: np.ndarray, axis: int, length: int, inverse: bool, onesided: bool) -> np.ndarray:
    """The DFT of the module's rule along ``axis`` (of ``x`` without its last axis) with N = ``length``,
    in ``x``'s type: [[1], [2], [3], [4]] (real, axis 0) gives [[10, 0], [-2, 2], [-2, 0], [-2, -2]]."""
    if length == 0:  # an empty axis, its default length: an empty transform
        shape = list(x.shape)
        shape[axis], shape[-1] = (1 if onesided and not inverse else 0), (1 if onesided and inverse else 2)
        return np.zeros(shape, x.dtype)
    values = _complex(x)
    if inverse and onesided:
        return np.fft.irfft(values, n=length, axis=axis)[..., None].astype(x.dtype)
    transformed = np.fft.ifft(values, n=length, axis=axis) if inverse else np.fft.fft(values, n=length, axis=axis)
    if onesided:
        transformed = np.take(transformed, np.arange(length // 2 + 1), axis=axis)
    return _pairs(transformed, x.dtype)


def _dft_kernel(node: OpNode, axis_input: bool) -> Kernel:
    check = type_guard(node)
    inverse = bool(int_attr(node, "inverse", 0, (0, 1)))
    onesided = bool(int_attr(node, "onesided", 0, (0, 1)))
    attribute_axis = None if axis_input else int_attr(node, "axis", 1)

    def kernel(x: np.ndarray, dft_length: np.ndarray | None = None, axis: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        check(x, dft_length)
        rank = x.ndim
        if rank < 2 or x.shape[-1] not in (1, 2):
            raise node.fail(f"input has shape {list(x.shape)}; its last axis must be 1 (real) or 2 (real, imaginary)")
        if attribute_axis is not None:
            given = attribute_axis
        elif axis is not None:
            if axis.dtype != np.int64:
                raise node.fail(f"input 'axis' has type {axis.dtype}; DFT-20 takes int64")
            given = _scalar(node, axis, "axis")
        else:
            given = -2
        a = given + rank if given < 0 else given
        if not 0 <= a <= rank - 2:
            what = "attribute 'axis'" if attribute_axis is not None else "input 'axis'"
            raise node.fail(
                f"{what} is {given}; a rank-{rank} input takes [{-rank}, -2] or [0, {rank - 2}] (the last axis holds the complex parts)"
            )
        real = x.shape[-1] == 1
        if onesided and not inverse and not real:
            raise node.fail("1 (RFFT) takes a real input (last axis 1); this one is complex", "onesided")
        if onesided and inverse and real:
            raise node.fail(
                "1 with inverse=1 (IRFFT) takes a complex one-sided input (last axis 2); this one is real", "onesided"
            )
        if dft_length is not None:
            length = _scalar(node, dft_length, "dft_length", 1)
        else:
            length = 2 * (x.shape[a] - 1) if onesided and inverse else x.shape[a]
            if length < 0:
                raise node.fail(f"the default dft_length is {length} for an axis of {x.shape[a]}; it cannot be negative")
        bins = length // 2 + 1 if onesided and not inverse else length
        shape = [*x.shape[:a], bins, *x.shape[a + 1 : -1], 1 if onesided and inverse else 2]
        check_tensor(f"{node.label}: output", shape, x.dtype.name, x.dtype.itemsize)
        check_tensor(f"{node.label}: complex128 sums", shape[:-1], "float64", 16)
        return outputs(dft(x, a, length, inverse, onesided))

    return kernel


@register("DFT", 17, 19)
def dft_17(node: OpNode) -> Kernel:
    """DFT-17: ``axis`` an attribute, default 1."""
    return _dft_kernel(node, axis_input=False)


@register("DFT", 20)
def dft_20(node: OpNode) -> Kernel:
    """DFT-20: ``axis`` the optional third input, default -2."""
    return _dft_kernel(node, axis_input=True)


@register("STFT", 17)
def stft(node: OpNode) -> Kernel:
    """STFT-17 of the module's rule. A signal (1, 8, 1) with frame_step 2 and frame_length 4 has 3
    frames (starting at 0, 2, 4) of 3 one-sided bins: output (1, 3, 3, 2)."""
    check = type_guard(node)
    onesided = bool(int_attr(node, "onesided", 1, (0, 1)))

    def kernel(
        signal: np.ndarray, frame_step: np.ndarray, window: np.ndarray | None = None, frame_length: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        check(signal, frame_step, window, frame_length)
        if signal.ndim != 3 or signal.shape[-1] not in (1, 2):
            raise node.fail(f"input 'signal' has shape {list(signal.shape)}; it must be [batch, length, 1 or 2]")
        if onesided and signal.shape[-1] == 2:
            raise node.fail("1 takes a real signal; this one is complex (last axis 2)", "onesided")
        step = _scalar(node, frame_step, "frame_step", 1)
        if window is not None and window.ndim != 1:
            raise node.fail(f"input 'window' has shape {list(window.shape)}; it must be 1-D")
        length = _scalar(node, frame_length, "frame_length", 1) if frame_length is not None else None
        if window is not None and length is not None and window.shape[0] != length:
            raise node.fail(f"input 'window' has {window.shape[0]} values and frame_length is {length}; they must agree")
        size = length if length is not None else window.shape[0] if window is not None else signal.shape[1]
        if size < 1 or size > signal.shape[1]:
            raise node.fail(f"frames of {size} samples do not fit a signal of {signal.shape[1]}")
        frames = (signal.shape[1] - size) // step + 1
        bins = size // 2 + 1 if onesided else size
        shape = [signal.shape[0], frames, bins, 2]
        check_tensor(f"{node.label}: output", shape, signal.dtype.name, signal.dtype.itemsize)
        check_tensor(f"{node.label}: frames", [signal.shape[0], frames, size], "float64", 16)
        values = _complex(signal)
        starts = np.arange(frames) * step
        framed = values[:, starts[:, None] + np.arange(size)]
        if window is not None:
            framed = framed * window.astype(np.float64)
        spectrum = np.fft.fft(framed, axis=-1)[..., :bins]
        return outputs(_pairs(spectrum, signal.dtype))

    return kernel


@functools.cache
def _allowed_outputs(op_type: str, since: int, param: str) -> dict[int, str]:
    """The ONNX element types the schema allows for type parameter ``param``, by number: {1: 'float', ...}."""
    schema = onnx.defs.get_schema(op_type, since)
    allowed = next(c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == param)
    found: dict[int, str] = {}
    for name in allowed:
        elem = int(onnx.TensorProto.DataType.Value(name[len("tensor(") : -1].upper()))
        found[elem] = name[len("tensor(") : -1]
    return found


def _output_cast(node: OpNode, param: str) -> tuple[np.dtype, Callable[[np.ndarray], np.ndarray]]:
    """``output_datatype`` (default 1, float) checked against ``param``'s types, and the Cast to it."""
    elem = int_attr(node, "output_datatype", onnx.TensorProto.FLOAT)
    allowed = _allowed_outputs(node.op_type, node.since, param)
    if elem not in allowed:
        names = ", ".join(f"{k} ({v})" for k, v in sorted(allowed.items()))
        raise node.fail(f"{elem} is not one of the types {node.op_type}-{node.since} outputs: {names}", "output_datatype")
    to = cast(OpNode(node.name, "Cast", 19, node.opset, {"to": elem}))
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem)), lambda values: to(values)[0]


def cosine_window(size: int, periodic: bool, a: tuple[np.float32, np.float32, np.float32]) -> np.ndarray:
    """``a0 - a1 cos(n t) + a2 cos(2 n t)`` for n < ``size`` in float32, ``t = 6.2831855 / D``
    (D = size, or size - 1 when not ``periodic``): Hann (0.5, 0.5, 0) of size 4 is [0, 0.5, 1, 0.5]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        denominator = np.float32(size) if periodic else np.float32(size) - np.float32(1)
        angles = np.arange(size, dtype=np.float32) * (_TAU / denominator)
        return (a[0] - a[1] * _cos(angles)) + a[2] * _cos(angles * np.float32(2))


def _cos(angles: np.ndarray) -> np.ndarray:
    """The float32 cosine of float32 ``angles``, correctly rounded (computed in float64)."""
    return np.cos(angles.astype(np.float64)).astype(np.float32)


def _window(node: OpNode) -> Kernel:
    check = type_guard(node)
    periodic = bool(int_attr(node, "periodic", 1, (0, 1)))
    dtype, to = _output_cast(node, "T2")
    coefficients = _COSINE_SUMS[node.op_type]

    def kernel(size: np.ndarray) -> tuple[np.ndarray, ...]:
        check(size)
        n = _scalar(node, size, "size", 0)
        check_tensor(f"{node.label}: output", [n], dtype.name, dtype.itemsize)
        return outputs(to(cosine_window(n, periodic, coefficients)))

    return kernel


for _op in _COSINE_SUMS:
    register(_op, 17)(_window)


def mel_bins(num_mel_bins: int, dft_length: int, sample_rate: int, lower: float, upper: float) -> np.ndarray:
    """The M + 2 spectrogram bins of the module's rule (float64): 8 mel bins, dft_length 16, 8000 Hz,
    0..4000 Hz give [0, 0, 0, 1, 1, 2, 3, 4, 5, 6]."""
    low = 2595 * math.log10(1 + lower / 700)
    high = 2595 * math.log10(1 + upper / 700)
    points = low + np.arange(num_mel_bins + 2, dtype=np.float64) * ((high - low) / (num_mel_bins + 2))
    hertz = 700 * (np.power(10.0, points / 2595) - 1)
    return np.floor((dft_length + 1) * hertz / sample_rate).astype(np.int64)


def mel_weight_matrix(num_mel_bins: int, dft_length: int, bins: np.ndarray) -> np.ndarray:
    """The triangles over ``bins`` (float64, (dft_length // 2 + 1, num_mel_bins)), each peaking at 1."""
    matrix = np.zeros((dft_length // 2 + 1, num_mel_bins))
    for m in range(num_mel_bins):
        left, centre, right = (int(b) for b in bins[m : m + 3])
        if centre == left:
            matrix[centre, m] = 1
        else:
            matrix[left : centre + 1, m] = (np.arange(left, centre + 1) - left) / (centre - left)
        if right > centre:
            matrix[centre:right, m] = (right - np.arange(centre, right)) / (right - centre)
    return matrix


@register("MelWeightMatrix", 17)
def mel_weight_matrix_op(node: OpNode) -> Kernel:
    """MelWeightMatrix-17 of the module's rule."""
    check = type_guard(node)
    dtype, to = _output_cast(node, "T3")

    def kernel(
        num_mel_bins: np.ndarray, dft_length: np.ndarray, sample_rate: np.ndarray, lower: np.ndarray, upper: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        check(num_mel_bins, dft_length, sample_rate, lower, upper)
        m = _scalar(node, num_mel_bins, "num_mel_bins", 0)
        n = _scalar(node, dft_length, "dft_length", 1)
        rate = _scalar(node, sample_rate, "sample_rate", 1)
        edges = []
        for what, value in (("lower_edge_hertz", lower), ("upper_edge_hertz", upper)):
            if value.size != 1:
                raise node.fail(f"input '{what}' must be one value, got shape {list(value.shape)}")
            hz = float(value.astype(np.float64).reshape(-1)[0])
            index = math.floor((n + 1) * hz / rate) if math.isfinite(hz) else -1
            if not 0 <= index <= n // 2:
                raise node.fail(
                    f"input '{what}' is {hz} Hz, bin {index} of a {n}-point DFT at {rate} Hz; the matrix has bins 0..{n // 2}"
                )
            edges.append(hz)
        if edges[0] > edges[1]:
            raise node.fail(f"lower_edge_hertz {edges[0]} is above upper_edge_hertz {edges[1]}")
        check_tensor(f"{node.label}: output", [n // 2 + 1, m], dtype.name, dtype.itemsize)
        check_tensor(f"{node.label}: float64 matrix", [n // 2 + 1, m], "float64")
        return outputs(to(mel_weight_matrix(m, n, mel_bins(m, n, rate, edges[0], edges[1]))))

    return kernel
