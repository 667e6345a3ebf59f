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
