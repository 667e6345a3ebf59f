"""OpenVINO's ONNX frontend defects (``ovpool.ov.frontend_fixes``) through ovpool's ONNX -> IR conversion.

One-node models at every since-version in force in opsets 7-22 of each operator with a row in
``DEFECTS``, drawn over the attributes that row is about, converted by ovpool and run on OpenVINO
CPU at f32, against onnxruntime and against the schema computed here (Softmax's 2-D coercion,
Div's truncation, Constant's attribute value, RoiAlign's maximum of the bilinear samples). A
refused node (RoiAlign max at the adaptive sampling_ratio 0, a Resize lowering without static dims)
is one line at convert time, and ``--allow-inexact`` writes it with one warning.
"""

from __future__ import annotations

import re
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from harness import drawn_rng, examples, feeds_of, make_model, run_ort, schema_dtypes, since_opsets
from hypothesis import given
from hypothesis import strategies as st
from onnx import helper, numpy_helper
from test_ops_detection import _roi_align_schema
from test_ops_detection import _roi_inputs as roi_inputs
from test_ops_detection import _transform as roi_transform
from test_ops_normalization import _lrn_schema
from test_ops_resize import Case, onnxruntime_follows_schema, schema_resize
from test_ops_resize import cases as resize_cases

import ovpool
from ovpool.cli.app import main
from ovpool.errors import UnsupportedError
from ovpool.ov import frontend_fixes
from ovpool.ov.from_onnx import onnx_to_ir, onnx_to_ov_model

ov = pytest.importorskip("openvino")
pytestmark = pytest.mark.openvino

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
README = Path(__file__).resolve().parents[2] / "README.md"


def cpu(model: onnx.ModelProto, feeds: dict[str, np.ndarray], **options: object) -> list[np.ndarray]:
    """The model converted by ovpool, on OpenVINO CPU at f32: its outputs in order."""
    compiled = ov.Core().compile_model(onnx_to_ov_model(model, **options), "CPU", F32)  # type: ignore[arg-type]
    results = compiled(feeds)
    return [results[output] for output in compiled.outputs]


def _close(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-5, atol: float = 1e-5, what: str = "") -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, err_msg=what)


# --- Softmax, LogSoftmax, Hardmax: every version, every axis -------------------------------------


def _normalised(op: str, x: np.ndarray, axis: int, opset: int) -> np.ndarray:
    """The schema: before opset 13 the input is coerced to 2-D ``[prod(dims[:axis]), prod(dims[axis:])]``
    and each row normalised; from 13 on, each line along ``axis``. Plain float64 loops over rows."""
    axis %= x.ndim
    if opset < 13:
        rows = x.reshape(int(np.prod(x.shape[:axis])), -1).astype(np.float64)
        moved = rows
    else:
        moved = np.moveaxis(x, axis, -1).astype(np.float64)
        rows = moved.reshape(-1, x.shape[axis])
    out = np.empty_like(rows)
    for r, row in enumerate(rows):
        if op == "Hardmax":
            out[r] = 0.0
            out[r, int(np.argmax(row))] = 1.0  # the first maximum
        else:
            shifted = row - row.max()
            log_sum = np.log(np.exp(shifted).sum())
            out[r] = shifted - log_sum if op == "LogSoftmax" else np.exp(shifted - log_sum)
    if opset < 13:
        return out.reshape(x.shape)
    return np.moveaxis(out.reshape(moved.shape), -1, axis)


SOFTMAX_CASES = [(op, opset) for op in ("Softmax", "LogSoftmax", "Hardmax") for opset in since_opsets(op)]


@pytest.mark.parametrize(("op", "opset"), SOFTMAX_CASES)
@examples(6)
@given(data=st.data())
def test_softmax_family_every_version_and_axis(op: str, opset: int, data: st.DataObject) -> None:
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple))
    rank = len(shape)
    axis = data.draw(st.integers(-rank if opset >= 11 else 0, rank - 1))
    x = drawn_rng(data.draw).standard_normal(shape).astype(np.float32)
    model = make_model(op, opset, [x], {"axis": axis})
    feeds = feeds_of(model, [x])
    (actual,) = cpu(model, feeds)
    expected = _normalised(op, x, axis, opset)
    _close(actual, expected, what=f"{op}-{opset} axis {axis} of {shape}: against the schema")
    _close(actual, run_ort(model, feeds)[0], what="against onnxruntime")


def test_softmax_11_with_dynamic_dims_reshapes_at_run_time() -> None:
    """The rewrite reads the input's shape at run time: one converted model serves two shapes."""
    x_in = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", "c", "h"])
    y_out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], name="s", axis=1)], "g", [x_in], [y_out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=6)
    compiled = ov.Core().compile_model(onnx_to_ov_model(model), "CPU", F32)
    for shape in ((2, 3, 4), (1, 5, 2)):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        _close(compiled({"x": x})[0], _normalised("Softmax", x, 1, 11))


def test_defects_inside_subgraphs_are_rewritten_too() -> None:
    """A Softmax-11 and an integer Div in an If's branch: both take the rewrite (their tensors have
    no inferred types there, so the Softmax is flattened whatever its rank; the Div decides by the
    type OpenVINO sees)."""
    x_in = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4])
    a_in = helper.make_tensor_value_info("a", onnx.TensorProto.INT32, [4])
    c_in = helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in (("y", onnx.TensorProto.FLOAT), ("q", onnx.TensorProto.INT32))]
    two = helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.array(2, np.int32), "two"))
    then = helper.make_graph(
        [
            helper.make_node("Softmax", ["x"], ["ty"], name="s", axis=0),
            two,
            helper.make_node("Div", ["a", "two"], ["tq"], name="d"),
        ],
        "then",
        [],
        [
            helper.make_tensor_value_info("ty", onnx.TensorProto.FLOAT, None),
            helper.make_tensor_value_info("tq", onnx.TensorProto.INT32, None),
        ],
    )
    otherwise = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["ey"]), helper.make_node("Identity", ["a"], ["eq"])],
        "else",
        [],
        [
            helper.make_tensor_value_info("ey", onnx.TensorProto.FLOAT, None),
            helper.make_tensor_value_info("eq", onnx.TensorProto.INT32, None),
        ],
    )
    node = helper.make_node("If", ["c"], ["y", "q"], name="if", then_branch=then, else_branch=otherwise)
    graph = helper.make_graph([node], "g", [c_in, x_in, a_in], outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=6)
    x = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)
    a = np.array([-7, 7, -8, 5], np.int32)
    y, q = cpu(model, {"c": np.array(True), "x": x, "a": a})
    _close(y, _normalised("Softmax", x, 0, 11))
    np.testing.assert_array_equal(q, [-3, 3, -4, 2])


