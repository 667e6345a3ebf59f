"""ONNX -> OpenVINO IR (``ovpool convert``): ONNX's backend pooling cases run on OpenVINO CPU at f32,
dynamic dims, the shape check, bad input, external data, batch mode and the command line.

``run_ov`` is shared with the other ``test_onnx_to_ir_*`` files.
"""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import oracle
import pytest
from backend_cases import SKIP_ONNX_READING, pooling_cases
from onnx import TensorProto, helper, numpy_helper

import ovpool
from ovpool.conversions import convert
from ovpool.errors import InputFileError, ModelError, UnsupportedError
from ovpool.ov.from_onnx import check_shapes, onnx_to_ov_model

ov = pytest.importorskip("openvino")
pytestmark = pytest.mark.openvino

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
EXAMPLE = Path(ovpool.__file__).parent / "examples" / "tiny_pool.onnx"


def run_ov(model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Convert with ovpool and run on OpenVINO CPU at f32: ``{output name: array}``. bfloat16
    goes in and out as raw bits (OpenVINO's Python arrays would read it as float16)."""
    compiled = ov.Core().compile_model(onnx_to_ov_model(model), "CPU", F32)
    request = compiled.create_infer_request()
    request.infer({name: _tensor(value) for name, value in inputs.items()})
    return {output.get_any_name(): _array(request.get_tensor(output)) for output in compiled.outputs}


def _tensor(value: np.ndarray):
    if value.dtype.name != "bfloat16":
        return value
    tensor = ov.Tensor(ov.Type.bf16, ov.Shape(list(value.shape)))
    tensor.data[:] = value.view(tensor.data.dtype)
    return tensor


def _array(tensor) -> np.ndarray:
    if tensor.get_element_type() == ov.Type.bf16:
        import ml_dtypes

        return tensor.data.view(ml_dtypes.bfloat16).copy()
    return tensor.data.copy()


def single_op(node, inputs, outputs, opset: int, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph([node], "case", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _value(name: str, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


# --- ONNX's own backend cases --------------------------------------------------------------------

CASES = [c for c in pooling_cases() if c[0] not in SKIP_ONNX_READING]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_backend_case_on_openvino(case):
    name, model, inputs, expected = case
    got = run_ov(model, inputs)
    for output, want in zip(model.graph.output, expected):
        value = got[output.name]
        assert value.shape == want.shape, name
        assert value.dtype == want.dtype, name
        # ONNX's backend runner uses rtol=1e-3, atol=1e-7: some expected values have 4 digits.
        np.testing.assert_allclose(value, want, rtol=1e-3, atol=1e-7, err_msg=name)


def test_backend_cases_are_all_there():
    assert len(CASES) >= 40


# --- stock OpenVINO versus ovpool ---------------------------------------------------------------


def _ceil_maxpool() -> onnx.ModelProto:
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[3, 3], ceil_mode=1)
    return single_op(node, [_value("x", [1, 1, 6, 6])], [_value("y", None)], 13)


def test_stock_openvino_gets_ceil_wrong_and_ovpool_gets_it_right(tmp_path):
    model = _ceil_maxpool()
    x = np.arange(36, dtype=np.float32).reshape(1, 1, 6, 6)
    want, _ = oracle.pool(x, "max", {"kernel_shape": [2, 2], "strides": [3, 3], "ceil_mode": 1})
    path = tmp_path / "ceil.onnx"
    onnx.save(model, path)
    stock = ov.Core().compile_model(ov.convert_model(str(path)), "CPU", F32)(x)[0]
    assert stock.shape == (1, 1, 3, 3) != want.shape  # OpenVINO's `ceil` keeps a window wholly in padding
    assert run_ov(model, {"x": x})["y"].shape == want.shape == (1, 1, 2, 2)
    np.testing.assert_array_equal(run_ov(model, {"x": x})["y"], want)


def test_include_pad_ceil_divisor():
    """4x4, k3 s2 p1, ceil, count_include_pad: the last window holds 2 input cells over 6 taps."""
    node = helper.make_node(
        "AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1
    )
    model = single_op(node, [_value("x", [1, 1, 4, 4])], [_value("y", None)], 19)
    got = run_ov(model, {"x": np.ones((1, 1, 4, 4), np.float32)})["y"]
    assert got.shape == (1, 1, 3, 3)
    np.testing.assert_allclose(got[0, 0, 0], [4 / 9, 6 / 9, 2 / 6], rtol=1e-6)


# --- dynamic spatial dims ------------------------------------------------------------------------

DYNAMIC = [
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 1, 1], "ceil_mode": 1, "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1}),
    (
        "AveragePool",
        {"kernel_shape": [3, 2], "strides": [2, 1], "dilations": [2, 1], "auto_pad": "SAME_LOWER", "count_include_pad": 1},
    ),
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "dilations": [2, 2], "auto_pad": "SAME_UPPER"}),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
]


@pytest.mark.parametrize("op_type, attrs", DYNAMIC)
def test_dynamic_spatial_dims(op_type, attrs):
    node = helper.make_node(op_type, ["x"], ["y"], **attrs)
    model = single_op(node, [_value("x", [1, 2, "h", "w"])], [_value("y", None)], 19)
    compiled = ov.Core().compile_model(onnx_to_ov_model(model), "CPU", F32)
    rng = np.random.default_rng(1)
    for h, w in ((4, 4), (5, 7), (8, 6)):
        x = rng.standard_normal((1, 2, h, w)).astype(np.float32)
        want = oracle.pool(x, "avg" if op_type == "AveragePool" else "max", attrs)
        want = want if op_type == "AveragePool" else want[0]
        got = compiled(x)[0]
        assert got.shape == want.shape, (h, w)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_storage_order_needs_static_dims():
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="mp", kernel_shape=[2, 2], storage_order=1)
    model = single_op(node, [_value("x", [1, 1, "h", 4])], [_value("y", None), _value("i", None, TensorProto.INT64)], 12)
    with pytest.raises(UnsupportedError, match="node 'mp'.*storage_order=1"):
        onnx_to_ov_model(model)


