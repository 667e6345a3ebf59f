"""Time ovpool's numpy Resize kernel against onnxruntime, both on one thread.

    python benchmarks/bench_numpy_resize.py [--runs 30] [--json]

Each case is Resize-13 with constant scales (1, 1, 2, 2): ovpool's kernel comes from
``lookup("Resize", 13).factory(OpNode(...))`` (its index tables are built on the first call, which
is not timed), onnxruntime runs the same single-node model with intra_op_num_threads=1. The runs of
the two alternate, so both see the same machine load. Reported: median ms per backend and the
ovpool/onnxruntime ratio (target <= 3).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ovpool, not an installed one
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse
import json
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from ovpool.engine.ops.base import OpNode, lookup

SHAPES = [(1, 64, 80, 80), (1, 3, 320, 320)]
MODES = [("linear", {"mode": "linear"}), ("nearest", {"mode": "nearest"})]
SCALES = np.array([1, 1, 2, 2], np.float32)


def _ort_session(shape: tuple[int, ...], attrs: dict[str, str]) -> ort.InferenceSession:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", **attrs)
    graph = helper.make_graph(
        [node],
        "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(SCALES, "scales")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _ovpool_kernel(attrs: dict[str, str]) -> Callable[..., tuple[np.ndarray, ...]]:
    row = lookup("Resize", 13)
    assert row is not None
    return row.factory(OpNode("resize", "Resize", 13, 13, attrs, (None, None, SCALES)))


def _medians(first: Callable[[], object], second: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median ms of each, their runs alternating after one warm-up call each."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for fn, bucket in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            fn()
            bucket.append((time.perf_counter() - start) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for shape in SHAPES:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        for name, attrs in MODES:
            session = _ort_session(shape, attrs)
            kernel = _ovpool_kernel(attrs)
            expected = session.run(None, {"x": x})[0]
            np.testing.assert_allclose(kernel(x, None, SCALES)[0], expected, rtol=1e-5, atol=1e-5)
            numpy_ms, ort_ms = _medians(partial(kernel, x, None, SCALES), partial(session.run, None, {"x": x}), args.runs)
            rows.append({"case": f"{name} 2x, {'x'.join(map(str, shape))}", "numpy_ms": numpy_ms, "onnxruntime_ms": ort_ms})
    for row in rows:
        row["ratio"] = row["numpy_ms"] / row["onnxruntime_ms"]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'case':<28} {'numpy ms':>9} {'ort ms':>8} {'ratio':>6}")
    for row in rows:
        print(f"{row['case']:<28} {row['numpy_ms']:>9.2f} {row['onnxruntime_ms']:>8.2f} {row['ratio']:>6.2f}")
    geomean = float(np.exp(np.mean([np.log(r["ratio"]) for r in rows])))
    print(f"geometric mean ratio {geomean:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
