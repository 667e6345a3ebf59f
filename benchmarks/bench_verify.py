"""What ``ovpool convert --verify`` costs on the real third-party models, beside the conversion.

    python tests/fetch_real_models.py      # once
    python benchmarks/bench_verify.py [--runs 3] [--only NAME ...] [--json]

For each model of ``tests/ops/real_models.py`` that OpenVINO's frontend converts, in one process:
``ovpool.convert`` to a temporary folder (ms, median of ``--runs``), then the same with
``verify=VerifyOptions(inputs=<the tests' inputs>)``: the IR compiled on OpenVINO CPU at f32 and
run once, the ONNX model prepared and run once on ovpool's numpy executor, the outputs compared.
The table gives both times and their ratio. Threads: OpenVINO CPU and numpy's BLAS at their
defaults (every core; printed), as ``ovpool convert --verify`` runs them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "ops")]

from real_models import MODELS, RealModel  # noqa: E402

import ovpool  # noqa: E402
from ovpool.check.verify import VerifyOptions  # noqa: E402
from ovpool.errors import OvpoolError  # noqa: E402


def environment() -> str:
    """``openvino 2026.4.1 (CPU, 2 cores, default threads), numpy 2.4.0 (BLAS threads: default)``."""
    import numpy as np
    import openvino

    threads = ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"))
    return (
        f"openvino {openvino.__version__.split('-')[0]} (CPU at f32, default threads), numpy {np.__version__} ({threads}), "
        f"{os.cpu_count()} cores"
    )


def time_model(model: RealModel, runs: int) -> dict[str, object]:
    """Median ms of convert and of convert --verify, or the error that stops the conversion."""
    plain: list[float] = []
    verified: list[float] = []
    checks = VerifyOptions(inputs=model.feeds(), rtol=model.rtol)
    with tempfile.TemporaryDirectory(prefix="ovpool-bench-") as folder:
        for _ in range(runs):
            for times, verify in ((plain, False), (verified, checks)):
                start = time.perf_counter()
                try:
                    ovpool.convert(model.path, output_dir=folder, force=True, verify=verify)
                except OvpoolError as exc:
                    return {"model": model.name, "error": str(exc).split(": ", 1)[-1][:80]}
                times.append((time.perf_counter() - start) * 1000)
    convert_ms, verify_ms = statistics.median(plain), statistics.median(verified)
    return {"model": model.name, "inputs": model.describe(), "convert_ms": convert_ms, "verify_ms": verify_ms}


def markdown(rows: list[dict[str, object]]) -> str:
    lines = [
        f"convert --verify: {environment()}",
        "",
        "| model | inputs | convert ms | convert --verify ms | ratio |",
        "|---|---|---:|---:|---:|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['model']} | - | not converted by OpenVINO: {row['error']} | - | - |")
            continue
        convert_ms, verify_ms = float(row["convert_ms"]), float(row["verify_ms"])  # type: ignore[arg-type]
        lines.append(f"| {row['model']} | {row['inputs']} | {convert_ms:.0f} | {verify_ms:.0f} | {verify_ms / convert_ms:.1f}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None, help="model names (real_models.py) to time")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    for model in MODELS:
        if (args.only and model.name not in args.only) or not model.path.is_file():
            continue
        if any(row.get("file") == model.file for row in rows):
            continue
        rows.append({**time_model(model, args.runs), "file": model.file})
    if args.json:
        print(json.dumps({"environment": environment(), "models": rows}, indent=2))
    else:
        print(markdown(rows))


if __name__ == "__main__":
    main()
