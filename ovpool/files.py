"""Reading inputs and writing outputs without losing anything.

Reading: only regular files are read (a folder, FIFO, device or socket is named as such, never
opened for reading, so ``/dev/zero`` cannot fill memory and a FIFO cannot block), and a file over
the size limit its format allows is refused before a byte of it is read.

Writing: temporary file, then rename into place. An existing output is kept unless ``force`` is
given; an output that is also an input is refused (with or without ``force``), as is a name longer
than the file system allows; a failure part way leaves every earlier file as it was (IR's .xml and
.bin are renamed only after both are fully written).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ovpool.errors import InputFileError, OvpoolError
from ovpool.memory import format_bytes


class OutputError(OvpoolError):
    """An output that cannot be written: a folder, a path under a file, no permission (exit 2)."""

    exit_code = 2


class OutputExistsError(OutputError):
    """An output file exists and ``--force`` was not given, or is an input (a usage error: exit 2)."""


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is, for messages (None for a regular file)."""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))
    for test, name in (*kinds, (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def read_input(path: str | os.PathLike[str], limit: int | None = None, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (``what`` names the
    format in the message: ``m.xml: is 3.0 GiB; ovpool reads IR XML up to 1.0 GiB``). A path that
    is missing, not a regular file, or unreadable is an ``InputFileError`` naming it and why."""
    path = Path(path)
    size = regular_size(path)
    if limit is not None and size > limit:
        raise InputFileError.in_file(path, f"is {format_bytes(size)}; ovpool reads {what} up to {format_bytes(limit)}")
    try:
        with open(path, "rb") as handle:
            data = handle.read(size + 1 if limit is None else limit + 1)
    except OSError as exc:
        raise InputFileError.in_file(path, f"cannot be read ({exc.strerror or exc})") from None
    if limit is not None and len(data) > limit:  # it grew while being read
        raise InputFileError.in_file(path, f"is over the limit of {limit} bytes for {what}")
    return data


def regular_size(path: str | os.PathLike[str]) -> int:
    """The size of ``path`` if it is a regular file (symlinks followed), else an ``InputFileError``
    saying what it is: ``x.onnx: is a folder, not a file``, ``/dev/zero: is a device, not a file``."""
    path = Path(path)
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise InputFileError.in_file(path, "no such file") from None
    except ValueError:  # a NUL in the path
        raise InputFileError.in_file(repr(str(path)), "a path cannot hold a NUL character") from None
    except OSError as exc:
        raise InputFileError.in_file(path, f"cannot be read ({exc.strerror or exc})") from None
    kind = _kind(info.st_mode)
    if kind is not None:
        raise InputFileError.in_file(path, f"is {kind}, not a file")
    return info.st_size


def check_outputs(outputs: Iterable[Path], sources: Iterable[Path], force: bool) -> None:
    """Refuse before any work: an output that is a source (the same path, or a link to the same
    file), a folder, a name the file system cannot hold, or an existing file without ``force``."""
    sources = [Path(s) for s in sources]
    resolved_sources = {s.resolve() for s in sources}
    for out in map(Path, outputs):
        _check_name(out)
        if out.resolve() in resolved_sources or any(_same_file(out, s) for s in sources):
            raise OutputExistsError(f"{out}: refusing to overwrite an input file")
        if out.is_dir():
            raise OutputError(f"{out}: is a folder; give a file name")
        kind = _kind(out.stat().st_mode) if out.exists() else None
        if kind is not None:
            raise OutputError(f"{out}: is {kind}; give a file name")
        if out.exists() and not force:
            raise OutputExistsError(f"{out}: exists (use --force to replace it)")


def check_batch(plans: Sequence[tuple[Path, Iterable[Path], Iterable[Path]]]) -> None:
    """Refuse a batch (one command over several sources, ``(source, outputs, inputs)`` each) in
    which two sources write one file (``a/m.onnx`` and ``b/m.onnx`` both to ``out/m.xml``, or one
    source given twice), or one source writes a file another reads (``convert m.onnx m.xml``:
    ``m.xml`` is written by the first and read by the second), before any of them is done."""
    writers: dict[Path, int] = {}
    for index, (src, outputs, _) in enumerate(plans):
        for out in outputs:
            other = writers.setdefault(Path(out).resolve(), index)
            if other != index and Path(plans[other][0]).resolve() == Path(src).resolve():
                raise OutputExistsError(f"{src}: given twice; both would write {out}")
            if other != index:
                raise OutputExistsError(f"{out}: both {plans[other][0]} and {src} would write it; give them separate outputs")
    for index, (src, _, inputs) in enumerate(plans):
        for read in inputs:
            writer = writers.get(Path(read).resolve())
            if writer is not None and writer != index:
                raise OutputExistsError(
                    f"{read}: an input of this command ({src}) would be overwritten by {plans[writer][0]}'s output"
                )


def _check_name(out: Path) -> None:
    """A name longer than the file system allows (255 bytes on most) is refused up front, rather
    than failing after the work (and a temporary name is longer still)."""
    if "\0" in str(out):
        raise OutputError(f"{str(out)!r}: a path cannot hold a NUL character")
    folder = out.parent if str(out.parent) else Path(".")
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    for part in out.parts:
        if len(os.fsencode(part)) > longest:
            raise OutputError(
                f"{out}: the name {part[:20]}... is {len(os.fsencode(part))} bytes long; the file system allows {longest}"
            )


def _same_file(out: Path, source: Path) -> bool:
    """Whether ``out`` is ``source`` under another name (a hard link); False if either is missing."""
    try:
        return os.path.samefile(out, source)
    except (OSError, ValueError):
        return False


def write_atomic(files: Mapping[Path, bytes], force: bool = False, sources: Iterable[Path] = ()) -> list[Path]:
    """Write every ``path: content`` pair so that each path holds either its old content or the
    whole new one; returns the paths written."""
    check_outputs(files, sources, force)
    staged: list[tuple[str, Path]] = []
    target = None
    try:
        for target, content in ((Path(p), c) for p, c in files.items()):
            target.parent.mkdir(parents=True, exist_ok=True)
            # the temporary name adds 14 bytes to the target's, which may already be near the limit
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:200]}.", suffix=".tmp", dir=target.parent)
            staged.append((tmp, target))
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
            os.chmod(tmp, _new_file_mode())
        for tmp, target in staged:
            os.replace(tmp, target)
    except (FileExistsError, NotADirectoryError) as exc:  # mkdir or mkstemp under a file
        raise OutputError(f"{target}: cannot write (a parent of it is a file, not a folder)") from exc
    except OSError as exc:  # no permission, read-only file system, disk full, name too long
        if exc.errno == errno.ENAMETOOLONG:
            raise OutputError(f"{target}: cannot write (the name is longer than the file system allows)") from exc
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
