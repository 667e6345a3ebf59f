"""The operator tests' models also through ``ovpool convert`` (ONNX -> IR), on OpenVINO CPU and on
ovpool's IR-on-numpy executor (issue 21, parts 1 and 4).

:func:`through_openvino` takes a model ``harness.check`` (or ``harness.compare``) has just run on
onnxruntime, converts it exactly as ``ovpool convert`` does (``ovpool.ov.from_onnx.onnx_to_ir`` of
the ``.onnx`` file), compiles the IR on OpenVINO CPU at f32 (``policy.compile_config("f32")``) and
compares every output with onnxruntime's; then it runs the same IR on ``IrGraph`` (numpy) and
compares that with OpenVINO CPU's. A case:

* agrees: nothing happens;
* is refused by ovpool's conversion with an ovpool error naming the op or node (``UnsupportedError``
  "no OpenVINO conversion rule for X", ``ModelError``): recorded, the test passes;
* matches a row of ``openvino_known.KNOWN`` and fails there: the test is an xfail with the row's
  reason (the numpy operator tests still ran in full);
* disagrees otherwise: the test fails with the op, opset, attributes and input shapes.

The outcome is settled when the test item ends (``tests/ops/conftest.py``), not in the middle of a
hypothesis example, so that hypothesis never shrinks on a sampled conversion.

``OPS_OPENVINO`` chooses the sample: a number K (default 2) converts K models of each (op, opset) in
each test item (its 1st, 8th, 15th... model), ``all`` every model (the deep run), ``off`` none. ``OPS_OPENVINO_LOG=FILE`` appends one JSON
line per converted model (op, opset, since-version, attributes, inputs, outcome, seconds).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper
from openvino_known import Case, Known, crashes, match

MODE = os.environ.get("OPS_OPENVINO", "2")
EVERY = 7
LOG = os.environ.get("OPS_OPENVINO_LOG")


@dataclass
class ItemRecord:
    """What the conversions of one test item found: ``calls`` (models checked so far, by op and opset),
    ``failures`` (disagreements, each a message), ``known`` (the rows of ``KNOWN`` that explain a
    failure)."""

    nodeid: str = ""
    calls: Counter[tuple[str, int]] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    known: list[Known] = field(default_factory=list)

    def settle(self) -> None:
        """Fail on the first disagreement, else xfail on the first known gap, else pass."""
        if self.failures:
            more = f"\n(and {len(self.failures) - 1} more disagreements)" if len(self.failures) > 1 else ""
            pytest.fail(self.failures[0] + more, pytrace=False)
        if self.known:
            pytest.xfail("; ".join(sorted({row.why() for row in self.known})))


_item: ItemRecord | None = None


def begin_item(nodeid: str) -> ItemRecord:
    """Start recording the conversions of the test item ``nodeid``."""
    global _item
    _item = ItemRecord(nodeid)
    return _item


def end_item() -> None:
    global _item
    _item = None


def _sampled(model: onnx.ModelProto) -> bool:
    """Whether this model is converted: every one (``all``), none (``off``), or K of the item's
    models of each (op, opset): the 1st, 8th, 15th... (K=2: the 1st and the 8th). A hypothesis
    test's first example is its simplest (rank 0, empty tensors); the 8th is a drawn one."""
    if MODE == "off":
        return False
    if MODE == "all" or _item is None:
        return True
    key = (model.graph.node[0].op_type, model.opset_import[0].version)
    _item.calls[key] += 1
    seen = _item.calls[key] - 1
    return seen % EVERY == 0 and seen // EVERY < int(MODE)


def through_openvino(
    model: onnx.ModelProto,
    feeds: Mapping[str, np.ndarray],
    expected: Sequence[Any],
    rtol: float,
    atol: float,
) -> None:
    """``model`` converted by ovpool and run on OpenVINO CPU at f32 gives onnxruntime's
    ``expected`` outputs (within ``rtol``/``atol``), and the IR run on numpy gives OpenVINO CPU's."""
    if not _sampled(model):
        return
    start, cpu_start = time.perf_counter(), time.process_time()
    case, outcome, stage, detail = outcome_of(model, feeds, expected, rtol, atol)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    known = match(case, stage, detail) if outcome == "disagrees" else None
    if known is not None:
        outcome = "known"
    if LOG:
        row = {**case.as_json(), "test": _item.nodeid if _item else "", "outcome": outcome, "stage": stage}
        row.update(detail=detail[:2000], seconds=round(seconds, 4), cpu_seconds=round(cpu_seconds, 4))
        with open(LOG, "a") as log:
            log.write(json.dumps(row) + "\n")
    if outcome != "disagrees" and known is None:
        return
    message = f"{case.describe()}\n  {stage}: {detail}"
    if _item is not None:
        message += f"\n  every model of the test: OPS_OPENVINO=all python -m pytest '{_item.nodeid}'"
    if _item is None:
        if known is not None:
            pytest.xfail(known.why())
        raise AssertionError(message)
    if known is not None:
        _item.known.append(known)
    else:
        _item.failures.append(message)


