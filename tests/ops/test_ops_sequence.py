"""The sequence operators (SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt,
SequenceErase, SequenceLength, ConcatFromSequence, SplitToSequence, SequenceMap) and the optional
ones against onnxruntime at every since-version, ONNX's node and model cases (the expanded
SequenceMap cases and the If/Loop cases that build sequences too), and the refusals by name."""

from __future__ import annotations

import warnings
from typing import Any

import harness
import numpy as np
import onnx
import pytest
from harness import I64, F, assert_same, check_node_case, compare, model_of, opsets, vi
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper

from ovpool.engine.graph import GraphSession
from ovpool.errors import ModelError

SEQUENCE_OPS = (
    "SequenceEmpty",
    "SequenceConstruct",
    "SequenceInsert",
    "SequenceAt",
    "SequenceErase",
    "SequenceLength",
    "ConcatFromSequence",
    "SplitToSequence",
    "SequenceMap",
    "Optional",
    "OptionalHasElement",
    "OptionalGetElement",
)


def _walk(graph: onnx.GraphProto) -> set[str]:
    ops = set()
    for node in graph.node:
        ops.add(node.op_type)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                ops |= _walk(attribute.g)
    return ops


def _backend_cases() -> list[Any]:
    """ONNX's node cases (expanded ones and If/Loop bodies included) and model cases with a
    sequence or optional op anywhere in the graph."""
    from onnx.backend.test.case import model, node

    harness.onnx_node_cases(["SequenceMap", "If", "Loop", "SequenceInsert", "SplitToSequence", "OptionalHasElement"])
    harness.onnx_node_cases(["OptionalGetElement"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.model.sequence  # noqa: F401  (registers the model cases)
    cases = [c for c in node._NodeTestCases if c.kind == "node"] + list(model._SimpleModelTestCases)
    chosen = {c.name: c for c in cases if _walk(c.model.graph) & set(SEQUENCE_OPS)}
    return [pytest.param(case, id=name) for name, case in sorted(chosen.items())]


BACKEND_CASES = _backend_cases()


def test_backend_cases_cover_the_sequence_ops() -> None:
    covered = set().union(*(_walk(p.values[0].model.graph) for p in BACKEND_CASES))
    assert covered >= set(SEQUENCE_OPS)
    assert len(BACKEND_CASES) >= 40


@pytest.mark.parametrize("case", BACKEND_CASES)
def test_onnx_cases(case: Any) -> None:
    """Every data set of the case on ovpool's kernels alone (run_ovpool refuses onnx.reference)."""
    check_node_case(case)


# ---------------------------------------------------------------- against onnxruntime


def _tensors(count: int, dims: list[int], dtype: Any = np.float32, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"t{i}": (rng.standard_normal(dims) * 10).astype(dtype) for i in range(count)}


def _construct(feeds: dict[str, np.ndarray], elem: int = F) -> tuple[list[onnx.NodeProto], list[onnx.ValueInfoProto]]:
    """SequenceConstruct of the feeds ``t0``.. into ``seq``."""
    names = sorted(feeds)
    inputs = [vi(n, elem, list(feeds[n].shape)) for n in names]
    return [helper.make_node("SequenceConstruct", names, ["seq"])], inputs


def _int(name: str, value: int, dtype: Any = np.int64) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(np.array(value, dtype=dtype)))


@pytest.mark.parametrize("opset", opsets("SequenceInsert"))
@pytest.mark.parametrize("position", [None, 0, 1, 3, -1, -3])
@pytest.mark.parametrize("position_type", [np.int64, np.int32])
def test_insert_at_erase_length(opset: int, position: int | None, position_type: Any) -> None:
    """SequenceInsert at ``position`` (default: back), then SequenceAt/SequenceErase there and
    SequenceLength, on a 3-tensor sequence."""
    feeds = _tensors(4, [2, 3])
    extra = feeds.pop("t3")
    nodes, inputs = _construct(feeds)
    inputs.append(vi("extra", F, [2, 3]))
    feeds["extra"] = extra
    where = [] if position is None else ["pos"]
    if position is not None:
        nodes.append(_int("pos", position, position_type))
    at = position if position is not None else -1
    nodes += [
        helper.make_node("SequenceInsert", ["seq", "extra", *where], ["inserted"]),
        _int("at", at, position_type),
        helper.make_node("SequenceAt", ["inserted", "at"], ["element"]),
        helper.make_node("SequenceErase", ["inserted", *where], ["erased"]),
        helper.make_node("SequenceErase", ["inserted"], ["erased_last"]),
        helper.make_node("SequenceLength", ["inserted"], ["length"]),
    ]
    outputs = ["inserted", "element", "erased", "erased_last", "length"]
    result = compare(model_of(nodes, inputs, outputs, opset), feeds)
    assert result["length"] == 4


@pytest.mark.parametrize("opset", opsets("ConcatFromSequence"))
@given(
    count=st.integers(1, 3),
    dims=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    new_axis=st.integers(0, 1),
    data=st.data(),
)
@harness.examples(12)
def test_concat_from_sequence(opset: int, count: int, dims: list[int], new_axis: int, data: st.DataObject) -> None:
    """ConcatFromSequence on every axis, negative ones too, joining or stacking (new_axis=1 allows
    axis = rank)."""
    rank = len(dims) + new_axis
    axis = data.draw(st.integers(-rank, rank - 1))
    feeds = _tensors(count, dims, seed=count)
    nodes, inputs = _construct(feeds)
    nodes.append(helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=axis, new_axis=new_axis))
    compare(model_of(nodes, inputs, ["y"], opset), feeds)


