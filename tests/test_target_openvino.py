"""``--target-openvino``: the older layer forms of ``ovpool.ov.backport`` on the installed OpenVINO.

Each form is compared with the layer it replaces on OpenVINO CPU at f32 (the same values,
bit for bit, and the same shape) and, for ONNX pools converted by ovpool, with the naive loop
oracle. The runs on the old releases themselves are ``tests/ops/test_target_openvino_releases.py``
(behind ``OVPOOL_OLD_OPENVINO``).
"""

from __future__ import annotations

import numpy as np
import oracle
import openvino as ov
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from openvino import opset1, opset14, opset16
from strategies import pool_cases
from test_onnx_to_ir_properties import TOLERANCE, _with_dynamic_spatial

from ovpool.errors import OvpoolError, UnsupportedError, UsageError
from ovpool.ov import releases
from ovpool.ov.backport import backport, newer_layers
from ovpool.ov.from_onnx import onnx_to_ov_model

pytestmark = pytest.mark.openvino

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
# 20 examples per property in CI, 333 with HYPOTHESIS_PROFILE=deep
EXAMPLES = max(10, settings.default.max_examples // 3)


def run(model: ov.Model, x: np.ndarray) -> list[np.ndarray]:
    compiled = ov.Core().compile_model(model, "CPU", F32)
    result = compiled.create_infer_request().infer({0: x})
    return [np.asarray(result[output]) for output in compiled.outputs]


def layer_versions(model: ov.Model) -> set[str]:
    return {f"{op.get_type_name()}-{op.get_type_info().version_id}" for op in model.get_ordered_ops()}


def test_release_table():
    assert releases.newest_opset("2023.0") == 11
    assert releases.newest_opset("2023.3") == 13
    assert releases.newest_opset("2024.0") == 14
    assert releases.newest_opset("2024.6.0") == 15
    assert releases.newest_opset("2099.1") == releases.NEWEST_OPSET[-1][1]
    assert releases.parse("2026.4.1-22982-e213a147257-releases/2026/4") == (2026, 4)
    assert releases.newest_opset(releases.installed()) >= 16


@pytest.mark.parametrize(
    ("text", "message"),
    [("2022.3", "2023.0 and later"), ("latest", "expected an OpenVINO release"), ("23.3", "expected an OpenVINO release")],
)
def test_bad_release_is_a_usage_error(text, message):
    with pytest.raises(UsageError, match=f"--target-openvino {text}: .*{message}"):
        releases.parse(text)


# -- the OpenVINO layers themselves, any attributes OpenVINO takes -----------------------------


@st.composite
def ov_pools(draw):
    """(model builder, input): one MaxPool-14, AvgPool-14 or AvgPool-16 (dilations 1) over a
    drawn input, attributes from the whole space OpenVINO accepts, static or dynamic spatial dims."""
    rank = draw(st.integers(1, 3))
    spatial = [draw(st.integers(1, 8)) for _ in range(rank)]
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    kind = draw(st.sampled_from(["max", "avg14", "avg16"]))
    dilations = [draw(st.integers(1, 2)) for _ in range(rank)] if kind == "max" else [1] * rank
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilations)]
    begin = [draw(st.integers(0, e - 1)) for e in extent]
    end = [draw(st.integers(0, e - 1)) for e in extent]
    auto_pad = draw(st.sampled_from(["explicit", "explicit", "explicit", "same_upper", "same_lower", "valid"]))
    if auto_pad == "explicit":
        assume(all(n + b + e >= x for n, b, e, x in zip(spatial, begin, end, extent)))
    else:
        assume(all(n >= x for n, x in zip(spatial, extent)))
    rounding = draw(st.sampled_from(["ceil_torch", "ceil_torch", "ceil", "floor"]))
    exclude = draw(st.booleans())
    dynamic = draw(st.booleans())
    shape = [draw(st.integers(1, 2)), draw(st.integers(1, 2)), *spatial]
    x = (np.random.default_rng(sum(shape)).integers(-8, 8, shape) / 4.0).astype(np.float32)

    def build() -> ov.Model:
        dims = shape[:2] + [-1] * rank if dynamic else shape
        data = opset1.parameter(ov.PartialShape(dims), np.float32, name="x")
        if kind == "max":
            node = opset14.max_pool(data, strides, dilations, begin, end, kernel, rounding, auto_pad, "i64", 0)
            outputs = [node.output(0), node.output(1)]
        elif kind == "avg14":
            outputs = [opset14.avg_pool(data, strides, begin, end, kernel, exclude, rounding, auto_pad).output(0)]
        else:
            pool = opset16.avg_pool(data, strides, begin, end, kernel, exclude, rounding, auto_pad, dilations=dilations)
            outputs = [pool.output(0)]
        node_name = outputs[0].get_node()
        node_name.set_friendly_name("pool")
        return ov.Model([opset1.result(o) for o in outputs], [data], "case")

    return build, x


