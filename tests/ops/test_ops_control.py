"""Loop, If and Scan at every since-version in force from opset 7, against onnxruntime, with bodies
run on ovpool's own operators (GraphSession compiles the bodies, so the node runs through a session
here, not through ``harness.run_ovpool``), and ONNX's own node test cases."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import harness
import numpy as np
import onnx
import pytest
from harness import I64, B, F, check_node_case, model_of, node_case_params, since_opsets, vi
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from ovpool.engine.graph import GraphSession
from ovpool.errors import ModelError

# Loop/If/Scan against onnxruntime at a tighter rtol than the harness's
compare = functools.partial(harness.compare, rtol=1e-6)


# ---------------------------------------------------------------- Loop


def loop_body(scans: int = 1, stop_above: float | None = None, outer: str | None = None) -> onnx.GraphProto:
    """Body(i, cond, v): v' = v * 0.5 + i (+ outer), cond' = sum(v') <= stop_above (or cond); emits v' and i."""
    nodes = [
        helper.make_node("Cast", ["i"], ["i_f"], to=F),
        helper.make_node("Mul", ["v_in", "half"], ["v_half"]),
        helper.make_node("Add", ["v_half", "i_f"], ["v_sum"]),
        helper.make_node("Add", ["v_sum", outer], ["v_out"]) if outer else helper.make_node("Identity", ["v_sum"], ["v_out"]),
        helper.make_node("Identity", ["v_out"], ["scan_v"]),
        helper.make_node("Identity", ["i"], ["scan_i"]),
    ]
    if stop_above is None:
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    else:
        nodes += [
            helper.make_node("ReduceSum", ["v_out"], ["total"], keepdims=0),
            helper.make_node("Greater", ["total", "limit"], ["over"]),
            helper.make_node("Not", ["over"], ["cond_out"]),
        ]
    outputs = [vi("cond_out", B, []), vi("v_out", F, None)] + [vi("scan_v", F, None), vi("scan_i", I64, [])][:scans]
    initializers = [numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    if stop_above is not None:
        initializers.append(numpy_helper.from_array(np.array(stop_above, np.float32), "limit"))
    return helper.make_graph(
        nodes, "body", [vi("i", I64, []), vi("cond_in", B, []), vi("v_in", F, None)], outputs, initializer=initializers
    )


@pytest.mark.parametrize("opset", since_opsets("Loop"))
@settings(max_examples=12)
@given(
    trips=st.none() | st.integers(0, 5),
    stop=st.none() | st.floats(0, 20),
    start=st.booleans(),
    scans=st.integers(0, 2),
    dims=st.lists(st.integers(1, 3), max_size=2),
    outer=st.booleans(),
)
def test_loop_matches_onnxruntime(
    opset: int, trips: int | None, stop: float | None, start: bool, scans: int, dims: list[int], outer: bool
) -> None:
    """Trip count and condition in every combination (optional M, optional cond, a condition computed
    by the body), 0..2 scan outputs, a body reading an outer-scope graph input."""
    if trips is None and stop is None:
        stop = 5.0  # M and cond both absent would never end; the body's cond ends it
    body = loop_body(scans, stop, "bias" if outer else None)
    cond_given = stop is not None or not start
    inputs = ["M" if trips is not None else "", "cond" if cond_given else "", "v0"]
    outputs = ["v_final", "scan_v", "scan_i"][: 1 + scans]
    node = helper.make_node("Loop", inputs, outputs, body=body)
    graph_inputs = [vi("v0", F, dims)] + ([vi("bias", F, [])] if outer else [])
    feeds: dict[str, np.ndarray] = {"v0": np.arange(np.prod(dims, dtype=int), dtype=np.float32).reshape(dims)}
    if outer:
        feeds["bias"] = np.array(0.25, np.float32)
    if trips is not None:
        graph_inputs.append(vi("M", I64, []))
        feeds["M"] = np.array(trips, np.int64)
    if cond_given:
        graph_inputs.append(vi("cond", B, []))
        feeds["cond"] = np.array(start)
    if trips == 0 or (cond_given and not start):
        return _empty_loop(node, graph_inputs, feeds, opset, scans)
    compare(model_of([node], graph_inputs, outputs, opset), feeds)


def _empty_loop(node: onnx.NodeProto, graph_inputs: list, feeds: dict, opset: int, scans: int) -> None:
    """No iteration: the final values are the initial ones, scan outputs empty of the body output's
    declared type; onnxruntime's empty scan shape comes from its shape inference, so only the final
    value and the scan output dtypes and lengths are compared."""
    model = model_of([node], graph_inputs, list(node.output), opset)
    if scans:
        with pytest.raises(ModelError, match="ran no iteration"):
            GraphSession(model).run(feeds)  # scan_v's dims are not declared by the body
        return
    compare(model, feeds)


@pytest.mark.parametrize("opset", since_opsets("Loop"))
def test_loop_without_iterations_stacks_declared_shapes(opset: int) -> None:
    """M=0: v_final = v0 and a (0, 2) float32 scan, as the body declares scan_v float[2]."""
    body = loop_body(1)
    body.output[2].CopyFrom(vi("scan_v", F, [2]))
    node = helper.make_node("Loop", ["M", "", "v0"], ["v_final", "scan_v"], body=body)
    model = model_of([node], [vi("M", I64, []), vi("v0", F, [2])], ["v_final", "scan_v"], opset)
    result = compare(model, {"M": np.array(0, np.int64), "v0": np.array([1, 2], np.float32)})
    assert result["scan_v"].shape == (0, 2)


def _invariant_body(shape: list[int]) -> onnx.GraphProto:
    """Body(i, cond, v): u = Relu(Reshape(outer a, shape) @ W) reads only the enclosing input a and
    constants; v' = v * 0.5 + i + sum(u), and the uniform draw r = RandomUniformLike(a) reads a
    only too but is drawn anew at each iteration (emitted as a scan output)."""
    nodes = [
        helper.make_node("Reshape", ["a", "shape"], ["a2"]),
        helper.make_node("MatMul", ["a2", "w"], ["p"]),
        helper.make_node("Relu", ["p"], ["u"]),
        helper.make_node("ReduceSum", ["u"], ["total"], keepdims=0),
        helper.make_node("Cast", ["i"], ["i_f"], to=F),
        helper.make_node("Mul", ["v_in", "half"], ["v_half"]),
        helper.make_node("Add", ["v_half", "i_f"], ["v_sum"]),
        helper.make_node("Add", ["v_sum", "total"], ["v_out"]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("RandomUniformLike", ["a"], ["r"]),
    ]
    initializers = [
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        numpy_helper.from_array(np.array(shape, np.int64), "shape"),
        numpy_helper.from_array(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), "w"),
    ]
    return helper.make_graph(
        nodes,
        "body",
        [vi("i", I64, []), vi("cond_in", B, []), vi("v_in", F, [2])],
        [vi("cond_out", B, []), vi("v_out", F, [2]), vi("r", F, [6])],
        initializer=initializers,
    )


def test_loop_runs_what_reads_only_outer_values_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Reshape, MatMul, Relu and ReduceSum of outer ``a`` run once for the loop's 4 steps
    (``CompiledGraph.repeated``), the random draw at each step; v agrees with onnxruntime."""
    from ovpool.engine import graph as graph_module

    hoisted: list[list[str]] = []
    original = graph_module.hoisting

    def spy(*args: Any) -> Any:
        result = original(*args)
        if result is not None:
            hoisted.append([step.label for step in result[0].steps])
        return result

    monkeypatch.setattr(graph_module, "hoisting", spy)
    node = helper.make_node("Loop", ["M", "", "v0"], ["v_final", "draws"], body=_invariant_body([2, 3]))
    model = model_of([node], [vi("M", I64, []), vi("v0", F, [2]), vi("a", F, [6])], ["v_final", "draws"], 13)
    feeds = {"M": np.array(4, np.int64), "v0": np.array([1, 2], np.float32), "a": np.linspace(-2, 3, 6, dtype=np.float32)}
    result = GraphSession(model).run(feeds)
    assert [[label.split("(")[-1] for label in labels] for labels in hoisted] == [["Reshape)", "MatMul)", "Relu)", "ReduceSum)"]]
    import onnxruntime

    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(["v_final"], feeds)[0]
    np.testing.assert_allclose(result["v_final"], expected, rtol=1e-6)
    draws = result["draws"]
    assert draws.shape == (4, 6) and len({row.tobytes() for row in draws}) == 4


def test_loop_without_iterations_runs_no_outer_only_node() -> None:
    """M=0 runs nothing of the body, not even its outer-only nodes: a Reshape of ``a`` that cannot
    be done fails only once the loop iterates, naming the node."""
    node = helper.make_node("Loop", ["M", "", "v0"], ["v_final", "draws"], body=_invariant_body([4, 3]))
    model = model_of([node], [vi("M", I64, []), vi("v0", F, [2]), vi("a", F, [6])], ["v_final", "draws"], 13)
    session = GraphSession(model)
    feeds = {"v0": np.array([1, 2], np.float32), "a": np.zeros(6, np.float32)}
    empty = session.run({"M": np.array(0, np.int64), **feeds})
    assert empty["draws"].shape == (0, 6) and empty["v_final"].tolist() == [1, 2]
    with pytest.raises(ModelError, match="Reshape"):
        session.run({"M": np.array(2, np.int64), **feeds})


def _carried_product_model(step: float) -> onnx.ModelProto:
    """Loop(M) over x (1, 3): each step emits x @ W (3, 2) and carries x + step (paddle2onnx
    carries unchanged values through the loop state as x + 0)."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("MatMul", ["x_in", "w"], ["product"]),
            helper.make_node("Add", ["x_in", "step"], ["x_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("cond_in", B, []), vi("x_in", F, [1, 3])],
        [vi("cond_out", B, []), vi("x_out", F, [1, 3]), vi("product", F, [1, 2])],
        initializer=[
            numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2) - 2, "w"),
            numpy_helper.from_array(np.array(step, np.float32), "step"),
        ],
    )
    node = helper.make_node("Loop", ["M", "", "x0"], ["x_final", "products"], body=body)
    return model_of([node], [vi("M", I64, []), vi("x0", F, [1, 3])], ["x_final", "products"], 13)


@pytest.mark.parametrize(("step", "computed"), [(0.0, 2), (0.5, 6)])
def test_loop_product_of_unchanged_operands_is_computed_once(step: float, computed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """x0 holds -0.0: x0 + 0 turns it into 0.0, so the second step's operand differs in one bit
    and is multiplied again; from the third step on it is the same and the product is given back
    (6 steps, 2 products computed). With a step of 0.5 the operand changes every time: six
    products, and no operand kept after the third. Both agree with onnxruntime."""
    from ovpool.engine.repeat import Remembered

    made: list[Any] = []
    original = Remembered.__init__

    def spy(self: Any, *args: Any) -> None:
        original(self, *args)
        made.append(self)

    monkeypatch.setattr(Remembered, "__init__", spy)
    model = _carried_product_model(step)
    feeds = {"M": np.array(6, np.int64), "x0": np.array([[-0.0, 1.5, -2.0]], np.float32)}
    result = GraphSession(model).run(feeds)
    ((remembered,),) = [made]
    assert (remembered.calls, remembered.repeats) == (computed, 6 - computed)
    if step:
        assert remembered.last is None
    import onnxruntime

    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
    for actual, wanted in zip(result.values(), expected):
        np.testing.assert_array_equal(actual, wanted)


def test_loop_refuses_endless_loop() -> None:
    node = helper.make_node("Loop", ["", "", "v0"], ["v_final"], body=loop_body(0))
    model = model_of([node], [vi("v0", F, [2])], ["v_final"], 13)
    with pytest.raises(ModelError, match="neither M nor cond"):
        GraphSession(model).run({"v0": np.zeros(2, np.float32)})


def test_loop_refuses_a_body_of_the_wrong_arity() -> None:
    node = helper.make_node("Loop", ["M", "", "v0", "v0"], ["a", "b"], body=loop_body(0))
    model = model_of([node], [vi("M", I64, []), vi("v0", F, [2])], ["a", "b"], 13)
    with pytest.raises(ModelError, match="body takes 3 inputs"):
        GraphSession(model)


def test_loop_scan_output_changing_shape_is_the_models_error() -> None:
    """A scan output whose shape changes between iterations cannot be stacked: said of the node."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["c"], ["c_out"]),
            helper.make_node("Concat", ["v", "v"], ["v_out"], axis=0),
            helper.make_node("Identity", ["v_out"], ["s"]),
        ],
        "body",
        [vi("i", I64, []), vi("c", B, []), vi("v", F, None)],
        [vi("c_out", B, []), vi("v_out", F, None), vi("s", F, None)],
    )
    node = helper.make_node("Loop", ["M", "", "v0"], ["v", "s"], body=body, name="grow")
    model = model_of([node], [vi("M", I64, []), vi("v0", F, [1])], ["v", "s"], 13)
    with pytest.raises(ModelError, match="node 'grow'.*changes shape"):
        GraphSession(model).run({"M": np.array(3, np.int64), "v0": np.ones(1, np.float32)})