@pytest.mark.parametrize("opset", opsets("SequenceEmpty"))
@pytest.mark.parametrize("dtype", [(TensorProto.INT64, np.int64), (TensorProto.DOUBLE, np.float64), (TensorProto.STRING, object)])
def test_empty_then_insert(opset: int, dtype: tuple[int, Any]) -> None:
    """SequenceEmpty of ``dtype``, two inserts (the second at the front), its length, concatenated."""
    elem, np_type = dtype
    a = np.array([1, 2], dtype=np_type) if np_type is not object else np.array(["a", "b"], dtype=object)
    b = np.array([3], dtype=np_type) if np_type is not object else np.array(["c"], dtype=object)
    nodes = [
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=elem),
        helper.make_node("SequenceLength", ["empty"], ["n0"]),
        helper.make_node("SequenceInsert", ["empty", "a"], ["one"]),
        _int("front", 0),
        helper.make_node("SequenceInsert", ["one", "b", "front"], ["two"]),
        helper.make_node("SequenceLength", ["two"], ["n2"]),
        helper.make_node("ConcatFromSequence", ["two"], ["joined"], axis=0),
    ]
    model = model_of(nodes, [vi("a", elem, [2]), vi("b", elem, [1])], ["n0", "two", "n2", "joined"], opset)
    compare(model, {"a": a, "b": b})


