"""Time each real model's IR, as ``ovpool convert`` writes it, against its ONNX source, both on ovpool's numpy executor, one thread.

    python tests/fetch_real_models.py      # once
    python benchmarks/bench_ir_vs_onnx.py [--runs 20] [--warmup 2] [--only NAME ...] [--json]

Every float model of ``tests/ops/real_models.py`` (the files ``tests/fetch_real_models.py``
fetches; among them the README's PP-OCR cls, rapid orientation, YOLOv8n and CRNN) is converted
with ``ovpool.convert`` to IR in a temporary directory; the ONNX file is prepared as a
``GraphSession``, the IR as an ``IrGraph``, and both run on the inputs the tests use, taking turns
(``bench_numpy_layers.median_ms``: load from other processes falls on both alike), numpy's BLAS on
one thread (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` = 1, set before numpy
is imported). The table gives the median ms of each, the ratio IR/ONNX per model (target: at most
1.1) and its geometric mean; a model ovpool cannot convert, or whose IR numpy cannot run, shows why
and is left out of the mean. The IR's outputs are checked against the ONNX executor's (1e-4 of an
output's max-abs; a model whose results differ is marked).
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse
import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from bench_numpy_layers import agree, environment, geomean, median_ms
from real_models import MODELS, RealModel

import ovpool
from ovpool.engine.graph import GraphSession
from ovpool.engine.ir_executor import IrGraph


def _error(exc: Exception) -> str:
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return f"{type(exc).__name__}: {lines[-1][:100]}"


def time_model(model: RealModel, directory: Path, runs: int, warmup: int) -> dict[str, Any]:
    """One model's row: ``onnx_ms``, ``ir_ms``, ``ratio`` (IR/ONNX) and ``agrees``; or ``error``."""
    feeds = model.feeds()
    onnx_session = GraphSession(str(model.path))
    try:
        written = next(Path(p) for p in ovpool.convert(model.path, directory / f"{model.name}.xml") if str(p).endswith(".xml"))
    except Exception as exc:  # noqa: BLE001 - a model ovpool cannot convert is a row of the table
        return {"error": f"not converted: {_error(exc)}"}
    try:
        ir = IrGraph.read(written)
        names = [decl.name for decl in ir.inputs]
        # the IR names its inputs as the ONNX graph does; where it does not, in the same order
        ir_feeds: Mapping[str, np.ndarray] = feeds if set(names) == set(feeds) else dict(zip(names, feeds.values()))
        expected = onnx_session.run(feeds)
        got = ir.run(ir_feeds)
    except Exception as exc:  # noqa: BLE001 - an IR the executor cannot run is a row of the table
        return {"error": f"IR does not run: {_error(exc)}"}
    agrees = agree(dict(zip(expected, got.values())), expected)
    onnx_ms, ir_ms = median_ms(runs, warmup, lambda: onnx_session.run(feeds), lambda: ir.run(ir_feeds))
    return {"onnx_ms": onnx_ms, "ir_ms": ir_ms, "ratio": ir_ms / onnx_ms, "agrees": agrees}


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table with the geometric mean of the ratios."""
    lines = [
        f"IR (ovpool convert) against its ONNX source on ovpool's numpy executor: {environment()}",
        "",
        "| model | ONNX ms | IR ms | IR/ONNX |",
        "|---|---:|---:|---:|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['model']} | - | - | {row['error']} |")
        else:
            mark = "" if row["agrees"] else " (result differs)"
            lines.append(f"| {row['model']} | {row['onnx_ms']:.2f} | {row['ir_ms']:.2f} | {row['ratio']:.2f}{mark} |")
    mean = geomean([row["ratio"] for row in rows if "ratio" in row])
    lines.append(f"| geometric mean | | | {mean:.2f} |" if mean else "| geometric mean | | | - |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="model names (real_models.py) to time")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows, absent = [], []
    with tempfile.TemporaryDirectory() as directory:
        for model in MODELS:
            if args.only and model.name not in args.only:
                continue
            if not model.path.is_file():
                absent.append(model.file)
                continue
            rows.append(
                {"model": f"{model.name} ({model.describe()})", **time_model(model, Path(directory), args.runs, args.warmup)}
            )
    if args.json:
        ratios = [row["ratio"] for row in rows if "ratio" in row]
        print(json.dumps({"environment": environment(), "models": rows, "geomean": geomean(ratios), "absent": absent}, indent=2))
    else:
        print(table(rows))
    if absent:
        print(f"absent (run python tests/fetch_real_models.py): {', '.join(sorted(set(absent)))}", file=sys.stderr)


if __name__ == "__main__":
    main()
