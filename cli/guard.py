"""Running a command so that it ends in one line and an exit code, never a traceback (``guarded``).

It imports no typer until an error needs it: ``ovpool validate FILE`` and ``ovpool convert
MODEL`` run their plain forms without typer (``ovpool.cli.app.main``).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import Any

from ovpool.errors import OvpoolError


def guarded(app: Callable[..., Any]) -> None:
    """Run the app (a typer app, or any callable taking ``standalone_mode``); an ``OvpoolError``
    prints ``error: <message>`` and exits with its code.

    Standard output that cannot take what the command prints (``> /dev/full``) is one line on
    stderr and exit 1; a pipe closed by its reader (``| head -1``) ends the command quietly with
    exit 1; a closed stream (``>&-``) reads as /dev/null, as Python's ``print`` treats it."""
    saved = sys.stdout, sys.stderr
    sys.stdout = _Stdout(sys.stdout or open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the process
    sys.stderr = sys.stderr or open(os.devnull, "w")  # noqa: SIM115
    try:
        code = _exit_code(app)
        sys.stdout.flush()
    except StdoutError as exc:
        devnull = os.open(os.devnull, os.O_WRONLY)  # the interpreter's last flush at exit must not fail again
        os.dup2(devnull, saved[0].fileno() if saved[0] is not None else 1)
        os.close(devnull)
        if exc.errno != errno.EPIPE:
            _echo(f"error: {exc}")
        code = exc.exit_code
    finally:
        sys.stdout, sys.stderr = saved[0] or sys.stdout, saved[1] or sys.stderr
    sys.exit(code)


def _exit_code(app: Callable[..., Any]) -> int:
    """Run ``app``: its exit code, every error printed as one line (``guarded``)."""
    try:
        code = app(standalone_mode=False)
    except StdoutError:
        raise
    except OvpoolError as exc:
        _echo(f"error: {exc}")
        return exc.exit_code
    except Exception as exc:
        return _other_error(exc)
    return code if isinstance(code, int) else 0


def _other_error(exc: Exception) -> int:
    """The exit code of an exception that is no ``OvpoolError``, its one line printed (typer's
    and click's are told apart here, so a command that never meets one never imports typer)."""
    import typer

    if isinstance(exc, typer.Exit):
        return exc.exit_code
    if isinstance(exc, typer.Abort):
        _echo("aborted")
        return 130
    if isinstance(exc, MemoryError):  # within --max-memory, beyond what the machine gives
        _echo(f"error: out of memory: {exc or 'an allocation failed'}; a lower --max-memory refuses it up front")
        return 1
    # click usage errors and anything unforeseen: one line, never a traceback
    if callable(show := getattr(exc, "show", None)) and isinstance(exit_code := getattr(exc, "exit_code", None), int):
        # a click.ClickException (typer vendors click, so no isinstance check): a usage error
        # is one line like every other error; bare ``ovpool`` still shows the help
        context, message = getattr(exc, "ctx", None), getattr(exc, "format_message", None)
        if context is not None and callable(message) and type(exc).__name__ != "NoArgsIsHelpError":
            _echo(f"error: {message().rstrip('.')} (see '{_command(context)} --help')")
        else:
            show()
        return exit_code
    if os.environ.get("OVPOOL_DEBUG"):
        raise exc
    _echo(f"error: internal error, please report it (OVPOOL_DEBUG=1 shows where): {type(exc).__name__}: {exc}")
    return 1


def _echo(line: str) -> None:
    """``line`` on standard error as ``typer.echo(line, err=True)`` prints it."""
    import typer

    typer.echo(line, err=True)


def _command(context: Any) -> str:
    """``ovpool run`` for a click context of the run command, however the program was started
    (``python -m ovpool`` names itself ``python -m ovpool``)."""
    names = []
    while context.parent is not None:
        names.append(context.info_name)
        context = context.parent
    return " ".join(["ovpool", *reversed(names)])


class StdoutError(OvpoolError):
    """Standard output refused what the command printed (``errno`` says why: ENOSPC, EPIPE)."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot write to standard output ({exc.strerror or exc})")
        self.errno = exc.errno


class _Stdout:
    """``sys.stdout`` while a command runs: a failed write or flush is a ``StdoutError``, told
    apart from the failures of the files the command reads and writes."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise StdoutError(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise StdoutError(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