# ---------------------------------------------------------------- If


def branch(name: str, op: str, operands: list[str], out_shape: list[int] | None = None) -> onnx.GraphProto:
    return helper.make_graph([helper.make_node(op, operands, [f"{name}_y"])], name, [], [vi(f"{name}_y", F, out_shape)])


@pytest.mark.parametrize("opset", sorted(set(since_opsets("If")) | set(since_opsets("Loop"))))
@pytest.mark.parametrize("kind", ["passed", "computed", "one step"])
def test_constants_an_if_or_loop_returns_are_the_callers(kind: str, opset: int) -> None:
    """A branch constant (a body's initializer passed through, a node folded at prepare time, the
    one step of a branch) and a Loop's state left as the body's constant reach the caller as
    arrays of its own: writing into them changes nothing the next run gives; nothing of the plan
    is written into either (an Add after the If)."""
    k = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "k")
    if kind == "passed":
        nodes = [helper.make_node("Identity", ["k"], ["o"])]
    elif kind == "computed":
        nodes = [helper.make_node("Add", ["k", "k"], ["o"])]
    else:
        nodes = [helper.make_node("Add", ["k", "x"], ["o"])]
    branch = helper.make_graph(nodes, "branch", [], [vi("o", F, [3])], initializer=[k])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["k", "k"], ["v_out"])],
        "body",
        [vi("i", I64, []), vi("cond_in", B, []), vi("v_in", F, [3])],
        [vi("cond_out", B, []), vi("v_out", F, [3])],
        initializer=[k],
    )
    nodes = [
        helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch),
        helper.make_node("Add", ["y", "x"], ["z"]),
        helper.make_node("Loop", ["M", ""], ["v"], body=body),
    ]
    inputs = [vi("c", B, []), vi("x", F, [3]), vi("M", I64, [])]
    model = model_of(nodes, inputs, ["y", "z", "v"], opset)
    model.graph.node[2].input.append("x")  # v starts from x
    session = GraphSession(model)
    feeds = {"c": np.array(True), "x": np.ones(3, np.float32), "M": np.array(2, np.int64)}
    first = session.run(feeds)
    expected = {name: value.copy() for name, value in first.items()}
    for value in first.values():
        value[...] = 99.0
    for name, value in session.run(feeds).items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)


