"""Where OpenVINO CPU computes other values than ONNX on some data only: one table, ``DEVIATIONS``.

These cannot be seen when converting (they depend on the values fed: a NaN, a tie, an overflow),
so ovpool does not refuse the operators: it writes them, ``docs/semantics.md`` lists them, and
``ovpool convert --verify`` (or ``ovpool compare``) catches them on the user's own data. Each row
names the operators, the data that shows it, what OpenVINO CPU 2026.4.1 gives at f32 and what
ONNX (and onnxruntime) gives, with the figure of a one-node repro (``tests/ops/openvino_known.py``
holds the repros, ``tests/ops/test_openvino_known.py`` checks they still differ so). The
conversion defects seen at convert time are ``ovpool.ov.frontend_fixes.DEFECTS``.

``python -m ovpool.ov.cpu_deviations`` prints the README's table (``readme_table``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Deviation:
    """OpenVINO CPU gives ``cpu`` where ONNX gives ``onnx``, for ``ops`` on the data ``when``."""

    ops: str
    when: str
    cpu: str
    onnx: str


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "Relu, Celu, HardSigmoid, Exp, Gelu, Shrink, ThresholdedRelu",
        "NaN or +-Inf values",
        "Relu/Celu/HardSigmoid(NaN) 0/0/1, Exp(NaN) inf, Gelu(inf) NaN, Shrink/ThresholdedRelu(NaN) NaN",
        "NaN stays NaN, Gelu(inf) is inf (onnxruntime: 0 for Shrink and ThresholdedRelu of NaN)",
    ),
    Deviation("Greater, GreaterOrEqual", "NaN operands", "NaN > 1 and NaN >= 1 are True", "False"),
    Deviation("Cast to BOOL", "NaN", "False", "True (NaN is not zero)"),
    Deviation(
        "Gemm", "beta = 0 with NaN or Inf in C", "0 * NaN = NaN (the schema's formula)", "onnxruntime leaves C unread (BLAS)"
    ),
    Deviation("Add, Sub, Mul, Sum", "8-bit integers that overflow", "saturates: int8 100 * 3 = 127", "wraps: 44"),
    Deviation(
        "BitShift",
        "results that overflow, values beyond float precision",
        "uint8 5 << 5 = 255; uint64 (2**40 + 3) >> 1 = 1",
        "160 (the low bits); 2**39 + 1",
    ),
    Deviation(
        "any op",
        "int64 values beyond int32 (Slice starts/ends from a graph input, constants)",
        "computed in int32: Slice [0:INT64_MAX] of 5 values gives 4; a Constant 2**40 is 2147483647",
        "5 values; 2**40",
    ),
    Deviation("any op", "float64 data", "computed in float32: 1e300 is inf, precision is float32's", "float64"),
    Deviation("TopK", "equal values", "indices 1, 0, 2 for zeros", "0, 1, 2 (the lower index first)"),
    Deviation("TopK", "K = 0 fed at run time", "the IR does not compile (a constant K = 0 is lowered)", "empty outputs"),
    Deviation("Hardmax", "equal maxima in a row", "not always the first maximum (6 of 400 values on [5, 5, 4, 4])", "the first"),
    Deviation(
        "NonMaxSuppression",
        "equal scores, IoU exactly at the threshold",
        "other boxes or order (-0.0 and 0.0 scores: 1 box)",
        "3 boxes (onnxruntime)",
    ),
    Deviation("ReduceMax, ReduceMin", "an axis of length 0", "-FLT_MAX / INT32_MIN (and the max ones)", "-inf / INT64_MIN"),
    Deviation("Flatten", "an input with a zero dim", "Flatten(axis=2) of [4, 1, 2, 0] is [4, 1]", "[4, 0]"),
    Deviation("BitShift, Expand", "a rank-0 result", "shape [1]", "shape []"),
    Deviation("Shrink", "integer inputs, fractional bias", "rounds x - bias: 5 - 1e-6 = 5", "truncates: 4"),
    Deviation("ReduceLogSum, ReduceLogSumExp", "integer inputs", "rounds the logarithm: log(20) = 3", "truncates: 2"),
    Deviation("Resize, Upsample", "integer data, linear or cubic", "rounds otherwise: -7499", "-7498 (onnxruntime)"),
    Deviation("Softplus", "inputs far below 0 (-23.3)", "-1.9e-6 (about 2e-6 off)", "7.8e-11"),
    Deviation("LpNormalization", "an axis of length 1", "0.99993", "x / abs(x) = 1"),
)

DOING = "runtime deviation: written, documented; `--verify` catches it on the user's data"


def readme_table() -> str:
    """The README's table of the deviations, one row per ``DEVIATIONS`` row."""
    rows = ["| ONNX node | data | OpenVINO CPU 2026.4 (f32) | ONNX | ovpool |", "|---|---|---|---|---|"]
    rows += [f"| {d.ops} | {d.when} | {d.cpu} | {d.onnx} | {DOING} |" for d in DEVIATIONS]
    return "\n".join(rows)


if __name__ == "__main__":
    print(readme_table())
