"""``ovpool examples [NAME...]``: the paths of the bundled example files, one per line."""

from __future__ import annotations

import typer

from ovpool.cli.helptext import command

OUTPUTS = "the paths on stdout, one per line; nothing is written."


def register(app: typer.Typer) -> None:
    @command(app, OUTPUTS, {2: "no such example"})
    def examples(
        names: list[str] = typer.Argument(None, metavar="NAME...", help="Examples to find (default: all of them)."),
    ) -> None:
        """Print where the bundled examples are installed, e.g. ovpool convert "$(ovpool examples tiny_pool.onnx)"."""
        from ovpool import examples as bundled

        found = [bundled.path(name) for name in names or bundled.NAMES]
        typer.echo("\n".join(str(p) for p in found))