@pytest.mark.parametrize("opset", since_opsets("If"))
@pytest.mark.parametrize("cond", [True, False])
@pytest.mark.parametrize("cond_shape", [[], [1]])
def test_if_matches_onnxruntime(opset: int, cond: bool, cond_shape: list[int]) -> None:
    """Branches reading outer-scope values (a graph input, an initializer)."""
    then_branch = branch("then", "Add", ["x", "w"])
    else_branch = branch("else", "Mul", ["w", "x"])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch)
    weight = numpy_helper.from_array(np.array([1.0, -1.0, 2.0], np.float32), "w")
    model = model_of([node], [vi("c", B, cond_shape), vi("x", F, [2, 3])], ["y"], opset, [weight])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    compare(model, {"c": np.array(cond).reshape(cond_shape), "x": x})


@pytest.mark.parametrize("opset", since_opsets("If"))
def test_if_nested_reads_every_enclosing_scope(opset: int) -> None:
    """If inside If: the inner branches read a top-level input and the outer branch's own value."""
    inner = helper.make_node(
        "If",
        ["c2"],
        ["inner_y"],
        then_branch=branch("t2", "Mul", ["x", "local"]),
        else_branch=branch("e2", "Sub", ["local", "x"]),
    )
    outer_then = helper.make_graph([helper.make_node("Add", ["x", "x"], ["local"]), inner], "t1", [], [vi("inner_y", F, None)])
    node = helper.make_node("If", ["c1"], ["y"], then_branch=outer_then, else_branch=branch("e1", "Neg", ["x"]))
    model = model_of([node], [vi("c1", B, []), vi("c2", B, []), vi("x", F, [3])], ["y"], opset)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    for c1 in (True, False):
        for c2 in (True, False):
            compare(model, {"c1": np.array(c1), "c2": np.array(c2), "x": x})


