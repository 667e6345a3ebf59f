"""``--verify``: ``convert``, ``transform`` and ``ovpool.convert_model`` check what they write against
the source before writing it, and refuse (exit 1, nothing written, the first layer named) a result
beyond tolerance.

The conversion that changes numbers is a real one: ``--compress-to-fp16`` stores a 1x1 convolution's
weights 1 + 1/3000 as f16 (1.0 or 1.00048), about 3e-4 of the output off, past the default rtol 1e-4.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_support import invoke

import ovpool
from ovpool.check.verify import VerifyOptions
from ovpool.errors import UsageError, VerifyError
from ovpool.examples import path as example_path
from ovpool.transforms.framework import Pass

pytest.importorskip("openvino")


class _Result(NamedTuple):
    exit_code: int
    output: str


@pytest.fixture
def run_cli(capsys):
    """``ovpool ARGS`` in this process: its exit code and stdout + stderr."""

    def run(*args: object) -> _Result:
        code, out, err = invoke(capsys, *args)
        return _Result(code, out + err)

    return run


def _conv_model(tmp_path, dims=(1, 4, 6, 6), name="m.onnx"):
    """x -> Conv 1x1 (weights 1 + 1/3000, not an f16 value) -> MaxPool 2x2 -> y."""
    weights = np.full((4, 4, 1, 1), 1 + 1 / 3000, np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("MaxPool", ["c"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / name
    onnx.save(model, path)
    return path


def test_convert_verifies_and_reports(run_cli, tmp_path):
    result = run_cli("convert", str(example_path("tiny_pool.onnx")), "-o", str(tmp_path / "t.xml"), "--verify")
    assert result.exit_code == 0, result.output
    assert "verified: 2 outputs within rtol 0.0001, atol 1e-06" in result.output
    assert (tmp_path / "t.xml").is_file() and (tmp_path / "t.bin").is_file()


def test_a_conversion_beyond_tolerance_writes_nothing_and_names_the_first_layer(run_cli, tmp_path):
    src = _conv_model(tmp_path)
    out = tmp_path / "out" / "m.xml"
    out.parent.mkdir()
    result = run_cli("convert", str(src), "-o", str(out), "--verify", "--compress-to-fp16")
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {src}: --verify: output 'y' max abs")
    assert "beyond rtol 0.0001, atol 1e-06 (the written model on CPU at f32 against the source on numpy)" in lines[0]
    assert "first beyond tolerance: Conv 'conv'" in lines[0] and lines[0].endswith("nothing written")
    assert list(out.parent.iterdir()) == []
    # the user loosens the tolerance explicitly: f16 weights pass at 1e-3
    result = run_cli("convert", str(src), "-o", str(out), "--verify", "--compress-to-fp16", "--rtol", "1e-3")
    assert result.exit_code == 0, result.output
    assert out.is_file()


def test_verify_inputs_from_a_file(run_cli, tmp_path):
    src = _conv_model(tmp_path, dims=("n", 4, 6, 6))
    npz = tmp_path / "in.npz"
    np.savez(npz, x=np.ones((2, 4, 6, 6), np.float32))
    result = run_cli("convert", str(src), "-o", str(tmp_path / "m.xml"), "--verify", "--verify-inputs", str(npz))
    assert result.exit_code == 0, result.output
    np.savez(tmp_path / "bad.npz", z=np.ones((2, 4, 6, 6), np.float32))
    result = run_cli("convert", str(src), "-o", str(tmp_path / "n.xml"), "--verify", "--verify-inputs", str(tmp_path / "bad.npz"))
    assert result.exit_code == 1 and "missing input(s) 'x'; unknown input(s) 'z'" in result.output
    assert not (tmp_path / "n.xml").exists()


def test_dynamic_dims_need_a_shape(run_cli, tmp_path):
    src = _conv_model(tmp_path, dims=("n", 4, 6, 6))
    result = run_cli("convert", str(src), "-o", str(tmp_path / "m.xml"), "--verify")
    assert result.exit_code == 1
    assert "has dynamic dims" in result.output and "--verify-inputs FILE.npz" in result.output
    assert not (tmp_path / "m.xml").exists()
    result = run_cli("convert", str(src), "-o", str(tmp_path / "m.xml"), "--verify", "--shape", "x=1,4,6,6")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "args",
    [("--rtol", "1e-3"), ("--atol", "0"), ("--verify-inputs", "in.npz"), ("--seed", "3")],
    ids=["rtol", "atol", "inputs", "seed"],
)
def test_verify_options_need_verify(run_cli, tmp_path, args):
    result = run_cli("convert", str(example_path("tiny_pool.onnx")), "-o", str(tmp_path / "t.xml"), *args)
    assert result.exit_code == 2 and "give --verify too" in result.output


def test_bad_tolerance_is_a_usage_error(run_cli, tmp_path):
    result = run_cli("convert", str(example_path("tiny_pool.onnx")), "-o", str(tmp_path / "t.xml"), "--verify", "--rtol", "nan")
    assert result.exit_code == 2 and "--rtol nan: must be a finite number >= 0" in result.output


def test_directml_routes_are_not_verified(run_cli, tmp_path):
    result = run_cli("convert", str(example_path("tiny_pool.onnx")), "-o", str(tmp_path / "t.json"), "--verify")
    assert result.exit_code == 2 and "--verify checks ONNX -> IR and IR -> ONNX conversions, not onnx -> dml" in result.output


def test_ir_to_onnx_verifies_the_written_onnx_against_the_ir(run_cli, tmp_path):
    result = run_cli("convert", str(example_path("spec_example1.xml")), "-o", str(tmp_path / "s.onnx"), "--verify")
    assert result.exit_code == 0, result.output
    assert "verified:" in result.output and (tmp_path / "s.onnx").is_file()


def test_a_batch_verifies_each_file(run_cli, tmp_path):
    good = _conv_model(tmp_path, name="a.onnx")
    also = _conv_model(tmp_path, name="b.onnx")
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli("convert", str(good), str(also), "--output-dir", str(out), "--verify", "--compress-to-fp16", "--jobs", "2")
    assert result.exit_code == 1
    assert result.output.count("--verify: output 'y'") == 2
    assert list(out.iterdir()) == []


def test_convert_model_returns_an_openvino_model(tmp_path):
    import openvino as ov

    model = ovpool.convert_model(example_path("tiny_pool.onnx"), verify=True)
    assert isinstance(model, ov.Model)
    ov.save_model(model, str(tmp_path / "t.xml"), compress_to_fp16=False)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    x = np.random.default_rng(0).standard_normal((1, 3, 14, 14)).astype(np.float32)
    got = compiled({"input": x})
    want = ovpool.run(example_path("tiny_pool.onnx"), {"input": x}, device="numpy")
    np.testing.assert_allclose(got[compiled.output("output")], want["output"], rtol=1e-5, atol=1e-6)
    static = ovpool.convert_model(_conv_model(tmp_path, dims=("n", 4, 6, 6)), inputs="x[2,4,6,6]", verify=True)
    assert list(static.input("x").get_shape()) == [2, 4, 6, 6]


def test_convert_model_verify_options_and_refusal(tmp_path):
    src = _conv_model(tmp_path)
    options = VerifyOptions(inputs={"x": np.full((1, 4, 6, 6), 3.0, np.float32)}, rtol=0, atol=0)
    ovpool.convert_model(src, verify=options)  # f32 weights: 4 equal products summed exactly
    with pytest.raises(UsageError, match="--atol -1"):
        VerifyOptions(atol=-1)


def _breaking_pass() -> Pass:
    """A pass that changes the numbers: the MaxPool becomes an AveragePool."""

    def rewrite(model: onnx.ModelProto) -> bool:
        for node in model.graph.node:
            if node.op_type == "MaxPool":
                node.op_type = "AveragePool"
        return True

    return Pass("break", "turns MaxPool into AveragePool", (), (), rewrite)


def test_transform_verifies_against_its_source(run_cli, tmp_path):
    src = _conv_model(tmp_path)
    result = run_cli("transform", str(src), "--pass", "explicit-pads", "-o", str(tmp_path / "t.onnx"), "--verify")
    assert result.exit_code == 0, result.output
    assert "verified" in result.output
    from ovpool.transforms.apply import transform

    with pytest.raises(
        VerifyError, match=r"\(the written model on numpy against the source on numpy\); first beyond tolerance: MaxPool 'pool'"
    ):
        transform(src, [_breaking_pass()], tmp_path / "broken.onnx", verify=True)
    assert not (tmp_path / "broken.onnx").exists()


def test_dry_run_converts_and_verifies_but_writes_nothing(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny_pool.xml").write_text("kept")
    result = run_cli("convert", str(example_path("tiny_pool.onnx")), "--verify", "--dry-run")
    assert result.exit_code == 0, result.output
    assert f"would write {tmp_path / 'tiny_pool.xml'}" in result.output and "verified: 2 outputs" in result.output
    assert (tmp_path / "tiny_pool.xml").read_text() == "kept" and not (tmp_path / "tiny_pool.bin").exists()
    result = run_cli("convert", str(_conv_model(tmp_path)), "--verify", "--dry-run", "--compress-to-fp16")
    assert result.exit_code == 1 and "first beyond tolerance: Conv 'conv'" in result.output
