"""Overhead of ovpool's openvino backend over raw OpenVINO: ``python benchmarks/bench_overhead.py``.

For each IR (the bundled example and a larger pooling model, both converted by ovpool), both sides load
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

from ovpool.conversions import convert
from ovpool.execution import OpenVINOSession, compile_config, open_model

EXAMPLE = Path(__file__).resolve().parents[1] / "ovpool" / "examples" / "tiny_pool.onnx"
TARGET = 1.10


def pooling_onnx(path: Path) -> Path:
    """1x16x56x56 ONNX: MaxPool 3x3 s2 p1 ceil_mode=1 with Indices, then AveragePool 3x3 s2 p1
    ceil_mode=1 count_include_pad=1 (the exact lowering: Pad + AvgPool), converted by ovpool."""
    import onnx
    from onnx import TensorProto, helper

    window = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    nodes = [
        helper.make_node("MaxPool", ["x"], ["max", "indices"], **window),
        helper.make_node("AveragePool", ["max"], ["avg"], count_include_pad=1, **window),
    ]
    outputs = [helper.make_tensor_value_info(n, t, None) for n, t in (("avg", TensorProto.FLOAT), ("indices", TensorProto.INT64))]
    graph = helper.make_graph(nodes, "pooling", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 56, 56])], outputs)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
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
            "pooling 1x16x56x56 (converted by ovpool)": convert(
                pooling_onnx(Path(tmp) / "pooling.onnx"), Path(tmp) / "pooling.xml"
            )[0],
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
