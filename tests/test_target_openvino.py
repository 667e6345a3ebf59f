"""``--target-openvino``: the older layer forms of ``ovpool.ov.backport`` on the installed OpenVINO.

Each form is compared with the layer it replaces on OpenVINO CPU at f32 (the same values,
bit for bit, and the same shape) and, for ONNX pools converted by ovpool, with the naive loop
oracle. The runs on the old releases themselves are ``tests/ops/test_target_openvino_releases.py``
(behind ``OVPOOL_OLD_OPENVINO``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import oracle
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from openvino import opset1, opset14, opset16
from strategies import pool_cases
from test_onnx_to_ir_properties import TOLERANCE, _with_dynamic_spatial
from typer.testing import CliRunner

import ovpool
from ovpool.cli import validate as validate_cli
from ovpool.cli.app import app
from ovpool.errors import OvpoolError, UnsupportedError, UsageError
from ovpool.ov import releases
from ovpool.ov.backport import backport, newer_layers
from ovpool.ov.from_onnx import onnx_to_ir, onnx_to_ov_model

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
    assert releases.parse("2026.4.1-22982-e213a147257-releases/2026/4", build=True) == (2026, 4)
    assert releases.newest_opset(releases.installed()) >= 16


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2022.3", "releases from 2023.0 on"),
        ("latest", "expected an OpenVINO release"),
        ("23.3", "expected an OpenVINO release"),
        ("2023.3x", "expected an OpenVINO release"),
        ("２０２３.３", "expected an OpenVINO release"),
        ("", "expected an OpenVINO release"),
    ],
)
def test_bad_release_is_a_usage_error(text, message):
    with pytest.raises(UsageError, match=f"--target-openvino {text}: .*{message}"):
        releases.parse(text)


# -- the OpenVINO layers themselves, any attributes OpenVINO takes -----------------------------


@st.composite
def ov_pools(draw):
    """(model builder, input, dilated average): one MaxPool-14, AvgPool-14 or AvgPool-16 over a
    drawn input, attributes from the whole space OpenVINO accepts, static or dynamic spatial dims."""
    rank = draw(st.integers(1, 3))
    spatial = [draw(st.integers(1, 8)) for _ in range(rank)]
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    kind = draw(st.sampled_from(["max", "avg14", "avg16"]))
    dilations = [draw(st.integers(1, 2)) for _ in range(rank)] if kind != "avg14" else [1] * rank
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

    return build, x, kind == "avg16" and any(d != 1 for d in dilations)


@settings(max_examples=EXAMPLES)
@given(case=ov_pools())
def test_older_forms_equal_the_layers_they_replace(case):
    """Bit for bit, except a dilated average (a sum of taps in another order: float32 rounding),
    which has no older form on dynamic dims, for a window with no input cell, or where OpenVINO
    counts auto_pad same/valid windows with ceil rounding its own way."""
    build, x, dilated = case
    newer = build()
    older = build()
    try:
        backport(older, "2023.3")
    except UnsupportedError as exc:
        assert dilated, exc
        assert re.search(
            r"with dilations \[[^]]*\]( on dynamic spatial dims| and a window with no input cell|, auto_pad)", str(exc)
        )
        return
    assert not newer_layers(older, 13)
    assert {"MaxPool-opset14", "AvgPool-opset14", "AvgPool-opset16"}.isdisjoint(layer_versions(older))
    want, got = run(newer, x), run(older, x)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        if dilated:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)


def test_dilated_avg_pool_16_is_refused_by_name_on_dynamic_dims():
    data = opset1.parameter(ov.PartialShape([1, 1, -1, -1]), np.float32, name="x")
    pool = opset16.avg_pool(data, [1, 1], [0, 0], [0, 0], [2, 2], True, "floor", "explicit", dilations=[2, 2])
    pool.set_friendly_name("dilated")
    model = ov.Model([opset1.result(pool)], [data], "case")
    message = (
        r"layer 'dilated' \(AvgPool-16\): OpenVINO 2024.6 reads layers up to opset15, and AvgPool-16 with "
        r"dilations \[2, 2\] on dynamic spatial dims \(set them with --input\) has no exact older form in ovpool"
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
    dilated = case.op_type == "AveragePool" and any(d != 1 for d in case.attrs.get("dilations", ()))
    if dilated and dynamic and "AvgPool-opset16" in layer_versions(older):
        with pytest.raises(UnsupportedError, match=r"\(AvgPool-16\): .* with dilations .* on dynamic spatial dims"):
            backport(older, "2023.3")
        return
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
        if dilated:  # a sum of taps in another order
            np.testing.assert_allclose(g.astype(np.float64), s.astype(np.float64), rtol=tolerance, atol=tolerance)
        else:
            np.testing.assert_array_equal(g, s)


# -- ovpool convert / validate --target-openvino ---------------------------------------------

EXAMPLE = Path(ovpool.__file__).parent / "examples" / "tiny_pool.onnx"
runner = CliRunner()


def ir_layers(xml: Path) -> set[str]:
    return set(re.findall(r'type="(\w+)" version="(opset\d+)"', xml.read_text()))


def test_convert_for_2023_3_writes_only_opset13_layers(tmp_path):
    default = ovpool.convert(EXAMPLE, tmp_path / "default.xml")[0]
    assert ("MaxPool", "opset14") in ir_layers(default)
    older = ovpool.convert(EXAMPLE, tmp_path / "older.xml", target_openvino="2023.3")[0]
    assert all(releases.opset_number(version) <= 13 for _, version in ir_layers(older))
    assert ("MaxPool", "opset8") in ir_layers(older)
    assert [f.code for f in ovpool.validate(default, target_openvino="2023.3")] == ["OVP601"]
    assert ovpool.validate(default, target_openvino="2024.6") == []
    assert ovpool.validate(older, target_openvino="2023.3") == []
    assert "MaxPool-opset8" in layer_versions(ovpool.convert_model(EXAMPLE, target_openvino="2023.3", verify=True))
    x = np.random.default_rng(0).standard_normal((1, 3, 14, 14)).astype(np.float32)
    core = ov.Core()
    want, got = (run(core.read_model(str(path)), x) for path in (default, older))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_cli(tmp_path):
    out = tmp_path / "m.xml"
    done = runner.invoke(app, ["convert", str(EXAMPLE), "-o", str(out), "--target-openvino", "2023.3"])
    assert done.exit_code == 0, done.output
    assert ("MaxPool", "opset8") in ir_layers(out)
    done = runner.invoke(app, ["convert", str(EXAMPLE), "-o", str(tmp_path / "n.xml"), "--target-openvino", "2022.1"])
    assert done.exit_code == 2
    assert "--target-openvino 2022.1: ovpool knows the OpenVINO releases from 2023.0 on" in done.output
    assert not (tmp_path / "n.xml").exists()
    assert runner.invoke(app, ["validate", str(out), "--target-openvino", "2023.3"]).exit_code == 0
    newer = ovpool.convert(EXAMPLE, tmp_path / "newer.xml")[0]
    done = runner.invoke(app, ["validate", str(newer), "--target-openvino", "2023.3"])
    assert done.exit_code == 1
    assert "OVP601" in done.output and "MaxPool-14: OpenVINO 2023.3 reads layers up to opset13" in done.output
    done = subprocess.run(
        [sys.executable, "-m", "ovpool", "validate", str(newer), "--target-openvino", "2023"], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip() == "error: --target-openvino 2023: expected an OpenVINO release such as 2023.3 or 2024.6"


def test_plain_validate_takes_the_target_and_answers_as_typer_does(tmp_path):
    newer = ovpool.convert(EXAMPLE, tmp_path / "newer.xml")[0]
    for args in (["validate", str(newer), "--target-openvino", "2023.3"], ["validate", "--target-openvino=2026.4", str(newer)]):
        quick = validate_cli.quick(args)
        assert quick is not None
        expected = runner.invoke(app, args)
        assert expected.exit_code == (1 if "2023.3" in args else 0)


def test_validate_reads_bodies(tmp_path):
    then = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"])], "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])]
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])]
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = onnx_to_ov_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    ov.save_model(model, str(tmp_path / "newer.xml"))
    findings = ovpool.validate(tmp_path / "newer.xml", target_openvino="2023.3")
    assert [(f.code, f.type, f.version) for f in findings] == [("OVP601", "Identity", "opset16")]
    backport(model, "2023.3")
    ov.save_model(model, str(tmp_path / "older.xml"))
    assert ovpool.validate(tmp_path / "older.xml", target_openvino="2023.3") == []


def test_dilated_average_on_dynamic_dims_is_refused_by_layer_name(tmp_path):
    node = helper.make_node("AveragePool", ["x"], ["y"], name="dilated", kernel_shape=[2], dilations=[2], ceil_mode=1)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "length"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    source = tmp_path / "dilated.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), source)
    done = runner.invoke(app, ["convert", str(source), "-o", str(tmp_path / "d.xml"), "--target-openvino", "2023.3"])
    assert done.exit_code == 1
    # the layer is named as OpenVINO's frontend names it: after its output
    assert "dilated.onnx: layer 'y' (AvgPool-16): OpenVINO 2023.3 reads layers up to opset13" in done.output
    assert "on dynamic spatial dims (set them with --input)" in done.output
    assert not (tmp_path / "d.xml").exists()
    done = runner.invoke(
        app, ["convert", str(source), "-o", str(tmp_path / "d.xml"), "--target-openvino", "2023.3", "--input", "x[1,1,8]"]
    )
    assert done.exit_code == 0, done.output
    assert ("AvgPool", "opset16") not in ir_layers(tmp_path / "d.xml")


def test_older_forms_are_named_after_the_model_alone(tmp_path):
    """The Slices and Constants the older forms add are named as ``stable_names`` names the rest:
    one model gives one IR, however many models the process converted before."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "h", "w"])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("i", TensorProto.INT64, None),
        ],
    )
    source = tmp_path / "dynamic.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)]), source)
    first = onnx_to_ir(source, target_openvino="2023.3")
    onnx_to_ir(EXAMPLE)
    second = onnx_to_ir(source, target_openvino="2023.3")
    assert first[".xml"] == second[".xml"]
    assert b'type="Slice"' in first[".xml"] and b'version="opset14"' not in first[".xml"]


