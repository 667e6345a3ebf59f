"""What the commands share: error reporting and batch processing with a progress bar."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from ovpool.errors import OvpoolError

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    import numpy as np

    from ovpool.runtime.tensors import TensorDecl


def max_memory_option() -> Any:
    """``--max-memory SIZE``, the same on every command that allocates tensors (``apply_max_memory``)."""
    return typer.Option(
        None, "--max-memory", metavar="SIZE", help="Largest tensor to allocate, e.g. 16G (default 4G, or $OVPOOL_MAX_MEMORY)."
    )


def apply_max_memory(value: str | None) -> None:
    """Set the memory budget (``ovpool.memory``) for this process and the workers it starts."""
    from ovpool.memory import MEMORY_ENV, parse_bytes

    if value is not None:
        os.environ[MEMORY_ENV] = str(parse_bytes(value))


def path_parser(flag: str) -> Callable[[str], Path]:
    """The ``parser`` of a path option: ``Path(text)``, but an empty text is a ``UsageError``
    naming ``flag`` (``-o ""`` reads ``-o: got an empty path``), not ``Path("")``, which is ``.``."""

    def parse(text: str) -> Path:
        from ovpool.errors import UsageError

        if not text:
            raise UsageError(f"{flag}: got an empty path")
        return Path(text)

    return parse


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
    except MemoryError as exc:  # within --max-memory, beyond what the machine gives
        typer.echo(f"error: out of memory: {exc or 'an allocation failed'}; a lower --max-memory refuses it up front", err=True)
        sys.exit(1)
    except Exception as exc:  # click usage errors and anything unforeseen: one line, never a traceback
        if callable(show := getattr(exc, "show", None)) and isinstance(exit_code := getattr(exc, "exit_code", None), int):
            show()  # a click.ClickException (typer vendors click, so no isinstance check)
            sys.exit(exit_code)
        if os.environ.get("OVPOOL_DEBUG"):
            raise
        typer.echo(f"error: internal error, please report it (OVPOOL_DEBUG=1 shows where): {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def batch(
    sources: Sequence[Path],
    action: Callable[[Path], str],
    verb: str,
    jobs: int = 1,
    succeeded: list[Path] | None = None,
) -> int:
    """Apply ``action`` to every source with a progress bar (on a terminal); one failure does not stop the rest.
    Prints the warnings each raised (``warning: ...``), what it produced or why it failed (an error that does not name its source gets it in
    front: ``error: b.onnx: node 'pool': ...``), then a summary; returns the exit code (the worst).

    ``jobs`` > 1 runs the sources in that many worker processes (``action`` must then pickle: a
    module-level function or a ``functools.partial`` of one); the report is printed in source order
    all the same, each source's lines as soon as every source before it is done. The sources that
    succeeded are appended to ``succeeded`` (in source order)."""
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True)
    worst = 0
    failed = 0
    with Progress(console=err, transient=True, disable=len(sources) < 2 or not err.is_terminal) as progress:
        task = progress.add_task(verb, total=len(sources))
        outcomes = in_order(partial(attempt, action), sources, jobs, lambda: progress.advance(task))
        for src, (code, notes, message) in zip(sources, outcomes):
            for note in notes:
                err.print(f"warning: {note}", markup=False, highlight=False, soft_wrap=True)
            if code:
                failed += 1
                worst = max(worst, code)
                err.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
            else:
                err.print(f"{src}: {message}", markup=False, highlight=False, soft_wrap=True)
                if succeeded is not None:
                    succeeded.append(src)
    if len(sources) > 1:
        err.print(
            f"{verb}: {len(sources) - failed} of {len(sources)} succeeded, {failed} failed",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return worst


Outcome = tuple[int, list[str], str]
T = TypeVar("T")
R = TypeVar("R")


def attempt(action: Callable[[Path], str], src: Path) -> Outcome:
    """``action(src)`` as plain values that cross a process boundary: (0, warnings, what it did),
    or (exit code, warnings, the error located in ``src``)."""
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        try:
            message = action(src)
            code = 0
        except OvpoolError as exc:
            message, code = str(exc.located(src)), exc.exit_code
    return code, [str(note.message) for note in notes], message


def in_order(function: Callable[[T], R], items: Sequence[T], jobs: int, advance: Callable[[], None]) -> Iterator[R]:
    """``function(item)`` for each item, yielded in item order; with ``jobs`` > 1 computed in that
    many worker processes (``function`` must pickle), each result yielded as soon as every result
    before it is in. ``advance`` is called as each one finishes (a progress bar's step)."""
    if jobs < 2 or len(items) < 2:
        for item in items:
            result = function(item)
            advance()
            yield result
        return
    from concurrent.futures import as_completed

    done: dict[int, R] = {}
    following = 0
    with workers(min(jobs, len(items))) as pool:
        futures = {pool.submit(function, item): index for index, item in enumerate(items)}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            advance()
            while following in done:
                yield done.pop(following)
                following += 1


def workers(count: int) -> ProcessPoolExecutor:
    """A pool of ``count`` fresh processes (spawned, never forked: a fork next to OpenVINO's
    telemetry threads or numpy's BLAS threads can deadlock the child)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("spawn"))


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
