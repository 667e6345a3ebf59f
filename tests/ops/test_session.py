"""GraphSession on whole small models built with onnx.helper, against onnxruntime: node order,
constant folding, declared dims, other domains, control flow with outer scope, the onnx.reference
fallback and its table of known defects, malformed graphs, the observe callback."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from harness import I64, B, F, compare, model_of, vi
from onnx import helper, numpy_helper

import ovpool.engine.graph as graph_module
from ovpool.engine.graph import GraphSession
from ovpool.errors import ModelError


def const(name: str, value: Any) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


# ---------------------------------------------------------------- order, folding, inputs


def test_nodes_out_of_order_run_in_topological_order() -> None:
    """Graph order is not an execution order: consumers listed before producers still run after them."""
    nodes = [
        helper.make_node("Add", ["b", "c"], ["y"], name="last"),
        helper.make_node("Relu", ["a"], ["b"], name="middle"),
        helper.make_node("Neg", ["x"], ["a"], name="first"),
        helper.make_node("Mul", ["x", "x"], ["c"], name="square"),
    ]
    model = model_of(nodes, [vi("x", F, [4])], ["y"])
    seen: list[str] = []
    result = GraphSession(model).run(
        {"x": np.array([-2, -1, 1, 2], np.float32)}, observe=lambda node, outs: seen.append(node.name)
    )
    np.testing.assert_array_equal(result["y"], [6, 2, 1, 4])
    assert seen.index("first") < seen.index("middle") < seen.index("last") and seen.index("square") < seen.index("last")
    compare(model, {"x": np.array([-2, -1, 1, 2], np.float32)})


def test_constant_subgraphs_are_folded_once() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape on a weight: folded when prepared; the run
    executes only the nodes that read the input."""
    nodes = [
        helper.make_node("Shape", ["w"], ["w_shape"], name="shape"),
        helper.make_node("Gather", ["w_shape", "zero"], ["rows"], axis=0, name="gather"),
        helper.make_node("Unsqueeze", ["rows", "axes"], ["rows_1"], name="unsqueeze"),
        helper.make_node("Concat", ["rows_1", "minus_one"], ["target"], axis=0, name="concat"),
        helper.make_node("Reshape", ["x", "target"], ["x2"], name="reshape"),
        helper.make_node("MatMul", ["x2", "w"], ["y"], name="matmul"),
        helper.make_node("Mul", ["w", "w"], ["w2"], name="square_w"),
        helper.make_node("ReduceSum", ["w2"], ["y2"], keepdims=0, name="sum_w"),
    ]
    initializers = [
        const("w", np.arange(12, dtype=np.float32).reshape(4, 3) / 10),
        const("zero", np.array(0, np.int64)),
        const("axes", np.array([0], np.int64)),
        const("minus_one", np.array([-1], np.int64)),
    ]
    model = model_of(nodes, [vi("x", F, [2, 2, 4])], ["y", "y2"], 13, initializers)
    session = GraphSession(model)
    assert set(session.folded_nodes) == {"shape", "gather", "unsqueeze", "concat", "square_w", "sum_w"}
    seen: list[str] = []
    session.run({"x": np.ones((2, 2, 4), np.float32)}, observe=lambda node, outs: seen.append(node.name))
    assert set(seen) == {n.name for n in nodes}, "folded nodes are still reported to observe"
    result = compare(model, {"x": np.arange(16, dtype=np.float32).reshape(2, 2, 4)})
    result["y2"][...] = -1  # a constant output is the caller's copy
    assert session.run({"x": np.ones((2, 2, 4), np.float32)})["y2"] != -1


