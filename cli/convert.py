"""``ovpool convert SRC... [-o OUT | --output-dir DIR] [--to ir|onnx|dml] [--force]``."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def convert(
        sources: list[Path] = typer.Argument(..., metavar="SRC...", help="Models: .onnx, .xml (IR) or .json (DirectML)."),
        output: Path | None = typer.Option(None, "-o", "--output", help="Output file (one source only)."),
        output_dir: Path | None = typer.Option(None, "--output-dir", help="Write DIR/<source stem>.<ext> per source."),
        to: str | None = typer.Option(
            None, "--to", help="Target format: ir, onnx or dml (default: from -o, else ONNX->IR, IR->ONNX)."
        ),
        feature_level: str | None = typer.Option(
            None, "--feature-level", help="DirectML: highest feature level to use, e.g. 4.0."
        ),
        force: bool = typer.Option(False, "--force", help="Replace existing outputs."),
    ) -> None:
        """Convert models between ONNX, OpenVINO IR and DirectML with exact pooling."""
        from ovpool.cli.common import batch
        from ovpool.conversions import convert as run_convert

        if output is not None and (len(sources) > 1 or output_dir is not None):
            raise typer.BadParameter("-o takes one source and no --output-dir; use --output-dir for several")
        options = {"feature_level": feature_level} if feature_level else {}

        def one(src: Path) -> str:
            written = run_convert(src, output, to=to, force=force, output_dir=output_dir, **options)
            return "wrote " + ", ".join(str(p) for p in written)

        raise typer.Exit(batch(sources, one, "convert"))
