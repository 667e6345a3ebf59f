"""Groups of nodes that compute values of shapes only (``Shape -> Gather -> Equal``), run once per
shape set (``ovpool.engine.shapevalues``): one session run on inputs of changing shapes gives
onnxruntime's outputs at each run (oracle: onnxruntime, graph optimisations off, a fresh run for
each feed), the values handed out are the caller's own, a failing node is named at every run, and
an observed run still sees every node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import B, F, assert_same, examples, model_of, run_ort, vi
from hypothesis import given
from hypothesis import strategies as st
from onnx import NodeProto, helper, numpy_helper

from ovpool.engine.graph import GraphSession
from ovpool.engine.shapevalues import KEPT_BYTES, ShapeValues
from ovpool.errors import ModelError


def _ints(name: str, *values: int) -> Any:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _steps(session: GraphSession) -> list[Any]:
    return [step.kernel for step in session.compiled.plan.steps if isinstance(step.kernel, ShapeValues)]


def _branching_model() -> Any:
    """x [n, m]: an If on ``m == 4`` (Identity of x, or -x), x reshaped by its own shape reversed
    through Slice and Concat, x times its element count (Size of the Shape as float), zeros of
    x's shape plus x (ConstantOfShape), and the shape itself as an output."""
    then_branch = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "t", [], [vi("t", F, None)])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "e", [], [vi("e", F, None)])
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["m"], axis=0, name="m"),
        helper.make_node("Equal", ["m", "four"], ["is4"], name="is4"),
        helper.make_node("If", ["is4"], ["chosen"], then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Slice", ["shape", "one_1d", "two_1d"], ["last"], name="last"),
        helper.make_node("Slice", ["shape", "zero_1d", "one_1d"], ["first"], name="first"),
        helper.make_node("Concat", ["last", "first"], ["reversed"], axis=0, name="reversed"),
        helper.make_node("Reshape", ["x", "reversed"], ["turned"]),
        helper.make_node("Size", ["shape"], ["rank"], name="rank"),
        helper.make_node("ReduceProd", ["shape"], ["count"], keepdims=0, name="count"),
        helper.make_node("Add", ["count", "rank"], ["sum"], name="sum"),
        helper.make_node("Cast", ["sum"], ["sum_f"], to=F, name="sum_f"),
        helper.make_node("Mul", ["x", "sum_f"], ["scaled"]),
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"], name="zeros"),
        helper.make_node("Add", ["zeros", "x"], ["plus"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        numpy_helper.from_array(np.array(4, np.int64), "four"),
        _ints("zero_1d", 0),
        _ints("one_1d", 1),
        _ints("two_1d", 2),
    ]
    outputs = ["chosen", "turned", "scaled", "plus", "shape", "is4"]
    return model_of(nodes, [vi("x", F, ["n", "m"])], outputs, 13, inits)


def _check_runs(session: GraphSession, model: Any, shapes: list[tuple[int, ...]], seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for shape in shapes:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        actual = session.run(feeds)
        for (name, a), e in zip(actual.items(), run_ort(model, feeds)):
            assert_same(a, e, rtol=0, atol=0, what=f"{name} at {shape}: ")


def test_groups_follow_the_shapes_of_each_run() -> None:
    model = _branching_model()
    session = GraphSession(model)
    assert session.compiled.plan.grouped >= 1
    _check_runs(session, model, [(2, 4), (3, 5), (2, 4), (1, 4), (3, 5), (6, 1)])


@examples(6)
@given(shapes=st.lists(st.tuples(st.integers(1, 5), st.integers(1, 6)), min_size=1, max_size=6), seed=st.integers(0, 99))
def test_drawn_shape_sequences_match_onnxruntime(shapes: list[tuple[int, int]], seed: int) -> None:
    model = _branching_model()
    _check_runs(GraphSession(model), model, shapes, seed)


def test_values_handed_out_are_the_callers_own() -> None:
    """Writing into a shape value the run returned, as the graph's output or through a Transpose
    (a view of a kept value), changes nothing the next run gives."""
    model = _branching_model()
    session = GraphSession(model)
    x = np.ones((2, 4), np.float32)
    first = session.run({"x": x})
    assert all(value.flags.writeable for value in first.values())
    first["shape"][:] = 7
    first["is4"][...] = False
    again = session.run({"x": x})
    assert again["shape"].tolist() == [2, 4] and bool(again["is4"]) is True

    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Unsqueeze", ["s", "zero_1d"], ["row"]),
        helper.make_node("Transpose", ["row"], ["column"]),
    ]
    session = GraphSession(model_of(nodes, [vi("x", F, None)], ["column"], 13, [_ints("zero_1d", 0)]))
    column = session.run({"x": x})["column"]
    column[:] = -1
    assert session.run({"x": x})["column"].tolist() == [[2], [4]]


def test_large_values_are_computed_at_each_run() -> None:
    model = _branching_model()
    session = GraphSession(model)
    side = int(np.sqrt(KEPT_BYTES // 4)) + 8  # zeros of x's shape beyond KEPT_BYTES
    _check_runs(session, model, [(side, side), (side, side), (2, 4)])
    kept = [key for step in _steps(session) for key in step.kept]
    assert (side, side) not in kept and (2, 4) in kept


def test_a_failing_node_is_named_at_every_run() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "two"], ["d"], axis=0, name="third_dim"),
        helper.make_node("Cast", ["d"], ["d_f"], to=F, name="as_float"),
        helper.make_node("Mul", ["x", "d_f"], ["y"]),
    ]
    model = model_of(nodes, [vi("x", F, None)], ["y"], 13, [numpy_helper.from_array(np.array(2, np.int64), "two")])
    session = GraphSession(model)
    assert _steps(session)
    for _ in range(2):
        with pytest.raises(ModelError, match="node 'third_dim'"):
            session.run({"x": np.ones((2, 3), np.float32)})
    x = np.ones((2, 3, 5), np.float32)
    assert_same(session.run({"x": x})["y"], x * 5)


def _two_sources() -> tuple[Any, list[NodeProto]]:
    """Shape(x) cast to float is read by a Mul before the second source (Shape of the Mul's result)
    exists: the group of both shapes cannot run at one place and stays as the model states it."""
    nodes = [
        helper.make_node("Shape", ["x"], ["a"], name="a"),
        helper.make_node("Cast", ["a"], ["a_f"], to=F, name="a_f"),
        helper.make_node("Mul", ["x", "a_f"], ["y"], name="y"),
        helper.make_node("Shape", ["y"], ["b"], name="b"),
        helper.make_node("Add", ["a", "b"], ["c"], name="c"),
        helper.make_node("Equal", ["a", "b"], ["same"], name="same"),
    ]
    return model_of(nodes, [vi("x", F, ["n", 2])], ["y", "c", "same"], 13), nodes


def test_a_group_read_before_its_last_source_runs_as_stated() -> None:
    model, _ = _two_sources()
    session = GraphSession(model)
    assert not _steps(session)
    _check_runs(session, model, [(3, 2), (5, 2), (3, 2)])


def test_observed_run_sees_every_node_of_a_group() -> None:
    model = _branching_model()
    session = GraphSession(model)
    seen: dict[str, Any] = {}
    session.run({"x": np.ones((2, 4), np.float32)}, observe=lambda node, outs: seen.update({node.name: outs}))
    assert seen["m"][0].tolist() == 4 and bool(seen["is4"][0]) and seen["rank"][0].tolist() == 2
    assert seen["count"][0].tolist() == 8 and seen["sum_f"][0].tolist() == 10.0


def test_a_branch_condition_of_shapes_inside_a_branch() -> None:
    """A group inside an If branch (silero's LSTM state paths): the branch reads the outer x."""
    inner_then = helper.make_graph([helper.make_node("Squeeze", ["x", "zero_1d"], ["sq"])], "it", [], [vi("sq", F, None)])
    inner_else = helper.make_graph([helper.make_node("Identity", ["x"], ["id"])], "ie", [], [vi("id", F, None)])
    outer_then = helper.make_graph(
        [
            helper.make_node("Shape", ["x"], ["s"], name="s"),
            helper.make_node("Gather", ["s", "zero"], ["d0"], axis=0, name="d0"),
            helper.make_node("Equal", ["d0", "one"], ["unit"], name="unit"),
            helper.make_node("If", ["unit"], ["picked"], then_branch=inner_then, else_branch=inner_else),
        ],
        "ot",
        [],
        [vi("picked", F, None)],
    )
    outer_else = helper.make_graph([helper.make_node("Neg", ["x"], ["n"])], "oe", [], [vi("n", F, None)])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=outer_then, else_branch=outer_else)]
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        _ints("zero_1d", 0),
    ]
    model = model_of(nodes, [vi("c", B, []), vi("x", F, None)], ["y"], 13, inits)
    session = GraphSession(model)
    rng = np.random.default_rng(3)
    for shape, cond in (((1, 3), True), ((2, 3), True), ((1, 3), True), ((1, 3), False)):
        feeds = {"c": np.array(cond), "x": rng.standard_normal(shape).astype(np.float32)}
        (expected,) = run_ort(model, feeds)
        assert_same(session.run(feeds)["y"], expected, rtol=0, atol=0)


