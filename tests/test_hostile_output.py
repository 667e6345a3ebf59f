"""Hostile output, case by case: a command that fails prints one ``error:`` line naming the file
and exits 1 or 2 (never an internal error), writes nothing (no file, no folder, no ``.name.*.tmp``)
and never replaces one of its inputs: another source's external data, a looping symbolic link, an
OVMS config that is a FIFO or a model's weights, a rename or a temporary save that fails."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from runtime_support import EXAMPLE, invoke, ir_pools, pool_model, save

from ovpool.files import OutputError, write_atomic


def one_error(code: int, err: str, want: int, *names: str) -> str:
    """The one ``error: ...`` line a failed command printed (``run`` says what it ran first),
    naming every one of ``names``."""
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == want and len(lines) == 1 and "Traceback" not in err, (code, err)
    assert "internal error" not in lines[0] and all(name in lines[0] for name in names), (names, err)
    return lines[0]


def tree(folder: Path) -> dict[str, bytes | str]:
    """Every path under ``folder``: a file's bytes, a link's target, a folder as ``"/"``, anything
    else (a FIFO) as ``"?"``."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = "-> " + os.readlink(path)
        elif path.is_dir():
            found[name] = "/"
        else:
            found[name] = path.read_bytes() if path.is_file() else "?"
    return found


def loop(folder: Path, name: str) -> Path:
    """``name`` -> ``name.2`` -> ``name``: a symbolic link loop."""
    (folder / f"{name}.2").symlink_to(name)
    (folder / name).symlink_to(f"{name}.2")
    return folder / name


