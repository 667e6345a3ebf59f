"""``--help`` reads like a command line's: metavars (``MODEL...``, ``PATH``), no Python types as
placeholders, no value on flags, and every command's help ends with its exit codes and outputs."""

from __future__ import annotations

import re

import pytest
from runtime_support import invoke

from ovpool.cli.app import COMMAND_MODULES

# what typer 0.29 shows when a parameter has no metavar: <bool>, <str>, <list[Path]>, <path>, <int>
TYPE_PLACEHOLDER = re.compile(r"<(bool|str|int|float|path|list\[[^\]]*\]|Path)>")


def _help(capsys, *args: str) -> str:
    code, out, err = invoke(capsys, *args, "--help")
    assert code == 0, err
    return " ".join(out.split())  # rich wraps and boxes the text: compare it as one line


@pytest.mark.parametrize("command", COMMAND_MODULES)
def test_command_help_has_metavars_exit_codes_and_outputs(capsys, command):
    text = _help(capsys, command)
    assert not TYPE_PLACEHOLDER.search(text), TYPE_PLACEHOLDER.search(text)
    assert "{" not in text.split("│")[0], "usage line with typer's {ARG}... braces"
    codes = text.index("Exit codes: 0")
    outputs = text.index("Outputs: ")
    assert codes < outputs and "1 " in text[codes:outputs] and "2 " in text[codes:outputs]
    assert "Options" in text[:codes], "the epilog comes after the options"


def test_usage_lines_name_their_arguments(capsys):
    assert "convert [OPTIONS] MODEL..." in _help(capsys, "convert")
    assert "validate [OPTIONS] FILE..." in _help(capsys, "validate")
    assert "run [OPTIONS] MODEL " in _help(capsys, "run")
    assert "examples [OPTIONS] [NAME...]" in _help(capsys, "examples")


def test_flags_take_no_placeholder_and_options_show_theirs(capsys):
    text = _help(capsys, "convert")
    assert re.search(r"--force\s+Replace", text)
    assert re.search(r"--compress-to-fp16\s+Store weights", text)
    assert re.search(r"--output\s+-o\s+PATH", text)
    assert re.search(r"--input\s+NAME\[DIMS\]", text)
    assert "Off by default" in text  # --compress-to-fp16 says ovpool keeps f32 weights unless asked


def test_root_help(capsys):
    text = _help(capsys)
    assert not TYPE_PLACEHOLDER.search(text)
    assert re.search(r"--version\s+Show the version", text)
    assert "Exit codes: 0 success" in text
    assert all(re.search(rf"│ {name}\s", text) for name in COMMAND_MODULES)
