"""``ovpool compare MODEL --device D [--reference numpy|CPU] [--reference-model FLOAT_MODEL]
[--inputs in.npz | -i NAME=x.npy ... | --random-inputs [--seed N] [--shape NAME=d0,d1,...]]
[--rtol R] [--atol A] [--per-layer] [--all-layers] [--plot FILE.svg [--force]] [--precision P]
[--fallback cpu|numpy|none | --no-fallback] [--json] [--no-cache]``."""

from __future__ import annotations

from pathlib import Path

import typer

from ovpool.cli.common import apply_max_memory, import_without, max_memory_option, path_parser, seed_option
from ovpool.cli.helptext import command

OUTPUTS = (
    "the comparison on stdout (--json: one JSON object); with --plot, an SVG of every layer's error (written even when "
    "beyond tolerance, never on an error); compiled models cached as ovpool run caches them; nothing else is written."
)


def register(app: typer.Typer) -> None:
    @command(app, OUTPUTS, {0: "within tolerance", 1: "beyond tolerance, or the device cannot run the model, or a bad model"})
    def compare(
        model: Path = typer.Argument(..., metavar="MODEL", help="ONNX model (.onnx) or OpenVINO IR (.xml)."),
        device: str = typer.Option(
            ..., "--device", metavar="DEVICE", help="The device to check: CPU, GPU, NPU, AUTO (OpenVINO) or numpy."
        ),
        reference: str = typer.Option(
            "numpy", "--reference", metavar="REFERENCE", help="numpy (ovpool's exact executor) or CPU (OpenVINO at f32)."
        ),
        precision: str = typer.Option(
            "default",
            "--precision",
            metavar="PRECISION",
            help="The device's inference precision: default (its own), f32, bf16 or f16.",
        ),
        inputs: Path | None = typer.Option(None, "--inputs", metavar="FILE.npz", help=".npz keyed by input name."),
        input_files: list[str] = typer.Option(
            [], "-i", "--input", metavar="NAME=FILE.npy", help="One input from a .npy file, repeatable."
        ),
        random: bool = typer.Option(False, "--random-inputs", help="Generate inputs from the declared shapes and types."),
        seed: int = seed_option(),
        shapes: list[str] = typer.Option(
            [], "--shape", metavar="NAME=DIMS", help="NAME=d0,d1,... for dynamic dims with --random-inputs."
        ),
        rtol: float = typer.Option(1e-4, "--rtol", help="Allowed difference, relative to the reference's largest magnitude."),
        atol: float = typer.Option(1e-6, "--atol", help="Allowed absolute difference on top of --rtol."),
        per_layer: bool = typer.Option(False, "--per-layer", help="Compare every intermediate tensor; name the first beyond."),
        all_layers: bool = typer.Option(
            False,
            "--all-layers",
            help="Also print every layer's error in execution order (in --json: per_layer.every_layer); implies --per-layer.",
        ),
        plot: Path | None = typer.Option(
            None,
            "--plot",
            metavar="FILE.svg",
            parser=path_parser("--plot"),
            help="Write an SVG plot of every layer's error in execution order; implies --per-layer.",
        ),
        force: bool = typer.Option(False, "--force", help="Replace an existing --plot file."),
        reference_model: Path | None = typer.Option(
            None,
            "--reference-model",
            metavar="MODEL",
            help="Run this model on the reference instead (the float model a quantized MODEL came from); tensors match by name.",
        ),
        fallback: str | None = typer.Option(
            None,
            "--fallback",
            metavar="LEVEL",
            help="Where to run when the device cannot: none (fail; the default), cpu, or numpy (device, CPU, numpy).",
        ),
        no_fallback: bool = typer.Option(False, "--no-fallback", help="Same as --fallback none; not with another --fallback."),
        as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON on stdout."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the compiled-model cache."),
        max_memory: str | None = max_memory_option(),
    ) -> None:
        """Where a device's results leave a reference's (numpy or CPU at f32): exit 0 within tolerance, 1 beyond."""
        import dataclasses
        import json

        from rich.console import Console
        from rich.progress import Progress

        from ovpool.check.compare import check_tolerances, open_sides, report
        from ovpool.check.compare import compare as run_compare
        from ovpool.check.plot import render_plot
        from ovpool.cli.common import check_input_options, fallback_level, model_inputs
        from ovpool.conversions import model_files
        from ovpool.errors import UsageError
        from ovpool.execution import open_model
        from ovpool.files import check_outputs, write_atomic
        from ovpool.tensors import check_inputs

        check_input_options(inputs, input_files, random, shapes)
        level = fallback_level(fallback, no_fallback, "none")
        check_tolerances(rtol, atol)
        apply_max_memory(max_memory)
        if device.lower() != "numpy":
            import_without("openvino", "openvino.tools.ovc")  # OpenVINO's runtime and frontend only
        if plot is not None:
            read = [*([inputs] if inputs else []), *(Path(pair.partition("=")[2]) for pair in input_files)]
            read += [*model_files(model), *(model_files(reference_model) if reference_model is not None else [])]
            check_outputs([plot], read, force)
        elif force:
            raise UsageError("--force replaces an existing --plot file; give --plot FILE.svg")
        per_layer = per_layer or all_layers or plot is not None
        loaded = open_model(model)
        other = open_model(reference_model) if reference_model is not None else None
        opened, ref = open_sides(loaded, device, reference, precision, level, not no_cache, per_layer, other)
        for notice in opened.notices:
            typer.echo(f"warning: {notice}", err=True)
        sides = [opened.session, ref]
        arrays = model_inputs(loaded.label, opened.session.inputs, inputs, input_files, random, shapes, seed, sides)
        check_inputs(other.label if other is not None else loaded.label, ref.inputs, arrays)
        with Progress(console=Console(stderr=True), transient=True) as progress:

            def start(label: str, total: int | None):
                task = progress.add_task(label, total=total)
                return lambda: progress.advance(task)

            result = run_compare(
                loaded,
                opened.session,
                ref,
                arrays,
                rtol,
                atol,
                per_layer,
                not no_cache,
                start,
                all_layers or plot is not None,
                other,
            )
        shown = result if all_layers else dataclasses.replace(result, every=None)
        typer.echo(json.dumps(shown.record(), allow_nan=False) if as_json else report(shown))
        if plot is not None:
            write_atomic({plot: render_plot(result).encode()}, force=force, sources=read)
            if not as_json:
                typer.echo(f"wrote {plot}")
        if not result.within:
            raise typer.Exit(1)