def fail_replace(monkeypatch, on_call: int = 1) -> None:
    """``os.replace`` fails with EFBIG (as under ``ulimit -f``) on its ``on_call``-th call."""
    real, calls = os.replace, []

    def replace(src, dst, *args, **kwargs):
        calls.append(dst)
        if len(calls) == on_call:
            raise OSError(errno.EFBIG, "File too large", str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


# ---------------------------------------------------------------- inputs never replaced


def test_a_batch_never_replaces_another_sources_external_data(tmp_path, capsys, monkeypatch):
    """``convert a.onnx p.onnx --force`` with a.onnx's weights in p.bin: p.onnx's IR would write
    p.bin. Refused before either converts, with or without a.xml/p.xml already there."""
    monkeypatch.chdir(tmp_path)
    onnx.save(onnx.load(EXAMPLE), "a.onnx", save_as_external_data=True, location="p.bin", size_threshold=0)
    shutil.copy(EXAMPLE, "p.onnx")
    before = tree(tmp_path)
    code, _, err = invoke(capsys, "convert", "a.onnx", "p.onnx", "--force")
    one_error(code, err, 2, "p.bin", "a.onnx", "p.onnx")
    assert tree(tmp_path) == before


def _weights_in_config(folder: Path) -> Path:
    """``folder/m.onnx``, whose one external tensor is ``folder/config.json``, bytes that read as
    an empty OVMS config."""
    model = pool_model("MaxPool", [1, 1, 4, 4], kernel_shape=[2, 2])
    text = b'{"model_config_list": []}'
    model.graph.initializer.append(numpy_helper.from_array(np.frombuffer(text, np.uint8), "cfg"))
    folder.mkdir()
    onnx.save(model, str(folder / "m.onnx"), save_as_external_data=True, location="config.json", size_threshold=0)
    assert (folder / "config.json").read_bytes() == text
    return folder / "m.onnx"


def test_the_ovms_config_is_never_an_input(tmp_path, capsys):
    source = _weights_in_config(tmp_path / "repo")
    before = tree(tmp_path)
    code, _, err = invoke(capsys, "convert", source, "--ovms-repo", tmp_path / "repo")
    one_error(code, err, 2, "config.json: is read by", "m.onnx")
    assert tree(tmp_path) == before


def _open_for_writing(fifo: Path) -> None:
    """Give a reader blocked on ``fifo`` its end of file."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _deep(path: Path) -> None:
    path.write_text("[" * 200_000)


def _folder(path: Path) -> None:
    path.mkdir()


def _zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    with open(path, "wb") as handle:  # sparse: no disk used
        handle.truncate(3 << 30)


def _long_integer(path: Path) -> None:
    path.write_text('{"model_config_list": [], "n": ' + "9" * 5000 + "}")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_fifo, "config.json: is a FIFO (named pipe), not a file"),
        (_deep, "config.json: not an OVMS config (nested more than 32 deep)"),
        (_folder, "config.json: is a folder, not a file"),
        (_zero, "config.json: is a device, not a file"),
        (_huge, "config.json: is 3.0 GiB; ovpool reads OVMS configs up to 16.0 MiB"),
        (_long_integer, "config.json: not an OVMS config (an integer of 5000 digits"),
    ],
)
def test_an_existing_ovms_config_is_read_as_a_bounded_input(tmp_path, capsys, make, message):
    repo = tmp_path / "repo"
    repo.mkdir()
    make(repo / "config.json")
    unblock = threading.Timer(60, _open_for_writing, [repo / "config.json"])  # a FIFO read fails the test, not hangs it
    unblock.start()
    try:
        code, _, err = invoke(capsys, "convert", EXAMPLE, "--ovms-repo", repo)
    finally:
        unblock.cancel()
    one_error(code, err, 2, message)
    assert [p.name for p in repo.iterdir()] == ["config.json"]


# ---------------------------------------------------------------- all or nothing


def test_a_failed_rename_puts_back_every_file_already_replaced(tmp_path, monkeypatch):
    old = {tmp_path / "m.xml": b"old xml", tmp_path / "m.bin": b"old bin"}
    for path, content in old.items():
        path.write_bytes(content)
    fail_replace(monkeypatch, on_call=2)
    with pytest.raises(OutputError, match="m.bin: cannot write \\(File too large\\)"):
        write_atomic({tmp_path / "m.xml": b"new xml", tmp_path / "m.bin": b"new bin"}, force=True)
    assert tree(tmp_path) == {"m.bin": b"old bin", "m.xml": b"old xml"}


def test_a_failed_rename_removes_the_files_it_added(tmp_path, monkeypatch):
    (tmp_path / "m.bin").write_bytes(b"old bin")
    fail_replace(monkeypatch, on_call=2)
    with pytest.raises(OutputError):
        write_atomic({tmp_path / "m.xml": b"new xml", tmp_path / "m.bin": b"new bin"}, force=True)
    assert tree(tmp_path) == {"m.bin": b"old bin"}


def test_convert_keeps_the_old_ir_whole_when_its_bin_cannot_be_renamed(tmp_path, capsys, monkeypatch):
    ir_pools(tmp_path / "m.xml")
    before = tree(tmp_path)
    fail_replace(monkeypatch, on_call=2)
    code, _, err = invoke(capsys, "convert", EXAMPLE, "-o", tmp_path / "m.xml", "--force")
    one_error(code, err, 2, "m.bin: cannot write (File too large)")
    assert tree(tmp_path) == before


@pytest.mark.parametrize(
    "args",
    [
        ["transform", EXAMPLE, "-p", "no-ceil", "-o", "new/sub/o.onnx"],
        ["convert", EXAMPLE, "-o", "new/sub/o.xml"],
        ["convert", EXAMPLE, "--output-dir", "new/sub"],
        ["convert", EXAMPLE, "--ovms-repo", "new/sub"],
        ["run", EXAMPLE, "--random-inputs", "--device", "numpy", "--output", "new/sub/o.npz"],
        ["explain", "--kernel", "2", "--input-shape", "4", "--svg", "new/sub/o.svg"],
    ],
)
def test_a_failed_write_removes_the_folders_it_created(tmp_path, capsys, monkeypatch, args):
    """Under ``ulimit -f`` (here: every rename fails as it would) nothing is left, not even the
    folders made for the output; ``kept/``, there before, stays."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept").mkdir()
    fail_replace(monkeypatch)
    code, _, err = invoke(capsys, *args)
    one_error(code, err, 2, "new/sub/", "cannot write (File too large)")
    assert tree(tmp_path) == {"kept": "/"}