# --- Resize: every version, every mode; antialias, half_pixel_symmetric, tf_crop_and_resize ------


RESIZE_CASES = [
    (opset, mode) for opset in since_opsets("Resize") for mode in ("nearest", "linear", "cubic") if (opset, mode) != (10, "cubic")
]


@pytest.mark.parametrize(("opset", "mode"), RESIZE_CASES)
@examples(6)
@given(data=st.data())
def test_resize_every_version_and_mode(opset: int, mode: str, data: st.DataObject) -> None:
    """test_ops_resize's cases (every coordinate transformation, nearest rounding, cubic
    coefficient, exclude_outside, antialias, axes, aspect policy, scales or sizes of the version) on
    N x C x H x W, against onnxruntime where it follows the schema, else against the schema loop."""
    shape = (1, data.draw(st.integers(1, 2)), data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6)))
    case = data.draw(resize_cases(opset, shape, (2, 3), mode=mode))
    x = drawn_rng(data.draw).standard_normal(shape).astype(np.float32)
    inputs = case.inputs(x, opset)
    model = make_model("Resize", opset, inputs, case.attrs(), constant=tuple(range(1, len(inputs))))
    feeds = feeds_of(model, inputs)
    (actual,) = cpu(model, feeds)
    what = str(helper.printable_node(model.graph.node[0]))
    if onnxruntime_follows_schema(shape, case):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _close(actual, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4, what=what)
    else:
        _close(actual, schema_resize(x, case), rtol=1e-4, atol=1e-4, what=what)


@pytest.mark.parametrize("opset", [o for o in since_opsets("Upsample") if o < 10])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
@examples(6)
@given(data=st.data())
def test_upsample_7_and_9(opset: int, mode: str, data: st.DataObject) -> None:
    """Upsample-7 (scales attribute) and -9 (scales input) at scales >= 1, fractional ones that keep
    an axis's length among them (1.25 on 3 elements); Upsample-10 is deprecated (only its schema's
    note exists)."""
    shape = (1, data.draw(st.integers(1, 2)), data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5)))
    factors = (1.0, 1.0, *(data.draw(st.sampled_from([1.0, 1.25, 1.5, 2.0, 3.0])) for _ in range(2)))
    x = drawn_rng(data.draw).standard_normal(shape).astype(np.float32)
    if opset == 7:
        model, inputs = make_model("Upsample", 7, [x], {"mode": mode, "scales": list(factors)}), [x]
    else:
        inputs = [x, np.array(factors, np.float32)]
        model = make_model("Upsample", 9, inputs, {"mode": mode}, constant=(1,))
    feeds = feeds_of(model, inputs)
    (actual,) = cpu(model, feeds)
    case = Case(mode=mode, transform="asymmetric", nearest_mode="simple", scales=factors)
    expected = run_ort(model, feeds)[0] if onnxruntime_follows_schema(shape, case) else schema_resize(x, case)
    _close(actual, expected, what=f"Upsample-{opset} {mode} {factors} on {shape}")


@pytest.mark.parametrize(
    "op_opset", [("Upsample", o) for o in since_opsets("Upsample") if o < 10] + [("Resize", o) for o in since_opsets("Resize")]
)
@pytest.mark.parametrize("mode", ["nearest", "linear"])
@examples(3)
@given(data=st.data())
def test_resize_of_batch_or_channel_axes(op_opset: tuple[str, int], mode: str, data: st.DataObject) -> None:
    """OpenVINO CPU resizes axes 2 on only (the IR it converts does not compile); the per-axis
    matrices resize any axis: scales 2 on the batch and 0.5 on 4 channels. Against the schema
    loop, and onnxruntime for nearest."""
    op, opset = op_opset
    shape = (data.draw(st.integers(1, 3)), data.draw(st.integers(2, 4)), data.draw(st.integers(1, 4)), 2)
    factors = np.array(
        [data.draw(st.sampled_from([1.0, 2.0, 3.0])), data.draw(st.sampled_from([0.5, 2.0])), 1.0, 2.0], np.float32
    )
    if opset < 11:  # Upsample's and Resize-10's scales are >= 1
        factors = np.maximum(factors, 1.0)
    x = drawn_rng(data.draw).standard_normal(shape).astype(np.float32)
    if opset == 7:
        inputs: list[np.ndarray | None] = [x]
        model = make_model("Upsample", 7, inputs, {"mode": mode, "scales": factors.tolist()})
    elif opset < 11:
        inputs = [x, factors]
        model = make_model(op, opset, inputs, {"mode": mode}, constant=(1,))
    else:
        inputs = [x, np.zeros(0, np.float32), factors]
        model = make_model(op, opset, inputs, {"mode": mode}, constant=(1, 2))
    feeds = feeds_of(model, inputs)
    (actual,) = cpu(model, feeds)
    case = Case(
        mode=mode,
        transform="asymmetric" if opset < 11 else "half_pixel",
        nearest_mode="simple" if opset < 11 else "round_prefer_floor",
        scales=tuple(factors.tolist()),
    )
    what = f"{op}-{opset} {mode} {factors.tolist()} on {shape}"
    _close(actual, schema_resize(x, case), rtol=1e-5, atol=1e-5, what=what)
    if mode == "nearest":  # onnxruntime's linear resizes axes 2 on only
        _close(actual, run_ort(model, feeds)[0], rtol=1e-5, atol=1e-5, what=what)


