"""Time standard layers on ovpool's numpy executor against onnxruntime, one thread each.

    python benchmarks/bench_numpy_layers.py [--runs 20] [--warmup 2] [--json]

Each layer is a single-node ONNX model (weights as initializers), prepared once per runtime: the
numpy executor's session and an onnxruntime ``InferenceSession`` with one intra- and one inter-op
thread and its default graph optimisations. numpy's BLAS is held to one thread too
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` are set to 1 before numpy is
imported). Reported: the median ms of ``--runs`` runs after ``--warmup`` runs (the two runtimes
take turns, run by run, so that load from other processes falls on both), the ratio
numpy/onnxruntime (target: at most 3) and its geometric mean, as a markdown table headed by the
versions and numpy's BLAS. Each layer's outputs are compared first (1e-4 of the output's max-abs):
a layer whose result differs is marked, not timed as if it were right.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

# this checkout's ovpool (not another installed one) and the tests' helpers
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "ops")]

from harness import feeds_of, make_model
from real_models import Runner, numpy_runner, onnxruntime_runner


@dataclass(frozen=True)
class Layer:
    """A single-node model: ``op`` at ``opset`` on ``inputs`` (the indices in ``constant`` are
    initializers), ``attrs`` its attributes."""

    label: str
    op: str
    inputs: tuple[np.ndarray | None, ...]
    attrs: Mapping[str, Any]
    constant: tuple[int, ...] = ()
    opset: int = 13

    def model(self) -> onnx.ModelProto:
        return make_model(self.op, self.opset, self.inputs, self.attrs, constant=self.constant)


def _layers() -> list[Layer]:
    rng = np.random.default_rng(0)

    def normal(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    def weights(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    same = {"pads": [1, 1, 1, 1]}
    scales_2x = np.array([1, 1, 2, 2], np.float32)
    return [
        Layer(
            "MaxPool 3x3 s2 p1, 1x64x112x112",
            "MaxPool",
            (normal(1, 64, 112, 112),),
            {"kernel_shape": [3, 3], "strides": [2, 2], **same},
        ),
        Layer(
            "MaxPool 5x5 s1 p2 (SPPF), 1x128x10x10",
            "MaxPool",
            (normal(1, 128, 10, 10),),
            {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]},
        ),
        Layer(
            "MaxPool 13x13 s1 p6 (SPP), 1x192x13x13",
            "MaxPool",
            (normal(1, 192, 13, 13),),
            {"kernel_shape": [13, 13], "pads": [6, 6, 6, 6]},
        ),
        Layer("GlobalAveragePool, 1x96x80x80", "GlobalAveragePool", (normal(1, 96, 80, 80),), {}),
        Layer(
            "AveragePool 2x2 s2, 1x256x56x56",
            "AveragePool",
            (normal(1, 256, 56, 56),),
            {"kernel_shape": [2, 2], "strides": [2, 2]},
        ),
        Layer(
            "Conv 3x3 p1 64->64, 1x64x56x56",
            "Conv",
            (normal(1, 64, 56, 56), weights(64, 64, 3, 3), normal(64)),
            {"kernel_shape": [3, 3], **same},
            constant=(1, 2),
        ),
        Layer(
            "depthwise Conv 3x3 p1, 1x128x56x56",
            "Conv",
            (normal(1, 128, 56, 56), weights(128, 1, 3, 3), normal(128)),
            {"kernel_shape": [3, 3], "group": 128, **same},
            constant=(1, 2),
        ),
        Layer(
            "Conv 1x1 128->128, 1x128x56x56",
            "Conv",
            (normal(1, 128, 56, 56), weights(128, 128, 1, 1), normal(128)),
            {"kernel_shape": [1, 1]},
            constant=(1, 2),
        ),
        Layer(
            "Resize linear 2x (half_pixel), 1x64x80x80",
            "Resize",
            (normal(1, 64, 80, 80), None, scales_2x),
            {"mode": "linear"},
            constant=(2,),
        ),
        Layer(
            "Resize nearest 2x (asymmetric, floor), 1x64x80x80",
            "Resize",
            (normal(1, 64, 80, 80), None, scales_2x),
            {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
            constant=(2,),
        ),
        Layer("MatMul 1x512x768 @ 768x768", "MatMul", (normal(1, 512, 768), weights(768, 768)), {}, constant=(1,)),
    ]


def median_ms(runs: int, warmup: int, *calls: Callable[[], object]) -> list[float]:
    """The median wall time in ms of each of ``calls`` over ``runs`` rounds, after ``warmup``
    untimed rounds. A round calls each once, in turn, so that load from other processes on the
    machine falls on all of them alike."""
    for _ in range(warmup):
        for call in calls:
            call()
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(runs):
        for call, spent in zip(calls, times):
            start = time.perf_counter()
            call()
            spent.append((time.perf_counter() - start) * 1000)
    return [statistics.median(spent) for spent in times]


def agree(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], rtol: float = 1e-4) -> bool:
    """Same outputs, shapes and dtypes, values within ``rtol`` of each output's max-abs."""
    if set(actual) != set(expected):
        return False
    for name, e in expected.items():
        a = np.asarray(actual[name])
        if a.shape != e.shape or a.dtype != e.dtype:
            return False
        if e.size and e.dtype.kind in "fc":
            scale = float(np.nanmax(np.abs(e))) if np.isfinite(e).any() else 0.0
            if not np.allclose(a, e, rtol=0, atol=rtol * scale, equal_nan=True):
                return False
        elif not np.array_equal(a, e):
            return False
    return True