def outcome_of(
    model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], expected: Sequence[Any], rtol: float, atol: float
) -> tuple[Case, str, str, str]:
    """(case, outcome, stage, detail) of ``model`` through conversion, OpenVINO CPU and numpy:
    outcome "agrees", "refused" or "disagrees"; stage "convert", "openvino" (CPU against
    onnxruntime's ``expected``), "numpy" (IR on numpy against CPU) or "crash" (a case that kills
    OpenVINO CPU's process, not compiled: ``openvino_known.crashes``); detail one line."""
    case = _case_of(model, feeds)
    return (case, *_run(model, feeds, expected, rtol, atol, case))


def _run(
    model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], expected: Sequence[Any], rtol: float, atol: float, case: Case
) -> tuple[str, str, str]:
    """:func:`outcome_of` once the case is known: the ``.onnx`` in a temporary folder converted
    by ``onnx_to_ir``, the IR files beside it read by OpenVINO and by ``IrGraph``."""
    from ovpool.engine.ir_executor import IrGraph
    from ovpool.errors import ModelError, OvpoolError, UnsupportedError
    from ovpool.execution.devices import openvino_reason
    from ovpool.ov.from_onnx import onnx_to_ir

    with tempfile.TemporaryDirectory(prefix="ovpool-ops-") as folder:
        source = Path(folder) / "model.onnx"
        onnx.save_model(model, str(source))
        try:
            files = onnx_to_ir(source)
        except (UnsupportedError, ModelError) as exc:
            text = str(exc)
            named = any(name and name in text for name in case.named)
            return ("refused" if named else "disagrees"), "convert", text if named else f"refused without naming the node: {text}"
        except OvpoolError as exc:
            return "disagrees", "convert", f"{type(exc).__name__}: {exc}"
        xml = Path(folder) / "model.xml"
        xml.write_bytes(files[".xml"])
        xml.with_suffix(".bin").write_bytes(files[".bin"])
        names = [o.name for o in model.graph.output]
        crash = crashes(case)
        if crash is not None:
            return "disagrees", "crash", crash.reason
        try:
            cpu = _on_cpu(xml, feeds, names)
        except LookupError as exc:
            return "disagrees", "openvino", str(exc)
        except Exception as exc:  # OpenVINO's own exception types
            return "disagrees", "openvino", f"OpenVINO CPU cannot compile or run the IR ovpool wrote: {openvino_reason(exc)}"
        problem = _differs(cpu, expected, rtol, atol, "onnxruntime")
        if problem:
            return "disagrees", "openvino", problem
        try:
            ours = IrGraph.read(xml).run(feeds)
        except OvpoolError as exc:
            return "disagrees", "numpy", str(exc).replace(str(xml), "model.xml")
        problem = _differs([ours.get(n) for n in names], cpu, rtol, atol, "OpenVINO CPU")
        return ("disagrees", "numpy", problem) if problem else ("agrees", "numpy", "")


_CORE: Any = None


def _on_cpu(xml: Path, feeds: Mapping[str, np.ndarray], names: Sequence[str]) -> list[np.ndarray]:
    """The IR compiled on OpenVINO CPU at f32 and run on ``feeds``: the outputs named ``names``."""
    global _CORE
    import openvino as ov

    from ovpool.execution.policy import compile_config

    if _CORE is None:
        _CORE = ov.Core()
    compiled = _CORE.compile_model(_CORE.read_model(str(xml)), "CPU", compile_config("f32", cache=False))
    declared = {name for port in compiled.inputs for name in port.get_names()}
    missing = sorted(set(feeds) - declared)
    if missing:
        raise LookupError(f"the IR has no input {missing[0]!r} (its inputs: {sorted(declared)})")
    result = compiled(dict(feeds))
    # copies: the arrays OpenVINO returns view its infer request's memory, gone with ``compiled``
    by_name = {name: np.array(result[port]) for port in compiled.outputs for name in port.get_names()}
    return [by_name[n] if n in by_name else np.array(result[compiled.outputs[i]]) for i, n in enumerate(names)]