def test_resize_lowering_is_the_numpy_kernel() -> None:
    """The per-axis matrices applied one axis after the other are ovpool's numpy Resize (antialias
    cubic at 0.4 x 0.6 and half_pixel_symmetric linear at 1.5 x 0.55)."""
    from ovpool.engine.ops.base import OpNode
    from ovpool.engine.ops.resize import axis_matrices, resize_19

    x = np.random.default_rng(3).standard_normal((1, 2, 7, 9)).astype(np.float32)
    for attrs, scales in (
        ({"mode": "cubic", "antialias": 1}, [1, 1, 0.4, 0.6]),
        ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"}, [1, 1, 1.5, 0.55]),
    ):
        node = OpNode("r", "Resize", 19, 19, attrs)
        factors = np.array(scales, np.float32)
        y = x.astype(np.float64)
        for matrix in axis_matrices(node, x.shape, None, factors, None):
            y = np.moveaxis(np.tensordot(matrix.weights, np.moveaxis(y, matrix.axis, 0), axes=1), 0, matrix.axis)
        (kernel,) = resize_19(node)(x, None, factors, None)
        _close(y, kernel, rtol=1e-5, atol=1e-6)


def test_resize_with_dynamic_dims_is_refused_by_name_and_converts_with_given_shapes() -> None:
    """The exact lowering needs static input dims: refused without them, converted with ``inputs``."""
    x_in = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", 2, "h", "w"])
    y_out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    scales = numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="shrink", mode="linear", antialias=1)
    graph = helper.make_graph([node], "g", [x_in], [y_out], initializer=[scales])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    with pytest.raises(UnsupportedError) as refused:
        onnx_to_ov_model(model)
    message = str(refused.value)
    assert "node 'shrink' (Resize-18): antialias=1, mode='linear'" in message and "static input dims" in message, message
    assert len(message.splitlines()) == 1
    x = np.random.default_rng(1).standard_normal((1, 2, 8, 6)).astype(np.float32)
    (actual,) = cpu(model, {"x": x}, inputs="x[1,2,8,6]")
    _close(actual, run_ort(model, {"x": x})[0])


# --- Constant: every version, every attribute ------------------------------------------------------


def _constant_attributes(opset: int) -> list[tuple[str, object, np.ndarray]]:
    """(attribute, value, the tensor it means) for each value attribute Constant's version has."""
    schema = onnx.defs.get_schema("Constant", opset)
    rows = [
        ("value", numpy_helper.from_array(np.array([[1.5, -2.0]], np.float32), "v"), np.array([[1.5, -2.0]], np.float32)),
        ("value_float", 2.5, np.array(2.5, np.float32)),
        ("value_floats", [1.0, -0.25], np.array([1.0, -0.25], np.float32)),
        ("value_int", -7, np.array(-7, np.int64)),
        ("value_ints", [3, -1, 2**20], np.array([3, -1, 2**20], np.int64)),
        ("value_string", "ab", np.array("ab", object)),
        ("value_strings", ["a", "bc"], np.array(["a", "bc"], object)),
    ]
    return [row for row in rows if row[0] in schema.attributes]


@pytest.mark.parametrize("opset", since_opsets("Constant"))
def test_constant_every_version_and_attribute(opset: int) -> None:
    for name, value, meaning in _constant_attributes(opset):
        model = make_model("Constant", opset, [], {name: value})
        (actual,) = cpu(model, {})
        assert actual.shape == meaning.shape, (name, actual.shape)
        if meaning.dtype == object:
            assert [str(v) for v in actual.reshape(-1)] == [str(v) for v in meaning.reshape(-1)], name
        else:
            assert actual.dtype == meaning.dtype, (name, actual.dtype)
            np.testing.assert_array_equal(actual, meaning, err_msg=name)


# --- Div: integers truncate, in the file and on the CPU --------------------------------------------


DIV_CASES = [
    (opset, dtype) for opset in since_opsets("Div") for dtype in schema_dtypes("Div", opset) if np.issubdtype(dtype, np.integer)
]


