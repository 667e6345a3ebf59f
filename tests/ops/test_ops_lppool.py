"""LpPool and GlobalLpPool, every since-version, on ovpool's numpy executor and through ``ovpool
convert`` on OpenVINO CPU at f32.

Oracles: the naive loops of ``oracle.pool(..., "lp", ...)`` (the schema text: the p-norm of each
window's taps inside the input, a padding tap adding 0, ONNX's ceil drop rule), onnxruntime (one
thread, optimisations off; it runs LpPool-2 and later) and PyTorch's ``lp_pool1d/2d/3d`` where they
mean the same (integer p, no padding, no ceil, even p or non-negative inputs). onnx.reference is
never an oracle and never runs a node (``GraphSession.reference_ops`` stays empty).
"""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from harness import check, examples, make_model, ovpool_of, run_ovpool
from hypothesis import given
from hypothesis import strategies as st
from on_openvino import outcome_of
from onnx import TensorProto, helper
from pool_space import LP_OPS, LP_SINCE, pool_cases

from ovpool.errors import OvpoolError


def _x(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _want(x, attrs, dtype=None):
    return oracle.pool(x.astype(np.float64), "lp", attrs).astype(dtype or x.dtype)


def _model(op, attrs, shape, opset, elem=TensorProto.FLOAT, dynamic=False):
    """One node named 'lp' on input 'x' (spatial dims unknown when ``dynamic``), output 'y'."""
    node = helper.make_node(op, ["x"], ["y"], name="lp", **attrs)
    dims = [d if i < 2 or not dynamic else None for i, d in enumerate(shape)]
    graph = helper.make_graph(
        [node], "lp", [helper.make_tensor_value_info("x", elem, dims)], [helper.make_tensor_value_info("y", elem, None)]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


# The issue's measured cases: OpenVINO's own decomposition is wrong on the first three (1.83, 4.08
# and 3.26 off), onnx.reference on the fourth (0.59 off), ONNX shape inference on the fifth (3x3).
ISSUE_CASES = [
    ({"kernel_shape": [2, 2], "strides": [2, 2], "p": 1, "ceil_mode": 1}, [1, 1, 7, 6]),
    ({"kernel_shape": [2, 2], "strides": [2, 2], "p": 1, "ceil_mode": 1, "dilations": [2, 2]}, [1, 1, 7, 6]),
    ({"kernel_shape": [2, 2], "strides": [3, 3], "p": 1, "ceil_mode": 1}, [1, 1, 7, 6]),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "p": 2, "ceil_mode": 1, "pads": [1, 1, 1, 1]}, [1, 2, 6, 6]),
    ({"kernel_shape": [2, 2], "strides": [3, 3], "p": 3, "ceil_mode": 1}, [1, 1, 6, 6]),
]


@pytest.mark.parametrize("attrs,shape", ISSUE_CASES)
def test_issue_cases_on_numpy_match_the_oracle_and_onnxruntime(attrs, shape):
    x = _x(shape)
    (got,) = check("LpPool", 18, [x], attrs)
    np.testing.assert_allclose(got, _want(x, attrs), rtol=1e-5, atol=1e-6)


def test_ceil_drop_rule_sizes_a_ceil_lppool_2x2_where_onnx_shape_inference_says_3x3():
    attrs = {"kernel_shape": [2, 2], "strides": [3, 3], "ceil_mode": 1}
    (got,) = ovpool_of("LpPool", 18, [_x([1, 1, 6, 6])], attrs)
    assert got.shape == (1, 1, 2, 2)


def test_worked_number():
    """p=2 over the taps 3 and -4 is 5; a pad tap adds 0 (docs/semantics.md)."""
    x = np.array([[[3.0, -4.0]]], dtype=np.float32)
    (got,) = ovpool_of("LpPool", 18, [x], {"kernel_shape": [2], "pads": [1, 0], "strides": [1]})
    np.testing.assert_array_equal(got, np.array([[[3.0, 5.0]]], dtype=np.float32))