@pytest.mark.parametrize("opset", opsets("SplitToSequence"))
@pytest.mark.parametrize(
    "dims, axis, split, keepdims",
    [
        ([5, 2], 0, None, 1),
        ([5, 2], 0, None, 0),
        ([2, 5], -1, None, 0),
        ([5, 2], 0, 2, 1),
        ([5, 2], 0, 5, 0),
        ([2, 7], 1, 3, 1),
        ([5, 2], 0, [1, 4], 1),
        ([2, 3, 4], 2, [1, 2, 1], 0),
        ([2, 3, 4], -2, [3], 1),
        ([4], 0, [2, 2], 1),
    ],
)
@pytest.mark.parametrize("split_type", [np.int64, np.int32])
def test_split_to_sequence(opset: int, dims: list[int], axis: int, split: Any, keepdims: int, split_type: Any) -> None:
    """SplitToSequence then ConcatFromSequence back (new_axis=1 where keepdims=0 squeezed the axis):
    no split (pieces of 1), a scalar split (the last piece smaller), a 1-D split. The schema ignores
    ``keepdims`` once split is given; onnxruntime 1.31 applies it to a scalar split (squeezing
    pieces of 1, failing on larger ones), so where split is given its oracle model has keepdims=1,
    the schema's meaning of both."""
    x = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)

    def model(keep: int) -> onnx.ModelProto:
        nodes = []
        names = ["x"]
        if split is not None:
            nodes.append(_int("split", split, split_type) if np.ndim(split) == 0 else _ints("split", split, split_type))
            names.append("split")
        nodes.append(helper.make_node("SplitToSequence", names, ["seq"], axis=axis, keepdims=keep))
        squeezed = split is None and keepdims == 0
        nodes.append(helper.make_node("ConcatFromSequence", ["seq"], ["back"], axis=axis, new_axis=int(squeezed)))
        nodes.append(helper.make_node("SequenceLength", ["seq"], ["n"]))
        return model_of(nodes, [vi("x", F, dims)], ["seq", "back", "n"], opset)

    expected = harness.run_ort(model(keepdims if split is None else 1), {"x": x})
    actual = GraphSession(model(keepdims)).run({"x": x})
    for (name, a), e in zip(actual.items(), expected):
        assert_same(a, e, what=f"{name}: ")
    np.testing.assert_array_equal(actual["back"], x)


def _ints(name: str, values: list[int], dtype: Any = np.int64) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(np.array(values, dtype=dtype)))


@pytest.mark.parametrize("opset", opsets("SplitToSequence"))
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.float16, np.float64, np.bool_, object])
def test_split_to_sequence_types(opset: int, dtype: Any) -> None:
    """Element types pass through SplitToSequence and SequenceAt unchanged: the schema's pieces of 1
    along axis 1 (``x[:, i:i+1]``), and onnxruntime where it has the type (it lacks float16 and
    uint16 here)."""
    x = (
        np.arange(6).reshape(3, 2).astype(dtype)
        if dtype is not object
        else np.array([["a", "b"], ["c", "d"], ["e", "f"]], object)
    )
    elem = TensorProto.STRING if dtype is object else helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=1), _int("at", -1)]
    nodes.append(helper.make_node("SequenceAt", ["seq", "at"], ["last"]))
    model = model_of(nodes, [vi("x", elem, [3, 2])], ["seq", "last"], opset)
    pieces = [x[:, i : i + 1] for i in range(x.shape[1])]
    result = GraphSession(model).run({"x": x})
    assert_same(result["seq"], pieces)
    assert_same(result["last"], pieces[-1])
    try:
        compare(model, {"x": x})
    except pytest.skip.Exception:
        pass  # onnxruntime lacks the type: the schema's pieces above are the oracle


def test_split_to_sequence_bfloat16_from_24() -> None:
    """bfloat16 is SplitToSequence-24's (onnxruntime lacks it: the schema's rule, pieces of 1)."""
    bf16 = helper.tensor_dtype_to_np_dtype(TensorProto.BFLOAT16)
    x = np.array([1.5, -2.0, 3.25], dtype=np.float32).astype(bf16)
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], keepdims=0)]
    model = model_of(nodes, [vi("x", TensorProto.BFLOAT16, [3])], ["seq"], 24)
    assert_same(GraphSession(model).run({"x": x})["seq"], [x[0], x[1], x[2]])
    with pytest.raises(ModelError, match=r"bfloat16.*SplitToSequence-24"):
        GraphSession(model_of(nodes, [vi("x", TensorProto.BFLOAT16, [3])], ["seq"], 23)).run({"x": x})


def _map_body(kind: str) -> onnx.GraphProto:
    """A SequenceMap body: ``add`` (x + t, and Shape(x)) or ``sum`` (ReduceSum of x over all axes)."""
    if kind == "add":
        nodes = [helper.make_node("Add", ["x", "t"], ["y"]), helper.make_node("Shape", ["x"], ["s"])]
        return helper.make_graph(nodes, "body", [vi("x", F, None), vi("t", F, None)], [vi("y", F, None), vi("s", I64, [None])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)]
    return helper.make_graph(nodes, "body", [vi("x", F, None)], [vi("y", F, [])])


