"""Time ovpool's numpy Conv/ConvTranspose kernels against onnxruntime, one thread each.

    PYTHONPATH=. python benchmarks/bench_numpy_conv.py [--runs 30] [--json]

Each layer is a single-node model (weights and bias initializers). ovpool's kernel comes straight
from the operator table (``lookup(op, since).factory(OpNode(...))``, weights laid out once);
onnxruntime runs the same model with ``intra_op_num_threads=1`` at its default graph optimisation
level. The two are timed alternately, run by run, so that load from other processes hits both
alike; the table gives the median ms of each and their ratio (target: numpy <= 3x onnxruntime),
the same for the fastest run (the figure least disturbed by other processes on a shared machine),
and names numpy's BLAS.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ovpool.engine.ops.base import OpNode, lookup

OPSET = 13
P1, P2 = [1, 1, 1, 1], [2, 2, 2, 2]
LAYERS: list[tuple[str, str, tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ("Conv 3x3 p1, 1x64x56x56 -> 64", "Conv", (1, 64, 56, 56), (64, 64, 3, 3), {"pads": P1}),
    (
        "Conv 3x3 s2 p1, 1x3x800x608 -> 16 (PicoDet stem)",
        "Conv",
        (1, 3, 800, 608),
        (16, 3, 3, 3),
        {"pads": P1, "strides": [2, 2]},
    ),
    ("Conv 3x3 depthwise p1, 1x96x112x112", "Conv", (1, 96, 112, 112), (96, 1, 3, 3), {"pads": P1, "group": 96}),
    # the depthwise layers of the PP-OCR recogniser and classifier (thin planes) and of PicoDet
    ("Conv 5x5 depthwise p2, 1x240x12x80", "Conv", (1, 240, 12, 80), (240, 1, 5, 5), {"pads": P2, "group": 240}),
    (
        "Conv 5x5 depthwise s(2,1) p2, 1x240x12x80",
        "Conv",
        (1, 240, 12, 80),
        (240, 1, 5, 5),
        {"pads": P2, "group": 240, "strides": [2, 1]},
    ),
    ("Conv 5x5 depthwise p2, 1x200x2x96", "Conv", (1, 200, 2, 96), (200, 1, 5, 5), {"pads": P2, "group": 200}),
    ("Conv 5x5 depthwise p2, 1x128x100x76", "Conv", (1, 128, 100, 76), (128, 1, 5, 5), {"pads": P2, "group": 128}),
    (
        "Conv 5x5 depthwise s2 p2, 1x128x100x76",
        "Conv",
        (1, 128, 100, 76),
        (128, 1, 5, 5),
        {"pads": P2, "group": 128, "strides": [2, 2]},
    ),
    ("Conv 1x1, 1x256x28x28 -> 128", "Conv", (1, 256, 28, 28), (128, 256, 1, 1), {}),
    ("ConvTranspose 2x2 s2, 1x64x28x28 -> 32", "ConvTranspose", (1, 64, 28, 28), (64, 32, 2, 2), {"strides": [2, 2]}),
]


def _arrays(op: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    channels = w_shape[0] if op == "Conv" else w_shape[1] * attrs.get("group", 1)
    return [rng.standard_normal(s, dtype=np.float32) for s in (x_shape, w_shape, (channels,))]


def _model(op: str, arrays: list[np.ndarray], attrs: dict[str, Any]) -> onnx.ModelProto:
    x, w, b = arrays
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "w", "b"], ["y"], name="layer", **attrs)],
        "bench",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def _ovpool(op: str, arrays: list[np.ndarray], attrs: dict[str, Any]) -> Callable[[], tuple[np.ndarray, ...]]:
    x, w, b = arrays
    since = onnx.defs.get_schema(op, OPSET).since_version
    row = lookup(op, since)
    assert row is not None, f"ovpool has no {op}-{since}"
    kernel = row.factory(OpNode("layer", op, since, OPSET, attrs, (None, w, b)))
    return lambda: kernel(x, w, b)


def _onnxruntime(model: onnx.ModelProto, x: np.ndarray) -> Callable[[], list[np.ndarray]]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda: session.run(None, {"x": x})


def _time_alternately(first: Callable[[], Any], second: Callable[[], Any], runs: int) -> tuple[list[float], list[float]]:
    """ms per run of each, timed in turn (one warm-up each)."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for fn, bucket in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            fn()
            bucket.append((time.perf_counter() - start) * 1000)
    return times


def _blas() -> str:
    config = np.show_config(mode="dicts")
    blas = config.get("Build Dependencies", {}).get("blas", {})
    return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for label, op, x_shape, w_shape, attrs in LAYERS:
        arrays = _arrays(op, x_shape, w_shape, attrs)
        ours, theirs = _ovpool(op, arrays, attrs), _onnxruntime(_model(op, arrays, attrs), arrays[0])
        np.testing.assert_allclose(ours()[0], theirs()[0], rtol=1e-3, atol=1e-3)
        numpy_ms, ort_ms = _time_alternately(ours, theirs, args.runs)
        medians, fastest = (statistics.median(numpy_ms), statistics.median(ort_ms)), (min(numpy_ms), min(ort_ms))
        rows.append(
            {
                "layer": label,
                "numpy_ms": medians[0],
                "onnxruntime_ms": medians[1],
                "ratio": medians[0] / medians[1],
                "numpy_min_ms": fastest[0],
                "onnxruntime_min_ms": fastest[1],
                "min_ratio": fastest[0] / fastest[1],
            }
        )
    if args.json:
        print(json.dumps({"blas": _blas(), "layers": rows}, indent=2))
        return
    print(f"numpy {np.__version__}, BLAS {_blas()}; one thread; median of {args.runs} runs\n")
    print("| layer | numpy ms | onnxruntime ms | ratio | fastest numpy | fastest onnxruntime | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['layer']} | {r['numpy_ms']:.2f} | {r['onnxruntime_ms']:.2f} | {r['ratio']:.2f}x"
            f" | {r['numpy_min_ms']:.2f} | {r['onnxruntime_min_ms']:.2f} | {r['min_ratio']:.2f}x |"
        )
    for key, what in (("ratio", "medians"), ("min_ratio", "fastest runs")):
        geomean = math.exp(statistics.fmean(math.log(float(r[key])) for r in rows))
        print(f"geometric mean ratio ({what}) {geomean:.2f}x")


if __name__ == "__main__":
    main()