@pytest.mark.parametrize("opset", since_opsets("If"))
def test_if_branch_that_passes_values_through(opset: int) -> None:
    """A branch of Identity nodes only (returned without running its plan): an outer value through
    two Identities, a branch constant and an outer constant through one each; the other branch
    computes."""
    passing = helper.make_graph(
        [
            helper.make_node("Identity", ["x"], ["x1"]),
            helper.make_node("Identity", ["x1"], ["x2"]),
            helper.make_node("Identity", ["k"], ["k1"]),
            helper.make_node("Identity", ["w"], ["w1"]),
        ],
        "pass",
        [],
        [vi("x2", F, None), vi("k1", F, None), vi("w1", F, None)],
        initializer=[numpy_helper.from_array(np.array([[4.0, 5.0, 6.0]], np.float32), "k")],
    )
    computing = helper.make_graph(
        [
            helper.make_node("Neg", ["x"], ["n"]),
            helper.make_node("Add", ["x", "w"], ["s"]),
            helper.make_node("Mul", ["w", "w"], ["m"]),
        ],
        "compute",
        [],
        [vi("n", F, None), vi("s", F, None), vi("m", F, None)],
    )
    weight = numpy_helper.from_array(np.array([1.0, -1.0, 2.0], np.float32), "w")
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    for then_branch, else_branch in ((passing, computing), (computing, passing)):
        node = helper.make_node("If", ["c"], ["a", "b", "d"], then_branch=then_branch, else_branch=else_branch)
        model = model_of([node], [vi("c", B, []), vi("x", F, [1, 3])], ["a", "b", "d"], opset, [weight])
        for cond in (True, False):
            compare(model, {"c": np.array(cond), "x": x})