@given(pool_cases(LP_OPS))
@examples(60)
def test_attribute_space_on_numpy_matches_the_oracle(case):
    got = run_ovpool(case.model, case.feeds)[0]
    want = case.expected["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    rtol = 1e-3 if want.dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=1e-6)


@pytest.mark.openvino
@given(pool_cases(LP_OPS), st.booleans())
@examples(30)
def test_attribute_space_through_openvino_matches_the_oracle(case, dynamic):
    x = case.feeds["x"]
    if x.dtype == np.float64:
        return  # refused by name: test_float64_is_refused_by_convert
    model = case.model
    if dynamic:
        for dim in model.graph.input[0].type.tensor_type.shape.dim[2:]:
            dim.ClearField("dim_value")
    rtol = 1e-3 if x.dtype == np.float16 else 1e-5
    _, outcome, stage, detail = outcome_of(model, case.feeds, [case.expected["y"]], rtol, 1e-5)
    assert outcome == "agrees", f"{stage}: {detail}"


@pytest.mark.openvino
@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("attrs,shape", ISSUE_CASES)
def test_issue_cases_through_openvino(attrs, shape, dynamic):
    x = _x(shape)
    _, outcome, stage, detail = outcome_of(
        _model("LpPool", attrs, shape, 18, dynamic=dynamic), {"x": x}, [_want(x, attrs)], 1e-5, 1e-6
    )
    assert outcome == "agrees", f"{stage}: {detail}"


@pytest.mark.openvino
def test_float64_is_refused_by_convert():
    x = _x([1, 1, 4, 4], np.float64)
    _, outcome, _, detail = outcome_of(
        _model("LpPool", {"kernel_shape": [2, 2]}, [1, 1, 4, 4], 18, TensorProto.DOUBLE), {"x": x}, [x], 1e-5, 1e-6
    )
    assert outcome == "refused" and "float64" in detail


SINCE_CASES = [(op, opset) for op, versions in LP_SINCE.items() for opset in versions]


@pytest.mark.parametrize("op,opset", SINCE_CASES)
@pytest.mark.parametrize("p", [1, 2, 3])
def test_every_since_version_against_onnxruntime(op, opset, p):
    """LpPool-2 and later on onnxruntime (which has no LpPool-1); version 1 against the oracle."""
    x = _x([2, 3, 6, 5])
    attrs = {"p": float(p) if opset == 1 else p}
    if op == "LpPool":
        attrs |= {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}
    window = attrs if op == "LpPool" else {**attrs, "kernel_shape": [6, 5]}
    (got,) = ovpool_of(op, opset, [x], attrs)
    np.testing.assert_allclose(got, _want(x, window), rtol=1e-5, atol=1e-6)
    if opset > 1:
        check(op, opset, [x], attrs)  # skipped where onnxruntime has no kernel (GlobalLpPool-22)


@pytest.mark.parametrize("op", LP_OPS)
def test_lppool_1_takes_a_float_p(op):
    x = _x([1, 2, 4, 5])
    attrs = {"p": 2.5} | ({"kernel_shape": [2, 2]} if op == "LpPool" else {})
    (got,) = ovpool_of(op, 1, [x], attrs)
    window = attrs if op == "LpPool" else {**attrs, "kernel_shape": [4, 5]}
    np.testing.assert_allclose(got, _want(x, window), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
@pytest.mark.parametrize("op", LP_OPS)
def test_half_and_double_against_onnxruntime(op, dtype):
    x = _x([1, 2, 5, 5], dtype)
    attrs = {"kernel_shape": [2, 3], "strides": [2, 2]} if op == "LpPool" else {}
    window = attrs if op == "LpPool" else {"kernel_shape": [5, 5]}
    rtol = 1e-3 if dtype == np.float16 else 1e-12
    (got,) = ovpool_of(op, 18, [x], attrs)
    np.testing.assert_allclose(got, _want(x, window), rtol=rtol)
    check(op, 18, [x], attrs, rtol=rtol if dtype == np.float16 else 1e-7)  # skipped where onnxruntime has none


@pytest.mark.parametrize("op", LP_OPS)
def test_bfloat16_at_version_22(op):
    import ml_dtypes

    x = _x([1, 2, 5, 4]).astype(ml_dtypes.bfloat16)
    attrs = {"kernel_shape": [3, 2], "p": 3} if op == "LpPool" else {"p": 3}
    window = attrs if op == "LpPool" else {**attrs, "kernel_shape": [5, 4]}
    (got,) = ovpool_of(op, 22, [x], attrs)
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got.astype(np.float64), _want(x.astype(np.float64), window), rtol=1e-2)
    with pytest.raises(OvpoolError, match="bfloat16 is not allowed"):
        ovpool_of(op, 18, [x], attrs)


def test_no_lppool_node_runs_on_onnx_reference():
    from ovpool.engine.graph import GraphSession

    for op, versions in LP_SINCE.items():
        for opset in versions:
            attrs = {"kernel_shape": [2]} if op == "LpPool" else {}
            assert GraphSession(make_model(op, opset, [_x([1, 1, 4])], attrs)).reference_ops == ()


def test_a_window_with_no_input_cell_is_0():
    """Kernel 2, dilation 2, pads 1/1 over one cell: the one window's taps -1 and 1 are both padding."""
    x = np.array([[[-2.0]]], dtype=np.float32)
    (got,) = check("LpPool", 18, [x], {"kernel_shape": [2], "dilations": [2], "pads": [1, 1]})
    assert got.tolist() == [[[0.0]]]


@pytest.mark.parametrize(
    "opset,attrs,match",
    [
        (18, {"kernel_shape": [2], "p": 0}, "'p'.*>= 1"),
        (11, {"kernel_shape": [2], "p": -1}, "'p'.*>= 1"),
        (1, {"kernel_shape": [2], "p": 0.5}, "'p'.*>= 1"),
        (18, {"kernel_shape": [2], "p": 2.0}, "'p'"),  # a FLOAT p where the version says INT
        (11, {"kernel_shape": [2], "ceil_mode": 1}, "ceil_mode"),
        (11, {"kernel_shape": [2], "dilations": [2]}, "dilations"),
        (18, {"kernel_shape": [2], "count_include_pad": 1}, "count_include_pad"),
        (18, {"strides": [1]}, "kernel_shape"),
    ],
)
def test_bad_attributes_are_refused_by_name(opset, attrs, match):
    with pytest.raises(OvpoolError, match=f"lppool_node.*{match}"):
        ovpool_of("LpPool", opset, [_x([1, 1, 4])], attrs)


def test_global_lppool_p_below_1_is_refused_by_name():
    with pytest.raises(OvpoolError, match="globallppool_node.*'p' = 0: must be a finite number >= 1"):
        ovpool_of("GlobalLpPool", 7, [_x([1, 1, 4])], {"p": 0})


@pytest.mark.torch
@given(
    rank=st.integers(1, 3),
    p=st.integers(1, 3),
    kernel=st.integers(1, 3),
    stride=st.integers(1, 3),
    extra=st.integers(0, 3),
    seed=st.integers(0, 2**16),
)
@examples(25)
def test_pytorch_where_it_means_the_same(rank, p, kernel, stride, extra, seed):
    """PyTorch raises x to p without the absolute value and scales a clipped window by the whole
    kernel: the same only with non-negative inputs (or even p), no pads and floor rounding."""
    torch = pytest.importorskip("torch")
    length = kernel + extra
    x = np.abs(_x([1, 2] + [length] * rank, np.float64, seed)) if p % 2 else _x([1, 2] + [length] * rank, np.float64, seed)
    attrs = {"kernel_shape": [kernel] * rank, "strides": [stride] * rank, "p": p}
    (got,) = ovpool_of("LpPool", 18, [x], attrs)
    pool = {1: torch.nn.functional.lp_pool1d, 2: torch.nn.functional.lp_pool2d, 3: torch.nn.functional.lp_pool3d}[rank]
    want = pool(torch.from_numpy(x), float(p), kernel, stride).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@given(pool_cases(LP_OPS))
@examples(40)
def test_attribute_space_to_directml_and_back(case):
    """ONNX -> DirectML JSON (run on the descriptor emulator) -> ONNX (run on numpy): the oracle's
    values both times, or refused by name (float64, a non-integer p, a window with no input cell)."""
    import dml_emulator

    from ovpool.dml import export as dml_export
    from ovpool.dml import importer as dml_import

    x, want = case.feeds["x"], case.expected["y"]
    try:
        document = dml_export.document_from_onnx(case.model)
    except OvpoolError as exc:
        assert "'pool'" in str(exc)
        assert x.dtype == np.float64 or "not an integer" in str(exc) or "no input cell" in str(exc), str(exc)
        return
    rtol = 1e-3 if x.dtype == np.float16 else 1e-5
    emulated = dml_emulator.run(document, {"x": x})["y"]
    np.testing.assert_allclose(emulated.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=1e-5)
    back = dml_import.model_from_document(document)
    assert [n.op_type for n in back.graph.node if "Pool" in n.op_type] == ["LpPool"]
    got = run_ovpool(back, {back.graph.input[0].name: x})[0]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=1e-5)


