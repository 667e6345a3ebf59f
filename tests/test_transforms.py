"""Every pass is exact: on hypothesis-generated pools (ranks 1-3, all attributes, several opsets)
the rewritten model's outputs equal the original's under the numpy executor bit for bit (inputs
are small integers, so sums are exact in any order), the pass is idempotent, keeps node names and
the graph's inputs and outputs, and leaves a model that passes the full ONNX checker."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from transform_models import integer_input, pool_model, windowed_cases

import ovpool
from ovpool.errors import UnsupportedError
from ovpool.transforms.catalog import parse_pass
from ovpool.transforms.framework import run_passes

RNG_SEED = 20260


def _attrs(model, op_types=("AveragePool", "MaxPool")):
    return [{a.name: helper.get_attribute_value(a) for a in n.attribute} for n in model.graph.node if n.op_type in op_types]


def check_exact(model, passes, x):
    """Run ``passes``; assert exactness, the kept interface, the checker and idempotence."""
    before = ovpool.run(model, {"x": x}, device="numpy")
    result = run_passes(model, [parse_pass(p) for p in passes])
    out = result.model
    after = ovpool.run(out, {"x": x}, device="numpy")
    assert after.keys() == before.keys()
    for name in before:
        assert after[name].dtype == before[name].dtype
        np.testing.assert_array_equal(after[name], before[name], err_msg=f"output {name} after {passes}")
    onnx.checker.check_model(out, full_check=True)
    assert [i.SerializeToString() for i in out.graph.input] == [i.SerializeToString() for i in model.graph.input]
    assert [o.SerializeToString() for o in out.graph.output] == [o.SerializeToString() for o in model.graph.output]
    assert {n.name for n in model.graph.node} <= {n.name for n in out.graph.node}
    again = run_passes(out, [parse_pass(p) for p in passes])
    assert again.changed == ()
    assert again.model.SerializeToString(deterministic=True) == out.SerializeToString(deterministic=True)
    return out


def _model_and_input(case):
    op, attrs, shape, opset, indices = case
    model = pool_model(op, attrs, shape, opset, indices=indices)
    x = integer_input(np.random.default_rng(RNG_SEED), shape)
    return model, x


@given(windowed_cases())
def test_explicit_pads_is_exact(case):
    model, x = _model_and_input(case)
    out = check_exact(model, ["explicit-pads"], x)
    for attrs in _attrs(out):
        assert attrs.get("auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET")


@given(windowed_cases(ceil=True))
def test_no_ceil_is_exact(case):
    model, x = _model_and_input(case)
    out = check_exact(model, ["no-ceil"], x)
    assert all(attrs.get("ceil_mode", 0) == 0 for attrs in _attrs(out))


@given(windowed_cases(ops=("AveragePool",), auto_pad=False, ceil=True, include=True))
def test_no_ceil_include_pad_average_is_exact(case):
    model, x = _model_and_input(case)
    out = check_exact(model, ["no-ceil"], x)
    assert all(attrs.get("ceil_mode", 0) == 0 for attrs in _attrs(out))


def test_no_ceil_include_pad_overhang_becomes_pad_then_exclude():
    """SEMANTICS.md's example: 4x4, k3 s2 p1, ceil, include-pad: the corner divides by 4 taps
    (ONNX/PyTorch 2.0 average of ones-scaled input), not the 9 of a full kernel."""
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1}
    model = pool_model("AveragePool", attrs, [1, 1, 4, 4], 13)
    out = check_exact(model, ["no-ceil"], np.ones((1, 1, 4, 4), np.float32))
    assert [n.op_type for n in out.graph.node] == ["Pad", "AveragePool"]
    assert [n.name for n in out.graph.node] == ["pool/pad", "pool"]
    (pool_attrs,) = _attrs(out)
    assert pool_attrs["pads"] == [0, 0, 1, 1] and pool_attrs.get("count_include_pad", 0) == 0
    y = ovpool.run(out, {"x": np.ones((1, 1, 4, 4), np.float32)}, device="numpy")["y"]
    assert y[0, 0, 2, 2] == pytest.approx(1 / 4 * 1)  # one input cell, four counted taps


def test_no_ceil_pads_at_older_opsets_use_the_pad_attribute():
    attrs = {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1, "count_include_pad": 1}
    model = pool_model("AveragePool", attrs, [1, 2, 4], 10)
    out = check_exact(model, ["no-ceil"], integer_input(np.random.default_rng(1), [1, 2, 4]))
    pad = out.graph.node[0]
    assert pad.op_type == "Pad" and len(pad.input) == 1
    assert helper.get_attribute_value(pad.attribute[[a.name for a in pad.attribute].index("pads")]) == [0, 0, 1, 0, 0, 1]


@given(windowed_cases(), st.sampled_from([7, 8, 10, 11, 12, 13, 18, 19, 22]))
def test_opset_is_exact_or_refused_naming_the_node(case, target):
    model, x = _model_and_input(case)
    try:
        out = check_exact(model, [f"opset={target}"], x)
    except UnsupportedError as exc:
        assert "node 'pool'" in str(exc)
        event(f"refused: {str(exc).split(': ', 1)[-1][:40]}")
        return
    event("exact")
    assert out.opset_import[0].version == target


@pytest.mark.parametrize(
    ("op", "attrs", "opset", "target", "indices", "elem", "words"),
    [
        ("AveragePool", {"kernel_shape": [2], "dilations": [2]}, 19, 18, False, TensorProto.FLOAT, "dilations"),
        ("MaxPool", {"kernel_shape": [2]}, 12, 7, True, TensorProto.FLOAT, "indices"),
        ("MaxPool", {"kernel_shape": [2]}, 12, 11, False, TensorProto.INT8, "int8"),
        ("MaxPool", {"kernel_shape": [2], "ceil_mode": 1}, 12, 9, False, TensorProto.FLOAT, "ceil_mode"),
        (
            "AveragePool",
            {"kernel_shape": [2], "pads": [1, 1], "count_include_pad": 1},
            11,
            6,
            False,
            TensorProto.FLOAT,
            "count_include_pad",
        ),
    ],
)
def test_opset_refuses_what_the_target_cannot_say(op, attrs, opset, target, indices, elem, words):
    model = pool_model(op, attrs, [1, 1, 5], opset, indices=indices, elem=elem)
    with pytest.raises(UnsupportedError, match=rf"node 'pool'.*{words}"):
        ovpool.transform(model, [f"opset={target}"])


def test_opset_converts_other_nodes_and_raises_the_ir_version():
    attrs = {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}
    model = pool_model("AveragePool", attrs, [1, 2, 6], 6, relu=True)
    model.ir_version = 3
    out = check_exact(model, ["opset=22"], integer_input(np.random.default_rng(2), [1, 2, 6]))
    assert out.opset_import[0].version == 22 and out.ir_version >= 10
    assert [n.op_type for n in out.graph.node] == ["Relu", "AveragePool"]


def test_opset_names_the_node_the_version_converter_cannot_move():
    model = pool_model("MaxPool", {"kernel_shape": [2]}, [1, 1, 4], 13, relu=True)
    with pytest.raises(UnsupportedError, match="relu"):
        ovpool.transform(model, ["opset=11"])


@given(windowed_cases())
def test_dml_legal_is_exact(case):
    model, x = _model_and_input(case)
    op, attrs, shape, opset, indices = case
    if len(shape) > 3 and attrs.get("storage_order") == 1:
        with pytest.raises(UnsupportedError, match="storage_order"):
            ovpool.transform(model, ["dml-legal"])
        return
    out = check_exact(model, ["dml-legal"], x)
    for node in out.graph.node:
        if node.op_type in ("AveragePool", "MaxPool"):
            attrs_out = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            assert len(attrs_out["kernel_shape"]) in (2, 3)
            assert attrs_out.get("storage_order", 0) == 0


def test_dml_legal_lifts_1d_with_named_helpers_and_maxunpool():
    model = pool_model("MaxPool", {"kernel_shape": [2], "strides": [2]}, [1, 2, 6], 13, indices=True)
    unpool = helper.make_node("MaxUnpool", ["y", "i"], ["u"], name="unpool", kernel_shape=[2], strides=[2])
    model.graph.node.append(unpool)
    model.graph.output.append(helper.make_tensor_value_info("u", TensorProto.FLOAT, [None] * 3))
    out = check_exact(model, ["dml-legal"], integer_input(np.random.default_rng(3), [1, 2, 6]))
    names = [n.name for n in out.graph.node]
    assert names == [
        "pool/unsqueeze",
        "pool",
        "pool/squeeze",
        "pool/squeeze_1",
        "unpool/unsqueeze",
        "unpool/unsqueeze_1",
        "unpool",
        "unpool/squeeze",
    ]


def test_dml_legal_refuses_4d_pools():
    model = pool_model("MaxPool", {"kernel_shape": [1, 1, 1, 1]}, [1, 1, 2, 2, 2, 2], 13)
    with pytest.raises(UnsupportedError, match="2 or 3 spatial axes, not 4"):
        ovpool.transform(model, ["dml-legal"])


@st.composite
def global_cases(draw):
    op = draw(st.sampled_from(["GlobalAveragePool", "GlobalMaxPool"]))
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 2)), draw(st.integers(1, 3))] + [draw(st.integers(1, 5)) for _ in range(rank)]
    return op, shape, draw(st.sampled_from([7, 11, 13, 22]))


@given(global_cases())
def test_expand_global_is_exact(case):
    op, shape, opset = case
    model = pool_model(op, {}, shape, opset)
    out = check_exact(model, ["expand-global"], integer_input(np.random.default_rng(RNG_SEED), shape))
    (attrs,) = _attrs(out)
    assert attrs["kernel_shape"] == shape[2:]


@settings(max_examples=30)
@given(windowed_cases())
def test_all_passes_compose_exactly(case):
    model, x = _model_and_input(case)
    op, attrs, shape, opset, indices = case
    if len(shape) > 3 and attrs.get("storage_order") == 1:
        return
    out = check_exact(model, ["explicit-pads", "no-ceil", "expand-global", "dml-legal", "opset=22"], x)
    assert out.opset_import[0].version == 22