@pytest.mark.parametrize("opset", since_opsets("If"))
def test_if_branch_of_one_step(opset: int) -> None:
    """A branch of one node (its kernel called directly): a Split whose outputs the branch returns
    in the other order, against a branch of two nodes."""
    halves = {"num_outputs": 2} if opset >= 18 else {}  # Split-18 needs it without a split input
    split = helper.make_node("Split", ["x"], ["left", "right"], axis=1, **halves)
    one_step = helper.make_graph([split], "one", [], [vi("right", F, None), vi("left", F, None)])
    two_steps = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Split", ["n"], ["l2", "r2"], axis=1, **halves)],
        "two",
        [],
        [vi("l2", F, None), vi("r2", F, None)],
    )
    node = helper.make_node("If", ["c"], ["a", "b"], then_branch=one_step, else_branch=two_steps)
    model = model_of([node], [vi("c", B, []), vi("x", F, [2, 4])], ["a", "b"], opset)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    for cond in (True, False):
        compare(model, {"c": np.array(cond), "x": x})


def test_if_branch_of_one_failing_step_names_its_node() -> None:
    squeeze = helper.make_node("Squeeze", ["x", "axes"], ["s"], name="squeeze_rows")
    branch_graph = helper.make_graph(
        [squeeze], "t", [], [vi("s", F, None)], initializer=[numpy_helper.from_array(np.array([0], np.int64), "axes")]
    )
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch_graph, else_branch=branch("e", "Neg", ["x"]))
    model = model_of([node], [vi("c", B, []), vi("x", F, None)], ["y"], 13)
    session = GraphSession(model)
    with pytest.raises(ModelError, match="node 'squeeze_rows'"):
        session.run({"c": np.array(True), "x": np.ones((2, 3), np.float32)})
    assert session.run({"c": np.array(True), "x": np.ones((1, 3), np.float32)})["y"].shape == (3,)


def test_if_refuses_a_cond_of_many_values() -> None:
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch("t", "Neg", ["x"]), else_branch=branch("e", "Abs", ["x"]))
    model = model_of([node], [vi("c", B, [2]), vi("x", F, [1])], ["y"], 13)
    with pytest.raises(ModelError, match="cond must hold one value"):
        GraphSession(model).run({"c": np.array([True, False]), "x": np.ones(1, np.float32)})


# ---------------------------------------------------------------- Scan


