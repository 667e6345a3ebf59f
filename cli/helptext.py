"""``--help`` that reads like a command line's: metavars instead of Python types, and an epilog.

typer 0.29 shows each parameter's Python type as its placeholder (``<list[Path]>``, ``<str>``, and
``<bool>`` on flags that take no value) and writes a required variadic argument ``{SRC...}...``.
The commands use ``Command`` (and the app ``Group``), whose parameters show their metavar instead:
``MODEL...`` for a variadic argument, ``PATH`` for a path option, ``N`` for a number, ``TEXT``
otherwise unless the option names its own (``--to FORMAT``), nothing for a flag. ``epilog`` is the
closing paragraph every command's help ends with: its exit codes and where its outputs go.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

EXIT_CODES = {
    0: "success",
    1: "findings, an unsupported node or a bad model",
    2: "usage error or unreadable input",
}


def epilog(outputs: str, codes: dict[int, str] | None = None) -> str:
    """The closing help paragraph: ``Exit codes: 0 success; 1 ...; 2 .... Outputs: <outputs>``.
    ``codes`` replaces the meaning of some codes for this command (``{1: "findings"}``)."""
    meanings = {**EXIT_CODES, **(codes or {})}
    listed = "; ".join(f"{code} {meaning}" for code, meaning in sorted(meanings.items()))
    return f"Exit codes: {listed}.\n\nOutputs: {outputs}"


class _Argument(TyperArgument):
    """A positional argument shown by its metavar alone: ``MODEL...`` (variadic), ``[NAME]`` (optional)."""

    def _name(self) -> str:
        name = self.metavar or (self.name or "").upper()
        return name if self.nargs == 1 or name.endswith("...") else name + "..."

    def _rich_display_name(self) -> str:
        return self._name()

    def _usage_display_name(self) -> str:
        return self._name() if self.required else f"[{self._name()}]"

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        return [self._usage_display_name()]

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class _Option(TyperOption):
    """An option shown with its metavar (``--output PATH``), a flag with none (``--force``)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        if self.metavar:
            return self.metavar
        descriptor = getattr(self, "type_descriptor", None)
        if descriptor is not None and descriptor.is_path:
            return "PATH"
        annotation = getattr(descriptor, "annotation", None)
        if descriptor is not None and descriptor.is_list:
            annotation = getattr(annotation, "__args__", (None,))[0]
        return "N" if annotation in (int, float) else "TEXT"


_PLAIN: dict[type, type] = {TyperArgument: _Argument, TyperOption: _Option}


def _plain(param: Any) -> Any:
    """The parameter, shown by metavar (its class swapped for the subclass above)."""
    swapped = _PLAIN.get(type(param))
    if swapped is not None:
        param.__class__ = swapped
    return param


class _Plain:
    """Shows a command's parameters (``--help`` included) by metavar, not type."""

    params: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params = [_plain(p) for p in self.params]

    def get_help_option(self, ctx: Any) -> Any:
        return _plain(super().get_help_option(ctx))  # type: ignore[misc]


class Command(_Plain, TyperCommand):
    """A command whose parameters show metavars, not types."""


class Group(_Plain, TyperGroup):
    """The ``ovpool`` group, its options shown like ``Command``'s."""


def command(app: typer.Typer, outputs: str, codes: dict[int, str] | None = None) -> Any:
    """``app.command`` with ``Command`` and the epilog of ``outputs`` and ``codes``."""
    return app.command(cls=Command, epilog=epilog(outputs, codes))
