"""``ovpool validate FILE... [--format text|json|junit] [--strict]``: exit 0 clean, 1 findings, 2 unreadable.

``quick`` runs the command without typer's argument processing, which imports pydantic (typer
0.29 coerces every non-flag parameter through a pydantic TypeAdapter: ~0.1 s, as much as reading
a 5,000-layer IR). It takes only what the typer command reads the same way (files, ``--strict``,
``--format F`` / ``--format=F`` with a known F) and leaves everything else (``--help``, ``--``,
unknown options, a bad format) to typer, so the two paths answer alike.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import typer

FORMATS = ("text", "json", "junit")


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        files: list[Path] = typer.Argument(..., metavar="FILE...", help="OpenVINO IR .xml files (v10/v11)."),
        fmt: str = typer.Option("text", "--format", help="text (a table), json, or junit (XML for CI)."),
        strict: bool = typer.Option(False, "--strict", help="Also compare with OpenVINO's shape inference (when installed)."),
    ) -> None:
        """Check the pooling layers of IR files: attributes per version, declared dims, edges."""
        if fmt not in FORMATS:
            raise typer.BadParameter(f"--format {fmt}: expected text, json or junit")
        raise typer.Exit(run(files, fmt, strict))


def run(files: Sequence[Path], fmt: str, strict: bool) -> int:
    """Validate each file, print the report in ``fmt``; the exit code (2 if any file is unreadable)."""
    from ovpool.errors import InputFileError
    from ovpool.ir.report import render
    from ovpool.ir.validation import exit_code, validate_file

    reports, unreadable = [], []
    for path in files:
        try:
            reports.append(validate_file(path, strict))
        except InputFileError as exc:
            unreadable.append((str(path), str(exc)))
    sys.stdout.write(render(reports, unreadable, fmt))
    sys.stdout.flush()
    return exit_code(reports, len(unreadable))


def quick(argv: Sequence[str]) -> Callable[..., int] | None:
    """``ovpool validate`` for the argument list after ``ovpool`` when it reads plainly (see the
    module docstring): a callable giving the exit code, else None (typer takes it).
    ``["validate", "a.xml", "--format=json"]`` is quick; ``["validate", "--help"]`` is not."""
    if not argv or argv[0] != "validate":
        return None
    files: list[Path] = []
    fmt, strict = "text", False
    tokens = iter(argv[1:])
    for token in tokens:
        if token == "--strict":
            strict = True
        elif token == "--format":
            fmt = next(tokens, "")
        elif token.startswith("--format="):
            fmt = token.removeprefix("--format=")
        elif token.startswith("-"):
            return None
        else:
            files.append(Path(token))
    if not files or fmt not in FORMATS:
        return None
    return lambda standalone_mode=False: run(files, fmt, strict)
