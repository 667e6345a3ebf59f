"""``ovpool validate FILE... [--format text|json|junit] [--strict] [--target-openvino RELEASE] [--jobs N]``:
exit 0 clean, 1 findings, 2 unreadable.

``quick`` runs the command without typer's argument processing, which imports pydantic (typer
0.29 coerces every non-flag parameter through a pydantic TypeAdapter: ~0.1 s, as much as reading
a 5,000-layer IR). It takes only what the typer command reads the same way (files, ``--strict``,
``--format F`` / ``--format=F`` with a known F, ``--target-openvino R`` / ``--target-openvino=R``, ``--jobs N`` / ``-j N`` / ``--jobs=N`` with N >= 1)
and leaves everything else (``--help``, ``--``, unknown options, a bad format or count) to typer,
so the two paths answer alike. ``quick`` runs inside ``guarded`` (``ovpool.cli.app.main``), and a
count is ASCII digits (``-j ²`` goes to typer, which refuses it: ``str.isdigit`` takes superscripts).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

    from ovpool.ir.validation import FileReport

FORMATS = ("text", "json", "junit")
# A --jobs count ``quick`` takes: ASCII digits, at least 1, short enough for ``int`` (a longer or
# odder one goes to typer).
_JOBS = re.compile(r"[1-9][0-9]{0,5}")
OUTPUTS = (
    "the report on stdout (redirect it to a file outside the files validated: "
    "ovpool validate --format junit ir/*.xml > ovpool-junit.xml); nothing else is written."
)


def register(app: typer.Typer) -> None:
    import typer

    from ovpool.cli.helptext import command

    @command(app, OUTPUTS, {0: "no findings", 1: "findings", 2: "usage error or an unreadable file"})
    def validate(
        files: list[Path] = typer.Argument(..., metavar="FILE...", help="OpenVINO IR .xml files (v10/v11)."),
        fmt: str = typer.Option("text", "--format", metavar="FORMAT", help="text (a table), json, or junit (XML for CI)."),
        strict: bool = typer.Option(False, "--strict", help="Also compare with OpenVINO's shape inference (when installed)."),
        target_openvino: str | None = typer.Option(
            None,
            "--target-openvino",
            metavar="RELEASE",
            help="Also report every layer this OpenVINO release cannot read (OVP601), e.g. 2023.3: a MaxPool-14 there.",
        ),
        jobs: int = typer.Option(1, "--jobs", "-j", min=1, metavar="N", help="Check N files at a time, in N processes."),
    ) -> None:
        """Check the pooling layers of IR files (and the ReduceMean/ReduceMax of global pools):
        attributes per version, declared dims, edges."""
        if fmt not in FORMATS:
            raise typer.BadParameter(f"--format {fmt}: expected text, json or junit")
        raise typer.Exit(run(files, fmt, strict, jobs, target_openvino))


def run(files: Sequence[Path], fmt: str, strict: bool, jobs: int = 1, target_openvino: str | None = None) -> int:
    """Validate each file, print the report in ``fmt``; the exit code (2 if any file is unreadable).
    ``jobs`` > 1 reads that many files at a time in worker processes; the report is the same.
    ``target_openvino`` (``"2023.3"``) adds OVP601 findings; a release ovpool does not know is a
    ``UsageError`` before any file is read."""
    from ovpool.ir import releases
    from ovpool.ir.report import render
    from ovpool.ir.validation import exit_code

    if target_openvino is not None:
        releases.parse(target_openvino)
    reports, unreadable = [], []
    for path, outcome in zip(files, _outcomes(files, strict, jobs, target_openvino)):
        if isinstance(outcome, str):
            unreadable.append((str(path), outcome))
        else:
            reports.append(outcome)
    sys.stdout.write(render(reports, unreadable, fmt))
    sys.stdout.flush()
    return exit_code(reports, len(unreadable))


def check_file(path: Path, strict: bool, target_openvino: str | None = None) -> FileReport | str:
    """One file's report, or why it is unreadable (plain values: a worker process returns them)."""
    from ovpool.errors import InputFileError
    from ovpool.ir.validation import validate_file

    try:
        return validate_file(path, strict, target_openvino)
    except InputFileError as exc:
        return str(exc)


def _outcomes(files: Sequence[Path], strict: bool, jobs: int, target: str | None = None) -> Iterator[FileReport | str]:
    """Each file's ``check_file`` in order: here, or in ``jobs`` worker processes behind a progress bar."""
    if jobs < 2 or len(files) < 2:
        yield from (check_file(path, strict, target) for path in files)
        return
    from rich.console import Console
    from rich.progress import Progress

    from ovpool.cli.common import in_order

    err = Console(stderr=True)
    with Progress(console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("validate", total=len(files))
        yield from in_order(
            partial(check_file, strict=strict, target_openvino=target), files, jobs, lambda: progress.advance(task)
        )


def quick(argv: Sequence[str]) -> Callable[..., int] | None:
    """``ovpool validate`` for the argument list after ``ovpool`` when it reads plainly (see the
    module docstring): a callable giving the exit code, else None (typer takes it).
    ``["validate", "a.xml", "--format=json"]`` is quick; ``["validate", "--help"]`` is not."""
    if not argv or argv[0] != "validate":
        return None
    files: list[Path] = []
    fmt, strict, jobs = "text", False, "1"
    target: str | None = None
    tokens = iter(argv[1:])
    for token in tokens:
        if token == "--strict":
            strict = True
        elif token == "--target-openvino":
            target = next(tokens, "")
        elif token.startswith("--target-openvino="):
            target = token.removeprefix("--target-openvino=")
        elif token == "--format":
            fmt = next(tokens, "")
        elif token.startswith("--format="):
            fmt = token.removeprefix("--format=")
        elif token in ("--jobs", "-j"):
            jobs = next(tokens, "")
        elif token.startswith("--jobs="):
            jobs = token.removeprefix("--jobs=")
        elif token.startswith("-"):
            return None
        else:
            files.append(Path(token))
    if not files or fmt not in FORMATS or not _JOBS.fullmatch(jobs) or target == "":
        return None
    return lambda standalone_mode=False: run(files, fmt, strict, int(jobs), target)
