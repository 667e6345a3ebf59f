"""What the commands share: error reporting and batch processing with a progress bar."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ovpool.errors import OvpoolError

if TYPE_CHECKING:
    import numpy as np

    from ovpool.runtime.tensors import TensorDecl


def guarded(app: typer.Typer) -> None:
    """Run the app; an ``OvpoolError`` prints ``error: <message>`` and exits with its code."""
    try:
        code = app(standalone_mode=False)
    except OvpoolError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except Exception as exc:  # click usage errors and anything unforeseen: one line, never a traceback
        if callable(show := getattr(exc, "show", None)) and isinstance(exit_code := getattr(exc, "exit_code", None), int):
            show()  # a click.ClickException (typer vendors click, so no isinstance check)
            sys.exit(exit_code)
        if os.environ.get("OVPOOL_DEBUG"):
            raise
        typer.echo(f"error: internal error, please report it (OVPOOL_DEBUG=1 shows where): {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def batch(sources: Sequence[Path], action: Callable[[Path], str], verb: str) -> int:
    """Apply ``action`` to every source with a progress bar; one failure does not stop the rest.
    Prints the warnings each raised (``warning: ...``), what it produced or why it failed (an error that does not name its source gets it in
    front: ``error: b.onnx: node 'pool': ...``), then a summary; returns the exit code (the worst)."""
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True)
    worst = 0
    failed = 0
    with Progress(console=err, transient=True, disable=len(sources) < 2) as progress:
        task = progress.add_task(verb, total=len(sources))
        for src in sources:
            try:
                with warnings.catch_warnings(record=True) as notes:
                    warnings.simplefilter("always")
                    message = action(src)
                for note in notes:
                    err.print(f"warning: {note.message}", markup=False, highlight=False, soft_wrap=True)
                err.print(f"{src}: {message}", markup=False, highlight=False, soft_wrap=True)
            except OvpoolError as exc:
                failed += 1
                worst = max(worst, exc.exit_code)
                err.print(f"error: {exc.located(src)}", markup=False, highlight=False, soft_wrap=True)
            progress.advance(task)
    if len(sources) > 1:
        err.print(
            f"{verb}: {len(sources) - failed} of {len(sources)} succeeded, {failed} failed",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return worst


def check_input_options(inputs: Path | None, input_files: Sequence[str], random: bool, shapes: Sequence[str]) -> None:
    """Inputs come from files (``--inputs``, ``-i``) or ``--random-inputs``, exactly one of them;
    ``--shape`` goes with ``--random-inputs``. Otherwise an ``InputFileError`` (exit 2)."""
    from ovpool.errors import InputFileError

    given = inputs is not None or bool(input_files)
    if random == given:
        raise InputFileError("give the inputs (--inputs in.npz or -i NAME=x.npy) or --random-inputs, not both")
    if shapes and not random:
        raise InputFileError("--shape only applies with --random-inputs")


def model_inputs(
    label: str,
    decls: Sequence[TensorDecl],
    inputs: Path | None,
    input_files: Sequence[str],
    random: bool,
    shapes: Sequence[str],
    seed: int,
) -> dict[str, np.ndarray]:
    """The arrays to run: drawn from the declared inputs (``--random-inputs``, ``--shape``,
    ``--seed``) or loaded from files and checked against them."""
    from ovpool.runtime.tensors import check_inputs, load_inputs, parse_shapes, random_inputs

    if random:
        return random_inputs(label, decls, parse_shapes(shapes), seed)
    arrays = load_inputs(inputs, input_files)
    check_inputs(label, decls, arrays)
    return arrays
