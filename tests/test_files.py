"""Atomic output writes."""

from __future__ import annotations


def test_outputs_get_the_usual_file_mode(tmp_path):
    import os
    import stat

    from ovpool.files import write_atomic

    umask = os.umask(0o022)
    try:
        (path,) = write_atomic({tmp_path / "out.bin": b"x"})
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_an_output_folder_another_worker_made_meanwhile_is_used(tmp_path, monkeypatch):
    """Two --jobs workers writing into one new folder: the one whose mkdir finds it made already
    writes into it (it was 'cannot write (File exists)'), and does not remove it on a rollback."""
    import os

    from ovpool import files

    folder = tmp_path / "out"
    folder.mkdir()  # the other worker's
    real = os.path.lexists
    monkeypatch.setattr(files.os.path, "lexists", lambda p: False if str(p) == str(folder) else real(p))
    written = files.write_atomic({folder / "m.onnx": b"model"}, force=False, sources=[])
    assert [p.name for p in written] == ["m.onnx"] and (folder / "m.onnx").read_bytes() == b"model"


def _ir_save(calls):
    """A ``save`` writing ``<net/>`` at the path given and ``weights`` beside it as ``.bin``, as
    OpenVINO's ``save_model`` names them; each call's path is appended to ``calls``."""

    def save(main):
        calls.append(main)
        main.write_bytes(b"<net/>")
        main.with_suffix(".bin").write_bytes(b"weights")

    return save


def test_unwritten_files_are_saved_beside_their_targets_and_renamed(tmp_path):
    """One save, to hidden temporary names in the output folder (no copy through memory), with
    the usual file mode; nothing else is left."""
    import os
    import stat

    from ovpool.files import Unwritten, write_atomic

    calls = []
    ir = Unwritten((".xml", ".bin"), _ir_save(calls))
    umask = os.umask(0o022)
    try:
        written = write_atomic({tmp_path / "out" / "m.xml": ir, tmp_path / "out" / "m.bin": ir})
    finally:
        os.umask(umask)
    assert [p.name for p in written] == ["m.xml", "m.bin"] and ir.data is None
    (main,) = calls
    assert main.parent == tmp_path / "out" and main.name.startswith(".m.") and main.suffix == ".xml"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["m.bin", "m.xml"]
    assert (tmp_path / "out" / "m.xml").read_bytes() == b"<net/>" and (tmp_path / "out" / "m.bin").read_bytes() == b"weights"
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in written)


def test_an_unwritten_save_never_overwrites_a_file_it_did_not_make(tmp_path, monkeypatch):
    """A temporary name already taken (``.m.aaaaaaaa.bin``, another writer's) is left alone: the
    save goes to fresh names."""
    import secrets

    from ovpool.files import Unwritten, write_atomic

    tokens = iter(["aaaaaaaa", "bbbbbbbb"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(tokens))
    (tmp_path / ".m.aaaaaaaa.bin").write_bytes(b"theirs")
    calls = []
    ir = Unwritten((".xml", ".bin"), _ir_save(calls))
    write_atomic({tmp_path / "m.xml": ir, tmp_path / "m.bin": ir})
    assert [p.name for p in calls] == [".m.bbbbbbbb.xml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".m.aaaaaaaa.bin", "m.bin", "m.xml"]
    assert (tmp_path / ".m.aaaaaaaa.bin").read_bytes() == b"theirs"


def test_a_failed_rename_after_a_save_keeps_both_old_files(tmp_path, monkeypatch):
    """The .bin's rename fails after the .xml's: the old m.xml is put back beside the old m.bin,
    and the saved temporary files are removed."""
    import os

    import pytest

    from ovpool.files import OutputError, Unwritten, write_atomic

    (tmp_path / "m.xml").write_bytes(b"old xml")
    (tmp_path / "m.bin").write_bytes(b"old bin")
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(27, "File too large")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    ir = Unwritten((".xml", ".bin"), _ir_save([]))
    with pytest.raises(OutputError, match="m.bin: cannot write"):
        write_atomic({tmp_path / "m.xml": ir, tmp_path / "m.bin": ir}, force=True)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {"m.xml": b"old xml", "m.bin": b"old bin"}


def test_unwritten_files_read_as_a_mapping_are_saved_once_elsewhere(tmp_path):
    """``files[".bin"]`` saves into a private temporary folder (removed after), once."""
    from ovpool.files import Unwritten

    calls = []
    ir = Unwritten((".xml", ".bin"), _ir_save(calls))
    assert list(ir) == [".xml", ".bin"] and len(ir) == 2 and not calls
    assert dict(ir) == {".xml": b"<net/>", ".bin": b"weights"} and ir[".bin"] == b"weights"
    assert len(calls) == 1 and calls[0].name == "model.xml" and not calls[0].parent.exists()


def test_a_failure_making_the_temporary_names_leaves_none(tmp_path, monkeypatch):
    """The .bin's temporary name cannot be made (a full disk): the .xml's made just before is
    removed, nothing is saved, the old outputs stay."""
    import errno
    import os

    import pytest

    from ovpool.files import OutputError, Unwritten, write_atomic

    (tmp_path / "m.xml").write_bytes(b"old xml")
    real = os.open

    def full(path, flags, *args):
        if str(path).endswith(".bin"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, flags, *args)

    monkeypatch.setattr(os, "open", full)
    calls = []
    ir = Unwritten((".xml", ".bin"), _ir_save(calls))
    with pytest.raises(OutputError, match="m.xml: cannot write .No space left on device."):
        write_atomic({tmp_path / "m.xml": ir, tmp_path / "m.bin": ir}, force=True)
    monkeypatch.undo()
    assert not calls and {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {"m.xml": b"old xml"}
