"""The ``ovpool`` command line: thin typer commands over the library.

Exit codes: 0 success, 1 findings / unsupported / bad model, 2 usage or unreadable input.
Each command lives in its own module with a ``register(app)`` function; heavy libraries are
imported inside the commands, so ``ovpool --help`` starts fast. The typer application ``app`` is
built when first used: ``main`` runs the plain forms of ``validate`` and ``convert`` without it
(``validate.quick``, ``convert.quick``), as typer, click and pydantic take ~0.1 s to import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

    app: typer.Typer

COMMAND_MODULES = ("convert", "run", "compare", "devices", "bench", "transform", "validate", "explain", "examples")
# The commands whose plain forms run without typer: each module's ``quick(argv)``.
QUICK_MODULES = ("validate", "convert")


def __getattr__(name: str) -> Any:
    """``app``, the typer application, built on first use (``build_app``)."""
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module 'ovpool.cli.app' has no attribute {name!r}")


def build_app() -> typer.Typer:
    """The typer application with every command of ``COMMAND_MODULES`` registered."""
    import typer

    import ovpool
    from ovpool.cli.helptext import Group

    built = typer.Typer(
        name="ovpool",
        cls=Group,
        help="Exact pooling across ONNX, OpenVINO IR and DirectML.",
        epilog="Exit codes: 0 success; 1 findings, an unsupported node or a bad model; 2 usage error or unreadable input. "
        "Each command's --help says where its outputs go.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    def version(value: bool) -> None:
        if value:
            typer.echo(f"ovpool {ovpool.__version__}")
            raise typer.Exit()

    @built.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=version, is_eager=True, help="Show the version and exit."),
    ) -> None:
        """Exact pooling across ONNX, OpenVINO IR and DirectML."""

    for name in COMMAND_MODULES:
        importlib.import_module(f"ovpool.cli.{name}").register(built)
    return built


def main() -> None:
    """Console entry point: library errors become one line on stderr and their exit code.
    A plain ``ovpool validate`` or ``ovpool convert`` runs without typer's argument processing
    (``validate.quick``, ``convert.quick``); choosing it happens inside ``guarded`` too, so
    nothing escapes as a traceback.

    At exit the objects alive are frozen (``gc.freeze``) before the interpreter's last garbage
    collections, which then skip them: the process ends ~30 ms sooner after a conversion (a few
    hundred thousand objects of onnx, protobuf and OpenVINO), and what it wrote is closed already."""
    import atexit
    import gc

    from ovpool.cli.guard import guarded

    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    guarded(_dispatch)


def _dispatch(standalone_mode: bool = False) -> Any:
    """The first ``quick`` form that takes the command line, else the typer app."""
    import sys

    for name in QUICK_MODULES:
        quick = importlib.import_module(f"ovpool.cli.{name}").quick(sys.argv[1:])
        if quick is not None:
            return quick(standalone_mode=standalone_mode)
    from ovpool.cli.app import app

    return app(standalone_mode=standalone_mode)