def test_only_the_folders_a_write_created_are_removed(tmp_path, monkeypatch):
    (tmp_path / "old").mkdir()
    fail_replace(monkeypatch)
    with pytest.raises(OutputError):
        write_atomic({tmp_path / "old" / "a" / "b" / "o.bin": b"x"})
    assert tree(tmp_path) == {"old": "/"}


@pytest.mark.parametrize("flags", [[], ["--dry-run"], ["--force"]])
def test_a_failed_save_is_an_output_error(tmp_path, capsys, monkeypatch, flags):
    """OpenVINO saves the IR to temporary names beside the outputs (``--dry-run``: into a temporary
    folder); ``ulimit -f`` or a full disk makes its ``save_model`` raise ``basic_ios::clear:
    iostream error``, after writing part of the files: nothing is left of them, the old outputs
    (``--force``) are kept, and no folder made for them stays."""
    import openvino

    def save_model(model, path, **kwargs):
        Path(path).write_bytes(b"<net")
        raise RuntimeError("Exception from src/core/src/pass/serialize.cpp:1:\nbasic_ios::clear: iostream error")

    monkeypatch.setattr(openvino, "save_model", save_model)
    if "--force" in flags:
        (tmp_path / "new").mkdir()
        (tmp_path / "new" / "o.xml").write_bytes(b"old xml")
        (tmp_path / "new" / "o.bin").write_bytes(b"old bin")
    before = tree(tmp_path)
    code, _, err = invoke(capsys, "convert", EXAMPLE, "-o", tmp_path / "new" / "o.xml", *flags)
    one_error(code, err, 2, "new/o.xml: cannot write: OpenVINO could not save the IR in ", "iostream error")
    assert tree(tmp_path) == before


# ---------------------------------------------------------------- symbolic link loops


@pytest.mark.parametrize(
    ("link", "args", "named"),
    [
        ("l.xml", ["convert", EXAMPLE, "-o", "l.xml"], "l.xml: is a symbolic link loop"),
        ("l.onnx", ["transform", EXAMPLE, "-p", "no-ceil", "-o", "l.onnx"], "l.onnx: is a symbolic link loop"),
        (
            "l.npz",
            ["run", EXAMPLE, "--random-inputs", "--device", "numpy", "--output", "l.npz"],
            "l.npz: is a symbolic link loop",
        ),
        ("l.svg", ["explain", "--kernel", "2", "--input-shape", "4", "--svg", "l.svg"], "l.svg: is a symbolic link loop"),
        ("l", ["convert", EXAMPLE, "--output-dir", "l"], "l/tiny_pool.xml: l is a symbolic link loop"),
        ("l", ["transform", EXAMPLE, "-p", "no-ceil", "--output-dir", "l"], "l/tiny_pool.onnx: l is a symbolic link loop"),
        ("l.onnx", ["convert", EXAMPLE, "l.onnx", "--output-dir", "o"], "l.onnx: is a symbolic link loop"),
        ("l.npy", ["run", EXAMPLE, "-i", "input=l.npy", "--output", "o.npz"], "l.npy: is a symbolic link loop"),
        ("l.xml", ["explain", "--ir", "l.xml", "--layer", "1", "--svg", "o.svg"], "l.xml: is a symbolic link loop"),
    ],
)
def test_a_symbolic_link_loop_is_named(tmp_path, capsys, monkeypatch, link, args, named):
    monkeypatch.chdir(tmp_path)
    loop(tmp_path, link)
    before = tree(tmp_path)
    code, _, err = invoke(capsys, *args)
    one_error(code, err, 2, named)
    assert tree(tmp_path) == before