def _truncated(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ONNX integer Div, one pair at a time in Python integers: the quotient toward zero (-7/2 = -3)."""
    pairs = np.broadcast_arrays(a, b)
    out = [(abs(int(p)) // abs(int(q))) * (1 if (p < 0) == (q < 0) else -1) for p, q in zip(*(v.reshape(-1) for v in pairs))]
    return np.array(out, a.dtype).reshape(pairs[0].shape)


@pytest.mark.parametrize(("opset", "dtype"), DIV_CASES)
@examples(4)
@given(data=st.data())
def test_integer_div_truncates_in_the_ir_and_on_cpu(opset: int, dtype: type, data: st.DataObject) -> None:
    rng = drawn_rng(data.draw)
    info = np.iinfo(dtype)
    low = max(int(info.min), -1000) if info.min < 0 else 0
    a = rng.integers(low, 1000, (2, 5)).astype(dtype)
    b = rng.integers(low, 30, (5,)).astype(dtype)
    b[b == 0] = 3
    model = make_model("Div", opset, [a, b])
    feeds = feeds_of(model, [a, b])
    (actual,) = cpu(model, feeds)
    np.testing.assert_array_equal(actual, _truncated(a, b))
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "div.onnx"
        onnx.save(model, source)
        xml = onnx_to_ir(source)[".xml"].decode()
    divides = re.findall(r'<layer [^>]*type="Divide"[^>]*>\s*<data ([^>]*)/>', xml)
    assert divides and all('m_pythondiv="false"' in d for d in divides), divides
    compiled = ov.Core().compile_model(ov.Core().read_model(model=xml.encode(), weights=b""), "CPU", F32)
    np.testing.assert_array_equal(compiled(feeds)[0], _truncated(a, b))


def test_float_div_is_left_to_openvino() -> None:
    a, b = np.array([-7.0, 7.5], np.float32), np.array([2.0, -2.0], np.float32)
    model = make_model("Div", 14, [a, b])
    np.testing.assert_array_equal(cpu(model, feeds_of(model, [a, b]))[0], a / b)
    assert frontend_fixes.rewrite(onnx.shape_inference.infer_shapes(model), "m") == {}


# --- RoiAlign max: lowered for sampling_ratio > 0, refused for 0 (or written with --allow-inexact) ---


@pytest.mark.parametrize("opset", since_opsets("RoiAlign"))
@pytest.mark.parametrize("mode", ["avg", "max"])
@examples(6)
@given(data=st.data())
def test_roi_align_every_version_matches_the_schema(opset: int, mode: str, data: st.DataObject) -> None:
    """test_ops_detection's cases with a fixed sampling_ratio (max's lowering samples on a finer
    grid with an average RoiAlign, so the average is held to the schema too)."""
    inputs, attrs = data.draw(roi_inputs())
    attrs["sampling_ratio"] = data.draw(st.integers(1, 3))
    attrs.update(roi_transform(data.draw, opset), mode=mode)
    model = make_model("RoiAlign", opset, inputs, attrs)
    (actual,) = cpu(model, feeds_of(model, inputs))
    half_pixel = opset >= 16 and attrs.get("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    expected = _roi_align_schema(
        *inputs, mode, attrs["output_height"], attrs["output_width"], attrs["sampling_ratio"], attrs["spatial_scale"], half_pixel
    )
    _close(actual, expected, rtol=1e-4, atol=1e-5, what=f"RoiAlign-{opset} {attrs}")


def _roi_align_max(opset: int, ratio: int = 0) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 6, 7)).astype(np.float32)
    rois = np.array([[0.3, 0.6, 4.2, 5.1], [1.5, 0.2, 6.5, 3.9]], np.float32)
    inputs = [x, rois, np.zeros(2, np.int64)]
    attrs = {"mode": "max", "output_height": 2, "output_width": 3, "sampling_ratio": ratio}
    model = make_model("RoiAlign", opset, inputs, attrs)
    model.graph.node[0].name = "r"
    return model, inputs


@pytest.mark.parametrize("opset", since_opsets("RoiAlign"))
def test_roi_align_max_openvino_differs_from_the_schema(opset: int) -> None:
    """Why the row exists: OpenVINO's own max (written with --allow-inexact at the adaptive
    sampling_ratio 0, which ovpool cannot lower) is not the schema's maximum of the bilinear samples."""
    model, inputs = _roi_align_max(opset)
    with pytest.warns(UserWarning, match="RoiAlign"):
        (actual,) = cpu(model, feeds_of(model, inputs), allow_inexact=True)
    expected = _roi_align_schema(*inputs, "max", 2, 3, 0, 1.0, opset >= 16)
    assert np.abs(actual - expected).max() > 1e-2


