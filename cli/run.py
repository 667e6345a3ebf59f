"""``ovpool run MODEL [--device ...] [--inputs in.npz | -i NAME=x.npy ...] [--output out.npz]``."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        model: Path = typer.Argument(..., help="ONNX model."),
        device: str = typer.Option("numpy", "--device", help="numpy (exact executor)."),
        inputs: Path | None = typer.Option(None, "--inputs", help=".npz keyed by input name."),
        input_files: list[str] = typer.Option([], "-i", "--input", help="NAME=file.npy, repeatable."),
        output: Path | None = typer.Option(None, "--output", help="Write outputs to this .npz."),
        force: bool = typer.Option(False, "--force", help="Replace an existing --output."),
    ) -> None:
        """Run a model and print a summary of its outputs (or save them)."""
        from ovpool.runio import load_inputs, save_outputs, summary

        import ovpool

        arrays = load_inputs(inputs, input_files)
        results = ovpool.run(model, arrays, device=device)
        if output is not None:
            save_outputs(output, results, force, sources=[model])
        typer.echo(summary(results))
