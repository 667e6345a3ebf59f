"""Shared by the runtime, devices and bench tests: the CLI in process, small models, a fake GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

EXAMPLE = Path(__file__).resolve().parents[1] / "ovpool" / "examples" / "tiny_pool.onnx"


def invoke(capsys, *args: object) -> tuple[int, str, str]:
    """Run ``ovpool ARGS`` through the console entry point in this process: (exit code, stdout, stderr)."""
    from ovpool.cli.app import main

    saved, environment = sys.argv, dict(os.environ)
    sys.argv = ["ovpool", *map(str, args)]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = saved
        os.environ.clear()  # options such as --max-memory set the environment of the process
        os.environ.update(environment)
    out, err = capsys.readouterr()
    return code, out, err


def invoke_without_openvino(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``ovpool ARGS`` in a subprocess where ``import openvino`` raises ImportError."""
    script = (
        "import sys; sys.modules['openvino'] = None\n"
        "from ovpool.cli.app import main\n"
        f"sys.argv = ['ovpool', *{[str(a) for a in args]!r}]\n"
        "main()\n"
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, timeout=120)


def pool_model(op_type: str, shape: list, ir_version: int = 8, opset: int = 13, **attrs) -> onnx.ModelProto:
    """A one-node ONNX model ``x -> op_type -> y`` (float32); dims may be names (dynamic)."""
    node = helper.make_node(op_type, ["x"], ["y"], name="pool", **attrs)
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)


def undecodable(model: onnx.ModelProto, text: bytes, path: Path) -> Path:
    """``model`` saved to ``path`` with the first two bytes of its first ``text`` made 0xFF 0xFE,
    which are no UTF-8: a string field protobuf then hands over as bytes."""
    data = bytearray(model.SerializeToString())
    position = data.index(text)
    data[position : position + 2] = b"\xff\xfe"
    path.write_bytes(bytes(data))
    return path


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def ir_pools(path: Path) -> Path:
    """An IR of MaxPool-14 (ceil_torch, indices) then AvgPool-14 (ceil, exclude-pad false), 1x2x7x7."""
    import openvino as ov
    from openvino import opset1, opset14

    x = opset1.parameter([1, 2, 7, 7], ov.Type.f32, name="x")
    mp = opset14.max_pool(x, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3], rounding_type="ceil_torch")
    ap = opset14.avg_pool(mp.output(0), [2, 2], [1, 1], [0, 0], [3, 3], exclude_pad=False, rounding_type="ceil")
    ov.save_model(ov.Model([ap.output(0), mp.output(1)], [x]), str(path), compress_to_fp16=False)
    return path


def ir_with_relu(path: Path) -> Path:
    import openvino as ov
    from openvino import opset1

    x = opset1.parameter([1, 2, 6, 6], ov.Type.f32, name="x")
    pool = opset1.max_pool(opset1.relu(x), [2, 2], [0, 0], [0, 0], [2, 2])
    ov.save_model(ov.Model([pool], [x]), str(path))
    return path


def ir_numpy_cannot_run(path: Path) -> Path:
    """An IR with a layer the numpy executor does not run (an ExtractImagePatches of 1 x 1 patches,
    the identity, before a MaxPool)."""
    import openvino as ov
    from openvino import opset1, opset3

    x = opset1.parameter([1, 2, 6, 6], ov.Type.f32, name="x")
    patches = opset3.extract_image_patches(x, [1, 1], [1, 1], [1, 1], "valid")
    pool = opset1.max_pool(patches, [2, 2], [0, 0], [0, 0], [2, 2])
    ov.save_model(ov.Model([pool], [x]), str(path))
    return path


def random_input(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class FakeGpuCore:
    """A real ``openvino.Core`` that also lists ``GPU.0`` ("Fake GPU"), whose compiles always fail;
    with ``cpu_fails`` the CPU's compiles fail too."""

    real = None
    cpu_fails = False

    def __init__(self) -> None:
        self._core = FakeGpuCore.real()

    @property
    def available_devices(self) -> list[str]:
        return [*self._core.available_devices, "GPU.0"]

    def get_property(self, device: str, key: str):
        if device.startswith("GPU"):
            return {"FULL_DEVICE_NAME": "Fake GPU", "OPTIMIZATION_CAPABILITIES": ["FP32", "FP16"]}[key]
        return self._core.get_property(device, key)

    def read_model(self, *args):
        return self._core.read_model(*args)

    def compile_model(self, model, device: str, config=None):
        if device.startswith("GPU"):
            raise RuntimeError("Exception from src/inference/src/cpp/core.cpp:117:\nfake GPU plugin: out of device memory\n")
        if FakeGpuCore.cpu_fails and device.startswith("CPU"):
            raise RuntimeError("Exception from src/plugins/intel_cpu/src/plugin.cpp:9:\nfake CPU plugin: no kernel\n")
        return self._core.compile_model(model, device, config or {})


def fake_gpu(monkeypatch, cpu_fails: bool = False) -> None:
    """Make ``openvino.Core()`` a FakeGpuCore for this test (``cpu_fails``: CPU compiles fail too)."""
    import openvino

    FakeGpuCore.real = openvino.Core
    monkeypatch.setattr(openvino, "Core", FakeGpuCore)
    monkeypatch.setattr(FakeGpuCore, "cpu_fails", cpu_fails)