@pytest.mark.parametrize("opset", opsets("SequenceMap"))
@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize("second", ["tensor", "sequence"])
def test_sequence_map(opset: int, count: int, second: str) -> None:
    """SequenceMap of Add with a tensor or a second sequence, and its Shape; elements of different
    shapes when the second input is a tensor (broadcast against it)."""
    rng = np.random.default_rng(count)
    feeds = {f"t{i}": rng.standard_normal([i + 1, 2]).astype(np.float32) for i in range(count)}
    nodes, inputs = _construct(feeds)
    if second == "tensor":
        inputs.append(vi("t", F, [2]))
        feeds["t"] = rng.standard_normal(2).astype(np.float32)
        other = "t"
    else:
        nodes.append(helper.make_node("SequenceConstruct", sorted(n for n in feeds if n.startswith("t")), ["other"]))
        other = "other"
    nodes.append(helper.make_node("SequenceMap", ["seq", other], ["ys", "shapes"], body=_map_body("add")))
    compare(model_of(nodes, inputs, ["ys", "shapes"], opset), feeds)


@pytest.mark.parametrize("opset", opsets("SequenceMap"))
def test_sequence_map_reads_outer_values(opset: int) -> None:
    """A body reading an enclosing graph input (``t`` not passed as an input of the node)."""
    feeds = _tensors(2, [3])
    nodes, inputs = _construct(feeds)
    body = helper.make_graph([helper.make_node("Mul", ["x", "scale"], ["y"])], "body", [vi("x", F, None)], [vi("y", F, None)])
    nodes.append(helper.make_node("SequenceMap", ["seq"], ["ys"], body=body))
    inputs.append(vi("scale", F, []))
    feeds["scale"] = np.array(0.5, np.float32)
    compare(model_of(nodes, inputs, ["ys"], opset), feeds)


def test_sequence_map_of_an_empty_sequence() -> None:
    """An empty first sequence gives an empty output sequence (the schema's rule; the body never runs)."""
    nodes = [
        helper.make_node("SequenceEmpty", [], ["seq"]),
        helper.make_node("SequenceMap", ["seq"], ["ys"], body=_map_body("sum")),
    ]
    assert GraphSession(model_of(nodes, [], ["ys"], 17)).run({}) == {"ys": []}


@pytest.mark.parametrize("opset", [15, 18])
def test_optionals_of_sequences(opset: int) -> None:
    """Optional of a sequence, OptionalHasElement and OptionalGetElement on it (15 and 18)."""
    feeds = _tensors(2, [2])
    nodes, inputs = _construct(feeds)
    nodes += [
        helper.make_node("Optional", ["seq"], ["opt"]),
        helper.make_node("OptionalHasElement", ["opt"], ["has"]),
        helper.make_node("OptionalGetElement", ["opt"], ["back"]),
    ]
    compare(model_of(nodes, inputs, ["has", "back"], opset), feeds)


# ---------------------------------------------------------------- refusals by name


def _refused(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], match: str, opset: int = 17, elem: int = F) -> None:
    inputs = [vi(n, elem if np.asarray(v).dtype != np.int64 else I64, list(np.shape(v))) for n, v in sorted(feeds.items())]
    model = model_of(nodes, inputs, [nodes[-1].output[0]], opset)
    with pytest.raises(ModelError, match=match):
        GraphSession(model).run(feeds)


@pytest.mark.parametrize(
    "op, position, match",
    [
        ("SequenceAt", 2, r"node 'bad' \(SequenceAt-11\): position 2 is outside \[-2, 1\]"),
        ("SequenceAt", -3, r"position -3 is outside \[-2, 1\]"),
        ("SequenceErase", 2, r"'bad' \(SequenceErase-11\): position 2 is outside"),
        ("SequenceInsert", 3, r"'bad' \(SequenceInsert-11\): position 3 is outside \[-2, 2\]"),
    ],
)
def test_positions_out_of_range_are_refused(op: str, position: int, match: str) -> None:
    feeds = _tensors(2, [2])
    nodes, _ = _construct(feeds)
    args = ["seq", "t0", "pos"] if op == "SequenceInsert" else ["seq", "pos"]
    nodes += [_int("pos", position), helper.make_node(op, args, ["y"], name="bad")]
    _refused(nodes, feeds, match)