def time_pair(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray], runs: int, warmup: int) -> dict[str, Any]:
    """Both runtimes on one model: ``numpy_ms``, ``onnxruntime_ms``, ``ratio``, ``agrees`` (or
    ``error``, the numpy executor's, when it cannot run the model)."""
    reference: Runner = onnxruntime_runner(proto, optimize=True)
    expected = reference(feeds)
    try:
        ours = numpy_runner(proto)
        agrees = agree(ours(feeds), expected)
    except Exception as exc:  # noqa: BLE001 - a model the executor cannot run is a row of the table
        (ms,) = median_ms(runs, warmup, lambda: reference(feeds))
        return {"onnxruntime_ms": ms, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"}
    numpy_ms, onnxruntime_ms = median_ms(runs, warmup, lambda: ours(feeds), lambda: reference(feeds))
    return {"numpy_ms": numpy_ms, "onnxruntime_ms": onnxruntime_ms, "ratio": numpy_ms / onnxruntime_ms, "agrees": agrees}


def environment() -> str:
    """``numpy 2.4.0 (BLAS scipy-openblas 0.3.31), onnxruntime 1.31.1, one thread each``."""
    import onnxruntime

    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    threads = ", ".join(f"{v}={os.environ[v]}" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
    return (
        f"numpy {np.__version__} (BLAS {blas.get('name')} {blas.get('version')}; {threads}), "
        f"onnxruntime {onnxruntime.__version__} (1 intra-op, 1 inter-op thread, default optimisations)"
    )


def geomean(ratios: Sequence[float]) -> float | None:
    return float(np.exp(np.mean(np.log(ratios)))) if ratios else None


def markdown(title: str, rows: Sequence[Mapping[str, Any]], key: str) -> str:
    """The rows as a markdown table: ``key`` column, ms per runtime, ratio, geometric mean."""
    lines = [
        f"{title}: {environment()}",
        "",
        f"| {key} | numpy ms | onnxruntime ms | numpy/onnxruntime |",
        "|---|---:|---:|---:|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row[key]} | fails: {row['error']} | {row['onnxruntime_ms']:.2f} | - |")
            continue
        mark = "" if row["agrees"] else " (result differs)"
        lines.append(f"| {row[key]} | {row['numpy_ms']:.2f} | {row['onnxruntime_ms']:.2f} | {row['ratio']:.2f}{mark} |")
    mean = geomean([r["ratio"] for r in rows if "ratio" in r])
    lines.append(f"| geometric mean | | | {mean:.2f} |" if mean else "| geometric mean | | | - |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for layer in _layers():
        model = layer.model()
        rows.append({"layer": layer.label, **time_pair(model, feeds_of(model, layer.inputs), args.runs, args.warmup)})
    if args.json:
        ratios = [r["ratio"] for r in rows if "ratio" in r]
        print(json.dumps({"environment": environment(), "layers": rows, "geomean": geomean(ratios)}, indent=2))
    else:
        print(markdown("Layers", rows, "layer"))


if __name__ == "__main__":
    main()