@pytest.mark.parametrize("opset", since_opsets("RoiAlign"))
def test_roi_align_max_adaptive_is_refused_by_name_and_written_with_allow_inexact(
    opset: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model, _inputs = _roi_align_max(opset)
    source = tmp_path / "model.onnx"
    onnx.save(model, source)
    since = onnx.defs.get_schema("RoiAlign", opset).since_version
    line = rf"node 'r' \(RoiAlign-{since}\): mode='max': OpenVINO computes another maximum.*needs sampling_ratio > 0"

    def convert(*flags: str) -> tuple[int, str]:
        monkeypatch.setattr(sys, "argv", ["ovpool", "convert", str(source), "--output-dir", str(tmp_path / "out"), *flags])
        with pytest.raises(SystemExit) as exit_info:
            main()
        return int(exit_info.value.code or 0), capsys.readouterr().err.strip()

    code, err = convert()
    assert code == 1 and len(err.splitlines()) == 1, err
    assert re.match(rf"^error: {re.escape(str(source))}: {line}.*\(--allow-inexact writes it anyway\)$", err), err
    assert not (tmp_path / "out").exists()
    code, err = convert("--allow-inexact")
    lines = err.splitlines()
    assert code == 0 and len(lines) == 2, err
    assert re.match(rf"^warning: {re.escape(str(source))}: {line}.*written as OpenVINO converts it", lines[0]), err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model.bin", "model.xml"]


def test_allow_inexact_through_the_python_api(tmp_path: Path) -> None:
    import ovpool

    model, _inputs = _roi_align_max(16)
    source = tmp_path / "m.onnx"
    onnx.save(model, source)
    with pytest.raises(UnsupportedError, match="RoiAlign-16"):
        ovpool.convert(source, tmp_path / "m.xml")
    with pytest.warns(UserWarning, match=r"node 'r' \(RoiAlign-16\): mode='max'"):
        written = ovpool.convert(source, tmp_path / "m.xml", allow_inexact=True)
    assert [p.name for p in written] == ["m.xml", "m.bin"]


# --- HardSigmoid alpha=0 / beta=0: the formula ------------------------------------------------------


def _hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The schema, one value at a time in Python floats: max(0, min(1, alpha * x + beta))."""
    out = [max(0.0, min(1.0, alpha * float(v) + beta)) for v in x.reshape(-1)]
    return np.array(out, np.float64).reshape(x.shape)


@pytest.mark.parametrize("opset", since_opsets("HardSigmoid"))
@pytest.mark.parametrize(("alpha", "beta"), [(0.0, 0.0), (0.0, 0.3), (0.7, 0.0), (-0.5, 0.0)])
def test_hard_sigmoid_zero_alpha_or_beta_is_the_formula(opset: int, alpha: float, beta: float) -> None:
    """OpenVINO takes a zero alpha or beta for the default; the formula's nodes keep it (alpha=0,
    beta=0: 0 for every x, where OpenVINO gives 0.2 * -0.5 + 0.5 = 0.4)."""
    for dtype in schema_dtypes("HardSigmoid", opset):
        x = np.linspace(-3, 3, 13).astype(dtype).reshape(1, 13)
        model = make_model("HardSigmoid", opset, [x], {"alpha": alpha, "beta": beta})
        feeds = feeds_of(model, [x])
        (actual,) = cpu(model, feeds)
        tol = 2e-3 if dtype == np.float16 else 1e-6
        _close(actual, _hard_sigmoid(x, alpha, beta), rtol=tol, atol=tol, what=f"HardSigmoid-{opset} {dtype.__name__}")
        if dtype == np.float32:  # onnxruntime has no other HardSigmoid kernel
            _close(actual, run_ort(model, feeds)[0], rtol=tol, atol=tol, what="against onnxruntime")


# --- LRN with a fractional bias: bias 1, alpha / bias, times bias ** -beta -------------------------


@pytest.mark.parametrize("opset", since_opsets("LRN"))
@pytest.mark.parametrize("bias", [0.5, 1.5, 2.7, 0.001, 1.0, 2.0])
def test_lrn_fractional_bias_is_rescaled(opset: int, bias: float) -> None:
    """The CPU plugin truncates LRN's bias to a whole number (0.5 computes as 0: 10 times the
    schema's values or more); the rescaled LRN with bias 1 gives the schema's, whole biases are
    left as they are."""
    x = np.random.default_rng(5).uniform(-3, 3, (2, 6, 3, 3))
    for alpha in (1e-4, 0.5):
        attrs = {"size": 3, "alpha": alpha, "beta": 0.75, "bias": bias}
        expected = _lrn_schema(x.astype(np.float32), 3, alpha, 0.75, bias)
        for dtype in (np.float32, np.float16):
            model = make_model("LRN", opset, [x.astype(dtype)], attrs)
            (actual,) = cpu(model, feeds_of(model, [x.astype(dtype)]))
            tol = 3e-3 if dtype == np.float16 else 1e-5
            _close(actual, expected, rtol=tol, atol=tol, what=f"LRN-{opset} bias {bias} alpha {alpha} {dtype.__name__}")


def test_lrn_negative_fractional_bias_is_refused() -> None:
    x = np.ones((1, 3, 2, 2), np.float32)
    with pytest.raises(UnsupportedError, match=r"\(LRN-13\): bias=-0.5: .*a positive bias"):
        onnx_to_ov_model(make_model("LRN", 13, [x], {"size": 3, "bias": -0.5}))


# --- LSTM peepholes and input_forget: refused by name ----------------------------------------------


def _lstm(opset: int, peepholes: np.ndarray | None, constant: tuple[int, ...] = (), **attrs: object) -> onnx.ModelProto:
    x = np.ones((2, 1, 2), np.float32)
    w, r = np.full((1, 8, 2), 0.5, np.float32), np.full((1, 8, 2), 0.25, np.float32)
    inputs = [x, w, r] + ([None, None, None, None, peepholes] if peepholes is not None else [])
    model = make_model("LSTM", opset, inputs, {"hidden_size": 2, **attrs}, constant=constant)
    model.graph.node[0].name = "cell"
    return model


@pytest.mark.parametrize("opset", since_opsets("LSTM"))
def test_lstm_peepholes_and_input_forget_are_refused_by_name(opset: int) -> None:
    since = onnx.defs.get_schema("LSTM", opset).since_version
    for model, condition in (
        (_lstm(opset, np.full((1, 6), 0.5, np.float32)), "peepholes (input P)"),
        (_lstm(opset, np.full((1, 6), 0.5, np.float32), constant=(7,)), "peepholes (input P)"),
        (_lstm(opset, None, input_forget=1), "input_forget=1"),
    ):
        with pytest.raises(UnsupportedError) as refused:
            onnx_to_ov_model(model)
        message = str(refused.value)
        assert f"node 'cell' (LSTM-{since}): {condition}: OpenVINO drops" in message and len(message.splitlines()) == 1, message


@pytest.mark.parametrize("opset", since_opsets("LSTM"))
def test_lstm_zero_peepholes_are_no_peepholes(opset: int) -> None:
    model = _lstm(opset, np.zeros((1, 6), np.float32), constant=(1, 2, 7))
    x = np.ones((2, 1, 2), np.float32)
    (actual,) = cpu(model, {"x0": x})
    _close(actual, run_ort(model, {"x0": x})[0])


# --- ReduceL1, ReduceLogSum, ReduceLogSumExp-13: the axes attribute ----------------------------------


def _reduced(op: str, x: np.ndarray, axes: list[int], keepdims: int) -> np.ndarray:
    """The schema over ``axes`` in float64: sum |x|, log sum x, log sum exp x."""
    wide = x.astype(np.float64)
    axis = tuple(a % x.ndim for a in axes)
    if op == "ReduceL1":
        out = np.abs(wide).sum(axis=axis, keepdims=bool(keepdims))
    elif op == "ReduceLogSum":
        out = np.log(wide.sum(axis=axis, keepdims=bool(keepdims)))
    else:
        out = np.log(np.exp(wide).sum(axis=axis, keepdims=bool(keepdims)))
    return np.asarray(out)


@pytest.mark.parametrize("op", ["ReduceL1", "ReduceLogSum", "ReduceLogSumExp"])
@examples(6)
@given(data=st.data())
def test_reduce_13_reads_the_axes_attribute(op: str, data: st.DataObject) -> None:
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple))
    rank = len(shape)
    axes = data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank, unique_by=lambda a: a % rank))
    keepdims = data.draw(st.integers(0, 1))
    x = (drawn_rng(data.draw).random(shape) + 0.5).astype(np.float32)
    model = make_model(op, 13, [x], {"axes": axes, "keepdims": keepdims})
    feeds = feeds_of(model, [x])
    (actual,) = cpu(model, feeds)
    _close(actual, _reduced(op, x, axes, keepdims), what=f"{op}-13 axes={axes} keepdims={keepdims} of {shape}")
    _close(actual, run_ort(model, feeds)[0], what="against onnxruntime")


# --- ReduceX-18 noop_with_empty_axes=1 without axes: the elementwise step --------------------------


def _elementwise(op: str, x: np.ndarray) -> np.ndarray:
    """The schema's reduction over no axes, one value at a time in Python floats: |x|, sqrt(x*x),
    x*x, log(x), log(exp(x)) = x."""
    steps = {
        "ReduceL1": abs,
        "ReduceL2": lambda v: (v * v) ** 0.5,
        "ReduceSumSquare": lambda v: v * v,
        "ReduceLogSum": np.log,
        "ReduceLogSumExp": lambda v: v,
    }
    return np.array([steps[op](float(v)) for v in x.reshape(-1)], np.float64).reshape(x.shape)


NOOP_OPS = ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


@pytest.mark.parametrize("opset", since_opsets("ReduceL1", lowest=18))
@pytest.mark.parametrize("op", NOOP_OPS)
@pytest.mark.parametrize("axes", [None, "empty", "empty input"])
def test_reduce_18_over_no_axes_keeps_the_elementwise_step(opset: int, op: str, axes: str | None) -> None:
    for dtype in (np.float32, np.int32):
        x = np.array([[0.5, 2.0, 3.0], [1.0, 7.0, 100.0]]).astype(dtype)
        inputs = [x] if axes is None else [x, np.zeros(0, np.int64)]
        model = make_model(
            op, opset, inputs, {"noop_with_empty_axes": 1, "keepdims": 0}, constant=() if axes == "empty input" else (1,)
        )
        feeds = feeds_of(model, inputs)
        (actual,) = cpu(model, feeds)
        expected = _elementwise(op, x)
        if dtype == np.int32:
            if op in ("ReduceLogSum",):
                continue  # OpenVINO CPU rounds an integer Log (a runtime deviation of its own)
            expected = np.trunc(expected)
        _close(actual, expected, rtol=1e-6, atol=1e-6, what=f"{op}-{opset} {np.dtype(dtype).name}")
        _close(actual, run_ort(model, feeds)[0], rtol=1e-6, atol=1e-6, what="against onnxruntime")


# --- Range: an empty range is empty ------------------------------------------------------------------


def _range(start: float, limit: float, delta: float, dtype: type) -> np.ndarray:
    """The schema: max(ceil((limit - start) / delta), 0) elements start + i * delta."""
    count = max(int(np.ceil((limit - start) / delta)), 0)
    return np.array([start + i * delta for i in range(count)], dtype)


@pytest.mark.parametrize("opset", since_opsets("Range"))
@pytest.mark.parametrize("constant", [(), (0, 1, 2)])
@examples(8)
@given(data=st.data())
def test_range_empty_or_not(opset: int, constant: tuple[int, ...], data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from([np.int32, np.int64, np.float32]))
    start, limit = (data.draw(st.integers(-6, 6)) for _ in range(2))
    delta = data.draw(st.sampled_from([-3, -2, -1, 1, 2, 3] if dtype != np.float32 else [-1.5, -1.0, 0.5, 2.0]))
    inputs = [np.array(v, dtype) for v in (start, limit, delta)]
    model = make_model("Range", opset, inputs, constant=constant)
    feeds = feeds_of(model, inputs)
    (actual,) = cpu(model, feeds)
    expected = _range(*(float(v) for v in inputs), dtype)  # type: ignore[arg-type]
    _close(actual, expected, what=f"Range({start}, {limit}, {delta}) {np.dtype(dtype).name}")
    _close(actual, run_ort(model, feeds)[0], what="against onnxruntime")


# --- Pad: constant_value from a graph input ----------------------------------------------------------


@pytest.mark.parametrize("opset", [o for o in since_opsets("Pad") if o >= 11])
@examples(4)
@given(data=st.data())
def test_pad_value_from_a_graph_input(opset: int, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from([np.float32, np.int32, np.int64]))
    shape = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
    rank = len(shape)
    pads = [data.draw(st.integers(0, 2)) for _ in range(2 * rank)]
    x = drawn_rng(data.draw).integers(-5, 5, shape).astype(dtype)
    value = np.array(data.draw(st.integers(-9, 9)), dtype)
    model = make_model("Pad", opset, [x, np.array(pads, np.int64), value], {"mode": "constant"}, constant=(1,))
    feeds = feeds_of(model, [x, np.array(pads, np.int64), value])
    (actual,) = cpu(model, feeds)
    expected = np.pad(x, list(zip(pads[:rank], pads[rank:])), constant_values=value)
    np.testing.assert_array_equal(actual, expected)
    np.testing.assert_array_equal(actual, run_ort(model, feeds)[0])


# --- ConvTranspose output_shape with groups: the schema's pads ---------------------------------------


@pytest.mark.parametrize("opset", since_opsets("ConvTranspose"))
@examples(6)
@given(data=st.data())
def test_grouped_conv_transpose_output_shape_is_its_pads(opset: int, data: st.DataObject) -> None:
    spatial = data.draw(st.integers(1, 2))
    group = data.draw(st.integers(2, 3))
    sizes = [data.draw(st.integers(1, 4)) for _ in range(spatial)]
    kernel = [data.draw(st.integers(1, 3)) for _ in range(spatial)]
    strides = [data.draw(st.integers(1, 3)) for _ in range(spatial)]
    dilations = [data.draw(st.integers(1, 2)) for _ in range(spatial)]
    natural = [s * (n - 1) + (k - 1) * d + 1 for s, n, k, d in zip(strides, sizes, kernel, dilations)]
    wanted = [data.draw(st.integers(1, n)) for n in natural]
    rng = drawn_rng(data.draw)
    x = rng.standard_normal((1, 2 * group, *sizes)).astype(np.float32)
    w = rng.standard_normal((2 * group, 2, *kernel)).astype(np.float32)
    attrs = {"group": group, "strides": strides, "dilations": dilations, "output_shape": wanted}
    if data.draw(st.booleans()):
        attrs["auto_pad"] = "SAME_UPPER"
    model = make_model("ConvTranspose", opset, [x, w], attrs, constant=(1,))
    feeds = feeds_of(model, [x, w])
    (actual,) = cpu(model, feeds)
    _close(actual, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4, what=f"ConvTranspose-{opset} {attrs} on {x.shape}")


def test_grouped_conv_transpose_output_shape_beyond_the_natural_size_is_refused() -> None:
    x, w = np.ones((1, 4, 3), np.float32), np.ones((4, 1, 2), np.float32)
    model = make_model("ConvTranspose", 22, [x, w], {"group": 4, "strides": [2], "output_shape": [7]}, constant=(1,))
    with pytest.raises(UnsupportedError, match=r"\(ConvTranspose-22\): output_shape=\[7\] with group=4: .*\(axis 2: 7 > 6\)"):
        onnx_to_ov_model(model)


# --- Gather of empty indices, Compress of an empty condition -----------------------------------------


@pytest.mark.parametrize("opset", since_opsets("Gather"))
@pytest.mark.parametrize("constant", [(), (1,)])
@pytest.mark.parametrize(("shape", "axis", "indices"), [((4,), 0, (0, 2)), ((2, 3, 4), 1, (2, 0)), ((2, 3), -1, (0,))])
def test_gather_of_empty_indices(
    opset: int, constant: tuple[int, ...], shape: tuple[int, ...], axis: int, indices: tuple[int, ...]
) -> None:
    """ONNX's result has the indices' shape in place of the axis ([0, 2] for indices [0, 2] of a
    [4] tensor); OpenVINO gives a rank-0 result for constant indices and its CPU plugin dies of
    SIGFPE on a graph input's."""
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    inputs = [x, np.zeros(indices, np.int64)]
    model = make_model("Gather", opset, inputs, {"axis": axis}, constant=constant)
    feeds = {"x0": x}  # an input of a zero dim is folded into a Const by the frontend (openvino_known)
    (actual,) = cpu(model, feeds)
    expected = run_ort(model, feeds_of(model, inputs))[0]
    assert actual.shape == expected.shape == shape[: axis % len(shape)] + indices + shape[axis % len(shape) + 1 :]


