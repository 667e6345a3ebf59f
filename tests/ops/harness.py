"""Single-node models run on ovpool's numpy operators and on onnxruntime, the oracle.

``since_opsets("Softmax")`` lists one opset per since-version of the op that is in force somewhere
in opsets 7..22 (``[7, 11, 13]``: Softmax-1 is tested at opset 7, Softmax-11 at 11, Softmax-13 at
13), so every version's own meaning is tested, not only the newest.
``check(op, opset, inputs, attrs)`` builds the node, runs both and compares values, shapes and
dtypes. onnx.reference is never the oracle here.

Also shared by the test files: the node alone on one side (``ovpool_of``, ``ort_of``) and the
node's errors (``assert_node_error``); the types each version allows (``version_type_cases``);
whole small graphs on GraphSession against onnxruntime (``model_of``, ``compare``); drawn inputs
(``shapes``, ``values``, ``arrays``, ``drawn_rng``, ``examples``); ONNX's own node test cases
(``node_case_params``, ``check_node_case``).
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from on_openvino import through_openvino
from onnx import helper, numpy_helper

LOWEST, HIGHEST = 7, 22


def since_opsets(op_type: str, domain: str = "", lowest: int = LOWEST, highest: int = HIGHEST) -> list[int]:
    """One opset per since-version of ``op_type`` in force somewhere in ``lowest..highest``."""
    versions = sorted(
        {s.since_version for s in onnx.defs.get_all_schemas_with_history() if s.name == op_type and s.domain == domain}
    )
    opsets = []
    for since, following in zip(versions, versions[1:] + [highest + 1]):
        if following > lowest and since <= highest:
            opsets.append(max(since, lowest))
    return opsets


def opsets(op_type: str) -> list[int]:
    """:func:`since_opsets` up to 26 (onnxruntime 1.31 runs opsets up to 26)."""
    return since_opsets(op_type, highest=26)


TESTED_DTYPES = (np.float32, np.float16, np.float64, np.int8, np.uint8, np.int32, np.int64, np.uint32)


def schema_dtypes(op: str, opset: int, param: str = "T") -> list[type]:
    """The types of ``TESTED_DTYPES`` the schema in force at ``opset`` allows for ``param``."""
    schema = onnx.defs.get_schema(op, opset)
    allowed = next(c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == param)
    names = {
        f"tensor({'float' if d is np.float32 else 'double' if d is np.float64 else np.dtype(d).name})": d for d in TESTED_DTYPES
    }
    return [d for name, d in names.items() if name in allowed]


def version_type_cases(op: str, param: str = "T", first: Any = np.float32) -> list[Any]:
    """pytest params (op, opset, dtype) for every since-version of ``op``: ``first`` (float32) at
    each version, every other tested type at the first version that allows it (later versions add
    types, the rule stays)."""
    cases = []
    seen: set[Any] = set()
    for opset in since_opsets(op):
        for dtype in schema_dtypes(op, opset, param):
            if dtype is first or dtype not in seen:
                cases.append(pytest.param(op, opset, dtype, id=f"{op}-{opset}-{np.dtype(dtype).name}"))
            seen.add(dtype)
    return cases


def opset_type_cases(op: str) -> list[Any]:
    """(opset, dtype) params of :func:`version_type_cases`."""
    return [pytest.param(*case.values[1:], id=case.id) for case in version_type_cases(op)]


def tolerance(dtype: Any) -> dict[str, float]:
    """rtol/atol for comparing with onnxruntime: half precision may differ by one rounding."""
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return {"rtol": 2e-3, "atol": 2e-3}
    if dtype == np.float64:
        return {"rtol": 1e-10, "atol": 1e-12}
    return {"rtol": 1e-5, "atol": 1e-6}


def make_model(
    op_type: str,
    opset: int,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any] | None = None,
    n_outputs: int = 1,
    constant: Sequence[int] = (),
    domain: str = "",
) -> onnx.ModelProto:
    """One node ``op_type`` at ``opset``; ``inputs[i] is None`` is an omitted optional input; the
    inputs whose index is in ``constant`` are initializers, the others graph inputs ``x0``, ``x1``...
    Outputs ``y0``, ``y1``... have no declared type or shape (onnxruntime infers them)."""
    names, graph_inputs, initializers = [], [], []
    for i, value in enumerate(inputs):
        if value is None:
            names.append("")
            continue
        name = f"x{i}"
        names.append(name)
        array = np.asarray(value)
        if i in constant:
            initializers.append(numpy_helper.from_array(array, name))
        else:
            elem = helper.np_dtype_to_tensor_dtype(array.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, elem, array.shape))
    while names and names[-1] == "":
        names.pop()
    out_names = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, out_names, name=f"{op_type.lower()}_node", domain=domain, **(attrs or {}))
    outputs = [helper.make_empty_tensor_value_info(n) for n in out_names]
    graph = helper.make_graph([node], "g", graph_inputs, outputs, initializer=initializers)
    opsets = [helper.make_opsetid(domain, opset)]
    if domain:
        opsets.append(helper.make_opsetid("", 17))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = helper.find_min_ir_version_for(opsets)
    return model


def feeds_of(model: onnx.ModelProto, inputs: Sequence[np.ndarray | None]) -> dict[str, np.ndarray]:
    declared = {i.name for i in model.graph.input}
    return {f"x{i}": np.asarray(v) for i, v in enumerate(inputs) if v is not None and f"x{i}" in declared}


def run_ort(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime on one thread with graph optimisations off; skips the test if onnxruntime has no
    kernel for the node (it does not run every since-version)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        if any(text in str(exc) for text in ("NOT_IMPLEMENTED", "Could not find an implementation", "does not support double")):
            node = model.graph.node[0]
            pytest.skip(f"onnxruntime has no kernel for {node.op_type} at opset {model.opset_import[0].version}")
        raise
    return session.run(None, dict(feeds))


def run_ovpool(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The model on ovpool's numpy executor (``GraphSession``: constants folded, subgraphs of
    Loop/If/Scan compiled), its outputs in graph order; no node may fall back to onnx.reference."""
    from ovpool.engine.graph import GraphSession

    session = GraphSession(model)
    assert not session.reference_ops, f"ran on onnx.reference: {session.reference_ops}"
    results = session.run(feeds)
    return [results[name] for name in session.output_names]


