"""The known gaps of the ONNX -> IR -> OpenVINO CPU / numpy path, while other branches are unmerged.

``KNOWN`` is one table of rows (op, since-versions, stage, condition, reason): a case of
``on_openvino.through_openvino`` that fails at ``stage`` and matches a row is an xfail with the
row's reason instead of a failure. Kinds:

* ``frontend``: an OpenVINO ONNX frontend defect ovpool's conversion inherits (branch fefix
  lowers or refuses them);
* ``numpy layer``: an IR layer the frontend emits that IR-on-numpy does not run yet (branches
  irlayers and gridsample);
* ``other``: found by this suite, each with a one-line repro.

A row never hides a pass: a case that agrees passes whether or not a row matches it.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Known:
    """A known gap: ``op`` at the ``since`` versions (empty: every one; op "*" with ``layer``: any
    op whose IR has that layer), failing at ``stage`` ("convert", "openvino", "numpy") when
    ``when(case)``; ``condition`` says ``when`` in words, ``reason`` why and who fixes it."""

    kind: str
    op: str
    since: tuple[int, ...]
    stage: str
    condition: str
    reason: str
    when: Callable[[Case], bool] = field(default=lambda case: True)
    layer: str = ""

    def why(self) -> str:
        versions = "/".join(map(str, self.since)) or "all"
        return f"{self.op}-{versions} {self.condition}: {self.reason}"


def _coerced_axis(case: Case) -> bool:
    """Softmax-family 1..12 on rank > 2 with an axis that is not the last (default axis 1)."""
    rank = case.rank()
    return rank > 2 and case.attr("axis", 1) % rank != rank - 1


def _integers(case: Case) -> bool:
    return np.dtype(case.dtype()).kind in "iu" if case.dtype() else False


FEFIX = "OpenVINO ONNX frontend defect (fefix lowers it)"
IRLAYERS = "not on numpy yet (irlayers adds it)"

KNOWN: tuple[Known, ...] = (
    *(
        Known(
            "frontend",
            op,
            (1, 11),
            "openvino",
            "rank > 2, axis not the last",
            f"{FEFIX}: OpenVINO takes the opset-13 one-axis meaning, not the 2-D coercion",
            _coerced_axis,
        )
        for op in ("Softmax", "LogSoftmax", "Hardmax")
    ),
    Known(
        "frontend",
        "Resize",
        (18, 19),
        "openvino",
        "antialias=1",
        f"{FEFIX}: OpenVINO's antialias computes other values",
        lambda case: case.attr("antialias", 0) == 1,
    ),
    Known(
        "frontend",
        "RoiAlign",
        (10, 16),
        "openvino",
        "mode=max",
        f"{FEFIX}: OpenVINO's max mode differs from the schema (onnxruntime's from both)",
        lambda case: case.attr("mode", "avg") == "max",
    ),
    Known(
        "frontend",
        "Div",
        (7, 13, 14),
        "numpy",
        "integer inputs",
        f"{FEFIX}: the frontend writes Divide m_pythondiv=true (floor, numpy follows it); CPU truncates as ONNX does",
        _integers,
    ),
    *(
        Known("numpy layer", "*", (), "numpy", f"IR layer {layer}", IRLAYERS, layer=layer.replace("-", "-opset"))
        for layer in (
            "ROIAlign-9",
            "OneHot-1",
            "OneHot-16",
            "NonMaxSuppression-9",
            "CumSum-3",
            "Reverse-1",
            "GatherElements-6",
            "ScatterNDUpdate-4",
            "ScatterNDUpdate-15",
            "Einsum-7",
            "ScatterElementsUpdate-12",
            "LRN-1",
        )
    ),
    Known(
        "numpy layer",
        "*",
        (),
        "numpy",
        "IR layer GridSample-9",
        "not on numpy yet (gridsample adds it)",
        layer="GridSample-opset9",
    ),
)


def match(case: Case, stage: str, detail: str) -> Known | None:
    """The first row of ``KNOWN`` that explains ``case`` failing at ``stage`` with ``detail``. A
    layer row explains a numpy refusal only when every layer refused is a known one."""
    for row in KNOWN:
        if row.stage != stage or row.layer:
            continue
        if row.op == case.op and (not row.since or case.since in row.since) and row.when(case):
            return row
    if stage == "numpy" and "does not run these IR layers" in detail:
        refused = [part.split(" ")[0] for part in detail.split("IR layers: ", 1)[1].split(", ")]
        rows = [next((row for row in KNOWN if row.layer == layer), None) for layer in refused]
        if rows and all(rows):
            return rows[0]
    return None