def test_directml_dilations_need_lp_pooling1_at_6_2():
    from ovpool.dml import export as dml_export

    model = _model("LpPool", {"kernel_shape": [2, 2], "dilations": [2, 2]}, [1, 1, 5, 5], 18)
    (op,) = dml_export.document_from_onnx(model)["operators"]
    assert (op["type"], op["min_feature_level"], op["desc"]["P"]) == ("DML_OPERATOR_LP_POOLING1", "DML_FEATURE_LEVEL_6_2", 2)
    with pytest.raises(OvpoolError, match="node 'lp'.*DML_OPERATOR_LP_POOLING1 at DML_FEATURE_LEVEL_6_2"):
        dml_export.document_from_onnx(model, feature_level="6.1")


@pytest.mark.openvino
@given(pool_cases(LP_OPS), st.sampled_from(["2023.0", "2024.0"]))
@examples(12)
def test_target_openvino_older_forms_keep_the_oracle_values(case, release):
    """``--target-openvino``: the lowering's AvgPool-16 (dilations) and its other layers in the
    release's opsets (``ovpool.ov.backport``), the oracle's values on OpenVINO CPU at f32."""
    import openvino as ov

    from ovpool.ov import releases
    from ovpool.ov.backport import newer_layers
    from ovpool.ov.from_onnx import onnx_to_ov_model

    x = case.feeds["x"]
    if x.dtype == np.float64:
        return  # refused by name: test_float64_is_refused_by_convert
    model = onnx_to_ov_model(case.model, target_openvino=release)
    assert newer_layers(model, releases.newest_opset(release)) == []
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    got = compiled({"x": x})[0]
    rtol = 1e-3 if x.dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), case.expected["y"].astype(np.float64), rtol=rtol, atol=1e-5)


