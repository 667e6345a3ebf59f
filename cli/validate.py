"""``ovpool validate FILE... [--format text|json|junit] [--strict]``: exit 0 clean, 1 findings, 2 unreadable."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        files: list[Path] = typer.Argument(..., metavar="FILE...", help="OpenVINO IR .xml files (v10/v11)."),
        fmt: str = typer.Option("text", "--format", help="text (a table), json, or junit (XML for CI)."),
        strict: bool = typer.Option(False, "--strict", help="Also compare with OpenVINO's shape inference (when installed)."),
    ) -> None:
        """Check the pooling layers of IR files: attributes per version, declared dims, edges."""
        from ovpool.errors import InputFileError
        from ovpool.validation import exit_code, validate_file
        from ovpool.validation_report import render

        if fmt not in ("text", "json", "junit"):
            raise typer.BadParameter(f"--format {fmt}: expected text, json or junit")
        reports, unreadable = [], []
        for path in files:
            try:
                reports.append(validate_file(path, strict))
            except InputFileError as exc:
                unreadable.append((str(path), str(exc)))
        typer.echo(render(reports, unreadable, fmt), nl=False)
        raise typer.Exit(exit_code(reports, len(unreadable)))