def _differs(got: Sequence[Any], want: Sequence[Any], rtol: float, atol: float, oracle: str) -> str:
    """Why ``got`` is not ``want`` (one line), or "" when every output agrees: count, dtype,
    shape, values within ``rtol``/``atol`` (NaN matching NaN). float64 outputs get float32's
    tolerance at least: OpenVINO CPU computes f64 in f32. float16 outputs get one f16 rounding
    (2**-11 relative) at least: OpenVINO CPU at f32 keeps a float16 node's arithmetic in f32 and
    rounds once, onnxruntime may round each step (Shrink-9 float16: 0.3203 against 0.3206)."""
    if len(got) != len(want):
        return f"{len(got)} outputs, {oracle} gives {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g is None:
            return f"output {i}: missing"
        g, w = np.asarray(g), np.asarray(w)
        if {g.dtype.kind, w.dtype.kind} in ({"O", "U"}, {"O", "S"}):  # OpenVINO's strings are numpy's <U, others objects
            g, w = g.astype(object), w.astype(object)
        if g.dtype != w.dtype:
            return f"output {i}: dtype {g.dtype}, {oracle} gives {w.dtype}"
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, {oracle} gives {w.shape}"
        if w.dtype.kind in "fc":
            r, a = {
                np.dtype(np.float64): (max(rtol, 1e-5), max(atol, 1e-6)),
                np.dtype(np.float16): (max(rtol, 1e-3), max(atol, 1e-3)),
            }.get(w.dtype, (rtol, atol))
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            bad = ~np.isclose(g64, w64, rtol=r, atol=a, equal_nan=True)
            if bad.any():
                at = tuple(int(k) for k in np.argwhere(bad)[0])
                return (
                    f"output {i}: {int(bad.sum())} of {w.size} values differ beyond rtol={r:g} atol={a:g}, "
                    f"first at {list(at)}: {g64[at]!r} where {oracle} gives {w64[at]!r}"
                )
        elif w.dtype == object:
            if g.tolist() != w.tolist():
                return f"output {i}: {g.tolist()!r:.200} where {oracle} gives {w.tolist()!r:.200}"
        elif not np.array_equal(g, w):
            bad = g != w
            at = tuple(int(k) for k in np.argwhere(bad)[0]) if bad.ndim else ()
            return f"output {i}: {int(np.sum(bad))} of {w.size} values differ, first at {list(at)}: {g[at]!r} where {oracle} gives {w[at]!r}"
    return ""


def _case_of(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> Case:
    """The model as a case: its first node's op, the opset, the since-version in force, attributes
    and inputs (dtype, shape, whether an initializer)."""
    node = model.graph.node[0]
    domain = node.domain or ""
    opset = next(o.version for o in model.opset_import if (o.domain or "") == domain)
    try:
        since = onnx.defs.get_schema(node.op_type, opset, domain).since_version
    except onnx.defs.SchemaError:
        since = 0
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    initializers = {i.name: i for i in model.graph.initializer}
    inputs: list[tuple[str, tuple[int, ...], bool] | None] = []
    for name in node.input:
        if not name:
            inputs.append(None)
        elif name in feeds:
            value = np.asarray(feeds[name])
            inputs.append((value.dtype.name, value.shape, False))
        elif name in initializers:
            init = initializers[name]
            inputs.append((helper.tensor_dtype_to_np_dtype(init.data_type).name, tuple(init.dims), True))
        else:
            inputs.append(None)
    return Case(
        op=node.op_type,
        domain=domain,
        opset=opset,
        since=since,
        attrs=attrs,
        inputs=tuple(inputs),
        op_types=tuple(n.op_type for n in model.graph.node),
        node_names=tuple(n.name for n in model.graph.node),
        named=tuple(n.op_type for n in _nodes(model.graph)) + tuple(n.name for n in _nodes(model.graph)) + tuple(feeds),
    )


def _nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """Every node of ``graph`` and of the bodies of its nodes (If branches, Loop and Scan bodies)."""
    found = []
    for node in graph.node:
        found.append(node)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                found.extend(_nodes(attribute.g))
    return found