def _to_ir(model, folder):
    """``ovpool convert`` of ``model`` to IR files in ``folder``; the .xml path."""
    import onnx

    from ovpool.ov.from_onnx import onnx_to_ir

    onnx.save(model, str(folder / "m.onnx"))
    files = onnx_to_ir(folder / "m.onnx")
    (folder / "m.xml").write_bytes(files[".xml"])
    (folder / "m.bin").write_bytes(files[".bin"])
    return folder / "m.xml"


@pytest.mark.openvino
@given(case=pool_cases(LP_OPS))
@examples(15)
def test_ir_from_the_lowering_comes_back_to_lppool(case, tmp_path_factory):
    """ONNX -> IR (ovpool's lowering) -> ONNX: one LpPool or GlobalLpPool node (a Pad before it
    where the pads reach the window extent), the oracle's values on numpy; ``validate`` finds
    nothing in the IR."""
    import onnx

    from ovpool.ir.to_onnx import ir_to_onnx
    from ovpool.ir.validation import validate_file

    x = case.feeds["x"]
    if x.dtype == np.float64:
        return  # refused by name: test_float64_is_refused_by_convert
    xml = _to_ir(case.model, tmp_path_factory.mktemp("lp"))
    assert not validate_file(xml).findings
    if not float(case.attrs.get("p", 2)).is_integer():  # IR -> ONNX writes opset 19: an INT p
        with pytest.raises(OvpoolError, match="p=2.5 is not an integer"):
            ir_to_onnx(xml)
        return
    back = onnx.load_from_string(ir_to_onnx(xml)[".onnx"])
    assert [n.op_type for n in back.graph.node if n.op_type != "Pad"] == [case.op]
    got = run_ovpool(back, {back.graph.input[0].name: x})[0]
    rtol = 1e-3 if x.dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), case.expected["y"].astype(np.float64), rtol=rtol, atol=1e-5)


