"""``ovpool run`` on the command line: inputs in, outputs out, input checks, fallback messages."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from runtime_support import (
    EXAMPLE,
    fake_gpu,
    invoke,
    invoke_without_openvino,
    ir_numpy_cannot_run,
    pool_model,
    random_input,
    save,
)


def test_readme_first_command(capsys):
    code, out, err = invoke(capsys, "run", EXAMPLE, "--random-inputs")
    assert code == 0, err
    assert "output: shape [1, 4, 1, 1] float32" in out and "pool1_indices: shape [1, 4, 8, 8] int64" in out
    assert "on CPU (OpenVINO, precision f32)" in err


def test_output_npz_keyed_by_output_name_and_force(tmp_path, capsys):
    out_path = tmp_path / "out.npz"
    code, _, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--seed", 3, "--device", "numpy", "--output", out_path)
    assert code == 0, err
    with np.load(out_path) as saved:
        assert sorted(saved.files) == ["output", "pool1_indices"]
        first = saved["output"].copy()
    code, _, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--device", "numpy", "--output", out_path)
    assert code == 2 and "exists (use --force" in err
    code, _, _ = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--seed", 3, "--output", out_path, "--force")
    with np.load(out_path) as saved:
        np.testing.assert_allclose(saved["output"], first, rtol=1e-6)


def test_inputs_from_npz_and_npy(tmp_path, capsys):
    x = random_input((1, 3, 14, 14))
    np.savez(tmp_path / "in.npz", input=x)
    np.save(tmp_path / "x.npy", x)
    code_a, out_a, _ = invoke(capsys, "run", EXAMPLE, "--inputs", tmp_path / "in.npz", "--device", "numpy")
    code_b, out_b, _ = invoke(capsys, "run", EXAMPLE, "-i", f"input={tmp_path / 'x.npy'}", "--device", "numpy")
    assert code_a == code_b == 0 and out_a == out_b


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.zeros((1, 3, 14, 14), np.float64), "input 'input' is float64, the model declares input: float32 [1, 3, 14, 14]"),
        (np.zeros((3, 14, 14), np.float32), "input 'input' has rank 3 [3, 14, 14]"),
        (np.zeros((1, 3, 16, 14), np.float32), "input 'input' axis 2 is 16, the model declares 14"),
    ],
)
def test_input_mismatch_is_a_clear_error(tmp_path, capsys, array, message):
    np.save(tmp_path / "x.npy", array)
    for device in ("numpy", "CPU"):
        code, _, err = invoke(capsys, "run", EXAMPLE, "-i", f"input={tmp_path / 'x.npy'}", "--device", device)
        assert code == 1 and message in err and "Traceback" not in err


def test_wrong_input_name_and_unreadable_file(tmp_path, capsys):
    np.save(tmp_path / "x.npy", random_input((1, 3, 14, 14)))
    code, _, err = invoke(capsys, "run", EXAMPLE, "-i", f"image={tmp_path / 'x.npy'}")
    assert code == 1 and "missing input(s) 'input'; unknown input(s) 'image' (the model takes input: float32" in err
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    code, _, err = invoke(capsys, "run", EXAMPLE, "--inputs", tmp_path / "bad.npz")
    assert code == 2 and "bad.npz: not a readable .npz" in err
    code, _, err = invoke(capsys, "run", EXAMPLE)
    assert code == 2 and "--random-inputs" in err


def test_random_inputs_need_shape_for_dynamic_dims(tmp_path, capsys):
    model = save(pool_model("MaxPool", [1, 2, "H", "W"], kernel_shape=[2, 2], strides=[2, 2]), tmp_path / "dyn.onnx")
    code, _, err = invoke(capsys, "run", model, "--random-inputs")
    assert code == 1 and "input x: float32 [1, 2, ?, ?] has dynamic dims; give --shape x=" in err
    for device in ("CPU", "numpy"):
        code, out, err = invoke(capsys, "run", model, "--random-inputs", "--shape", "x=1,2,6,8", "--device", device)
        assert code == 0 and "y: shape [1, 2, 3, 4] float32" in out, err
    code, _, err = invoke(capsys, "run", model, "--random-inputs", "--shape", "x=1,2,4")
    assert code == 1 and "rank 3" in err
    code, _, err = invoke(capsys, "run", model, "--random-inputs", "--shape", "x=1,a")
    assert code == 2 and "--shape x=1,a" in err


def test_absent_device_message_and_no_fallback(capsys):
    code, out, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--device", "GPU")
    assert code == 0 and "output: shape" in out
    assert "warning: device 'GPU' is not present; running on CPU instead (devices available: CPU, numpy)\n" in err
    assert f"ran {EXAMPLE} on CPU (OpenVINO, precision f32)" in err
    for flags in (["--no-fallback"], ["--fallback", "none"]):
        code, out, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--device", "GPU", *flags)
        assert code == 1 and out == ""
        assert "error: device 'GPU' is not present; not falling back (--fallback none). Devices available: CPU, numpy" in err
    code, _, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--fallback", "gpu")
    assert code == 2 and "error: fallback 'gpu': expected one of none, cpu, numpy" in err


def test_compile_failure_message(monkeypatch, capsys):
    fake_gpu(monkeypatch)
    code, _, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--device", "GPU", "--no-cache")
    assert code == 0 and "device 'GPU' cannot compile" in err and "out of device memory; running on CPU instead" in err
    code, _, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--device", "GPU", "--no-fallback", "--no-cache")
    assert code == 1 and "Devices available: CPU, GPU.0, numpy" in err


def test_every_openvino_device_failing_ends_on_numpy_or_stops_at_cpu(monkeypatch, capsys):
    fake_gpu(monkeypatch, cpu_fails=True)
    code, out, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--device", "GPU", "--no-cache")
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert code == 0 and "output: shape [1, 4, 1, 1]" in out
    assert len(warnings) == 2
    assert warnings[0].startswith("warning: device 'GPU' cannot compile") and warnings[0].endswith("trying CPU instead")
    assert warnings[1].startswith("warning: device 'CPU' cannot compile") and warnings[1].endswith(
        "running on numpy instead (devices available: CPU, GPU.0, numpy)"
    )
    assert f"ran {EXAMPLE} on numpy" in err
    code, out, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--device", "GPU", "--fallback", "cpu", "--no-cache")
    assert code == 1 and out == "" and "not falling back to numpy (--fallback cpu)" in err


def test_without_openvino_falls_back_or_fails(tmp_path):
    result = invoke_without_openvino("run", EXAMPLE, "--random-inputs", "--device", "GPU")
    assert result.returncode == 0, result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert "OpenVINO is not available" in warning and warning.endswith("running on numpy instead (devices available: numpy)")
    assert "output: shape [1, 4, 1, 1]" in result.stdout
    result = invoke_without_openvino("run", EXAMPLE, "--random-inputs", "--no-fallback")
    assert result.returncode == 1 and "Devices available: numpy" in result.stderr


def test_fallback_that_numpy_cannot_run_says_each_step(tmp_path, monkeypatch, capsys):
    fake_gpu(monkeypatch, cpu_fails=True)
    xml = ir_numpy_cannot_run(tmp_path / "patches.xml")
    code, out, err = invoke(capsys, "run", xml, "--random-inputs", "--device", "NPU", "--no-cache")
    assert code == 1 and out == ""
    assert "error: device 'NPU' is not present; device 'CPU' cannot compile" in err
    assert "; the numpy fallback cannot run it either:" in err and "ExtractImagePatches" in err


def test_hostile_inputs_are_one_line_errors(tmp_path, capsys):
    """Each bad invocation exits with its code and one ``error:`` line naming what is wrong."""
    np.savez(tmp_path / "in.npz", input=random_input((1, 3, 14, 14)))
    (tmp_path / "empty.onnx").write_bytes(b"")
    (tmp_path / "folder.npz").mkdir()
    (tmp_path / "garbage.xml").write_text("garbage")
    cases = [
        (2, ["run", tmp_path / "empty.onnx", "--random-inputs"], "empty.onnx: not an ONNX model"),
        (2, ["run", tmp_path / "garbage.xml", "--random-inputs"], "garbage.xml:1:1: malformed XML"),
        (2, ["run", tmp_path / "folder.npz", "--random-inputs"], "unknown model format"),
        (2, ["run", EXAMPLE, "-i", f"input={tmp_path / 'in.npz'}"], "in.npz is an .npz archive, not one .npy array"),
        (2, ["run", EXAMPLE, "-i", f"input={tmp_path / 'none.npy'}"], "none.npy: no such file"),
        (2, ["run", EXAMPLE, "--random-inputs", "--precision", "f64"], "precision 'f64': expected one of"),
        (
            2,
            ["run", EXAMPLE, "--random-inputs", "--device", "numpy", "--precision", "f16"],
            "precision 'f16' applies to OpenVINO",
        ),
        (2, ["run", EXAMPLE, "--random-inputs", "--output", tmp_path / "folder.npz", "--force"], "is a folder"),
        (
            2,
            ["run", EXAMPLE, "--random-inputs", "--output", tmp_path / "empty.onnx" / "o.npz"],
            "empty.onnx is a file, not a folder",
        ),
        (2, ["run", EXAMPLE, "--random-inputs", "--output", EXAMPLE, "--force"], "refusing to overwrite an input file"),
    ]
    for code, args, message in cases:
        got, out, err = invoke(capsys, *args)
        assert (got, out) == (code, ""), (args, err)
        lines = err.strip().splitlines()
        assert lines[-1].startswith("error: ") and message in lines[-1], (args, err)
        assert "Traceback" not in err and "WARNING" not in err, (args, err)


def test_numpy_run_refuses_a_node_it_has_no_kernel_for(tmp_path, capsys):
    """No node runs on onnx.reference: one without a kernel (the training domain's Gradient) is
    refused naming the node and its version; a model ovpool runs is called exact."""
    gradient = helper.make_node("Gradient", ["x"], ["dx"], name="grad", domain="ai.onnx.preview.training", xs=["x"], y="x")
    graph = helper.make_graph(
        [gradient],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("dx", TensorProto.FLOAT, [2])],
    )
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.preview.training", 1)]
    path = tmp_path / "gradient.onnx"
    onnx.save(helper.make_model(graph, opset_imports=imports, ir_version=8), path)
    code, _, err = invoke(capsys, "run", path, "--random-inputs", "--device", "numpy", "--fallback", "none")
    assert code == 1 and "Traceback" not in err
    assert "node 'grad' (Gradient-1): ovpool's numpy executor has no ai.onnx.preview.training.Gradient-1" in err, err
    code, _, err = invoke(capsys, "run", EXAMPLE, "--random-inputs", "--device", "numpy")
    assert code == 0 and "(exact numpy executor)" in err
