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


class OutputExistsError(OvpoolError):
    """An output file exists and ``--force`` was not given (a usage error: exit 2)."""

    exit_code = 2


def check_outputs(outputs: Iterable[Path], sources: Iterable[Path], force: bool) -> None:
    """Refuse before any work: an output that is a source, or exists without ``force``."""
    resolved_sources = {Path(s).resolve() for s in sources}
    for out in outputs:
        if Path(out).resolve() in resolved_sources:
            raise OutputExistsError(f"{out}: refusing to overwrite an input file")
        if Path(out).exists() and not force:
            raise OutputExistsError(f"{out}: exists (use --force to replace it)")


def write_atomic(files: Mapping[Path, bytes], force: bool = False, sources: Iterable[Path] = ()) -> list[Path]:
    """Write every ``path: content`` pair so that each path holds either its old content or the
    whole new one; returns the paths written."""
    check_outputs(files, sources, force)
    staged: list[tuple[str, Path]] = []
    try:
        for path, content in files.items():
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
            staged.append((tmp, path))
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return [Path(p) for p in files]