def test_random_nodes_are_not_folded() -> None:
    nodes = [helper.make_node("RandomUniform", [], ["r"], shape=[1000], name="draw"), helper.make_node("Add", ["r", "x"], ["y"])]
    model = model_of(nodes, [vi("x", F, [1])], ["y"], 13)
    session = GraphSession(model)
    assert "draw" not in session.folded_nodes
    first, second = (session.run({"x": np.zeros(1, np.float32)})["y"] for _ in range(2))
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("dim", [-1, 0])
def test_dim_value_minus_one_or_zero_is_dynamic(dim: int) -> None:
    """paddle2onnx writes dim_value -1 for a dynamic batch, some old exporters 0: both are dynamic in
    ``inputs`` and any size runs (onnxruntime itself treats 0 as a static 0)."""
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    model = model_of(nodes, [vi("x", F, [dim, 3])], ["y"])
    session = GraphSession(model)
    assert session.inputs[0].shape == (None, 3)
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    if dim == -1:
        compare(model, {"x": x})
    np.testing.assert_array_equal(session.run({"x": x})["y"], np.maximum(x, 0))


def test_model_importing_only_ai_onnx_ml() -> None:
    """No default-domain opset: the ai.onnx.ml node runs (on ovpool's own Binarizer)."""
    node = helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=0.5)
    model = model_of([node], [vi("x", F, [2, 3])], ["y"], imports=[helper.make_opsetid("ai.onnx.ml", 3)])
    session = GraphSession(model)
    assert session.reference_ops == ()
    compare(model, {"x": np.arange(6, dtype=np.float32).reshape(2, 3) / 5})


def test_input_names_are_checked() -> None:
    model = model_of([helper.make_node("Add", ["a", "b"], ["y"])], [vi("a", F, [1]), vi("b", F, [1])], ["y"])
    session = GraphSession(model)
    assert session.input_names == ("a", "b") and session.output_names == ("y",)
    with pytest.raises(ModelError, match=r"model 'g': missing input\(s\) 'b'; unknown input\(s\) 'c' \(the model takes a, b\)"):
        session.run({"a": np.ones(1, np.float32), "c": np.ones(1, np.float32)})


def test_initializers_are_not_inputs_and_outputs_may_be_inputs() -> None:
    """An initializer listed as a graph input (IR 3 style) is a constant; a graph output may be an
    input or an initializer itself."""
    nodes = [helper.make_node("Add", ["x", "w"], ["y"])]
    model = model_of(
        nodes, [vi("x", F, [2]), vi("w", F, [2])], ["y", "x", "w"], initializers=[const("w", np.ones(2, np.float32))]
    )
    session = GraphSession(model)
    assert session.input_names == ("x",)
    result = session.run({"x": np.array([1, 2], np.float32)})
    np.testing.assert_array_equal(result["y"], [2, 3])
    np.testing.assert_array_equal(result["x"], [1, 2])
    np.testing.assert_array_equal(result["w"], [1, 1])


def test_model_local_functions_are_inlined() -> None:
    """A model-local function (domain 'local'): inlined when prepared, then run on ovpool's ops."""
    function = helper.make_function(
        "local",
        "ScaledRelu",
        ["a"],
        ["b"],
        [helper.make_node("Relu", ["a"], ["r"]), helper.make_node("Add", ["r", "r"], ["b"])],
        [helper.make_opsetid("", 17)],
    )
    node = helper.make_node("ScaledRelu", ["x"], ["y"], domain="local")
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    model = model_of([node], [vi("x", F, [3])], ["y"], imports=imports, functions=[function])
    compare(model, {"x": np.array([-1, 0.5, 2], np.float32)})


# ---------------------------------------------------------------- control flow in whole models