@pytest.mark.parametrize(
    ("mode", "pads", "refused"), [("reflect", [0, 0, 1, 0, 0, 3], False), ("constant", [0, 0, -1, 0, 0, 2], True)]
)
def test_pad_12_for_2023_0(mode, pads, refused):
    """OpenVINO 2023.0 reads opset11: a Pad-12 (ONNX Pad-18 inside an If, as in silero VAD) becomes
    Pad-1 where its pads are constants of at least 0, else it is refused by name."""
    body = helper.make_graph(
        [
            helper.make_node("Constant", [], ["p"], value=helper.make_tensor("p", TensorProto.INT64, [6], pads)),
            helper.make_node("Pad", ["x", "p"], ["t"], mode=mode),
        ],
        "then",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)]
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=body, else_branch=other)],
        "g",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    newer = onnx_to_ov_model(model)
    assert any(kind == "Pad" and number == 12 for _, kind, number in newer_layers(newer, 11))
    if refused:
        with pytest.raises(
            UnsupportedError, match=r"\(Pad-12\): OpenVINO 2023.0 reads layers up to opset11, and Pad-12 with pads"
        ):
            onnx_to_ov_model(model, target_openvino="2023.0")
        return
    older = onnx_to_ov_model(model, target_openvino="2023.0")
    assert not newer_layers(older, 11)
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    compiled = [ov.Core().compile_model(m, "CPU", F32) for m in (newer, older)]
    want, got = (c({"c": np.array(True), "x": x})[0] for c in compiled)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.pad(x, [(0, 0), (0, 0), (1, 3)], mode="reflect"))