def ovpool_of(op_type: str, opset: int, inputs: Sequence[np.ndarray | None], *args: Any, **kwargs: Any) -> list[np.ndarray]:
    """ovpool's outputs for the node alone (no onnxruntime): for schema-only checks and errors. The
    arguments are :func:`make_model`'s."""
    model = make_model(op_type, opset, inputs, *args, **kwargs)
    return run_ovpool(model, feeds_of(model, inputs))


def ort_of(op_type: str, opset: int, inputs: Sequence[np.ndarray | None], *args: Any, **kwargs: Any) -> list[np.ndarray]:
    """onnxruntime's outputs for the node alone; the arguments are :func:`make_model`'s."""
    model = make_model(op_type, opset, inputs, *args, **kwargs)
    return run_ort(model, feeds_of(model, inputs))


def node_error_params(errors: Iterable[Sequence[Any]]) -> list[Any]:
    """Rows (op, opset, inputs, attrs) of nodes ovpool refuses, as pytest params named op-index."""
    return [pytest.param(*error, id=f"{error[0]}-{i}") for i, error in enumerate(errors)]


def assert_node_error(
    op_type: str, opset: int, inputs: Sequence[np.ndarray | None], attrs: Mapping[str, Any] | None = None, match: str = ""
) -> None:
    """ovpool refuses the node alone with a ModelError that names the node (``match`` if given)."""
    from ovpool.errors import ModelError

    with pytest.raises(ModelError, match=match or f"{op_type.lower()}_node"):
        ovpool_of(op_type, opset, inputs, attrs)


def check(
    op_type: str,
    opset: int,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any] | None = None,
    n_outputs: int = 1,
    constant: Sequence[int] = (),
    rtol: float = 1e-5,
    atol: float = 1e-6,
    domain: str = "",
) -> list[np.ndarray]:
    """ovpool and onnxruntime agree on the node: same number of outputs, shapes, dtypes, values
    (NaN where the other has NaN). Returns ovpool's outputs. A sample of the models also goes
    through ``ovpool convert`` to OpenVINO CPU and IR-on-numpy (``on_openvino``)."""
    model = make_model(op_type, opset, inputs, attrs, n_outputs, constant, domain)
    feeds = feeds_of(model, inputs)
    expected = run_ort(model, feeds)
    actual = run_ovpool(model, feeds)
    assert len(actual) == len(expected), f"{len(actual)} outputs, onnxruntime gives {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype, f"output {i}: dtype {a.dtype}, onnxruntime gives {e.dtype}"
        assert a.shape == e.shape, f"output {i}: shape {a.shape}, onnxruntime gives {e.shape}"
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(a, e, err_msg=f"output {i}")
    through_openvino(model, feeds, expected, rtol, atol)
    return actual


