"""``ovpool transform SRC... [-o OUT | --output-dir DIR] --pass NAME [--pass NAME ...] [--force]``."""

from __future__ import annotations

from pathlib import Path

import typer


def output_for(src: Path, output: Path | None, output_dir: Path | None) -> Path:
    """``-o OUT`` as given; ``--output-dir DIR``: ``DIR/<stem>.onnx``; neither:
    ``./<stem>.transformed.onnx`` (so a source in the working folder is never the output)."""
    if output is not None:
        return output
    if output_dir is not None:
        return output_dir / f"{src.stem}.onnx"
    return Path.cwd() / f"{src.stem}.transformed.onnx"


def register(app: typer.Typer) -> None:
    @app.command()
    def transform(
        sources: list[Path] = typer.Argument(..., metavar="SRC...", help="ONNX models."),
        passes: list[str] = typer.Option(
            [],
            "--pass",
            "-p",
            metavar="NAME",
            help="Pass to run, repeatable, in order: explicit-pads, no-ceil, opset=N, dml-legal, expand-global.",
        ),
        output: Path | None = typer.Option(None, "-o", "--output", help="Output file (one source only)."),
        output_dir: Path | None = typer.Option(None, "--output-dir", help="Write DIR/<source stem>.onnx per source."),
        force: bool = typer.Option(False, "--force", help="Replace existing outputs."),
    ) -> None:
        """Rewrite ONNX models into an exact, more portable form of their pooling."""
        from ovpool.cli.common import batch
        from ovpool.errors import InputFileError
        from ovpool.transforms.apply import transform as run_transform
        from ovpool.transforms.catalog import parse_pass

        if not passes:
            raise typer.BadParameter("give at least one --pass NAME", param_hint="--pass")
        if output is not None and (len(sources) > 1 or output_dir is not None):
            raise typer.BadParameter("-o takes one source and no --output-dir; use --output-dir for several")
        chosen = [parse_pass(name) for name in passes]

        def one(src: Path) -> str:
            if src.suffix.lower() != ".onnx":
                raise InputFileError.in_file(src, "ovpool transform takes ONNX models (.onnx)")
            dest = output_for(src, output, output_dir)
            result = run_transform(src, chosen, dest, force)
            what = "changed by " + ", ".join(result.changed) if result.changed else "no pass changed anything"
            return f"wrote {dest} ({what})"

        raise typer.Exit(batch(sources, one, "transform"))
