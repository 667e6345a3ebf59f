"""Time ovpool's numpy kernels against onnxruntime and onnx.reference on three standard layers.

    python benchmarks/bench_numpy_kernels.py [--runs 15] [--reference-runs 1] [--json]

Each layer is a single-node ONNX model, prepared once per backend (``GraphSession``,
``InferenceSession``, ``ReferenceEvaluator``) and run by all three in the same process. Reported: median ms
per backend, the numpy/onnxruntime ratio per layer and its geometric mean, and the
onnx.reference/numpy speed-up. onnx.reference is slow, so it runs ``--reference-runs`` times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from onnx import TensorProto, helper

from ovpool.engine.graph import GraphSession

LAYERS = [
    (
        "MaxPool 3x3 s2 p1, 8x64x112x112",
        "MaxPool",
        (8, 64, 112, 112),
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    ),
    ("AveragePool 2x2 s2, 8x256x56x56", "AveragePool", (8, 256, 56, 56), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    (
        "AveragePool 3x3 s1 p1 exclude-pad, 8x64x56x56",
        "AveragePool",
        (8, 64, 56, 56),
        {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1], "count_include_pad": 0},
    ),
]


def _model(op_type, shape, attrs):
    graph = helper.make_graph(
        [helper.make_node(op_type, ["x"], ["y"], name="pool", **attrs)],
        "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _median_ms(fn, runs, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--reference-runs", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator

    rows = []
    for label, op_type, shape, attrs in LAYERS:
        model = _model(op_type, shape, attrs)
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        reference = ReferenceEvaluator(model)
        numpy_session = GraphSession(model)
        ours = numpy_session.run({"x": x})["y"]
        np.testing.assert_allclose(ours, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
        row = {
            "layer": label,
            "numpy_ms": _median_ms(lambda: numpy_session.run({"x": x}), args.runs),
            "onnxruntime_ms": _median_ms(lambda: session.run(None, {"x": x}), args.runs),
            "reference_ms": _median_ms(lambda: reference.run(None, {"x": x}), args.reference_runs, warmup=0),
        }
        row["numpy_over_onnxruntime"] = row["numpy_ms"] / row["onnxruntime_ms"]
        row["reference_over_numpy"] = row["reference_ms"] / row["numpy_ms"]
        rows.append(row)
    geomean = float(np.exp(np.mean([np.log(r["numpy_over_onnxruntime"]) for r in rows])))
    if args.json:
        print(json.dumps({"layers": rows, "geomean_numpy_over_onnxruntime": geomean}, indent=2))
        return
    print(f"{'layer':48} {'numpy ms':>9} {'ort ms':>8} {'ref ms':>9} {'np/ort':>7} {'ref/np':>7}")
    for r in rows:
        print(
            f"{r['layer']:48} {r['numpy_ms']:9.2f} {r['onnxruntime_ms']:8.2f} {r['reference_ms']:9.1f} "
            f"{r['numpy_over_onnxruntime']:7.2f} {r['reference_over_numpy']:7.0f}"
        )
    print(f"geometric mean numpy/onnxruntime: {geomean:.2f}")


if __name__ == "__main__":
    main()