@pytest.mark.parametrize("opset", since_opsets("Compress"))
@pytest.mark.parametrize("constant", [(), (1,)])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_compress_of_an_empty_condition(opset: int, constant: tuple[int, ...], axis: int | None) -> None:
    """An empty condition selects nothing: [0, 3] on axis 0 of [2, 3], [0] without an axis; OpenVINO
    CPU's compile_model dies of SIGFPE on it."""
    x = np.ones((2, 3), np.float32)
    inputs = [x, np.zeros(0, bool)]
    model = make_model("Compress", opset, inputs, {} if axis is None else {"axis": axis}, constant=constant)
    (actual,) = cpu(model, {"x0": x})
    expected = run_ort(model, feeds_of(model, inputs))[0]
    assert actual.shape == expected.shape and actual.dtype == expected.dtype


# --- IR that would not compile: TopK K = 0 lowered; the rest refused by name -------------------------


@pytest.mark.parametrize("opset", [o for o in since_opsets("TopK") if o >= 10])
@pytest.mark.parametrize(("shape", "axis"), [((2, 5), 1), ((3,), 0), ((2, 3, 4), -2)])
def test_topk_of_k_zero_gives_empty_outputs(opset: int, shape: tuple[int, ...], axis: int) -> None:
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    inputs = [x, np.array([0], np.int64)]
    model = make_model("TopK", opset, inputs, {"axis": axis}, n_outputs=2, constant=(1,))
    feeds = feeds_of(model, inputs)
    actual, expected = cpu(model, feeds), run_ort(model, feeds)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)


