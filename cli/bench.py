"""``ovpool bench MODEL [--backend openvino|numpy|onnxruntime ...] [--device D] [--fallback cpu|none] [--runs N]
[--warmup N] [--json]``."""

from __future__ import annotations

from pathlib import Path

import typer

from ovpool.cli.common import apply_max_memory, import_without, int_option, max_memory_option, seed_option
from ovpool.cli.helptext import command

# The most --runs (and --warmup) bench takes: a million calls of a 0.1 ms model is minutes; more is a typo.
MAX_RUNS = 1_000_000
OUTPUTS = (
    "a table on stdout (--json: one JSON object); compiled models cached as ovpool run caches them; nothing else is written."
)


def register(app: typer.Typer) -> None:
    @command(app, OUTPUTS, {1: "a backend could not load or run the model (the others still ran)"})
    def bench(
        model: Path = typer.Argument(..., metavar="MODEL", help="ONNX model (.onnx) or OpenVINO IR (.xml)."),
        backends: list[str] = typer.Option(
            [],
            "--backend",
            metavar="BACKEND",
            help="openvino, numpy or onnxruntime; repeatable (default: all that read the model).",
        ),
        device: str = typer.Option("CPU", "--device", metavar="DEVICE", help="OpenVINO device for the openvino backend."),
        fallback: str = typer.Option(
            "none",
            "--fallback",
            metavar="LEVEL",
            help="cpu: the openvino backend runs on CPU when the device cannot; none: it fails.",
        ),
        precision: str = typer.Option(
            "f32", "--precision", metavar="PRECISION", help="OpenVINO inference precision: f32, bf16, f16, default."
        ),
        runs: int = int_option(20, "--runs", 1, MAX_RUNS, f"Timed inferences per backend, 1 to {MAX_RUNS:,}."),
        warmup: int = int_option(3, "--warmup", 0, MAX_RUNS, f"Untimed inferences before timing, 0 to {MAX_RUNS:,}."),
        shapes: list[str] = typer.Option([], "--shape", metavar="NAME=DIMS", help="NAME=d0,d1,... for dynamic input dims."),
        seed: int = seed_option(),
        as_json: bool = typer.Option(False, "--json", help='Print {"results": [...]} on stdout.'),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the compiled-model cache."),
        max_memory: str | None = max_memory_option(),
    ) -> None:
        """Time a model on each backend with the same random inputs: median, min, max ms and throughput."""
        import json
        import warnings

        from rich.console import Console
        from rich.progress import Progress

        from ovpool.check.bench import bench as run_bench
        from ovpool.errors import OvpoolError
        from ovpool.execution import FallbackWarning, open_model
        from ovpool.tensors import parse_shapes

        given_shapes = parse_shapes(shapes)
        apply_max_memory(max_memory)
        if not backends or "openvino" in backends:
            import_without("openvino", "openvino.tools.ovc")  # OpenVINO's runtime and frontend only
        loaded = open_model(model)
        with Progress(console=Console(stderr=True), transient=True) as progress:

            def start(label: str, total: int):
                task = progress.add_task(label, total=total)
                return lambda: progress.advance(task)

            with warnings.catch_warnings(record=True) as notes:
                warnings.simplefilter("always", FallbackWarning)
                timings, failures = run_bench(
                    loaded, backends, device, precision, runs, warmup, given_shapes, seed, not no_cache, start, fallback
                )
        for note in notes:
            typer.echo(f"warning: {note.message}", err=True)
        for failure in failures:
            typer.echo(f"error: {failure.backend} ({failure.device}): {failure.message}", err=True)
        if as_json:
            typer.echo(json.dumps({"results": [t.record() for t in timings]}))
        else:
            typer.echo(_table(model, timings))
        if failures:
            failed = ", ".join(f.backend for f in failures)
            raise OvpoolError(f"{len(failures)} of {len(timings) + len(failures)} backend(s) failed: {failed}", file=model)


def _table(model: Path, timings) -> str:
    """A text table; ``x fastest`` is each median over the smallest median."""
    if not timings:
        return f"{model}: no backend ran"
    fastest = min(t.median_ms for t in timings)
    lines = [
        f"{model}",
        f"{'backend':<12} {'device':<8} {'median ms':>10} {'min ms':>10} {'max ms':>10} {'runs':>5} "
        f"{'per s':>9} {'x fastest':>9}",
    ]
    for t in timings:
        ratio = t.median_ms / fastest if fastest > 0 else 1.0
        lines.append(
            f"{t.backend:<12} {t.device:<8} {t.median_ms:>10.3f} {t.min_ms:>10.3f} {t.max_ms:>10.3f} "
            f"{t.runs:>5} {t.throughput:>9.1f} {ratio:>9.2f}"
        )
    return "\n".join(lines)
