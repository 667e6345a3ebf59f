"""``ovpool transform MODEL... [-o OUT | --output-dir DIR] --pass NAME [--pass NAME ...] | --list-passes
[--input NAME[DIMS] | --shape NAME=DIMS] [--verify [--verify-inputs FILE.npz] [--rtol R] [--atol A] [--seed N]] [--jobs N] [--force]``."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ovpool.cli.common import (
    apply_max_memory,
    max_memory_option,
    path_parser,
    seed_option,
    verify_atol_option,
    verify_inputs_option,
    verify_options,
    verify_rtol_option,
)
from ovpool.cli.helptext import command
from ovpool.transforms.catalog import listing, pass_names

if TYPE_CHECKING:
    from ovpool.check.verify import VerifyOptions

OUTPUTS = (
    "./<stem>.transformed.onnx; -o FILE for one model, --output-dir DIR for DIR/<stem>.onnx. "
    "An existing output needs --force; a source is never overwritten."
)


def output_for(src: Path, output: Path | None, output_dir: Path | None) -> Path:
    """``-o OUT`` as given; ``--output-dir DIR``: ``DIR/<stem>.onnx``; neither:
    ``./<stem>.transformed.onnx`` (so a source in the working folder is never the output)."""
    if output is not None:
        return output
    if output_dir is not None:
        return output_dir / f"{src.stem}.onnx"
    return Path.cwd() / f"{src.stem}.transformed.onnx"


def show_passes(value: bool) -> None:
    """``--list-passes``: the pass catalog (``ovpool.transforms.catalog``), a line a pass."""
    if value:
        typer.echo(listing())
        raise typer.Exit()


def register(app: typer.Typer) -> None:
    @command(app, OUTPUTS, {1: "a pass refused a model (named node and reason) or a bad model"})
    def transform(
        sources: list[Path] = typer.Argument(..., metavar="MODEL...", help="ONNX models."),
        passes: list[str] = typer.Option(
            [],
            "--pass",
            "-p",
            metavar="NAME",
            help=f"Pass to run, repeatable, in order: {', '.join(pass_names())} (--list-passes says what each does).",
        ),
        list_passes: bool = typer.Option(
            False,
            "--list-passes",
            callback=show_passes,
            is_eager=True,
            help="Print every pass with what it rewrites, and exit.",
        ),
        output: Path | None = typer.Option(
            None, "-o", "--output", metavar="PATH", parser=path_parser("-o"), help="Output file (one model only)."
        ),
        output_dir: Path | None = typer.Option(
            None, "--output-dir", metavar="DIR", parser=path_parser("--output-dir"), help="Write DIR/<stem>.onnx per model."
        ),
        inputs: list[str] = typer.Option(
            [],
            "--input",
            metavar="NAME[DIMS]",
            help="Static input shapes first, in ovc's syntax: x[1,3,640,640] (numbers only), so dml-legal judges sizes.",
        ),
        shapes: list[str] = typer.Option(
            [], "--shape", metavar="NAME=DIMS", help="An input shape as ovpool run takes it: x=1,3,640,640."
        ),
        verify: bool = typer.Option(
            False,
            "--verify",
            help="Before writing, run the result and its source on ovpool's numpy executor with the same seeded random "
            "inputs; beyond --rtol/--atol nothing is written, exit 1, the first node named.",
        ),
        verify_inputs: Path | None = verify_inputs_option(),
        rtol: float | None = verify_rtol_option(),
        atol: float | None = verify_atol_option(),
        seed: int = seed_option(),
        jobs: int = typer.Option(1, "--jobs", "-j", min=1, metavar="N", help="Transform N models at a time, in N processes."),
        force: bool = typer.Option(False, "--force", help="Replace existing outputs."),
        max_memory: str | None = max_memory_option(),
    ) -> None:
        """Rewrite ONNX models into an exact, more portable form of their pooling."""
        from ovpool.cli.common import batch
        from ovpool.conversions import check_output_suffix
        from ovpool.inputs import input_shapes, parse_shape_pairs
        from ovpool.transforms.catalog import parse_pass

        apply_max_memory(max_memory)
        checks = verify_options(verify, verify_inputs, rtol, atol, seed)
        if inputs and shapes:
            raise typer.BadParameter("give input shapes with --input or with --shape, not both")
        given = [str(s) for s in input_shapes(inputs) or parse_shape_pairs(shapes)] or None
        if not passes:
            raise typer.BadParameter("give at least one --pass NAME", param_hint="--pass")
        if output is not None and (len(sources) > 1 or output_dir is not None):
            raise typer.BadParameter("-o takes one model and no --output-dir; use --output-dir for several")
        if output is not None:
            check_output_suffix(output, "onnx")
        for name in passes:
            parse_pass(name)
        if len(sources) > 1:
            check_batch(sources, output, output_dir)
        one = partial(
            transform_one, passes=list(passes), output=output, output_dir=output_dir, force=force, verify=checks, inputs=given
        )
        raise typer.Exit(batch(sources, one, "transform", jobs))


def check_batch(sources: list[Path], output: Path | None, output_dir: Path | None) -> None:
    """Refuse the batch before any pass if two sources would write one file or one would overwrite
    another's input (a source that cannot be read is left to report its own error)."""
    from ovpool import files
    from ovpool.conversions import model_files
    from ovpool.errors import OvpoolError

    plans = []
    for src in sources:
        try:
            plans.append((src, [output_for(src, output, output_dir)], model_files(src)))
        except OvpoolError:
            continue
    files.check_batch(plans)


def transform_one(
    src: Path,
    passes: list[str],
    output: Path | None,
    output_dir: Path | None,
    force: bool,
    verify: VerifyOptions | None = None,
    inputs: list[str] | None = None,
) -> str:
    """Run the passes on one source (a worker process runs this with ``--jobs``); what it wrote."""
    from ovpool.errors import InputFileError
    from ovpool.files import OutputError, OutputExistsError, real_path
    from ovpool.transforms.apply import transform as run_transform
    from ovpool.transforms.catalog import parse_pass

    if src.suffix.lower() != ".onnx":
        raise InputFileError.in_file(src, "ovpool transform takes ONNX models (.onnx)")
    dest = output_for(src, output, output_dir)
    if output_dir is not None and real_path(dest, OutputError) == real_path(src):
        raise OutputExistsError.in_file(
            dest,
            "refusing to overwrite an input file: --output-dir writes DIR/<stem>.onnx, the source itself here; give another folder",
        )
    result = run_transform(src, [parse_pass(name) for name in passes], dest, force, verify or False, inputs)
    what = "changed by " + ", ".join(result.changed) if result.changed else "no pass changed anything"
    return f"wrote {dest} ({what}{'; verified' if verify else ''})"