def _recurrent(op: str, opset: int, activations: list[str]) -> onnx.ModelProto:
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    inputs = [
        np.ones((2, 1, 2), np.float32),
        np.full((1, 2 * gates, 2), 0.5, np.float32),
        np.full((1, 2 * gates, 2), 0.25, np.float32),
    ]
    return make_model(op, opset, inputs, {"hidden_size": 2, "activations": activations})


REFUSED = [
    *(
        (make_model("Cast", opset, [np.ones(2, np.float32)], {"to": onnx.TensorProto.STRING}), "to=STRING")
        for opset in since_opsets("Cast")
    ),
    *(
        (make_model("CastLike", opset, [np.ones(2, np.float32), np.array(["a"], object)], constant=(1,)), "a STRING target")
        for opset in since_opsets("CastLike")
    ),
    *(
        (make_model("Unsqueeze", opset, [np.ones((3, 4), np.float32), np.array([0], np.int64)]), "axes from the graph input 'x1'")
        for opset in since_opsets("Unsqueeze", lowest=13)
    ),
    *(
        (
            make_model("Squeeze", opset, [np.ones((3, 1, 1), np.float32), np.array([1, 2], np.int64)]),
            "axes from the graph input 'x1'",
        )
        for opset in since_opsets("Squeeze", lowest=13)
    ),
    *(
        (_recurrent(op, opset, activations), f"activation '{activations[-1]}'")
        for op, activations in (("RNN", ["Softsign"]), ("GRU", ["Sigmoid", "HardSigmoid"]), ("LSTM", ["Sigmoid", "Tanh", "Elu"]))
        for opset in since_opsets(op)
    ),
    *(
        (
            make_model(op, opset, [np.ones((2, 3, 4), np.float32), np.array([1, 2], np.int64)], {"keepdims": 0}),
            "keepdims=0 with axes from the graph input 'x1'",
        )
        for op in (
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceMax",
            "ReduceMean",
            "ReduceMin",
            "ReduceProd",
        )
        + ("ReduceSum", "ReduceSumSquare")
        for opset in since_opsets(op, lowest=13 if op == "ReduceSum" else 18)
    ),
]


