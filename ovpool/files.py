"""Writing outputs without losing anything: temporary file, then rename into place.

An existing output is kept unless ``force`` is given; an output that is also an input is refused;
a failure part way leaves every earlier file as it was (IR's .xml and .bin are renamed only after
both are fully written).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from ovpool.errors import OvpoolError


class OutputError(OvpoolError):
    """An output that cannot be written: a folder, a path under a file, no permission (exit 2)."""

    exit_code = 2


class OutputExistsError(OutputError):
    """An output file exists and ``--force`` was not given, or is an input (a usage error: exit 2)."""


def check_outputs(outputs: Iterable[Path], sources: Iterable[Path], force: bool) -> None:
    """Refuse before any work: an output that is a source, a folder, or exists without ``force``."""
    resolved_sources = {Path(s).resolve() for s in sources}
    for out in outputs:
        if Path(out).resolve() in resolved_sources:
            raise OutputExistsError(f"{out}: refusing to overwrite an input file")
        if Path(out).is_dir():
            raise OutputError(f"{out}: is a folder; give a file name")
        if Path(out).exists() and not force:
            raise OutputExistsError(f"{out}: exists (use --force to replace it)")


def write_atomic(files: Mapping[Path, bytes], force: bool = False, sources: Iterable[Path] = ()) -> list[Path]:
    """Write every ``path: content`` pair so that each path holds either its old content or the
    whole new one; returns the paths written."""
    check_outputs(files, sources, force)
    staged: list[tuple[str, Path]] = []
    target = None
    try:
        for target, content in ((Path(p), c) for p, c in files.items()):
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            staged.append((tmp, target))
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
            os.chmod(tmp, _new_file_mode())
        for tmp, target in staged:
            os.replace(tmp, target)
    except (FileExistsError, NotADirectoryError) as exc:  # mkdir or mkstemp under a file
        raise OutputError(f"{target}: cannot write (a parent of it is a file, not a folder)") from exc
    except OSError as exc:  # no permission, read-only file system, disk full
        raise OutputError(f"{target}: cannot write ({exc.strerror or exc})") from exc
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return [Path(p) for p in files]


def _new_file_mode() -> int:
    """The mode ``open()`` would give a new file (0o666 less the umask: 0o644 under umask 022);
    ``mkstemp`` makes its files 0o600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
