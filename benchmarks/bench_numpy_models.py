"""Time the real third-party models on ovpool's numpy executor, onnxruntime and OpenVINO CPU, one thread each.

    python tests/fetch_real_models.py      # once
    python benchmarks/bench_numpy_models.py [--runs 5] [--warmup 1] [--only NAME ...] [--profile] [--json]

Every model of ``tests/ops/real_models.py`` (the files ``tests/fetch_real_models.py`` fetches) on
the inputs the tests use, prepared once per runtime and timed as ``bench_numpy_layers.py`` times a
layer: numpy's BLAS and onnxruntime on one thread, onnxruntime with its default optimisations,
median ms of ``--runs`` after ``--warmup``, the ratio numpy/onnxruntime per model (target: at
most 3) and its geometric mean, as a markdown table. OpenVINO CPU runs the model as ``ovpool.convert_model``
converts it, compiled with one inference thread, one stream, f32 (``INFERENCE_NUM_THREADS=1``,
``INFERENCE_PRECISION_HINT=f32``), taking turns with the other two; its column is its ms and its ratio
to onnxruntime (a model OpenVINO cannot convert or compile shows why). A model whose result differs from
onnxruntime's (1e-4 of an output's max-abs) is marked; one the executor cannot run shows its error;
one whose file is absent is left out and named. ``--profile`` adds, per model, where the numpy
executor's time goes: ms per op type over ``--runs`` observed runs (``GraphSession.run(...,
observe=...)``: the time from one node's end to the next one's, so the freeing of the values the
previous node was last to read counts for the next node, often a folded ``Constant``), the five
largest.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse
import collections
import json
import sys
import time
from collections.abc import Mapping

import numpy as np
import onnx
from bench_numpy_layers import agree, environment, geomean, markdown, median_ms, time_pair
from real_models import MODELS, Runner, onnxruntime_runner

from ovpool.engine.graph import GraphSession
from ovpool.onnx.model import load


def profile(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray], runs: int, top: int = 5) -> list[tuple[str, float]]:
    """The ``top`` op types by mean ms per run on the numpy executor: ``[("Conv", 52.1), ...]``."""
    session = GraphSession(proto)
    session.run(feeds)
    spent: collections.defaultdict[str, float] = collections.defaultdict(float)
    for _ in range(runs):
        last = time.perf_counter()

        def observe(node: onnx.NodeProto, _outputs: tuple[object, ...]) -> None:
            nonlocal last
            now = time.perf_counter()
            spent[node.op_type] += (now - last) * 1000 / runs
            last = now

        session.run(feeds, observe=observe)
    return sorted(spent.items(), key=lambda item: -item[1])[:top]


def openvino_runner(proto: onnx.ModelProto) -> Runner:
    """The model as ``ovpool.convert_model`` converts it, compiled on OpenVINO CPU with one inference
    thread and one stream at f32: ``run(feeds) -> {output name: array}`` (ONNX output names)."""
    import openvino as ov

    import ovpool

    config = {"INFERENCE_NUM_THREADS": "1", "NUM_STREAMS": "1", "INFERENCE_PRECISION_HINT": "f32"}
    compiled = ov.Core().compile_model(ovpool.convert_model(proto), "CPU", config)
    request = compiled.create_infer_request()
    names = [_onnx_name(port, proto) for port in compiled.outputs]

    def run(feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        results = request.infer(dict(feeds))
        return {name: np.asarray(results[port]) for name, port in zip(names, compiled.outputs)}

    return run


def _onnx_name(port: object, proto: onnx.ModelProto) -> str:
    """The ONNX graph output a compiled output port stands for (a port has several names)."""
    names = port.get_names()  # type: ignore[attr-defined]
    return next((o.name for o in proto.graph.output if o.name in names), min(names))


def time_openvino(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray], runs: int, warmup: int) -> dict[str, object]:
    """OpenVINO CPU against onnxruntime, taking turns: ``openvino_ms``, ``openvino_ratio`` (to
    onnxruntime in this same alternation), ``openvino_agrees``; or ``openvino_error``."""
    reference = onnxruntime_runner(proto, optimize=True)
    try:
        ours = openvino_runner(proto)
        agrees = agree(ours(feeds), reference(feeds))
    except Exception as exc:  # noqa: BLE001 - a model OpenVINO cannot run is a cell of the table
        return {"openvino_error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:80]}"}
    openvino_ms, onnxruntime_ms = median_ms(runs, warmup, lambda: ours(feeds), lambda: reference(feeds))
    return {"openvino_ms": openvino_ms, "openvino_ratio": openvino_ms / onnxruntime_ms, "openvino_agrees": agrees}


def table(rows: list[dict[str, object]]) -> str:
    """The numpy/onnxruntime table of ``bench_numpy_layers.markdown`` with OpenVINO CPU's columns."""
    lines = markdown("Real models", rows, "model").splitlines()
    lines[2] += " OpenVINO CPU ms | OpenVINO/onnxruntime |"
    lines[3] += "---:|---:|"
    for line_index, row in enumerate(rows, start=4):
        if "openvino_error" in row:
            lines[line_index] += f" fails: {row['openvino_error']} | - |"
        else:
            mark = "" if row.get("openvino_agrees", True) else " (result differs)"
            lines[line_index] += f" {row['openvino_ms']:.2f} | {row['openvino_ratio']:.2f}{mark} |"
    ratios = [float(r["openvino_ratio"]) for r in rows if "openvino_ratio" in r]  # type: ignore[arg-type]
    mean = geomean(ratios)
    lines[4 + len(rows)] += f" | {mean:.2f} |" if mean else " | - |"
    lines[0] += "; OpenVINO CPU (ovpool.convert_model, INFERENCE_NUM_THREADS=1, NUM_STREAMS=1, f32)"
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, help="model names (real_models.py) to time")
    parser.add_argument("--profile", action="store_true", help="ms per op type on the numpy executor")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-openvino", action="store_true", help="leave OpenVINO CPU out")
    args = parser.parse_args()
    rows, absent = [], []
    for model in MODELS:
        if args.only and model.name not in args.only:
            continue
        if not model.path.is_file():
            absent.append(model.file)
            continue
        row = time_pair(load(model.path), model.feeds(), args.runs, args.warmup)
        if not args.no_openvino:
            row.update(time_openvino(load(model.path), model.feeds(), args.runs, args.warmup))
        if args.profile and "error" not in row:
            row["profile"] = profile(load(model.path), model.feeds(), args.runs)
        rows.append({"model": f"{model.name} ({model.describe()})", **row})
    if args.json:
        ratios = [r["ratio"] for r in rows if "ratio" in r]
        print(json.dumps({"environment": environment(), "models": rows, "geomean": geomean(ratios), "absent": absent}, indent=2))
    else:
        print(markdown("Real models", rows, "model") if args.no_openvino else table(rows))
        for row in rows:
            if "profile" in row:
                print(f"- {row['model']}: " + ", ".join(f"{op} {ms:.1f}" for op, ms in row["profile"]))
    if absent:
        print(f"absent (run python tests/fetch_real_models.py): {', '.join(sorted(set(absent)))}", file=sys.stderr)


if __name__ == "__main__":
    main()