def assert_same(actual: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6, what: str = "") -> None:
    """Same dtype, shape and values (NaN matching NaN); float 8 and bfloat16 compared as float32,
    strings (object arrays) as lists; a sequence (list) element by element, an empty optional
    (None) only as None."""
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{what}sequence {actual!r}, expected {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, rtol, atol, f"{what}[{i}] ")
        return
    if expected is None:
        assert actual is None, f"{what}{actual!r}, expected None"
        return
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}shape {actual.shape}, expected {expected.shape}"
    if actual.dtype == object:
        assert actual.tolist() == expected.tolist(), what
    elif actual.dtype.kind in "fcV" or actual.dtype.itemsize == 1 and actual.dtype.kind not in "iub":
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


# ---------------------------------------------------------------- whole graphs

F, I64, B = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.BOOL


def vi(name: str, elem: int = F, shape: Sequence[int | str] | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def model_of(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[str],
    opset: int = 17,
    initializers: Sequence[onnx.TensorProto] = (),
    imports: Sequence[onnx.OperatorSetIdProto] | None = None,
    functions: Sequence[onnx.FunctionProto] = (),
) -> onnx.ModelProto:
    """A model of ``nodes`` (outputs with no declared type); IR version at least 4, as IR 3 would
    need initializers listed as inputs (8 with model-local functions)."""
    graph = helper.make_graph(
        nodes, "g", inputs, [helper.make_empty_tensor_value_info(n) for n in outputs], initializer=list(initializers)
    )
    imports = list(imports) if imports is not None else [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=imports, functions=list(functions))
    known = [i for i in imports if i.domain in ("", "ai.onnx.ml")]
    model.ir_version = max(helper.find_min_ir_version_for(known), 8 if functions else 4)
    return model


def compare(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-6) -> dict[str, Any]:
    """The model on GraphSession and on onnxruntime: same outputs (names in graph order, dtypes,
    shapes, values). Returns GraphSession's outputs by name. A sample of the models also goes
    through ``ovpool convert`` to OpenVINO CPU and IR-on-numpy (``on_openvino``)."""
    from ovpool.engine.graph import GraphSession

    expected = run_ort(model, feeds)
    actual = GraphSession(model).run(feeds)
    assert list(actual) == [o.name for o in model.graph.output]
    for (name, a), e in zip(actual.items(), expected):
        assert_same(a, e, rtol=rtol, atol=atol, what=f"{name}: ")
    through_openvino(model, feeds, expected, rtol, atol)
    return actual


# ---------------------------------------------------------------- drawn inputs

seeds = st.integers(0, 2**32 - 1)


def examples(n: int) -> settings:
    """``n`` examples in CI; 40 times as many under HYPOTHESIS_PROFILE=deep."""
    return settings(max_examples=n * 40 if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else n)


def drawn_rng(draw: Callable[[st.SearchStrategy[int]], int]) -> np.random.Generator:
    """A numpy generator seeded by a drawn integer (``draw`` of a composite strategy, or
    ``data.draw``), so that hypothesis replays and shrinks the seed."""
    return np.random.default_rng(draw(st.integers(0, 2**16)))


def shapes(min_rank: int = 0, max_rank: int = 4, min_side: int = 1, max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(min_side, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


def values(seed: int, shape: tuple[int, ...], dtype: str, distinct: bool = False) -> np.ndarray:
    """Seeded test data of ``dtype``: normal floats, small ints (0..255 for uint8), random bools;
    ``distinct`` draws small integers so that ties are frequent (sorting and uniqueness tests)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if distinct:
        return rng.integers(0, 4, shape).astype(dtype)
    if dtype == "uint8":
        return rng.integers(0, 256, shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-100, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def arrays(
    draw: Callable[[st.SearchStrategy[int]], int], dtype: Any, shape: tuple[int, ...], low: float, high: float
) -> np.ndarray:
    """Values in [low, high] of ``dtype`` (integers rounded), from a drawn seed."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    values = rng.uniform(low, high, size=shape)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        values = np.clip(np.round(values), info.min, info.max)
    return np.asarray(values).astype(dtype)


def ints(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


# ---------------------------------------------------------------- ONNX's node test cases


def node_case_params(ops: Iterable[str], modules: Iterable[str] = ()) -> list[Any]:
    """:func:`onnx_node_cases` of ``ops`` as pytest params named after the cases."""
    return [pytest.param(case, id=case.name) for case in onnx_node_cases(ops, modules)]


def expanded_case_params(ops: Iterable[str]) -> list[Any]:
    """The ``_expanded`` node cases of ``ops`` (the case's model is the op's function body, e.g.
    ``test_sce_mean_expanded``: several nodes) as pytest params named after the cases."""
    names = tuple(case.name + "_expanded" for case in onnx_node_cases(ops))
    from onnx.backend.test.case import node

    return [
        pytest.param(case, id=case.name)
        for case in node._NodeTestCases
        if case.kind == "node" and len(case.model.graph.node) > 1 and case.name.startswith(names)
    ]


def module_ops(module: str) -> frozenset[str]:
    """The op types ovpool's operator table runs with the kernels of ``module``."""
    from ovpool.engine.ops.base import covered

    return frozenset(row.op_type for row in covered() if row.factory.__module__ == module)


def node_case_ops(ops: Iterable[str]) -> frozenset[str]:
    """The op types among ``ops`` that ONNX has node test cases for."""
    return frozenset(case.model.graph.node[0].op_type for case in onnx_node_cases(ops))


def check_node_case(
    case: Any,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    skip: Mapping[str, str] | None = None,
    run: Callable[[onnx.ModelProto, Mapping[str, Any]], list[Any]] = run_ovpool,
) -> None:
    """Every data set of ONNX's node test ``case`` run by ``run`` (ovpool's executor, no
    onnx.reference) against the case's expected outputs: as many outputs, each :func:`assert_same`.
    ``skip`` maps name patterns (``re.search``) to the reason ovpool does not produce the expected
    value; values the case gives as TensorProtos (types numpy lacks) are converted by ovpool."""
    reason = next((why for pattern, why in (skip or {}).items() if re.search(pattern, case.name)), None)
    if reason:
        pytest.skip(reason)
    node = case.model.graph.node[0]
    for inputs, expected in case.data_sets:
        feeds = {info.name: _case_value(value) for info, value in zip(case.model.graph.input, inputs)}
        actual = run(case.model, feeds)
        assert len(actual) == len(expected), f"{len(actual)} outputs, the case expects {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, _case_value(e), rtol=rtol, atol=atol, what=f"{node.op_type} output {i}: ")


def _case_value(value: Any) -> Any:
    """Node-case data come as arrays, or as TensorProtos for the types numpy lacks."""
    from ovpool.engine.ops.casts import tensor_value

    return tensor_value(value) if isinstance(value, onnx.TensorProto) else value


def onnx_node_cases(ops: Iterable[str], modules: Iterable[str] = ()) -> tuple[Any, ...]:
    """ONNX's own single-node test cases (``onnx.backend.test.case.node``) for ``ops``: objects with
    ``name``, ``model`` and ``data_sets`` (pairs of input and expected output lists). Only the case
    modules named after the ops are imported (``BatchNormalization`` -> ``batch_normalization``,
    ``Range`` -> ``rangeop``, ``If`` -> ``if_``); an op with no module of its own makes every
    module load, as ``collect_testcases`` does. ``modules`` names more case modules to import, for
    cases of ``ops`` written in another op's module (``clip``'s expanded default is one Identity)."""
    return _node_cases(tuple(sorted(set(ops))), tuple(sorted(set(modules))))


@functools.cache
def _node_cases(ops: tuple[str, ...], extra: tuple[str, ...] = ()) -> tuple[Any, ...]:
    from onnx.backend.test.case import node

    available = {info.name for info in pkgutil.iter_modules(node.__path__)}
    modules = set(extra)
    for op in ops:
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()
        found = {op.lower(), op.lower() + "_", op.lower() + "op", snake} & available
        modules |= found if found else available
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module in sorted(modules):
            importlib.import_module(f"{node.__name__}.{module}")
    return tuple(
        case
        for case in node._NodeTestCases
        if case.kind == "node" and len(case.model.graph.node) == 1 and case.model.graph.node[0].op_type in ops
    )


def node_with_inputs(
    op: str,
    inputs: Sequence[Any],
    constant: set[int],
    attrs: Mapping[str, Any] | None = None,
    opset: int = 17,
    domain: str = "",
    name: str = "qnode",
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One node of ``domain``, inputs ``x0``.. (None: omitted), those in ``constant`` as
    initializers and the others graph inputs; the output ``y`` without a declared type. Returns the
    model and the feeds of its graph inputs."""
    names, graph_inputs, inits = [], [], []
    for i, value in enumerate(inputs):
        if value is None:
            names.append("")
            continue
        names.append(f"x{i}")
        array = np.asarray(value)
        if i in constant:
            inits.append(numpy_helper.from_array(array, f"x{i}"))
        else:
            graph_inputs.append(
                helper.make_tensor_value_info(f"x{i}", helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))
            )
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op, names, ["y"], name=name, domain=domain, **(attrs or {}))
    graph = helper.make_graph([node], "g", graph_inputs, [helper.make_empty_tensor_value_info("y")], initializer=inits)
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 8
    feeds = {f"x{i}": np.asarray(v) for i, v in enumerate(inputs) if v is not None and i not in constant}
    return model, feeds