@pytest.mark.parametrize(("model", "condition"), REFUSED, ids=lambda v: v if isinstance(v, str) else None)
def test_nodes_whose_ir_would_not_compile_are_refused_by_name(model: onnx.ModelProto, condition: str) -> None:
    node = model.graph.node[0]
    since = onnx.defs.get_schema(node.op_type, model.opset_import[0].version).since_version
    with pytest.raises(UnsupportedError) as refused:
        onnx_to_ov_model(model)
    message = str(refused.value)
    assert f"node '{node.name}' ({node.op_type}-{since}): {condition}" in message and len(message.splitlines()) == 1, message


# --- pass-through nodes: the IR's Parameter keeps the ONNX input's name -----------------------------


PASS_THROUGH = [(op, opset) for op in ("Dropout", "Max", "Min", "Sum", "Mean") for opset in since_opsets(op)]


@pytest.mark.parametrize(("op", "opset"), PASS_THROUGH)
def test_a_pass_through_node_keeps_the_input_name_in_the_ir(op: str, opset: int, tmp_path: Path) -> None:
    """Inference Dropout and one-input Max/Min/Sum/Mean are the identity: the IR's Parameter is
    fed by the ONNX input's name (x0) and its output read by the ONNX output's (y0)."""
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    model = make_model(op, opset, [x])
    source = tmp_path / "m.onnx"
    onnx.save(model, source)
    files = onnx_to_ir(source)
    core = ov.Core()
    compiled = core.compile_model(
        core.read_model(model=files[".xml"].decode(), weights=ov.Tensor(np.frombuffer(files[".bin"] or b"\0", np.uint8))),
        "CPU",
        F32,
    )
    assert [sorted(p.get_names()) for p in compiled.inputs] == [["x0"]]
    assert "y0" in compiled.outputs[0].get_names()
    np.testing.assert_array_equal(compiled({"x0": x})[0], run_ort(model, {"x0": x})[0])
    # run from memory too (a Result's own names there are the input's), and the IR on numpy: y0
    assert list(ovpool.run(model, {"x0": x}, device="CPU", fallback="none")) == ["y0"]
    (tmp_path / "m.xml").write_bytes(files[".xml"])
    (tmp_path / "m.bin").write_bytes(files[".bin"] or b"")
    assert list(ovpool.run(tmp_path / "m.xml", {"x0": x}, device="numpy")) == ["y0"]


def test_a_model_of_ai_onnx_ml_only_is_refused_for_having_no_openvino_rule() -> None:
    """Binarizer in a model importing ai.onnx.ml alone: OpenVINO has no rule for it, and that is
    the refusal (not the loader's "imports no default-domain opset")."""
    x_in = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])
    y_out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3])
    node = helper.make_node("Binarizer", ["x"], ["y"], name="b", domain="ai.onnx.ml", threshold=0.5)
    graph = helper.make_graph([node], "g", [x_in], [y_out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)])
    with pytest.raises(UnsupportedError) as refused:
        onnx_to_ov_model(model)
    assert str(refused.value) == "g: no OpenVINO conversion rule for ai.onnx.ml.Binarizer"


def test_a_graph_input_with_a_zero_dim_stays_an_input_of_the_ir(tmp_path: Path) -> None:
    """OpenVINO folds an input of shape [0] into a Const (exact: it has one value); the IR still
    declares it, in the graph's order, so a feed by every ONNX input name works."""
    a, empty, b = np.ones(2, np.float32), np.zeros(0, np.float32), np.full(1, 3.0, np.float32)
    model = make_model("Concat", 13, [a, empty, b], {"axis": 0})
    source = tmp_path / "m.onnx"
    onnx.save(model, source)
    files = onnx_to_ir(source)
    core = ov.Core()
    weights = ov.Tensor(np.frombuffer(files[".bin"] or b"\0", np.uint8))
    compiled = core.compile_model(core.read_model(model=files[".xml"].decode(), weights=weights), "CPU", F32)
    assert [sorted(p.get_names()) for p in compiled.inputs] == [["x0"], ["x1"], ["x2"]]
    assert list(compiled.inputs[1].get_partial_shape()) == [ov.Dimension(0)]
    np.testing.assert_array_equal(compiled({"x0": a, "x1": empty, "x2": b})[0], [1, 1, 3])


# --- the README's table is the code's ---------------------------------------------------------------


def test_readme_defect_table_matches_the_code() -> None:
    assert frontend_fixes.readme_table() in README.read_text(encoding="utf-8")


def test_readme_and_semantics_list_the_runtime_deviations_of_the_code() -> None:
    from ovpool.ov import cpu_deviations

    table = cpu_deviations.readme_table()
    assert table in README.read_text(encoding="utf-8")
    semantics = (README.parent / "docs" / "semantics.md").read_text(encoding="utf-8")
    section = semantics.split("## OpenVINO CPU runtime deviations ovpool does not refuse (data-dependent)", 1)[1]
    assert table in section.split("\n## ", 1)[0]


def test_the_tables_have_one_cell_per_column() -> None:
    """No cell text holds a "|" (abs(x), not |x|): every line of both tables has its columns."""
    from ovpool.ov import cpu_deviations

    for table in (frontend_fixes.readme_table(), cpu_deviations.readme_table()):
        lines = table.splitlines()
        assert all(line.count("|") == lines[0].count("|") for line in lines), table


def test_every_row_names_what_openvino_does_and_what_ovpool_does() -> None:
    for defect in frontend_fixes.DEFECTS:
        assert (defect.fix is None) == (defect.lower is None), defect.versions
        assert onnx.defs.get_schema(defect.op_type, defect.first).since_version <= defect.first
