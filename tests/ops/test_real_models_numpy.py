"""Real third-party models, whole, on ovpool's numpy executor against onnxruntime.

The models and their inputs are listed in ``real_models.py`` and fetched by
``python tests/fetch_real_models.py``; a model whose file is absent is skipped with that command
as the reason. The oracle is onnxruntime on one thread with graph optimisations off (no fusion:
each node as the model states it). Every output must have onnxruntime's dtype and shape, and
``|ovpool - onnxruntime| <= rtol * max|onnxruntime|`` (rtol 1e-4 unless the model says otherwise).

When a model disagrees, the failure names the first node that diverges: the executor's node
outputs are observed (``GraphSession.run(..., observe=...)``), onnxruntime's are read by making
every node output of the top-level graph a graph output, and they are compared in the executor's
order with the same rule.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
import pytest
from onnx import helper
from real_models import FILES, MODELS, RealModel, Runner, numpy_runner, onnxruntime_runner

from ovpool.engine.graph import GraphSession
from ovpool.onnx.model import load


def mismatch(actual: np.ndarray, expected: np.ndarray, rtol: float) -> str | None:
    """Why ``actual`` is not ``expected`` within ``rtol`` of ``max|expected|``, or None. NaN must
    meet NaN; integers and booleans must be equal."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, onnxruntime gives {expected.dtype}"
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, onnxruntime gives {expected.shape}"
    if actual.dtype.kind not in "fc":
        wrong = int(np.count_nonzero(actual != expected))
        return f"{wrong} of {actual.size} values differ" if wrong else None
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    nan = np.isnan(e)
    if not np.array_equal(np.isnan(a), nan):
        return f"NaN at {int(np.count_nonzero(np.isnan(a) != nan))} positions where onnxruntime disagrees"
    finite = ~nan
    if not finite.any():
        return None
    scale = float(np.abs(e[finite]).max())
    error = float(np.abs(a[finite] - e[finite]).max())
    if error > rtol * scale:
        return f"max |error| {error:.3g} = {error / scale if scale else np.inf:.3g} of max|onnxruntime| {scale:.3g}"
    return None


def first_divergence(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray], rtol: float) -> str:
    """The first top-level node (in the executor's plan order) whose output differs from
    onnxruntime's: the executor's values come from ``GraphSession.run(..., observe=...)``,
    onnxruntime's from the model with every node output made a graph output."""
    probe = onnx.ModelProto()
    probe.CopyFrom(proto)
    declared = {o.name for o in probe.graph.output}
    for node in probe.graph.node:
        probe.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in node.output if n and n not in declared)
    expected = onnxruntime_runner(probe)(feeds)
    observed: list[tuple[onnx.NodeProto, dict[str, np.ndarray]]] = []

    def observe(node: onnx.NodeProto, values: tuple[object, ...]) -> None:
        arrays = {n: np.array(v) for n, v in zip(node.output, values) if n and isinstance(v, np.ndarray)}
        observed.append((node, arrays))

    try:
        GraphSession(proto).run(feeds, observe=observe)
    except Exception as exc:  # noqa: BLE001 - the executor's own error names the node it stopped at
        return f"the executor fails: {type(exc).__name__}: {exc}"
    opsets = {o.domain: o.version for o in proto.opset_import}
    for node, arrays in observed:
        for name, value in arrays.items():
            why = mismatch(value, expected[name], rtol) if name in expected else None
            if why:
                domain = node.domain if node.domain != "ai.onnx" else ""
                since = onnx.defs.get_schema(node.op_type, opsets.get(domain, 1), domain).since_version
                return f"first divergence at node '{node.name}' ({node.op_type}-{since}), output '{name}': {why}"
    return "no node output diverges (only the final outputs differ)"


def test_every_fetched_model_is_checked():
    """Each .onnx file that fetch_real_models.py fetches is run by at least one case."""
    assert set(FILES) <= {m.file for m in MODELS}


def assert_matches(model: RealModel, proto: onnx.ModelProto, run: Runner, feeds: Mapping[str, np.ndarray]) -> None:
    """``run(feeds)`` (the numpy executor) gives onnxruntime's outputs within the model's rtol; the
    failure names the first diverging node."""
    expected = onnxruntime_runner(proto)(feeds)
    try:
        actual = run(feeds)
    except Exception as exc:  # noqa: BLE001 - any failure of the executor is the finding
        pytest.fail(f"{model.name}: the numpy executor fails: {type(exc).__name__}: {exc}")
    assert set(actual) == set(expected), f"outputs {sorted(actual)}, onnxruntime gives {sorted(expected)}"
    problems = {name: mismatch(actual[name], value, model.rtol) for name, value in expected.items()}
    problems = {name: why for name, why in problems.items() if why}
    if problems:
        details = "; ".join(f"output '{name}': {why}" for name, why in problems.items())
        pytest.fail(f"{model.name}: {details}\n{first_divergence(proto, feeds, model.rtol)}")


def _proto(model: RealModel) -> onnx.ModelProto:
    if not model.path.is_file():
        pytest.skip(f"{model.path} absent: run python tests/fetch_real_models.py")
    return load(model.path)


@pytest.mark.parametrize("model", MODELS, ids=[m.name for m in MODELS])
def test_model_matches_onnxruntime(model: RealModel):
    proto = _proto(model)
    assert_matches(model, proto, numpy_runner(proto), model.feeds())


AGAIN = [m for m in MODELS if m.again]


@pytest.mark.parametrize("model", AGAIN, ids=[m.name for m in AGAIN])
def test_session_reruns_at_other_sizes(model: RealModel):
    """One session, run at the model's sizes and then at other sizes or batch: the second run
    matches onnxruntime too (nothing prepared for the first shapes is reused wrongly)."""
    proto = _proto(model)
    run = numpy_runner(proto)
    run(model.feeds())
    assert_matches(model, proto, run, model.feeds(again=True))


@pytest.mark.parametrize("file", FILES)
def test_model_runs_on_ovpool_operators_only(file: str):
    """No node of the model falls back to onnx.reference (``GraphSession.reference_ops``)."""
    proto = _proto(next(m for m in MODELS if m.file == file))
    try:
        session = GraphSession(proto)
    except Exception as exc:  # noqa: BLE001 - a model the executor refuses is the finding
        pytest.fail(f"{file}: {type(exc).__name__}: {exc}")
    assert session.reference_ops == (), f"{file}: on onnx.reference: {', '.join(session.reference_ops)}"