# --- MaxUnpool -----------------------------------------------------------------------------------


def test_unpool_out_of_range_indices_are_dropped():
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    model = single_op(node, [_value("x", [1, 1, 2, 2]), _value("i", [1, 1, 2, 2], TensorProto.INT64)], [_value("y", None)], 11)
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
    indices = np.array([0, 99, -1, 15], np.int64).reshape(1, 1, 2, 2)
    got = run_ov(model, {"x": x, "i": indices})["y"]
    want = np.zeros(16, np.float32)
    want[[0, 15]] = [1, 4]
    np.testing.assert_array_equal(got, want.reshape(1, 1, 4, 4))


# --- shape check, data types ---------------------------------------------------------------------


def test_shape_check_names_the_node():
    from ovpool.ov import extension as ov_extension

    pools = ov_extension.PoolExtensions(_ceil_maxpool())
    fe = ov.frontend.FrontEndManager().load_by_framework("onnx")
    for extension in pools.extensions():
        fe.add_extension(extension)
    fe.convert(fe.load(io.BytesIO(_ceil_maxpool().SerializeToString())))
    check_shapes(pools.lowered)
    wrong = dataclasses.replace(pools.lowered[0], spec=pools.lowered[0].spec.with_(rounding=ovpool.Rounding.CEIL_NO_DROP))
    with pytest.raises(ModelError, match="shape engine gives \\[1, 1, 3, 3\\]"):
        check_shapes([wrong])


def test_float64_is_refused_naming_the_node():
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool64", kernel_shape=[2, 2])
    model = single_op(node, [_value("x", [1, 1, 4, 4], TensorProto.DOUBLE)], [_value("y", None, TensorProto.DOUBLE)], 13)
    with pytest.raises(UnsupportedError, match="node 'pool64'.*float64"):
        onnx_to_ov_model(model)


def test_float16_and_int8():
    for elem, dtype in ((TensorProto.FLOAT16, np.float16), (TensorProto.INT8, np.int8)):
        node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
        model = single_op(
            node, [_value("x", [1, 2, 5, 5], elem)], [_value("y", None, elem), _value("i", None, TensorProto.INT64)], 12
        )
        x = np.random.default_rng(0).integers(-100, 100, (1, 2, 5, 5)).astype(dtype)
        want, want_i = oracle.pool(x, "max", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1})
        got = run_ov(model, {"x": x})
        assert got["y"].dtype == dtype
        np.testing.assert_array_equal(got["y"], want.astype(dtype))
        np.testing.assert_array_equal(got["i"], want_i)


# --- files, bad input, external data, command line -----------------------------------------------


