"""Overhead of ovpool's openvino backend over raw OpenVINO: ``python benchmarks/bench_overhead.py``.

For each IR (the bundled example converted by ovpool, and a larger pooling model), both sides load
the same .xml, compile it on the same device at the same precision (INFERENCE_PRECISION_HINT=f32,
no cache) and reuse one infer request:

* raw: ``request.infer({name: x})`` on ``core.compile_model(core.read_model(xml), ...)``;
* ovpool: ``OpenVINOSession.infer({name: x})`` (what ``ovpool run`` and ``ovpool bench`` call).

Timed runs alternate in blocks (raw, ovpool, raw, ...) so drift hits both; the ratio is
median(ovpool) / median(raw). Target: <= 1.10. Exit status 1 when a ratio misses it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ovpool.convert import convert
from ovpool.runtime import OpenVINOSession, compile_config, open_model

EXAMPLE = Path(__file__).resolve().parents[1] / "ovpool" / "examples" / "tiny_pool.onnx"
TARGET = 1.10


def pooling_ir(path: Path) -> Path:
    """1x16x56x56: MaxPool 3x3 s2 p1 (ceil_torch, with indices), then AvgPool 3x3 s2 p1."""
    import openvino as ov
    from openvino import opset1, opset14

    x = opset1.parameter([1, 16, 56, 56], ov.Type.f32, name="x")
    mp = opset14.max_pool(x, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3], rounding_type="ceil_torch")
    ap = opset14.avg_pool(mp.output(0), [2, 2], [1, 1], [1, 1], [3, 3], exclude_pad=True, rounding_type="floor")
    ov.save_model(ov.Model([ap.output(0), mp.output(1)], [x]), str(path), compress_to_fp16=False)
    return path


def measure(xml: Path, device: str, blocks: int, per_block: int) -> tuple[float, float]:
    """(raw median ms, ovpool median ms) over ``blocks`` alternating blocks of ``per_block`` runs."""
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), device, compile_config("f32", cache=False))
    raw = compiled.create_infer_request()
    session = OpenVINOSession(open_model(xml), device, "f32", cache=False)
    rng = np.random.default_rng(0)
    inputs = {d.name: rng.standard_normal(d.shape).astype(np.float32) for d in session.inputs}
    calls = {"raw": lambda: raw.infer(inputs), "ovpool": lambda: session.infer(inputs)}
    times: dict[str, list[float]] = {"raw": [], "ovpool": []}
    for call in calls.values():
        for _ in range(per_block):
            call()
    for _ in range(blocks):
        for side, call in calls.items():
            for _ in range(per_block):
                start = time.perf_counter_ns()
                call()
                times[side].append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(times["raw"]), statistics.median(times["ovpool"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="CPU")
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--per-block", type=int, default=30)
    args = parser.parse_args()
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        models = {
            "tiny_pool (bundled example, converted by ovpool)": convert(EXAMPLE, Path(tmp) / "tiny_pool.xml")[0],
            "pooling 1x16x56x56": pooling_ir(Path(tmp) / "pooling.xml"),
        }
        print(f"{'model':<50} {'raw ms':>9} {'ovpool ms':>10} {'ratio':>7}")
        for label, xml in models.items():
            raw, ours = measure(xml, args.device, args.blocks, args.per_block)
            worst = max(worst, ours / raw)
            print(f"{label:<50} {raw:>9.4f} {ours:>10.4f} {ours / raw:>7.3f}")
    print(f"worst ratio {worst:.3f} (target <= {TARGET})")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