def scan_body(states: int, scans: int, outputs: int, reverse_state: bool = False) -> onnx.GraphProto:
    """Body(s_0.., x_0..): s_j' = s_j + x_(j mod scans) * (j+1); emits s_0' * x_0, then x_0 - s_0'."""
    nodes, outs = [], []
    factor = []
    for j in range(states):
        factor.append(numpy_helper.from_array(np.array(j + 1.0, np.float32), f"k{j}"))
        nodes += [
            helper.make_node("Mul", [f"x{j % scans}", f"k{j}"], [f"t{j}"]),
            helper.make_node("Add", [f"s{j}", f"t{j}"], [f"s{j}_out"]),
        ]
        outs.append(vi(f"s{j}_out", F, None))
    first = "s0_out" if states else "x0"
    nodes += [helper.make_node("Mul", [first, "x0"], ["y0"]), helper.make_node("Sub", ["x0", first], ["y1"])]
    outs += [vi("y0", F, None), vi("y1", F, None)][:outputs]
    inputs = [vi(f"s{j}", F, None) for j in range(states)] + [vi(f"x{j}", F, None) for j in range(scans)]
    return helper.make_graph(nodes, "body", inputs, outs, initializer=factor)


@pytest.mark.parametrize("opset", [o for o in since_opsets("Scan") if o >= 9])
@settings(max_examples=15)
@given(data=st.data())
def test_scan_matches_onnxruntime(opset: int, data: st.DataObject) -> None:
    """Scan-9+: states, several scan inputs on their own axes and directions, outputs on their own
    axes and directions (negative axes from Scan-11)."""
    states = data.draw(st.integers(0, 2))
    scans = data.draw(st.integers(1, 2))
    outputs = data.draw(st.integers(1 if states == 0 else 0, 2))
    steps = data.draw(st.integers(1, 4))
    element = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    low = -1 if opset >= 11 else 0
    in_axes = [data.draw(st.integers(low * (len(element) + 1), len(element))) for _ in range(scans)]
    in_dirs = [data.draw(st.integers(0, 1)) for _ in range(scans)]
    out_axes = [data.draw(st.integers(low * (len(element) + 1), len(element))) for _ in range(outputs)]
    out_dirs = [data.draw(st.integers(0, 1)) for _ in range(outputs)]
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    feeds = {f"s{j}": rng.standard_normal(element).astype(np.float32) for j in range(states)}
    for j, axis in enumerate(in_axes):
        shape = list(element)
        shape.insert(axis % (len(element) + 1), steps)
        feeds[f"x{j}"] = rng.standard_normal(shape).astype(np.float32)
    attrs: dict[str, Any] = {"scan_input_axes": in_axes, "scan_input_directions": in_dirs}
    if outputs:
        attrs.update(scan_output_axes=out_axes, scan_output_directions=out_dirs)
    node = helper.make_node(
        "Scan",
        [f"s{j}" for j in range(states)] + [f"x{j}" for j in range(scans)],
        [f"f{j}" for j in range(states)] + [f"y{k}" for k in range(outputs)],
        body=scan_body(states, scans, outputs),
        num_scan_inputs=scans,
        **attrs,
    )
    inputs = [vi(name, F, list(value.shape)) for name, value in feeds.items()]
    compare(model_of([node], inputs, list(node.output), opset), feeds, rtol=1e-5, atol=1e-5)


def test_scan_9_refuses_negative_axes() -> None:
    node = helper.make_node("Scan", ["s0", "x0"], ["f0", "y0"], body=scan_body(1, 1, 1), num_scan_inputs=1, scan_input_axes=[-1])
    model = model_of([node], [vi("s0", F, [2]), vi("x0", F, [2, 3])], ["f0", "y0"], 9)
    with pytest.raises(ModelError, match="Scan-9 axes are non-negative"):
        GraphSession(model)


def scan_8_body() -> onnx.GraphProto:
    body = scan_body(1, 1, 2)
    body.output[1].CopyFrom(vi("y0", F, [2]))
    body.output[2].CopyFrom(vi("y1", F, [2]))
    return body


@pytest.mark.parametrize("direction", [0, 1])
@pytest.mark.parametrize("lengths", [None, [4, 2, 1]])
def test_scan_8_batch_and_sequence_lens(direction: int, lengths: list[int] | None) -> None:
    """Scan-8: per-batch rows, each with its own length; a reverse row starts at its own last
    valid step; scan outputs past a row's length are zeros (as onnxruntime writes them)."""
    body = scan_8_body()
    inputs = ["L" if lengths is not None else "", "s0", "x0"]
    node = helper.make_node("Scan", inputs, ["f0", "y0", "y1"], body=body, num_scan_inputs=1, directions=[direction])
    rng = np.random.default_rng(5)
    feeds = {"s0": rng.standard_normal((3, 2)).astype(np.float32), "x0": rng.standard_normal((3, 4, 2)).astype(np.float32)}
    graph_inputs = [vi("s0", F, [3, 2]), vi("x0", F, [3, 4, 2])]
    if lengths is not None:
        feeds["L"] = np.array(lengths, np.int64)
        graph_inputs.append(vi("L", I64, [3]))
    compare(model_of([node], graph_inputs, ["f0", "y0", "y1"], 8), feeds)


