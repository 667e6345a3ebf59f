"""The known gaps of the ONNX -> IR -> OpenVINO CPU / numpy path, while other branches are unmerged.

``KNOWN`` is one table of rows (op, since-versions, stage, condition, reason): a case of
``on_openvino.through_openvino`` that fails at ``stage`` and matches a row is an xfail with the
row's reason instead of a failure. Kinds:

* ``numpy layer``: an IR layer the frontend emits that IR-on-numpy does not run (none now: Loop-5
  and TensorIterator-1, the bodies of ONNX Loop and Scan, run);
* ``other``: an OpenVINO defect the conversion does not fix or refuse yet, or an IR-on-numpy
  defect, each with a one-line repro where one exists.

The defects of issue 21's list are fixed or refused by ``ovpool.ov.frontend_fixes`` and the IR
layers it named run on numpy, so they have no row.

A row never hides a pass: a case that agrees passes whether or not a row matches it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx


@dataclass(frozen=True)
class Case:
    """One converted model: its first node's ``op`` (``domain``) at ``opset``, the ``since``
    version in force there, attributes, and inputs as (dtype, shape, is an initializer) or None
    for an omitted one; ``op_types``/``node_names`` of every node of the graph; ``named``: the
    names a refusal may give to say where (op types and names of the nodes, bodies included, and
    the graph inputs)."""

    op: str
    domain: str
    opset: int
    since: int
    attrs: Mapping[str, Any]
    inputs: tuple[tuple[str, tuple[int, ...], bool] | None, ...]
    op_types: tuple[str, ...] = ()
    node_names: tuple[str, ...] = ()
    named: tuple[str, ...] = ()

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute ``name`` (bytes decoded), or ``default``."""
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def rank(self, i: int = 0) -> int:
        return len(self.inputs[i][1]) if i < len(self.inputs) and self.inputs[i] else -1

    def dtype(self, i: int = 0) -> str:
        entry = self.inputs[i] if i < len(self.inputs) else None
        return entry[0] if entry else ""

    def describe(self) -> str:
        """``Softmax-1 at opset 7 {axis=1} inputs x0 float32[2, 3, 4]`` (+ the graph's ops when several)."""
        attrs = ", ".join(f"{k}={_shown(v)}" for k, v in sorted(self.attrs.items()))
        ins = ", ".join(
            "(omitted)" if i is None else f"x{n} {i[0]}{list(i[1])}{' initializer' if i[2] else ''}"
            for n, i in enumerate(self.inputs)
        )
        graph = f" in a graph of {list(self.op_types)}" if len(self.op_types) > 1 else ""
        domain = f"{self.domain}." if self.domain else ""
        return f"{domain}{self.op}-{self.since} at opset {self.opset} {{{attrs}}} inputs {ins or '(none)'}{graph}"

    def as_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "domain": self.domain,
            "opset": self.opset,
            "since": self.since,
            "attrs": {k: _shown(v) for k, v in sorted(self.attrs.items())},
            "inputs": [None if i is None else [i[0], list(i[1]), i[2]] for i in self.inputs],
            "graph": list(self.op_types),
        }


def _shown(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, onnx.TensorProto):
        return f"tensor({onnx.helper.tensor_dtype_to_np_dtype(value.data_type).name}{list(value.dims)})"
    if isinstance(value, onnx.GraphProto):
        return f"graph({[n.op_type for n in value.node]})"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


Repro = tuple[str, int, list[Any], dict[str, Any], int]  # op, opset, inputs, attrs, number of outputs


@dataclass(frozen=True)
class Known:
    """A known gap: ``ops`` at the ``since`` versions (empty: every one; ``("*",)``: any op)
    failing at ``stage`` ("convert", "openvino", "numpy", "crash") when ``when(case)`` and the failure's
    detail matches ``text``; or, with ``layer`` ("ROIAlign-opset9"), any IR numpy refuses for that
    layer alone. ``condition`` says it in words, ``reason`` why and who fixes it; ``repro`` is a
    minimal case, its inputs at ``repro_constant`` initializers (``test_openvino_known`` checks
    that it still fails so)."""

    kind: str
    ops: tuple[str, ...]
    since: tuple[int, ...]
    stage: str
    condition: str
    reason: str
    when: Callable[[Case], bool] = field(default=lambda case: True)
    text: str = ""
    layer: str = ""
    repro: Repro | None = None
    repro_constant: tuple[int, ...] = ()

    def why(self) -> str:
        versions = "/".join(map(str, self.since)) or "all"
        return f"{'/'.join(self.ops)}-{versions} {self.condition}: {self.reason}"

    def explains(self, case: Case, stage: str, detail: str) -> bool:
        """Whether this row explains ``case`` failing at ``stage`` with ``detail``."""
        if self.layer or stage != self.stage:
            return False
        if self.ops != ("*",) and case.op not in self.ops:
            return False
        return (not self.since or case.since in self.since) and self.when(case) and bool(re.search(self.text, detail))