@pytest.mark.openvino
def test_ir_of_another_shape_than_the_lowering_is_refused_naming_its_layers(tmp_path):
    """An Abs and an AvgPool whose windows divide by fewer taps (exclude-pad with pads) are not a
    window sum: IR -> ONNX lists the layers it does not convert."""
    import openvino as ov
    from openvino import opset1

    from ovpool.errors import UnsupportedError
    from ovpool.ir.to_onnx import ir_to_onnx

    x = opset1.parameter([1, 1, 4, 4], np.float32, name="x")
    pooled = opset1.avg_pool(opset1.abs(x), [1, 1], [1, 1], [1, 1], [2, 2], True, "floor")
    summed = opset1.multiply(pooled, opset1.constant(np.float32(4)))
    ov.save_model(ov.Model([summed], [x], "m"), str(tmp_path / "m.xml"))
    with pytest.raises(UnsupportedError, match="Abs"):
        ir_to_onnx(tmp_path / "m.xml")


def test_directml_lp_pooling_to_ir_is_refused_by_name():
    """DirectML -> IR writes pooling layers only; an LP_POOLING goes through ONNX instead."""
    from ovpool.dml import export as dml_export
    from ovpool.dml.importer import ir_from_document

    document = dml_export.document_from_onnx(_model("LpPool", {"kernel_shape": [2, 2]}, [1, 1, 4, 4], 18))
    with pytest.raises(OvpoolError, match="node 'lp': lp pooling has no IR pooling layer; convert it to ONNX"):
        ir_from_document(document)


def test_explain_shows_the_windows_and_p(tmp_path):
    import onnx
    from typer.testing import CliRunner

    from ovpool.cli.app import app

    attrs = {"kernel_shape": [2, 2], "strides": [3, 3], "ceil_mode": 1, "p": 3}
    onnx.save(_model("LpPool", attrs, [1, 1, 6, 6], 18), str(tmp_path / "m.onnx"))
    result = CliRunner().invoke(app, ["explain", "--onnx", str(tmp_path / "m.onnx"), "--node", "lp"])
    assert result.exit_code == 0, result.output
    assert "lp pool, input [1, 1, 6, 6] -> output [1, 1, 2, 2]" in result.output
    assert "p 3: (sum of |x|^p over the taps inside the input)^(1/p)" in result.output
    assert "drop rule" in result.output


@pytest.mark.openvino
@pytest.mark.parametrize(
    "op,attrs",
    [
        ("LpPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "p": 1, "ceil_mode": 1}),
        ("GlobalLpPool", {"p": 2}),
    ],
)
def test_an_lp_pool_of_a_dequantized_tensor_is_no_quantized_pool(op, attrs):
    """DequantizeLinear -> LpPool is no QDQ pool pattern: the float LpPool runs as it is, on numpy
    and through convert on OpenVINO CPU (whose low-precision execution keeps it in float)."""
    from onnx import numpy_helper

    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"]), helper.make_node(op, ["x"], ["y"], name="lp", **attrs)]
    constants = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(128, np.uint8), "z")]
    graph = helper.make_graph(
        nodes,
        "dq",
        [helper.make_tensor_value_info("q", TensorProto.UINT8, [1, 3, 7, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=constants,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    q = np.random.default_rng(0).integers(0, 256, [1, 3, 7, 7]).astype(np.uint8)
    window = attrs if op == "LpPool" else {**attrs, "kernel_shape": [7, 7]}
    want = _want((q.astype(np.float64) - 128) * np.float32(0.05), window, np.float32)
    np.testing.assert_allclose(run_ovpool(model, {"q": q})[0], want, rtol=1e-5)
    _, outcome, stage, detail = outcome_of(model, {"q": q}, [want], 1e-5, 1e-5)
    assert outcome == "agrees", f"{stage}: {detail}"