def test_a_looping_ovms_config_is_named(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    loop(repo, "config.json")
    before = tree(tmp_path)
    code, _, err = invoke(capsys, "convert", EXAMPLE, "--ovms-repo", repo)
    one_error(code, err, 2, "config.json: is a symbolic link loop")
    assert tree(tmp_path) == before


def test_looping_external_data_is_named(tmp_path, capsys):
    model = tmp_path / "w.onnx"
    onnx.save(onnx.load(EXAMPLE), str(model), save_as_external_data=True, location="w.bin", size_threshold=0)
    (tmp_path / "w.bin").unlink()
    loop(tmp_path, "w.bin")
    code, _, err = invoke(capsys, "convert", model, "-o", tmp_path / "o.xml")
    one_error(code, err, 2, "w.bin: is a symbolic link loop")
    assert not (tmp_path / "o.xml").exists()


# ---------------------------------------------------------------- clear messages


def test_output_dir_onto_the_source_names_it_once_and_says_why(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save(pool_model("MaxPool", [1, 1, 4, 4], kernel_shape=[2, 2]), tmp_path / "p.onnx")
    before = tree(tmp_path)
    code, _, err = invoke(capsys, "transform", "p.onnx", "--output-dir", ".", "-p", "no-ceil", "--force")
    line = one_error(code, err, 2, "p.onnx: refusing to overwrite an input file", "--output-dir writes DIR/<stem>.onnx")
    assert "p.onnx: p.onnx" not in line
    assert tree(tmp_path) == before


def test_an_output_error_in_a_batch_names_the_output_once(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "tiny_pool.onnx").write_bytes(b"there")
    code, _, err = invoke(capsys, "transform", EXAMPLE, "-p", "no-ceil", "--output-dir", tmp_path / "out")
    line = one_error(code, err, 2, "out/tiny_pool.onnx: exists (use --force to replace it)")
    assert line.count("tiny_pool.onnx") == 1


def test_explain_names_the_ir_once(tmp_path, capsys):
    xml = ir_pools(tmp_path / "k.xml")
    text = xml.read_text()
    xml.write_text(text.replace('<data kernel="3, 3"', '<data kernel="0, 3"'))
    code, _, err = invoke(capsys, "explain", "--ir", xml, "--layer", "2")
    line = one_error(code, err, 1, "k.xml: layer 2 'AvgPool_", "(AvgPool opset14): attribute 'kernel'")
    assert line.count("k.xml") == 1


def test_transform_writes_onnx_only_to_a_onnx_name(tmp_path, capsys):
    ir_pools(tmp_path / "out.xml")
    before = tree(tmp_path)
    for force in ([], ["--force"]):
        code, _, err = invoke(capsys, "transform", EXAMPLE, "-p", "no-ceil", "-o", tmp_path / "out.xml", *force)
        one_error(code, err, 2, "out.xml: ONNX output is named .onnx")
    assert tree(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["convert", EXAMPLE, "-o", ""], "-o"),
        (["convert", EXAMPLE, "--output-dir", ""], "--output-dir"),
        (["convert", EXAMPLE, "--ovms-repo", ""], "--ovms-repo"),
        (["transform", EXAMPLE, "-p", "no-ceil", "-o", ""], "-o"),
        (["transform", EXAMPLE, "-p", "no-ceil", "--output-dir", ""], "--output-dir"),
        (["run", EXAMPLE, "--random-inputs", "--output", ""], "--output"),
        (["explain", "--kernel", "2", "--input-shape", "4", "--svg", ""], "--svg"),
    ],
)
def test_an_empty_output_path_is_a_usage_error(tmp_path, capsys, monkeypatch, args, flag):
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke(capsys, *args)
    assert one_error(code, err, 2) == f"error: {flag}: got an empty path"
    assert out == "" and tree(tmp_path) == {}


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (os.mkfifo, "a FIFO (named pipe)"),
        (lambda path: path.symlink_to("/dev/null"), "a device"),
        (lambda path: path.symlink_to("nowhere"), "a symbolic link to nothing (nowhere)"),
        (lambda path: path.write_bytes(b"a file"), "a file"),
    ],
)
def test_an_output_folder_that_is_not_one_says_what_it_is(tmp_path, capsys, monkeypatch, make, kind):
    monkeypatch.chdir(tmp_path)
    make(tmp_path / "d")
    before = tree(tmp_path)
    for args in (["convert", EXAMPLE, "--output-dir", "d"], ["transform", EXAMPLE, "-p", "no-ceil", "--output-dir", "d"]):
        code, _, err = invoke(capsys, *args)
        one_error(code, err, 2, "d/tiny_pool.", f"cannot write: d is {kind}, not a folder")
    assert tree(tmp_path) == before