def test_example_matches_numpy_executor_and_keeps_names(tmp_path):
    written = convert(EXAMPLE, tmp_path / "tiny.xml")
    assert sorted(p.name for p in written) == ["tiny.bin", "tiny.xml"]
    model = ov.Core().read_model(str(tmp_path / "tiny.xml"))
    assert [i.get_any_name() for i in model.inputs] == ["input"]
    assert sorted(o.get_any_name() for o in model.outputs) == ["output", "pool1_indices"]
    x = np.random.default_rng(0).standard_normal((1, 3, 14, 14)).astype(np.float32)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = {o.get_any_name(): v for o, v in compiled(x).items()}
    want = ovpool.run(EXAMPLE, {"input": x})
    np.testing.assert_allclose(got["output"], want["output"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["pool1_indices"], want["pool1_indices"])
    xml = (tmp_path / "tiny.xml").read_text()
    assert 'rounding_type="ceil_torch"' in xml and 'rounding_type="ceil"' not in xml
    with pytest.raises(ovpool.OvpoolError, match="exists"):
        convert(EXAMPLE, tmp_path / "tiny.xml")


def _write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_bad_files(tmp_path):
    good = EXAMPLE.read_bytes()
    with pytest.raises(InputFileError, match="truncated.onnx"):
        onnx_to_ov_model(_write_bytes(tmp_path / "truncated.onnx", good[: len(good) // 2]))
    with pytest.raises(InputFileError, match="garbage.onnx"):
        onnx_to_ov_model(_write_bytes(tmp_path / "garbage.onnx", b"not a model at all"))


def test_unsupported_op_is_named():
    node = helper.make_node("FooBar", ["x"], ["y"])
    model = single_op(node, [_value("x", [1, 1, 4, 4])], [_value("y", None)], 13)
    with pytest.raises(UnsupportedError, match="FooBar-13"):
        onnx_to_ov_model(model)


def _conv_pool_model() -> onnx.ModelProto:
    weights = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 2, 3, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3]),
        helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    ]
    graph = helper.make_graph(nodes, "conv_pool", [_value("x", [1, 2, 8, 8])], [_value("y", None)], [weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_external_data_converts_and_is_checked(tmp_path):
    path = tmp_path / "ext.onnx"
    onnx.save_model(_conv_pool_model(), str(path), save_as_external_data=True, location="ext.data", size_threshold=0)
    x = np.random.default_rng(1).standard_normal((1, 2, 8, 8)).astype(np.float32)
    want = ovpool.run(_conv_pool_model(), {"x": x})["y"]
    np.testing.assert_allclose(run_ov(path, {"x": x})["y"], want, rtol=1e-5, atol=1e-5)
    (tmp_path / "ext.data").unlink()
    with pytest.raises(InputFileError, match="missing"):
        onnx_to_ov_model(path)
    outside = onnx.load(str(path), load_external_data=False)
    for entry in outside.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = "../secret.data"
    onnx.save(outside, str(path))
    with pytest.raises(InputFileError, match="outside the model's folder"):
        onnx_to_ov_model(path)


def test_cli_batch_with_a_broken_source(tmp_path):
    broken = _write_bytes(tmp_path / "broken.onnx", b"\x08\x07garbage")
    second = tmp_path / "second.onnx"
    onnx.save(_ceil_maxpool(), second)
    out = tmp_path / "out"
    command = [sys.executable, "-c", "from ovpool.cli.app import main; main()", "convert"]
    result = subprocess.run(
        [*command, str(EXAMPLE), str(broken), str(second), "--output-dir", str(out)], capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "broken.onnx" in result.stderr and "2 of 3 succeeded" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["second.bin", "second.xml", "tiny_pool.bin", "tiny_pool.xml"]
    again = subprocess.run([*command, str(second), "--output-dir", str(out)], capture_output=True, text=True)
    assert again.returncode == 2 and "--force" in again.stderr
    forced = subprocess.run([*command, str(second), "--output-dir", str(out), "--force"], capture_output=True, text=True)
    assert forced.returncode == 0, forced.stderr


def test_cli_hostile_convert(tmp_path, capsys):
    """Bad sources and outputs: exit code, one ``error:`` line naming the file, nothing overwritten."""
    from runtime_support import invoke

    (tmp_path / "empty.onnx").write_bytes(b"")
    (tmp_path / "folder.onnx").mkdir()
    (tmp_path / "xml.onnx").write_text('<?xml version="1.0"?><net name="x" version="11"><layers/></net>')
    (tmp_path / "out.xml").mkdir()
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool4d", kernel_shape=[1, 1, 1, 1])
    four = tmp_path / "four.onnx"
    onnx.save(single_op(node, [_value("x", [1, 1, 2, 2, 2, 2])], [_value("y", None)], 13), four)
    weights = tmp_path / "w.onnx"
    onnx.save_model(_conv_pool_model(), str(weights), save_as_external_data=True, location="w.bin", size_threshold=0)
    before = (tmp_path / "w.bin").read_bytes()
    cases = [
        (2, ["convert", tmp_path / "empty.onnx"], "empty.onnx: not an ONNX model"),
        (2, ["convert", tmp_path / "folder.onnx"], "folder.onnx: is a folder, not a file"),
        (2, ["convert", tmp_path / "xml.onnx"], "xml.onnx: not a readable ONNX model"),
        (2, ["convert", EXAMPLE, "--to", "bogus"], "--to bogus: expected one of"),
        (2, ["convert", EXAMPLE, "-o", tmp_path / "out.xml", "--force"], "out.xml: is a folder"),
        (2, ["convert", EXAMPLE, "-o", tmp_path / "empty.onnx" / "m.xml"], "empty.onnx is a file, not a folder"),
        (2, ["convert", weights, "-o", tmp_path / "w.xml"], "w.bin: refusing to overwrite an input file"),
        (2, ["convert", weights, "-o", tmp_path / "w.xml", "--force"], "w.bin: refusing to overwrite an input file"),
        (
            2,
            ["convert", EXAMPLE, "-o", EXAMPLE, "--force"],
            "converting onnx to onnx is not supported; onnx converts to dml or ir",
        ),
        (1, ["convert", four, "-o", tmp_path / "four.xml"], "four.onnx: node 'pool4d': OpenVINO pools 1 to 3 spatial axes"),
    ]
    for code, args, message in cases:
        got, _, err = invoke(capsys, *args)
        lines = err.strip().splitlines()
        assert got == code and len(lines) == 1 and message in lines[0], (args, err)
    assert (tmp_path / "w.bin").read_bytes() == before
    assert not (tmp_path / "w.xml").exists() and not (tmp_path / "four.xml").exists()


def test_openvino_refusal_inside_the_extension_names_model_and_node(monkeypatch):
    from ovpool.ov import lowering as ov_lowering

    def refuse(*args):
        raise RuntimeError("Check 'rank' failed at src/pool.cpp:42:\nWhile validating node 'mp':\nExpected a 3D tensor\n")

    monkeypatch.setattr(ov_lowering, "lower", refuse)
    node = helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2])
    model = single_op(node, [_value("x", [1, 1, 4, 4])], [_value("y", None)], 13)
    with pytest.raises(ModelError, match=r"^case: node 'mp' \(MaxPool\): OpenVINO refuses it: Expected a 3D tensor$"):
        onnx_to_ov_model(model)


def test_one_model_converts_to_the_same_ir_whatever_was_converted_before(tmp_path):
    """OpenVINO numbers unnamed nodes (``Pad_10``) with a counter of the whole process; ovpool
    names them after the model alone, so a conversion is the same bytes first, after another
    model, and in another process (``--jobs``)."""
    first = tmp_path / "a.xml"
    convert(EXAMPLE, first)
    unpool = helper.make_graph(
        [helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="up", kernel_shape=[2, 2], strides=[2, 2])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 2, 2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    onnx.save(helper.make_model(unpool, opset_imports=[helper.make_opsetid("", 11)]), str(tmp_path / "u.onnx"))
    convert(tmp_path / "u.onnx", tmp_path / "u.xml")
    again = tmp_path / "b.xml"
    convert(EXAMPLE, again)
    elsewhere = tmp_path / "c.xml"
    script = f"from ovpool.conversions import convert; convert({str(EXAMPLE)!r}, {str(elsewhere)!r})"
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(ovpool.__file__).parents[1])
    for path in (again, elsewhere):
        assert path.read_bytes() == first.read_bytes()
        assert path.with_suffix(".bin").read_bytes() == first.with_suffix(".bin").read_bytes()
    assert b'name="Pad_4" type="Pad"' in first.read_bytes()