def test_loop_reads_an_intermediate_of_the_outer_graph() -> None:
    """The body reads ``scale``, computed by an outer node whose only consumer is inside the body:
    it must be live (not freed) when the Loop runs; the Loop's result feeds later nodes."""
    body = helper.make_graph(
        [
            helper.make_node("Mul", ["v", "scale"], ["v_scaled"]),
            helper.make_node("Add", ["v_scaled", "offset"], ["v_out"]),
            helper.make_node("Identity", ["c"], ["c_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("c", B, []), vi("v", F, [2])],
        [vi("c_out", B, []), vi("v_out", F, [2])],
    )
    nodes = [
        helper.make_node("Loop", ["n", "", "v0"], ["v_final"], body=body, name="loop"),
        helper.make_node("Neg", ["v_final"], ["y"], name="neg"),
        helper.make_node("Abs", ["s"], ["scale"], name="abs"),
    ]
    model = model_of(
        nodes, [vi("n", I64, []), vi("v0", F, [2]), vi("s", F, [])], ["y"], 13, [const("offset", np.array([1, -1], np.float32))]
    )
    compare(model, {"n": np.array(4, np.int64), "v0": np.array([1, 2], np.float32), "s": np.array(-0.5, np.float32)})


def test_nested_if_in_loop_in_if_with_outer_scope() -> None:
    """Three levels: If -> Loop -> If, the innermost branch reading a top-level input, the Loop's
    counter and an outer branch's intermediate."""
    inner_then = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["i_f"], to=F), helper.make_node("Add", ["acc", "i_f"], ["t_out"])],
        "t",
        [],
        [vi("t_out", F, None)],
    )
    inner_else = helper.make_graph([helper.make_node("Sub", ["acc", "top"], ["e_out"])], "e", [], [vi("e_out", F, None)])
    body = helper.make_graph(
        [
            helper.make_node("Greater", ["acc", "limit"], ["over"]),
            helper.make_node("Cast", ["over"], ["over_f"], to=F),
            helper.make_node("ReduceMax", ["over_f"], ["any_over"], keepdims=0),
            helper.make_node("Cast", ["any_over"], ["flag"], to=B),
            helper.make_node("If", ["flag"], ["acc_out"], then_branch=inner_else, else_branch=inner_then),
            helper.make_node("Identity", ["c"], ["c_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("c", B, []), vi("acc", F, [3])],
        [vi("c_out", B, []), vi("acc_out", F, [3])],
    )
    outer_then = helper.make_graph(
        [helper.make_node("Mul", ["top", "two"], ["limit"]), helper.make_node("Loop", ["n", "", "top"], ["loop_out"], body=body)],
        "outer_then",
        [],
        [vi("loop_out", F, [3])],
    )
    outer_else = helper.make_graph([helper.make_node("Neg", ["top"], ["neg_out"])], "outer_else", [], [vi("neg_out", F, [3])])
    node = helper.make_node("If", ["go"], ["y"], then_branch=outer_then, else_branch=outer_else)
    model = model_of([node], [vi("go", B, []), vi("n", I64, []), vi("top", F, [3])], ["y"], 16, [const("two", np.float32(2.0))])
    for go in (True, False):
        compare(model, {"go": np.array(go), "n": np.array(6, np.int64), "top": np.array([1, 2, 3], np.float32)})


def test_scan_in_a_model_with_an_outer_weight() -> None:
    """An RNN-like Scan whose body multiplies by an outer initializer (folded into the body as a
    constant) and adds an outer graph input (passed at run time)."""
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h", "W"], ["hw"]),
            helper.make_node("Add", ["hw", "x_t"], ["pre"]),
            helper.make_node("Add", ["pre", "bias"], ["pre_b"]),
            helper.make_node("Tanh", ["pre_b"], ["h_out"]),
            helper.make_node("Identity", ["h_out"], ["y_t"]),
        ],
        "body",
        [vi("h", F, [1, 3]), vi("x_t", F, [1, 3])],
        [vi("h_out", F, [1, 3]), vi("y_t", F, [1, 3])],
    )
    node = helper.make_node("Scan", ["h0", "xs"], ["h_final", "ys"], body=body, num_scan_inputs=1)
    w = np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32) / 2
    model = model_of(
        [node], [vi("h0", F, [1, 3]), vi("xs", F, [5, 1, 3]), vi("bias", F, [3])], ["h_final", "ys"], 16, [const("W", w)]
    )
    feeds = {
        "h0": np.zeros((1, 3), np.float32),
        "xs": np.random.default_rng(1).standard_normal((5, 1, 3)).astype(np.float32),
        "bias": np.array([0.1, -0.1, 0.0], np.float32),
    }
    compare(model, feeds)


