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
