"""Time the real third-party models on ovpool's numpy executor against onnxruntime, one thread each.

    python tests/fetch_real_models.py      # once
    python benchmarks/bench_numpy_models.py [--runs 5] [--warmup 1] [--only NAME ...] [--json]

Every model of ``tests/ops/real_models.py`` (the files ``tests/fetch_real_models.py`` fetches) on
the inputs the tests use, prepared once per runtime and timed as ``bench_numpy_layers.py`` times a
layer: numpy's BLAS and onnxruntime on one thread, onnxruntime with its default optimisations,
median ms of ``--runs`` after ``--warmup``, the ratio numpy/onnxruntime per model (target: at
most 3) and its geometric mean, as a markdown table. A model whose result differs from
onnxruntime's (1e-4 of an output's max-abs) is marked; one the executor cannot run shows its error;
one whose file is absent is left out and named.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse
import json
import sys

from bench_numpy_layers import environment, geomean, markdown, time_pair
from real_models import MODELS

from ovpool.onnx_model import load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, help="model names (real_models.py) to time")
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
        rows.append({"model": f"{model.name} ({model.describe()})", **row})
    if args.json:
        ratios = [r["ratio"] for r in rows if "ratio" in r]
        print(json.dumps({"environment": environment(), "models": rows, "geomean": geomean(ratios), "absent": absent}, indent=2))
    else:
        print(markdown("Real models", rows, "model"))
    if absent:
        print(f"absent (run python tests/fetch_real_models.py): {', '.join(sorted(set(absent)))}", file=sys.stderr)


if __name__ == "__main__":
    main()
