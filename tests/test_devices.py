"""``ovpool devices`` and device presence: real CPU, a fake GPU, and no OpenVINO at all."""

from __future__ import annotations

import json

import pytest
from runtime_support import fake_gpu, invoke, invoke_without_openvino

from ovpool.execution import devices


def test_cpu_and_numpy_are_listed_with_capabilities():
    found = devices.list_devices()
    assert [d.name for d in found][-1] == "numpy"
    cpu = next(d for d in found if d.name == "CPU")
    assert cpu.backend == "openvino" and cpu.full_name
    assert "FP32" in dict(cpu.capabilities)["OPTIMIZATION_CAPABILITIES"]


def test_cli_text_and_json(capsys):
    code, out, _ = invoke(capsys, "devices")
    assert code == 0 and out.startswith("openvino ")
    assert "CPU" in out and "OPTIMIZATION_CAPABILITIES" in out and "numpy" in out
    code, out, _ = invoke(capsys, "devices", "--json")
    payload = json.loads(out)
    assert code == 0 and [d["name"] for d in payload["devices"]][-1] == "numpy"
    assert {"name", "backend", "full_name", "capabilities"} == set(payload["devices"][0])


def test_fake_gpu_is_listed(monkeypatch, capsys):
    fake_gpu(monkeypatch)
    code, out, _ = invoke(capsys, "devices")
    assert code == 0 and "GPU.0" in out and "Fake GPU" in out and "FP16" in out


def test_without_openvino_only_numpy_and_says_why():
    result = invoke_without_openvino("devices")
    assert result.returncode == 0, result.stderr
    assert "OpenVINO is not available" in result.stdout
    assert "numpy" in result.stdout and "CPU " not in result.stdout


@pytest.mark.parametrize(
    ("name", "available", "present"),
    [
        ("GPU", ["CPU", "GPU.0"], True),
        ("GPU.0", ["CPU", "GPU.0"], True),
        ("GPU.1", ["CPU", "GPU.0"], False),
        ("gpu", ["CPU", "GPU.0"], True),
        ("NPU", ["CPU"], False),
        ("AUTO", ["CPU"], True),
        ("AUTO:GPU,CPU", ["CPU"], True),
        ("AUTO", [], False),
    ],
)
def test_is_present(name, available, present):
    assert devices.is_present(name, available) is present