def test_int64_shape_values_keep_their_type() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["d"], axis=0),
        helper.make_node("Unsqueeze", ["d", "zero_1d"], ["d1"]),
        helper.make_node("Concat", ["d1", "minus_one"], ["flat"], axis=0),
        helper.make_node("Reshape", ["x", "flat"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"), _ints("zero_1d", 0), _ints("minus_one", -1)]
    model = model_of(nodes, [vi("x", F, None)], ["y", "flat"], 13, inits)
    session = GraphSession(model)
    _check_runs(session, model, [(2, 3, 4), (5, 1, 2), (2, 3, 4)])
    assert session.run({"x": np.ones((2, 3), np.float32)})["flat"].dtype == np.int64


def test_a_group_of_two_sources_keys_on_both_shapes() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["a"]),
        helper.make_node("Shape", ["y"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["c"]),
        helper.make_node("Cast", ["c"], ["f"], to=F),
        helper.make_node("Mul", ["f", "y"], ["z"]),
    ]
    model = model_of(nodes, [vi("x", F, ["n", 2]), vi("y", F, ["m", 2])], ["c", "z"], 13)
    session = GraphSession(model)
    (step,) = _steps(session)
    rng = np.random.default_rng(5)
    for n, m in ((1, 1), (3, 1), (1, 3), (3, 1), (2, 2)):
        feeds = {"x": rng.standard_normal((n, 2)).astype(np.float32), "y": rng.standard_normal((m, 2)).astype(np.float32)}
        actual = session.run(feeds)
        for (name, a), e in zip(actual.items(), run_ort(model, feeds)):
            assert_same(a, e, rtol=0, atol=0, what=f"{name} at {(n, m)}: ")
    assert len(step.kept) == 4 and ((3, 2), (1, 2)) in step.kept


def _drawn_shape_graph(draw: st.DrawFn) -> Any:
    """x of rank 3 (dims free), its Shape and Size, then 2-6 nodes each combining two values made
    before (Add, Mul, Sub, Max, Min of int64 scalars; Equal cast back to int64; Unsqueeze + Concat +
    ReduceProd), every value a graph output, and x times the last value as float."""
    nodes = [
        helper.make_node("Shape", ["x"], ["v0"]),
        helper.make_node("Gather", ["v0", "i0"], ["v1"], axis=0),
        helper.make_node("Gather", ["v0", "i2"], ["v2"], axis=0),
        helper.make_node("Size", ["x"], ["v3"]),
    ]
    scalars = ["v1", "v2", "v3"]
    for n in range(draw(st.integers(2, 6))):
        a, b = draw(st.sampled_from(scalars)), draw(st.sampled_from(scalars))
        kind = draw(st.sampled_from(["Add", "Mul", "Sub", "Max", "Min", "Equal", "Concat"]))
        out = f"w{n}"
        if kind == "Equal":
            nodes += [helper.make_node("Equal", [a, b], [f"{out}_b"]), helper.make_node("Cast", [f"{out}_b"], [out], to=7)]
        elif kind == "Concat":
            nodes += [
                helper.make_node("Unsqueeze", [a, "axes0"], [f"{out}_a"]),
                helper.make_node("Unsqueeze", [b, "axes0"], [f"{out}_b"]),
                helper.make_node("Concat", [f"{out}_a", f"{out}_b"], [f"{out}_v"], axis=0),
                helper.make_node("ReduceProd", [f"{out}_v"], [out], keepdims=0),
            ]
        else:
            nodes.append(helper.make_node(kind, [a, b], [out]))
        scalars.append(out)
    nodes += [helper.make_node("Cast", [scalars[-1]], ["last_f"], to=F), helper.make_node("Mul", ["x", "last_f"], ["y"])]
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "i0"),
        numpy_helper.from_array(np.array(2, np.int64), "i2"),
        _ints("axes0", 0),
    ]
    return model_of(nodes, [vi("x", F, ["a", "b", "c"])], ["y", *scalars], 13, inits)


@examples(8)
@given(data=st.data())
def test_drawn_graphs_of_shape_values_match_onnxruntime(data: st.DataObject) -> None:
    model = _drawn_shape_graph(data.draw)
    session = GraphSession(model)
    assert session.compiled.plan.grouped in (1, 2)  # Shape and Size of x: one group, or two when nothing joins them
    dims = st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4))
    _check_runs(session, model, data.draw(st.lists(dims, min_size=1, max_size=4)), data.draw(st.integers(0, 99)))
    x = np.ones((2, 3, 4), np.float32)
    observed = session.run({"x": x}, observe=lambda node, outputs: None)  # the nodes as stated, no group
    assert all(np.array_equal(value, session.run({"x": x})[name]) for name, value in observed.items())
