"""A naive numpy emulator of DirectML's pooling operators, driven only by descriptor fields.

Written from the DirectML operator pages, independently of ovpool (it imports nothing from it):
- a window's cell ``j`` on axis ``a`` of output ``i`` is input ``i*Strides[a] - StartPadding[a]
  + j*Dilations[a]``; how many outputs there are is OutputTensor's Sizes, nothing else;
- average: the sum of the cells inside the input over a divisor that counts the window's cells
  inside the input (IncludePadding=FALSE) or inside ``[-StartPadding, In + EndPadding)`` (TRUE);
- max: the largest cell inside the input; the first one met in row-major window order wins a tie;
  OutputIndicesTensor holds its flat index over the whole (contiguous) input tensor;
- LP_POOLING / LP_POOLING1: ``(sum of |cell|**P) ** (1/P)`` over the window's cells inside the
  input, a padding cell being 0 (the page's "Lp-normalized value"; its formula writes ``X**P``,
  which is that norm for even P; onnxruntime's DirectML provider maps ONNX LpPool, which takes the
  absolute value, onto these descriptors);
- MAX_UNPOOLING: zeros of OutputTensor's Sizes, ``out.flat[index] = value``;
- PADDING: constant padding on every axis;
- QUANTIZED_LINEAR_AVERAGE_POOLING: the page's dequantize ``(Input - ZeroPoint) * Scale``, the
  average above, the page's quantize ``clamp(round(Input / Scale) + ZeroPoint, Min, Max)``, each
  scale and zero point per tensor (one value) or per channel (ChannelCount values), a null zero
  point 0. Computed on exact rationals (``fractions.Fraction``); ``round`` takes a tie to the even
  integer: the page writes only ``round``, and onnxruntime's DirectML provider maps ONNX's
  half-to-even QuantizeLinear and QLinearAveragePool onto these descriptors.
Tensors are flat buffers: a desc's Sizes say how an operator views one, so a 1x3x8 graph tensor
is the same buffer as a 1x3x1x8 desc; a desc with Strides (in elements) views the buffer through
them, so NHWC data reads as NCHW. Constants (the document's ``constants``) are buffers too. Slow by
design: tiny tensors only.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

_NUMPY = {
    "DML_TENSOR_DATA_TYPE_FLOAT32": np.float32,
    "DML_TENSOR_DATA_TYPE_FLOAT16": np.float16,
    "DML_TENSOR_DATA_TYPE_UINT32": np.uint32,
    "DML_TENSOR_DATA_TYPE_UINT64": np.uint64,
    "DML_TENSOR_DATA_TYPE_INT64": np.int64,
    "DML_TENSOR_DATA_TYPE_INT32": np.int32,
    "DML_TENSOR_DATA_TYPE_INT8": np.int8,
    "DML_TENSOR_DATA_TYPE_UINT8": np.uint8,
}


def run(document: dict, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run every operator in order on flat buffers; returns every tensor written, shaped as the
    document's ``tensors`` entry (the source graph's shape) or else as the writing desc says."""
    buffers = {name: np.asarray(value).ravel() for name, value in inputs.items()}
    for name, constant in document.get("constants", {}).items():
        buffers[name] = np.asarray(constant["Values"], dtype=_NUMPY[constant["DataType"]])
    written: dict[str, tuple] = {}
    for op in document["operators"]:
        desc = op["desc"]
        members = [m for m in _INPUT_MEMBERS[op["type"]] if desc.get(m) is not None]
        args = [_view(buffers[name], desc[member]) for name, member in zip(op["inputs"], members)]
        results = _RUN[op["type"]](desc, *args)
        for name, member, value in zip(op["outputs"], ("OutputTensor", "OutputIndicesTensor"), results):
            typed = value.astype(_NUMPY[desc[member]["DataType"]])
            buffers[name] = _store(typed, desc[member])
            written[name] = tuple(desc[member]["Sizes"])
    logical = document.get("tensors", {})
    return {name: buffers[name].reshape(logical[name]["Sizes"] if name in logical else sizes) for name, sizes in written.items()}


def _view(buffer: np.ndarray, tensor: dict) -> np.ndarray:
    sizes = tuple(tensor["Sizes"])
    assert buffer.size == int(np.prod(sizes)), (buffer.size, sizes)
    if "Strides" in tensor:
        steps = tuple(s * buffer.itemsize for s in tensor["Strides"])
        return np.lib.stride_tricks.as_strided(buffer, sizes, steps, writeable=False)
    return buffer.reshape(sizes)


def _store(value: np.ndarray, tensor: dict) -> np.ndarray:
    """The flat buffer a desc writes: packed row-major, or laid out by its Strides."""
    if "Strides" not in tensor:
        return value.ravel()
    size = 1 + sum((n - 1) * s for n, s in zip(value.shape, tensor["Strides"]))
    buffer = np.zeros(size, dtype=value.dtype)
    steps = tuple(s * buffer.itemsize for s in tensor["Strides"])
    np.lib.stride_tricks.as_strided(buffer, value.shape, steps)[...] = value
    return buffer


def _windows(desc: dict, in_sizes, out_sizes):
    """Yield (n, c, output position, list of in-tensor-or-None cells with their padded flag)."""
    count = desc["DimensionCount"]
    dilations = desc.get("Dilations") or [1] * count
    for n, c in itertools.product(range(out_sizes[0]), range(out_sizes[1])):
        for pos in itertools.product(*[range(v) for v in out_sizes[2:]]):
            cells = []
            for tap in itertools.product(*[range(k) for k in desc["WindowSize"]]):
                coords = [pos[a] * desc["Strides"][a] - desc["StartPadding"][a] + tap[a] * dilations[a] for a in range(count)]
                inside = all(0 <= coords[a] < in_sizes[2 + a] for a in range(count))
                in_pads = all(
                    -desc["StartPadding"][a] <= coords[a] < in_sizes[2 + a] + desc["EndPadding"][a] for a in range(count)
                )
                cells.append((tuple(coords) if inside else None, in_pads))
            yield n, c, pos, cells