# ---------------------------------------------------------------- no onnx.reference


def test_a_node_without_a_kernel_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node no range of the table covers (ReverseSequence hidden from it here) is refused when
    prepared, naming the node and its version: nothing runs on onnx.reference."""
    real = graph_module.lookup
    monkeypatch.setattr(
        graph_module, "lookup", lambda op, since, domain="": None if op == "ReverseSequence" else real(op, since, domain)
    )
    node = helper.make_node("ReverseSequence", ["x", "l"], ["y"], name="rs", batch_axis=1, time_axis=0)
    model = model_of([node], [vi("x", F, [4, 3]), vi("l", I64, [3])], ["y"], 10)
    with pytest.raises(
        ModelError, match=r"^node 'rs' \(ReverseSequence-10\): ovpool's numpy executor has no ReverseSequence-10$"
    ):
        GraphSession(model)


def test_every_defect_row_names_an_existing_version() -> None:
    from ovpool.engine.reference import DEFECTS

    versions: dict[str, set[int]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        versions.setdefault(schema.name, set()).add(schema.since_version)
    for row in DEFECTS:
        assert any(row.since <= v <= row.until for v in versions[row.op_type]), row


# ---------------------------------------------------------------- malformed graphs


def test_cycle_is_the_models_error() -> None:
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="one"), helper.make_node("Relu", ["a"], ["b"], name="two")]
    model = model_of(nodes, [vi("x", F, [1])], ["b"])
    with pytest.raises(ModelError, match="node 'one' \\(Add\\) is on a cycle"):
        GraphSession(model)


def test_dangling_input_is_the_models_error() -> None:
    model = model_of([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")], [vi("x", F, [1])], ["y"])
    with pytest.raises(ModelError, match="node 'add' \\(Add\\): input 'ghost' is not produced"):
        GraphSession(model)


def test_dangling_name_in_a_body_is_the_models_error() -> None:
    then_branch = helper.make_graph([helper.make_node("Neg", ["nowhere"], ["t"], name="inner")], "t", [], [vi("t", F, None)])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "e", [], [vi("e", F, None)])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch, name="branch")
    model = model_of([node], [vi("c", B, []), vi("x", F, [1])], ["y"])
    with pytest.raises(ModelError, match="'nowhere' is not produced"):
        GraphSession(model)


def test_undeclared_graph_output_and_duplicate_producer() -> None:
    with pytest.raises(ModelError, match="output 'z' is not produced"):
        GraphSession(model_of([helper.make_node("Neg", ["x"], ["y"])], [vi("x", F, [1])], ["z"]))
    twice = [helper.make_node("Neg", ["x"], ["y"], name="a"), helper.make_node("Abs", ["x"], ["y"], name="b")]
    with pytest.raises(ModelError, match="output 'y' is also produced by node 'a'"):
        GraphSession(model_of(twice, [vi("x", F, [1])], ["y"]))


def test_unknown_operator_or_domain_is_named() -> None:
    with pytest.raises(ModelError, match="node 'n' \\(Frobnicate\\): ONNX has no operator Frobnicate in opset 17"):
        GraphSession(model_of([helper.make_node("Frobnicate", ["x"], ["y"], name="n")], [vi("x", F, [1])], ["y"]))
    custom = helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft", name="g")
    with pytest.raises(ModelError, match="node 'g' \\(Gelu\\): domain 'com.microsoft' is not imported"):
        GraphSession(model_of([custom], [vi("x", F, [1])], ["y"]))
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    with pytest.raises(ModelError, match="node 'g' \\(Gelu\\): ONNX has no operator Gelu in opset 1 of domain 'com.microsoft'"):
        GraphSession(model_of([custom], [vi("x", F, [1])], ["y"], imports=imports))
    with pytest.raises(ModelError, match="node 'late' \\(Gelu\\): ONNX has no operator Gelu in opset 17"):
        GraphSession(model_of([helper.make_node("Gelu", ["x"], ["y"], name="late")], [vi("x", F, [1])], ["y"], 17))


def test_kernel_failure_on_bad_input_names_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel's bare exception (numpy failing on inputs the node cannot take) becomes a ModelError
    naming the node, on a run and when folding."""
    from ovpool.engine.ops.base import OpVersion

    def factory(node: Any) -> Any:
        return lambda a, b: (np.matmul(a, b),)

    real = graph_module.lookup
    monkeypatch.setattr(
        graph_module,
        "lookup",
        lambda op, since, domain="": OpVersion("", op, 1, 99, factory) if op == "MatMul" else real(op, since, domain),
    )
    model = model_of([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], [vi("a", F, None), vi("b", F, None)], ["y"])
    with pytest.raises(ModelError, match=r"node 'mm' \(MatMul\): ValueError: matmul"):
        GraphSession(model).run({"a": np.ones((2, 3), np.float32), "b": np.ones((4, 5), np.float32)})
    folded = model_of(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
        [],
        ["y"],
        initializers=[const("a", np.ones((2, 3))), const("b", np.ones((4, 5)))],
    )
    with pytest.raises(ModelError, match=r"node 'mm' \(MatMul\): ValueError"):
        GraphSession(folded)


