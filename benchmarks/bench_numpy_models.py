"""Time the real third-party models on ovpool's numpy executor against onnxruntime, one thread each.

    python tests/fetch_real_models.py      # once
    python benchmarks/bench_numpy_models.py [--runs 5] [--warmup 1] [--only NAME ...] [--profile] [--json]

Every model of ``tests/ops/real_models.py`` (the files ``tests/fetch_real_models.py`` fetches) on
the inputs the tests use, prepared once per runtime and timed as ``bench_numpy_layers.py`` times a
layer: numpy's BLAS and onnxruntime on one thread, onnxruntime with its default optimisations,
median ms of ``--runs`` after ``--warmup``, the ratio numpy/onnxruntime per model (target: at
most 3) and its geometric mean, as a markdown table. A model whose result differs from
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
from bench_numpy_layers import environment, geomean, markdown, time_pair
from real_models import MODELS

from ovpool.onnx.model import load
from ovpool.runtime.graph import GraphSession


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, help="model names (real_models.py) to time")
    parser.add_argument("--profile", action="store_true", help="ms per op type on the numpy executor")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows, absent = [], []
    for model in MODELS:
        if args.only and model.name not in args.only:
            continue
        if not model.path.is_file():
            absent.append(model.file)
            continue
        row = time_pair(load(model.path), model.feeds(), args.runs, args.warmup)
        if args.profile and "error" not in row:
            row["profile"] = profile(load(model.path), model.feeds(), args.runs)
        rows.append({"model": f"{model.name} ({model.describe()})", **row})
    if args.json:
        ratios = [r["ratio"] for r in rows if "ratio" in r]
        print(json.dumps({"environment": environment(), "models": rows, "geomean": geomean(ratios), "absent": absent}, indent=2))
    else:
        print(markdown("Real models", rows, "model"))
        for row in rows:
            if "profile" in row:
                print(f"- {row['model']}: " + ", ".join(f"{op} {ms:.1f}" for op, ms in row["profile"]))
    if absent:
        print(f"absent (run python tests/fetch_real_models.py): {', '.join(sorted(set(absent)))}", file=sys.stderr)


if __name__ == "__main__":
    main()