@settings(max_examples=EXAMPLES)
@given(case=ov_pools())
def test_older_forms_equal_the_layers_they_replace(case):
    build, x = case
    newer = build()
    older = build()
    backport(older, "2023.3")
    assert not newer_layers(older, 13)
    assert {"MaxPool-opset14", "AvgPool-opset14", "AvgPool-opset16"}.isdisjoint(layer_versions(older))
    want, got = run(newer, x), run(older, x)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_dilated_avg_pool_16_is_refused_by_name():
    data = opset1.parameter([1, 1, 8, 8], np.float32, name="x")
    pool = opset16.avg_pool(data, [1, 1], [0, 0], [0, 0], [2, 2], True, "floor", "explicit", dilations=[2, 2])
    pool.set_friendly_name("dilated")
    model = ov.Model([opset1.result(pool)], [data], "case")
    message = (
        r"layer 'dilated' \(AvgPool-16\): OpenVINO 2024.6 reads layers up to opset15, and AvgPool-16 with "
        r"dilations \[2, 2\] has no exact older form in ovpool"
    )
    with pytest.raises(UnsupportedError, match=message):
        backport(model, "2024.6")


def test_identity_16_is_bypassed_and_names_kept():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4])
    nodes = [
        helper.make_node("Identity", ["x"], ["z"], name="copy"),
        helper.make_node("Identity", ["x"], ["inner"], name="inner"),
        helper.make_node("Neg", ["inner"], ["y"]),
    ]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 1, 4]) for n in ("y", "z")]
    graph = helper.make_graph(nodes, "g", [x], outputs)
    model = onnx_to_ov_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert ("z", "Identity", 16) in newer_layers(model, 13)  # the frontend names it after its output
    backport(model, "2023.3")
    assert not newer_layers(model, 13)
    assert [sorted(o.get_names()) for o in model.outputs] == [["y"], ["z"]]
    assert [sorted(i.get_names()) for i in model.inputs] == [["x"]]
    value = np.arange(4, dtype=np.float32).reshape(1, 1, 4)
    y, z = run(model, value)
    np.testing.assert_array_equal(y, -value)
    np.testing.assert_array_equal(z, value)


# -- ONNX pools converted by ovpool, against the naive oracle --------------------------------


@settings(max_examples=EXAMPLES)
@given(case=pool_cases(), dynamic=st.booleans())
def test_targeted_pools_match_the_oracle(case, dynamic):
    model = _with_dynamic_spatial(case.model()) if dynamic else case.model()
    try:
        newer = onnx_to_ov_model(model)
    except OvpoolError:
        return  # refused whatever the target (tests/test_onnx_to_ir_properties.py)
    assume(case.dtype != "bfloat16")  # OpenVINO's Python arrays read bf16 as f16 (test_onnx_to_ir.run_ov)
    older = onnx_to_ov_model(model)
    backport(older, "2023.3")
    assert not newer_layers(older, 13)
    x = case.input()
    op = "avg" if case.op_type == "AveragePool" else "max"
    try:
        want = oracle.pool(x.astype(np.float64), op, case.attrs)
    except (ValueError, ZeroDivisionError):
        return  # a window with no input cell: undefined on dynamic dims
    got, same = run(older, x), run(newer, x)
    values = want if op == "avg" else want[0]
    tolerance = TOLERANCE[case.dtype]
    np.testing.assert_allclose(got[0].astype(np.float64), values, rtol=tolerance, atol=tolerance)
    if case.with_indices:
        np.testing.assert_array_equal(got[1], want[1])
    for g, s in zip(got, same):
        np.testing.assert_array_equal(g, s)
