"""``ovpool bench``: JSON structure, backends, per-backend errors, exit codes (no timed assertions)."""

from __future__ import annotations

import json

import pytest
from runtime_support import EXAMPLE, invoke, ir_pools, pool_model, save

from ovpool.check.bench import summarize

RECORD_KEYS = {"backend", "device", "median_ms", "min_ms", "max_ms", "runs"}


def test_json_has_one_record_per_backend(capsys):
    code, out, err = invoke(capsys, "bench", EXAMPLE, "--runs", 3, "--warmup", 1, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert list(payload) == ["results"]
    records = payload["results"]
    assert [r["backend"] for r in records] == ["openvino", "numpy", "onnxruntime"]
    assert [r["device"] for r in records] == ["CPU", "numpy", "CPU"]
    for record in records:
        assert set(record) == RECORD_KEYS and record["runs"] == 3
        assert 0 < record["min_ms"] <= record["median_ms"] <= record["max_ms"]


def test_text_table_and_chosen_backend(capsys):
    code, out, _ = invoke(capsys, "bench", EXAMPLE, "--backend", "numpy", "--runs", 2, "--warmup", 0)
    lines = out.splitlines()
    assert code == 0 and "median ms" in lines[1] and "per s" in lines[1]
    assert len(lines) == 3 and lines[2].startswith("numpy ")


def test_onnxruntime_load_failure_is_a_backend_error(tmp_path, capsys):
    # onnxruntime has no AveragePool-1 kernel (SEMANTICS.md); ovpool's numpy executor has
    model = save(pool_model("AveragePool", [1, 1, 4, 4], ir_version=3, opset=1, kernel_shape=[2, 2]), tmp_path / "avg1.onnx")
    code, out, err = invoke(capsys, "bench", model, "--backend", "onnxruntime", "--backend", "numpy", "--runs", 2, "--json")
    assert code == 1
    assert [r["backend"] for r in json.loads(out)["results"]] == ["numpy"]
    assert "error: onnxruntime (CPU): onnxruntime cannot load" in err and "Traceback" not in err
    assert "1 of 2 backend(s) failed: onnxruntime" in err


def test_ir_model_defaults_to_openvino_and_numpy(tmp_path, capsys):
    xml = ir_pools(tmp_path / "pools.xml")
    code, out, err = invoke(capsys, "bench", xml, "--runs", 2, "--json")
    assert code == 0, err
    assert [r["backend"] for r in json.loads(out)["results"]] == ["openvino", "numpy"]
    code, _, err = invoke(capsys, "bench", xml, "--backend", "onnxruntime", "--runs", 2)
    assert code == 1 and "onnxruntime runs ONNX models only" in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--backend", "tensorrt"], 2, "--backend tensorrt: expected one of openvino, numpy, onnxruntime"),
        (["--backend", "openvino", "--device", "NPU"], 1, "device 'NPU' is not present (devices available: CPU, numpy)"),
        (["--precision", "f64"], 2, "precision 'f64': expected one of f32, bf16, f16, default"),
        (["--fallback", "numpy"], 2, "--fallback numpy does not apply to bench: numpy is timed as its own backend"),
    ],
)
def test_bad_backend_device_or_precision(capsys, args, code, message):
    got, _, err = invoke(capsys, "bench", EXAMPLE, "--runs", 1, *args)
    assert got == code and message in err and "Traceback" not in err


def test_openvino_backend_falls_back_to_cpu_when_asked(capsys):
    code, out, err = invoke(
        capsys, "bench", EXAMPLE, "--backend", "openvino", "--device", "NPU", "--fallback", "cpu", "--runs", 1, "--json"
    )
    assert code == 0, err
    assert "warning: device 'NPU' is not present; running on CPU instead (devices available: CPU, numpy)" in err
    assert [(r["backend"], r["device"]) for r in json.loads(out)["results"]] == [("openvino", "CPU")]


def test_summary_statistics():
    timing = summarize("numpy", "numpy", [3.0, 1.0, 2.0, 10.0])
    assert (timing.median_ms, timing.min_ms, timing.max_ms, timing.runs) == (2.5, 1.0, 10.0, 4)
    assert timing.throughput == 400.0


def test_library_bench_and_progress_calls():
    from ovpool.check.bench import bench
    from ovpool.errors import UsageError
    from ovpool.execution import open_model

    ticks = []
    timings, failures = bench(
        open_model(EXAMPLE), ["numpy"], runs=2, warmup=1, progress=lambda label, total: lambda: ticks.append((label, total))
    )
    assert failures == [] and [(t.backend, t.runs) for t in timings] == [("numpy", 2)]
    assert ticks == [("numpy on numpy", 3)] * 3
    with pytest.raises(UsageError, match="--backend tensorrt"):
        bench(open_model(EXAMPLE), ["tensorrt"])