def test_validate_says_what_an_older_form_needs(tmp_path):
    """A Pad-12's older form needs constant pads >= 0, which the XML does not show: validate says so."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5])
    pads = helper.make_node("Constant", [], ["p"], value=helper.make_tensor("p", TensorProto.INT64, [6], [0, 0, 1, 0, 0, 1]))
    graph = helper.make_graph(
        [pads, helper.make_node("Pad", ["x", "p"], ["t"], mode="reflect")],
        "then",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)]
    )
    outer = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=graph, else_branch=other)],
        "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    ov.save_model(
        onnx_to_ov_model(helper.make_model(outer, opset_imports=[helper.make_opsetid("", 18)])), str(tmp_path / "m.xml")
    )
    [finding] = ovpool.validate(tmp_path / "m.xml", target_openvino="2023.0")
    assert finding.code == "OVP601"
    assert finding.message.endswith(
        "Pad-12: OpenVINO 2023.0 reads layers up to opset11 and refuses the file here; ovpool convert "
        "--target-openvino 2023.0 writes it in an exact older form (given constant pads of at least 0)"
    )


@pytest.mark.parametrize("release", ["2023.3", "2024.6"])
def test_one_hot_16_becomes_one_hot_1_with_negative_indices_normalized(release):
    """ONNX OneHot counts a negative index from the end (-1 of depth 4 is 3); OpenVINO's frontend
    writes OneHot-16 ``normalize``, which 2024.6 cannot read: OneHot-1 after ``indices + depth``."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("OneHot", ["i", "depth", "values"], ["y"], name="hot", axis=-1)],
        "g",
        [helper.make_tensor_value_info("i", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.array(4, np.int64), "depth"),
            numpy_helper.from_array(np.array([0.5, 2.0], np.float32), "values"),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)
    older = onnx_to_ov_model(proto, target_openvino=release)
    assert {op.get_type_name(): op.get_type_info().version_id for op in older.get_ordered_ops()}["OneHot"] == "opset1"
    indices = np.array([[0, -1, 3], [-4, 5, -5]], np.int64)
    got = ov.Core().compile_model(older, "CPU", F32)({"i": indices})[0]
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"i": indices})[0]
    np.testing.assert_array_equal(got, want)