# ---------------------------------------------------------------- observe


def test_observe_sees_every_node_once_in_plan_order_with_its_outputs() -> None:
    nodes = [
        helper.make_node("Split", ["x"], ["s0", "s1"], axis=0, num_outputs=2, name="split"),
        helper.make_node("Mul", ["s0", "s1"], ["p"], name="mul"),
        helper.make_node("Shape", ["w"], ["ws"], name="shape_w"),
        helper.make_node("Cast", ["ws"], ["wsf"], to=F, name="cast_w"),
        helper.make_node("Add", ["p", "wsf"], ["y"], name="add"),
    ]
    model = model_of(nodes, [vi("x", F, [4])], ["y"], 18, [const("w", np.zeros((2,), np.float32))])
    calls: list[tuple[str, tuple[Any, ...]]] = []
    x = np.array([1, 2, 3, 4], np.float32)
    result = GraphSession(model).run({"x": x}, observe=lambda node, outs: calls.append((node.name, outs)))
    names = [name for name, _ in calls]
    assert sorted(names) == sorted(n.name for n in nodes) and names.index("split") < names.index("mul") < names.index("add")
    assert names.index("cast_w") < names.index("add")
    outs = dict(calls)
    np.testing.assert_array_equal(outs["split"][0], [1, 2])
    np.testing.assert_array_equal(outs["split"][1], [3, 4])
    np.testing.assert_array_equal(outs["cast_w"][0], [2])
    np.testing.assert_array_equal(result["y"], [5, 10])
    compare(model, {"x": x})


def test_intermediates_are_freed_after_their_last_use() -> None:
    """``a`` is read only by ``second``: by the time ``third`` has run, nothing holds it."""
    import weakref

    nodes = [
        helper.make_node("Neg", ["x"], ["a"], name="first"),
        helper.make_node("Neg", ["a"], ["b"], name="second"),
        helper.make_node("Neg", ["b"], ["y"], name="third"),
    ]
    model = model_of(nodes, [vi("x", F, [1000])], ["y"])
    refs: dict[str, Any] = {}
    alive_after_third: list[bool] = []

    def observe(node: onnx.NodeProto, outs: tuple[Any, ...]) -> None:
        refs[node.name] = weakref.ref(outs[0])
        if node.name == "third":
            alive_after_third.append(refs["first"]() is not None)

    GraphSession(model).run({"x": np.ones(1000, np.float32)}, observe=observe)
    assert alive_after_third == [False]


def test_readme_operator_and_defect_tables_match_the_code() -> None:
    from pathlib import Path

    from ovpool.engine.ops.__main__ import defects, table

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert table() in readme, "README's operator table is stale: paste `python -m ovpool.engine.ops`"
    assert defects() in readme, "README's onnx.reference defects table is stale: paste `python -m ovpool.engine.ops`"
