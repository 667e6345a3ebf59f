"""What the commands share: options, batch processing with a progress bar (``guarded``, the error
reporting, is ``ovpool.cli.guard``). typer is imported by the functions that make options only:
the plain forms of ``validate`` and ``convert`` run without it (``ovpool.cli.app``)."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ovpool.errors import OvpoolError

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    import numpy as np

    from ovpool.check.verify import VerifyOptions
    from ovpool.tensors import TensorDecl


def max_memory_option() -> Any:
    """``--max-memory SIZE``, the same on every command that allocates tensors (``apply_max_memory``)."""
    import typer

    return typer.Option(
        None, "--max-memory", metavar="SIZE", help="Memory budget of a run, e.g. 16G (default 4G, or $OVPOOL_MAX_MEMORY)."
    )


def apply_max_memory(value: str | None) -> None:
    """Set the memory budget (``ovpool.memory``) for this process and the workers it starts. Without
    ``--max-memory``, ``$OVPOOL_MAX_MEMORY`` is checked here, before any model is read: a bad value
    (``OVPOOL_MAX_MEMORY=junk``) is a ``UsageError`` naming the variable alone, not an error of the
    model that happened to allocate first."""
    from ovpool.memory import MEMORY_ENV, budget, parse_bytes

    if value is not None:
        os.environ[MEMORY_ENV] = str(parse_bytes(value))
    else:
        budget()


def int_option(default: int, flag: str, low: int, high: int | None, help: str) -> Any:
    """An int option that takes ``low`` to ``high`` (None: no upper bound), the same on every
    command that has it; a value outside is a ``UsageError`` (exit 2) naming the flag:
    ``int_option(20, "--runs", 1, 1_000_000, ...)`` refuses ``--runs 0`` as ``--runs 0: must be
    from 1 to 1,000,000`` (and ``--runs 99999999999999999999999``, which would run for ever)."""
    import typer

    from ovpool.errors import UsageError

    def check(value: int) -> int:
        if value < low or high is not None and value > high:
            allowed = f">= {low:,}" if high is None else f"from {low:,} to {high:,}"
            raise UsageError(f"{flag} {value}: must be {allowed}")
        return value

    return typer.Option(default, flag, metavar="N", callback=check, help=help)


def seed_option() -> Any:
    """``--seed N``, the same on ``run``, ``compare`` and ``bench``: the seed of the random inputs,
    any int >= 0 (``numpy.random.default_rng`` takes no negative seed)."""
    return int_option(0, "--seed", 0, None, "Seed of the random inputs (the same seed, the same inputs), >= 0.")


def fallback_level(fallback: str | None, no_fallback: bool, default: str) -> str:
    """The ``--fallback`` level: ``default`` when neither option is given, ``none`` with
    ``--no-fallback``; ``--no-fallback`` with ``--fallback cpu`` (or ``numpy``) contradicts itself
    and is a ``UsageError`` rather than one of them silently winning."""
    from ovpool.errors import UsageError

    if no_fallback and fallback not in (None, "none"):
        raise UsageError(f"--fallback {fallback} and --no-fallback contradict each other: give one")
    return "none" if no_fallback else fallback or default


def path_parser(flag: str) -> Callable[[str], Path]:
    """The ``parser`` of a path option: ``Path(text)``, but an empty text is a ``UsageError``
    naming ``flag`` (``-o ""`` reads ``-o: got an empty path``), not ``Path("")``, which is ``.``."""

    def parse(text: str) -> Path:
        from ovpool.errors import UsageError

        if not text:
            raise UsageError(f"{flag}: got an empty path")
        return Path(text)

    return parse


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
    worst = 0
    failed = 0
    with _progress(verb, len(sources)) as (advance, say):
        outcomes = in_order(partial(attempt, action), sources, jobs, advance)
        for src, (code, notes, message) in zip(sources, outcomes):
            for note in notes:
                say(f"warning: {note}")
            if code:
                failed += 1
                worst = max(worst, code)
                say(f"error: {message}")
            else:
                say(f"{src}: {message}")
                if succeeded is not None:
                    succeeded.append(src)
        if len(sources) > 1:
            say(f"{verb}: {len(sources) - failed} of {len(sources)} succeeded, {failed} failed")
    return worst


@contextlib.contextmanager
def _progress(verb: str, total: int) -> Iterator[tuple[Callable[[], None], Callable[[str], None]]]:
    """A progress bar of ``total`` steps on a terminal, for two sources or more: yields the step
    function and the function printing a line of the report on stderr, above the bar. Without a
    bar the lines are printed as they are (``print``), and rich is not imported: one model's
    ``ovpool convert`` spends no ~15 ms on it."""
    if total < 2 or not sys.stderr.isatty():
        yield (lambda: None), _plain_line
        return
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True)
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(verb, total=total)
        yield (lambda: progress.advance(task)), partial(err.print, markup=False, highlight=False, soft_wrap=True)


def _plain_line(text: str) -> None:
    """``text`` as one line on stderr."""
    print(text, file=sys.stderr)


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
    if random and given:
        raise InputFileError("give the inputs (--inputs in.npz or -i NAME=x.npy) or --random-inputs, not both")
    if not random and not given:
        raise InputFileError("no inputs: give --inputs in.npz, -i NAME=x.npy or --random-inputs")
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
    sessions: Sequence[Any] = (),
) -> dict[str, np.ndarray]:
    """The arrays to run: drawn from the declared inputs (``--random-inputs``, ``--shape``,
    ``--seed``), once the run of ``sessions`` on them is within the memory budget, or loaded from
    files and checked against them."""
    from ovpool.execution.sessions import budget_checks
    from ovpool.tensors import check_inputs, load_inputs, parse_shapes, random_inputs, typed_inputs

    if random:
        return random_inputs(label, decls, parse_shapes(shapes), seed, budget_checks(*sessions))
    arrays = typed_inputs(decls, load_inputs(inputs, input_files))
    check_inputs(label, decls, arrays)
    return arrays


def verify_inputs_option() -> Any:
    """``--verify-inputs FILE.npz``, the same on ``convert`` and ``transform``."""
    import typer

    return typer.Option(
        None, "--verify-inputs", metavar="FILE.npz", help="--verify with these inputs (.npz keyed by input name)."
    )


def verify_rtol_option() -> Any:
    """``--rtol`` of ``--verify`` (None: compare's 1e-4)."""
    import typer

    return typer.Option(None, "--rtol", help="--verify: allowed difference relative to the output's largest magnitude (1e-4).")


def verify_atol_option() -> Any:
    """``--atol`` of ``--verify`` (None: compare's 1e-6)."""
    import typer

    return typer.Option(None, "--atol", help="--verify: allowed absolute difference on top of --rtol (1e-6).")


def verify_options(verify: bool, inputs: Path | None, rtol: float | None, atol: float | None, seed: int) -> VerifyOptions | None:
    """``--verify`` and its options as ``VerifyOptions`` (None without ``--verify``); an option of
    it given alone is a ``UsageError`` (exit 2): ``--rtol`` without ``--verify`` would check nothing."""
    from ovpool.errors import UsageError

    if not verify:
        given = [flag for flag, value in (("--verify-inputs", inputs), ("--rtol", rtol), ("--atol", atol)) if value is not None]
        if given or seed:
            raise UsageError(f"{', '.join(given or ['--seed'])}: an option of --verify; give --verify too")
        return None
    from ovpool.check.verify import VerifyOptions

    defaults = VerifyOptions()
    return VerifyOptions(
        inputs, rtol=defaults.rtol if rtol is None else rtol, atol=defaults.atol if atol is None else atol, seed=seed
    )


def import_without(package: str, optional: str) -> None:
    """Import ``package`` (not yet imported) without its submodule ``optional``, which its
    ``__init__`` imports inside ``try``/``except ImportError``; a release that imports it
    unconditionally is imported as usual. For the console's commands only: it spares a process
    what a library user may want. ``optional`` can still be imported afterwards; only the names
    the ``__init__`` would have taken from it are missing.

    ``openvino/__init__.py`` imports ``openvino.tools.ovc`` to offer ``openvino.convert_model``:
    ovc's Python tools and OpenVINO's telemetry client (urllib, http.client, email), ~80 ms of a
    0.5 s conversion (``import openvino``: 0.28 s whole process against 0.20 s without it, with
    ``CI=true``). ``ovpool convert`` converts through the frontend API, which uses neither."""
    if package in sys.modules:
        return
    sys.modules[optional] = None  # type: ignore[assignment]  # importing it raises ImportError
    try:
        importlib.import_module(package)
    except ImportError:
        pass  # the release needs it: imported below with it
    finally:
        if optional in sys.modules and sys.modules[optional] is None:
            del sys.modules[optional]
    importlib.import_module(package)