def _divisor(desc: dict, cells) -> int:
    if desc["IncludePadding"]:
        return sum(1 for _, in_pads in cells if in_pads)
    return sum(1 for coords, _ in cells if coords is not None)


def _average(desc: dict, x: np.ndarray):
    out_sizes = desc["OutputTensor"]["Sizes"]
    y = np.zeros(out_sizes, dtype=np.float64)
    for n, c, pos, cells in _windows(desc, x.shape, out_sizes):
        total = sum(float(x[(n, c) + coords]) for coords, _ in cells if coords is not None)
        y[(n, c) + pos] = total / _divisor(desc, cells)
    return (y,)


_QUANTIZED_INPUTS = ("InputTensor", "InputScaleTensor", "InputZeroPointTensor", "OutputScaleTensor", "OutputZeroPointTensor")
_RANGE = {"DML_TENSOR_DATA_TYPE_INT8": (-128, 127), "DML_TENSOR_DATA_TYPE_UINT8": (0, 255)}


def _quantized_average(desc: dict, *arrays: np.ndarray):
    tensors = dict(zip([m for m in _QUANTIZED_INPUTS if desc.get(m) is not None], arrays))
    x = tensors["InputTensor"]

    def channel(member: str, c: int, default: int = 0):
        values = tensors[member].ravel() if member in tensors else np.array([default])
        return values[c] if values.size > 1 else values[0]

    out_sizes = desc["OutputTensor"]["Sizes"]
    low, high = _RANGE[desc["OutputTensor"]["DataType"]]
    y = np.zeros(out_sizes, dtype=np.int64)
    for n, c, pos, cells in _windows(desc, x.shape, out_sizes):
        scale, zero = Fraction(float(channel("InputScaleTensor", c))), int(channel("InputZeroPointTensor", c))
        total = sum((int(x[(n, c) + coords]) - zero) * scale for coords, _ in cells if coords is not None)
        average = Fraction(total) / _divisor(desc, cells)
        quantized = round(average / Fraction(float(channel("OutputScaleTensor", c)))) + int(channel("OutputZeroPointTensor", c))
        y[(n, c) + pos] = min(max(quantized, low), high)
    return (y,)


def _max(desc: dict, x: np.ndarray):
    out_sizes = desc["OutputTensor"]["Sizes"]
    y = np.zeros(out_sizes, dtype=np.float64)
    idx = np.zeros(out_sizes, dtype=np.int64)
    strides = [int(np.prod(x.shape[a + 1 :])) for a in range(x.ndim)]
    for n, c, pos, cells in _windows(desc, x.shape, out_sizes):
        best, best_at = None, None
        for coords, _ in cells:
            if coords is None:
                continue
            value = float(x[(n, c) + coords])
            if best is None or value > best:
                best, best_at = value, (n, c) + coords
        y[(n, c) + pos] = best
        idx[(n, c) + pos] = sum(i * s for i, s in zip(best_at, strides))
    return (y, idx) if desc.get("OutputIndicesTensor") else (y,)


def _lp(desc: dict, x: np.ndarray):
    out_sizes = desc["OutputTensor"]["Sizes"]
    p = desc["P"]
    y = np.zeros(out_sizes, dtype=np.float64)
    for n, c, pos, cells in _windows(desc, x.shape, out_sizes):
        total = sum(abs(float(x[(n, c) + coords])) ** p for coords, _ in cells if coords is not None)
        y[(n, c) + pos] = total ** (1.0 / p)
    return (y,)


def _unpool(desc: dict, x: np.ndarray, indices: np.ndarray):
    out = np.zeros(int(np.prod(desc["OutputTensor"]["Sizes"])), dtype=x.dtype)
    for value, where in zip(x.ravel(), indices.ravel()):
        out[int(where)] = value
    return (out.reshape(desc["OutputTensor"]["Sizes"]),)


def _padding(desc: dict, x: np.ndarray):
    assert desc["PaddingMode"] == "DML_PADDING_MODE_CONSTANT"
    out = np.full(desc["OutputTensor"]["Sizes"], desc["PaddingValue"], dtype=x.dtype)
    region = tuple(slice(b, b + size) for b, size in zip(desc["StartPadding"], x.shape))
    out[region] = x
    return (out,)


_RUN = {
    "DML_OPERATOR_AVERAGE_POOLING": _average,
    "DML_OPERATOR_AVERAGE_POOLING1": _average,
    "DML_OPERATOR_MAX_POOLING": _max,
    "DML_OPERATOR_MAX_POOLING1": _max,
    "DML_OPERATOR_MAX_POOLING2": _max,
    "DML_OPERATOR_LP_POOLING": _lp,
    "DML_OPERATOR_LP_POOLING1": _lp,
    "DML_OPERATOR_MAX_UNPOOLING": _unpool,
    "DML_OPERATOR_PADDING": _padding,
    "DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING": _quantized_average,
}
_INPUT_MEMBERS = (
    {op: ("InputTensor",) for op in _RUN}
    | {"DML_OPERATOR_MAX_UNPOOLING": ("InputTensor", "IndicesTensor")}
    | {"DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING": _QUANTIZED_INPUTS}
)