def _dtypes(*names: str) -> Callable[[Case], bool]:
    """Some input is of one of the dtypes ``names`` ("int" and "uint": every width)."""

    def when(case: Case) -> bool:
        return any(i is not None and (i[0] in names or i[0].rstrip("0123456789") in names) for i in case.inputs)

    return when


def _empty_input(case: Case) -> bool:
    return any(i is not None and 0 in i[1] for i in case.inputs)


def _f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def _i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def _runtime_scale(case: Case) -> bool:
    """DynamicQuantizeLinear, or QuantizeLinear whose scale is fed (not an initializer)."""
    scale = case.inputs[1] if len(case.inputs) > 1 else None
    return case.op == "DynamicQuantizeLinear" or (scale is not None and not scale[2])


_GRID = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
_X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
_LSTM = [np.ones((2, 1, 2), np.float32), np.full((1, 8, 2), 0.5, np.float32), np.full((1, 8, 2), 0.25, np.float32)]

KNOWN: tuple[Known, ...] = (
    # (c) found by this suite: the converted IR computes otherwise than ONNX on OpenVINO CPU
    Known(
        "other",
        ("BitShift", "Expand"),
        (),
        "openvino",
        "rank-0 result",
        "OpenVINO CPU returns shape [1] for a rank-0 result (BitShift of uint64: the others are frontend_fixes' bitwise "
        "shifts; Expand by a shape of unknown length: an empty static one is frontend_fixes' Identity)",
        text=r"shape \(1,\), onnxruntime gives \(\)",
        repro=("BitShift", 11, [np.uint64(3), np.uint64(1)], {"direction": "LEFT"}, 1),
    ),
    Known(
        "other",
        ("*",),
        (),
        "openvino",
        "float64 inputs",
        "OpenVINO CPU computes f64 in f32: values beyond f32's range saturate, precision is f32's",
        _dtypes("float64"),
        text="values differ",
        repro=("Neg", 13, [np.array([1e300], np.float64)], {}, 1),
    ),
    Known(
        "other",
        ("*",),
        (),
        "openvino",
        "NaN or +-Inf input values",
        "OpenVINO CPU propagates NaN/Inf otherwise (Relu/Celu/HardSigmoid(NaN) -> 0/0/1, Exp(NaN) -> inf, "
        "Gelu(inf) -> NaN, Shrink/ThresholdedRelu(NaN) -> NaN where onnxruntime gives 0)",
        _dtypes("float32", "float16"),
        text=r"(nan|inf)\)? where onnxruntime gives|where onnxruntime gives np\.float64\(-?(nan|inf)\)",
        repro=("Relu", 14, [_f32(np.nan, 1.0)], {}, 1),
    ),
    Known(
        "other",
        ("Slice",),
        (10, 11, 13),
        "openvino",
        "int64 starts/ends beyond int32 from a graph input (the INT64_MAX/INT64_MIN sentinels)",
        "OpenVINO CPU reads int64 inputs as int32 (INT64_MIN is 0, -2**31 - 1 is 2**31 - 1): starts=INT64_MAX, "
        "ends=INT64_MIN, steps=-1 on 5 values gives 4; constant starts/ends are right (cpu_deviations)",
        text="shape",
        repro=("Slice", 13, [_f32(1, 2, 3, 4, 5), _i64(2**63 - 1), _i64(-(2**63)), _i64(0), _i64(-1)], {}, 1),
    ),
    Known(
        "other",
        ("Gemm",),
        (),
        "openvino",
        "beta = 0 with NaN or Inf in C",
        "OpenVINO computes 0 * NaN = NaN; onnxruntime (BLAS's rule) leaves C unread",
        lambda case: case.attr("beta", 1.0) == 0.0,
        repro=("Gemm", 13, [np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), _f32(np.nan, np.inf)], {"beta": 0.0}, 1),
    ),
    Known(
        "other",
        ("ReduceMax", "ReduceMin"),
        (),
        "openvino",
        "reducing an axis of length 0, int64 (uint32 too, which onnxruntime does not run)",
        "frontend_fixes writes ONNX's value as a constant, which OpenVINO CPU computes in int32: INT32_MIN where ONNX "
        "gives INT64_MIN (other types are exact)",
        lambda case: _empty_input(case) and _dtypes("int64")(case),
        repro=("ReduceMax", 13, [np.ones((2, 0, 3), np.int64)], {"axes": [1]}, 1),
    ),
    Known(
        "other",
        ("Resize", "Upsample"),
        (),
        "openvino",
        "integer data, linear or cubic",
        "OpenVINO CPU rounds the interpolated integers otherwise (one step apart: -7499 where onnxruntime gives -7498)",
        _dtypes("int", "uint"),
        text="values differ",
        repro=("Resize", 13, [np.array([[[[-10000, 5], [7, 9]]]], np.int32), None, _f32(1, 1, 2, 2)], {"mode": "linear"}, 1),
    ),
    Known(
        "other",
        ("NonMaxSuppression",),
        (),
        "openvino",
        "ties: equal scores or IoU exactly at the threshold",
        "OpenVINO selects other boxes (-0.0 and 0.0 scores: 1 box where onnxruntime keeps 3) or orders them otherwise",
        text="shape|values differ",
        repro=(
            "NonMaxSuppression",
            11,
            [
                np.array([[[0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 5, 5]]], np.float32),
                np.array([[[-0.0, 0.0, -0.0]]], np.float32),
                _i64(3),
            ],
            {},
            1,
        ),
    ),
    Known(
        "other",
        ("BitShift",),
        (),
        "openvino",
        "uint64 values beyond 32 bits",
        "uint64 is left to the frontend's lowering (Multiply/Divide by Power; 8 to 32 bits are frontend_fixes' bitwise "
        "shifts), which OpenVINO CPU computes in 32 bits ((2**40 + 3) >> 1 gives 1)",
        _dtypes("uint64"),
        text="values differ",
        repro=("BitShift", 11, [np.array([2**40 + 3], np.uint64), np.array([1], np.uint64)], {"direction": "RIGHT"}, 1),
    ),
    Known(
        "other",
        ("BitShift",),
        (),
        "numpy",
        "uint64, a right shift by 64 or more",
        "the frontend's lowering divides by Power(2, shift), which is 0 in uint64 at 2**64: IR-on-numpy "
        "refuses the integer division by zero, OpenVINO CPU returns its own value (ONNX: 0)",
        _dtypes("uint64"),
        text="integer division by zero",
        repro=("BitShift", 11, [np.array([7], np.uint64), np.array([64], np.uint64)], {"direction": "RIGHT"}, 1),
    ),
    Known(
        "other",
        ("Softplus",),
        (),
        "openvino",
        "inputs far below 0",
        "OpenVINO CPU's Softplus is off by about 2e-6 absolute there (-1.9e-6 where onnxruntime gives 7.8e-11), beyond atol 1e-6",
        text="values differ",
        repro=("Softplus", 7, [np.full((4, 4, 4, 5), -23.3, np.float32)], {}, 1),
    ),
    Known(
        "other",
        ("RNN",),
        (),
        "openvino",
        "bidirectional, activations [Tanh, Softsign], sequence_lens",
        "OpenVINO computes other values (5 of 20 at RNN-7 on [5, 2, 4]); no smaller case found yet",
        lambda case: len(case.inputs) > 4 and case.inputs[4] is not None,
        text="values differ",
    ),
    Known(
        "other",
        ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"),
        (),
        "openvino",
        "int64/uint64 values beyond 32 bits",
        "OpenVINO CPU computes 64-bit bitwise ops in 32 bits (2**40 + 3 & 2**40 + 1 gives 1)",
        _dtypes("int64", "uint64"),
        text="values differ",
        repro=("BitwiseAnd", 18, [np.array([2**40 + 3], np.int64), np.array([2**40 + 1], np.int64)], {}, 1),
    ),
    Known(
        "numpy layer",
        ("Col2Im",),
        (),
        "numpy",
        "any",
        "IR-on-numpy has no Col2Im-opset15 layer yet (the numpy executor's ONNX Col2Im-18 kernel is ovpool.engine.ops.tensor's)",
        layer="Col2Im-opset15",
        repro=("Col2Im", 18, [np.ones((1, 4, 4), np.float32), _i64(3, 3), _i64(2, 2)], {}, 1),
    ),
    Known(
        "other",
        ("DynamicQuantizeLinear", "QuantizeLinear"),
        (),
        "openvino",
        "x / scale within a float32 step of a half-integer, the scale computed at run time",
        "OpenVINO CPU's Divide is 1 ulp off on 26 % of float32 quotients: -2.5 / (5 / 255) gives -127.5, rounded "
        "to -128 where ONNX's -127.49999 gives -127, one step off (cpu_deviations)",
        _runtime_scale,
        text="values differ",
        repro=("DynamicQuantizeLinear", 11, [_f32(0, 2, -3, -2.5, 1.34, 0.5)], {}, 3),
    ),
)


def match(case: Case, stage: str, detail: str) -> Known | None:
    """The first row of ``KNOWN`` that explains ``case`` failing at ``stage`` with ``detail``, rows
    naming the op before rows for any op. A layer row explains a numpy refusal only when every
    layer refused is a known one."""
    specific_first = sorted(KNOWN, key=lambda row: row.ops == ("*",))
    row = next((row for row in specific_first if row.explains(case, stage, detail)), None)
    if row is not None:
        return row
    if stage == "numpy" and "does not run these IR layers: " in detail:
        refused = [part.split(" ")[0] for part in detail.split("IR layers: ", 1)[1].split(", ")]
        rows = [next((row for row in KNOWN if row.layer == layer), None) for layer in refused]
        if rows and all(rows):
            return rows[0]
    return None


def crashes(case: Case) -> Known | None:
    """The row of a case that kills the OpenVINO CPU process (stage "crash"), which is then not run."""
    return next((row for row in KNOWN if row.stage == "crash" and row.explains(case, "crash", "")), None)