def test_scan_8_zero_length_row() -> None:
    """A row of length 0 (onnxruntime refuses it; the schema allows lengths in [0, max]): its final
    state is its initial state and its scan outputs are all padding (zeros)."""
    node = helper.make_node("Scan", ["L", "s0", "x0"], ["f0", "y0", "y1"], body=scan_8_body(), num_scan_inputs=1)
    model = model_of([node], [vi("L", I64, [2]), vi("s0", F, [2, 2]), vi("x0", F, [2, 3, 2])], ["f0", "y0", "y1"], 8)
    s0 = np.array([[1, 2], [3, 4]], np.float32)
    x0 = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    result = GraphSession(model).run({"L": np.array([1, 0], np.int64), "s0": s0, "x0": x0})
    np.testing.assert_array_equal(result["f0"], [s0[0] + x0[0, 0], s0[1]])
    np.testing.assert_array_equal(result["y0"][1], np.zeros((3, 2)))
    np.testing.assert_array_equal(result["y0"][0, 0], (s0[0] + x0[0, 0]) * x0[0, 0])
    np.testing.assert_array_equal(result["y0"][0, 1:], np.zeros((2, 2)))


def test_scan_8_refuses_lengths_beyond_the_sequence() -> None:
    node = helper.make_node("Scan", ["L", "s0", "x0"], ["f0"], body=scan_body(1, 1, 0), num_scan_inputs=1)
    model = model_of([node], [vi("L", I64, [1]), vi("s0", F, [1, 2]), vi("x0", F, [1, 3, 2])], ["f0"], 8)
    with pytest.raises(ModelError, match="sequence_lens"):
        GraphSession(model).run(
            {"L": np.array([4], np.int64), "s0": np.zeros((1, 2), np.float32), "x0": np.zeros((1, 3, 2), np.float32)}
        )


def test_scan_inside_loop_reads_the_loop_counter() -> None:
    """Nesting: a Scan in a Loop body whose Scan body reads the Loop's iteration number."""
    scan_inner = helper.make_graph(
        [
            helper.make_node("Cast", ["i"], ["i_f"], to=F),
            helper.make_node("Add", ["s", "x"], ["s1"]),
            helper.make_node("Add", ["s1", "i_f"], ["s_out"]),
        ],
        "scan_body",
        [vi("s", F, [2]), vi("x", F, [2])],
        [vi("s_out", F, [2])],
    )
    loop = helper.make_graph(
        [
            helper.make_node("Scan", ["v", "xs"], ["v_out"], body=scan_inner, num_scan_inputs=1),
            helper.make_node("Identity", ["c"], ["c_out"]),
        ],
        "loop_body",
        [vi("i", I64, []), vi("c", B, []), vi("v", F, [2])],
        [vi("c_out", B, []), vi("v_out", F, [2])],
    )
    node = helper.make_node("Loop", ["M", "", "v0"], ["v"], body=loop)
    model = model_of([node], [vi("M", I64, []), vi("v0", F, [2]), vi("xs", F, [3, 2])], ["v"], 16)
    feeds = {"M": np.array(3, np.int64), "v0": np.zeros(2, np.float32), "xs": np.arange(6, dtype=np.float32).reshape(3, 2)}
    compare(model, feeds)


# ---------------------------------------------------------------- ONNX's node test cases


def _run_session(model: onnx.ModelProto, feeds: Mapping[str, Any]) -> list[Any]:
    """The model on GraphSession, whose bodies may run sequence ops on onnx.reference."""
    return list(GraphSession(model).run(feeds).values())


@pytest.mark.parametrize("case", node_case_params(("Loop", "If", "Scan")))
def test_onnx_node_cases(case: Any) -> None:
    """The cases with sequences (test_loop13_seq, test_if_seq) and optionals run their sequence ops on
    onnx.reference inside ovpool's own Loop/If."""
    check_node_case(case, run=_run_session)
