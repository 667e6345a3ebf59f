"""The ``ovpool`` command line: thin typer commands over the library.

Exit codes: 0 success, 1 findings / unsupported / bad model, 2 usage or unreadable input.
Each command lives in its own module with a ``register(app)`` function; heavy libraries are
imported inside the commands, so ``ovpool --help`` starts fast.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer

import ovpool
from ovpool.cli.helptext import Group

COMMAND_MODULES = ("convert", "run", "compare", "devices", "bench", "transform", "validate", "explain", "examples")

app = typer.Typer(
    name="ovpool",
    cls=Group,
    help="Exact pooling across ONNX, OpenVINO IR and DirectML.",
    epilog="Exit codes: 0 success; 1 findings, an unsupported node or a bad model; 2 usage error or unreadable input. "
    "Each command's --help says where its outputs go.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ovpool {ovpool.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version and exit."),
) -> None:
    """Exact pooling across ONNX, OpenVINO IR and DirectML."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"ovpool.cli.{_name}").register(app)


def main() -> None:
    """Console entry point: library errors become one line on stderr and their exit code.
    A plain ``ovpool validate`` runs without typer's argument processing (``validate.quick``);
    choosing it happens inside ``guarded`` too, so nothing escapes as a traceback."""
    from ovpool.cli.common import guarded

    guarded(_dispatch)


def _dispatch(standalone_mode: bool = False) -> Any:
    """``validate.quick`` for the command line when it takes it, else the typer app."""
    import sys

    from ovpool.cli.validate import quick

    return (quick(sys.argv[1:]) or app)(standalone_mode=standalone_mode)
