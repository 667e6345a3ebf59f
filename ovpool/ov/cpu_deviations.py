"""Where OpenVINO CPU computes other values than ONNX on some data only: one table, ``DEVIATIONS``.

These cannot be seen when converting (they depend on the values fed: a NaN, a tie, an overflow),
so ovpool does not refuse the operators: it writes them, ``docs/semantics.md`` lists them, and
``ovpool convert --verify`` (or ``ovpool compare``) catches them on the user's own data. Each row
names the operators, the data that shows it, what OpenVINO CPU 2026.4.1 gives at f32 and what
ONNX (and onnxruntime) gives, with the figure of a one-node repro (``tests/ops/openvino_known.py``
holds the repros, ``tests/ops/test_openvino_known.py`` checks they still differ so). The
conversion defects seen at convert time are ``ovpool.ov.frontend_fixes.DEFECTS``, and so are the
departures on data that ovpool's conversion computes exactly (``ovpool.ov.value_fixes``: TopK and
Hardmax ties, TopK's K = 0 fed at run time, NaN in Greater and Cast to BOOL, 8-bit overflow...), which are not listed here.

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
    Deviation(
        "Gemm", "beta = 0 with NaN or Inf in C", "0 * NaN = NaN (the schema's formula)", "onnxruntime leaves C unread (BLAS)"
    ),
    Deviation("BitShift", "uint64 values beyond 32 bits", "(2**40 + 3) >> 1 = 1", "2**39 + 1"),
    Deviation(
        "any op",
        "int64 values beyond int32 (Slice starts/ends from a graph input, constants)",
        "computed in int32: Slice [0:INT64_MAX] of 5 values gives 4; a Constant 2**40 is 2147483647",
        "5 values; 2**40",
    ),
    Deviation("any op", "float64 data", "computed in float32: 1e300 is inf, precision is float32's", "float64"),
    Deviation(
        "NonMaxSuppression",
        "equal scores, IoU exactly at the threshold",
        "other boxes or order (-0.0 and 0.0 scores: 1 box)",
        "3 boxes (onnxruntime)",
    ),
    Deviation(
        "ReduceMax, ReduceMin",
        "an axis of length 0 in int64 or uint32, or in dims not static when converting",
        "-FLT_MAX / INT32_MIN (and the max ones)",
        "-inf / INT64_MIN",
    ),
    Deviation("Flatten", "a zero dim in dims not static when converting", "Flatten(axis=2) of [4, 1, 2, 0] is [4, 1]", "[4, 0]"),
    Deviation("BitShift of uint64, Expand by a shape of unknown length", "a rank-0 result", "shape [1]", "shape []"),
    Deviation("Resize, Upsample", "integer data, linear or cubic", "rounds otherwise: -7499", "-7498 (onnxruntime)"),
    Deviation("Softplus", "inputs far below 0 (-23.3)", "-1.9e-6 (about 2e-6 off)", "7.8e-11"),
)

DOING = "runtime deviation: written, documented; `--verify` catches it on the user's data"


def readme_table() -> str:
    """The README's table of the deviations, one row per ``DEVIATIONS`` row."""
    rows = ["| ONNX node | data | OpenVINO CPU 2026.4 (f32) | ONNX | ovpool |", "|---|---|---|---|---|"]
    rows += [f"| {d.ops} | {d.when} | {d.cpu} | {d.onnx} | {DOING} |" for d in DEVIATIONS]
    return "\n".join(rows)


if __name__ == "__main__":
    print(readme_table())