@pytest.mark.parametrize(
    "node, match",
    [
        (
            helper.make_node("ConcatFromSequence", ["seq"], ["y"], name="bad"),
            r"'bad' \(ConcatFromSequence-11\): attribute 'axis'",
        ),
        (helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0, new_axis=2, name="bad"), r"attribute 'new_axis'"),
        (helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=2, name="bad"), r"attribute 'axis': 2 is outside"),
        (helper.make_node("SplitToSequence", ["t0"], ["y"], keepdims=2, name="bad"), r"attribute 'keepdims'"),
        (
            helper.make_node("SplitToSequence", ["t0", "split"], ["y"], name="bad"),
            r"split \[1, 2\] adds up to 3, not the length 2",
        ),
        (helper.make_node("SequenceInsert", ["seq", "ints"], ["y"], name="bad"), r"'bad' \(SequenceInsert-11\).*int64"),
    ],
)
def test_bad_nodes_are_refused(node: onnx.NodeProto, match: str) -> None:
    feeds = _tensors(2, [2])
    nodes, _ = _construct(feeds)
    nodes += [_ints("split", [1, 2]), _ints("ints", [1, 2]), node]
    _refused(nodes, feeds, match)


def test_empty_sequence_cannot_be_concatenated_or_erased() -> None:
    for op, attrs in (("ConcatFromSequence", {"axis": 0}), ("SequenceErase", {})):
        nodes = [helper.make_node("SequenceEmpty", [], ["seq"]), helper.make_node(op, ["seq"], ["y"], name="bad", **attrs)]
        with pytest.raises(ModelError, match=rf"'bad' \({op}-11\): the sequence is empty"):
            GraphSession(model_of(nodes, [], ["y"], 17)).run({})


def test_sequence_map_lengths_must_agree() -> None:
    feeds = _tensors(3, [2])
    nodes, inputs = _construct(feeds)
    nodes.append(helper.make_node("SequenceConstruct", ["t0", "t1"], ["short"]))
    body = _map_body("add")
    nodes.append(helper.make_node("SequenceMap", ["seq", "short"], ["ys", "shapes"], body=body, name="bad"))
    with pytest.raises(ModelError, match=r"'bad' \(SequenceMap-17\): input 1 is a sequence of 2 tensors; input 0 has 3"):
        GraphSession(model_of(nodes, inputs, ["ys"], 17)).run(feeds)


def test_bfloat16_is_no_element_of_a_sequence_11() -> None:
    """The -11 schemas' sequences hold no bfloat16: SequenceEmpty's dtype, SequenceConstruct's and
    SequenceInsert's tensors are refused by name (SplitToSequence-24 may still split bfloat16)."""
    bf16 = helper.tensor_dtype_to_np_dtype(TensorProto.BFLOAT16)
    empty = helper.make_node("SequenceEmpty", [], ["seq"], dtype=TensorProto.BFLOAT16, name="bad")
    with pytest.raises(ModelError, match=r"'bad' \(SequenceEmpty-11\): attribute 'dtype': bfloat16"):
        GraphSession(model_of([empty], [], ["seq"], 17))
    x = np.ones(2, bf16)
    for node in (
        helper.make_node("SequenceConstruct", ["x"], ["y"], name="bad"),
        helper.make_node("SequenceInsert", ["seq", "x"], ["y"], name="bad"),
    ):
        nodes = [helper.make_node("SequenceEmpty", [], ["seq"]), node]
        model = model_of(nodes, [vi("x", TensorProto.BFLOAT16, [2])], ["y"], 17)
        with pytest.raises(ModelError, match=rf"'bad' \({node.op_type}-11\): input . has type bfloat16"):
            GraphSession(model).run({"x": x})
