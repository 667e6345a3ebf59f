"""The plain forms of ``ovpool validate`` and ``ovpool convert`` run without typer (``quick``) and
answer as the typer commands do; anything else goes to typer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ovpool.cli import convert as convert_cli
from ovpool.cli.app import main
from ovpool.examples import path as example_path


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", "m.onnx"],
        ["convert", "m.onnx", "--output-dir", "ir", "--force"],
        ["convert", "m.onnx", "--output-dir=ir", "--to=ir", "--input", "x[1,3,8,8]", "--input=y[2]"],
        ["convert", "a.onnx", "b.onnx", "--output-dir", "ir", "--compress-to-fp16", "--exact-quantization", "--allow-inexact"],
        ["convert", "m.onnx", "-o", "m.xml", "--target-openvino", "2023.3", "--dry-run"],
    ],
)
def test_plain_convert_is_quick(argv):
    assert convert_cli.quick(argv) is not None


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "m.xml"],
        ["convert"],
        ["convert", "--help"],
        ["convert", "m.onnx", "--verify"],
        ["convert", "m.onnx", "--jobs", "2"],
        ["convert", "m.onnx", "--", "-x.onnx"],
        ["convert", "a.onnx", "b.onnx", "-o", "a.xml"],
        ["convert", "m.onnx", "-o", "m.xml", "--output-dir", "ir"],
        ["convert", "m.onnx", "--output-dir", ""],
        ["convert", "m.onnx", "--output-dir"],
        ["convert", "m.onnx", "--force=yes"],
        ["convert", "m.onnx", "-oout.xml"],
        ["convert", "m.onnx", "--shape", "x=1,3,8,8"],
    ],
)
def test_other_forms_go_to_typer(argv):
    assert convert_cli.quick(argv) is None


def run_main(monkeypatch, capsys, argv: list[str]) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.argv", ["ovpool", *argv])
    with pytest.raises(SystemExit) as exited:
        main()
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.mark.openvino
def test_quick_and_typer_convert_alike(tmp_path, monkeypatch, capsys):
    model = example_path("tiny_pool.onnx")
    quick = run_main(monkeypatch, capsys, ["convert", str(model), "--output-dir", str(tmp_path / "a")])
    typer = run_main(monkeypatch, capsys, ["convert", str(model), "--output-dir", str(tmp_path / "b"), "--seed", "0"])
    assert quick[0] == typer[0] == 0
    assert quick[2].replace(str(tmp_path / "a"), "OUT") == typer[2].replace(str(tmp_path / "b"), "OUT")
    assert (tmp_path / "a" / "tiny_pool.xml").read_bytes() == (tmp_path / "b" / "tiny_pool.xml").read_bytes()
    again = run_main(monkeypatch, capsys, ["convert", str(model), "--output-dir", str(tmp_path / "a")])
    forced = run_main(monkeypatch, capsys, ["convert", str(model), "--output-dir", str(tmp_path / "a"), "--seed", "0"])
    assert again == forced
    assert again[0] == 2 and "use --force" in again[2]


IMPORTED = "import sys; from ovpool.cli.app import main; sys.argv = ['ovpool'] + sys.argv[1:]\ntry:\n    main()\nexcept SystemExit:\n    pass\nprint(sorted(m for m in ('typer', 'pydantic', 'ovpool.execution.sessions', 'rich') if m in sys.modules), file=sys.stderr)"


def imported(*argv: str) -> str:
    """The heavy modules a whole ``ovpool`` process imported for ``argv``."""
    done = subprocess.run([sys.executable, "-c", IMPORTED, *argv], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    return done.stderr.strip().splitlines()[-1]


def test_plain_validate_imports_no_typer():
    assert imported("validate", str(example_path("spec_example1.xml"))) == "[]"


@pytest.mark.openvino
def test_plain_convert_imports_no_typer_nor_the_executor_nor_rich(tmp_path):
    assert imported("convert", str(example_path("tiny_pool.onnx")), "--output-dir", str(tmp_path)) == "[]"
