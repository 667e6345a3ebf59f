"""Reading inputs and writing outputs without losing anything.

Reading: only regular files are read (a folder, FIFO, device or socket is named as such, never
opened for reading, so ``/dev/zero`` cannot fill memory and a FIFO cannot block), and a file over
the size limit its format allows is refused before a byte of it is read. JSON is parsed with
bounds (``parse_json``): no nesting deep enough to exhaust Python's recursion, no huge integers.

Writing: temporary file, then rename into place. An existing output is kept unless ``force`` is
given; an output that is also an input is refused (with or without ``force``), as is a name longer
than the file system allows, a path under something that is not a folder, or a symbolic link loop;
the files of one write (IR's .xml and .bin) are all replaced or none is, and a failure leaves no
temporary file and no folder it created. Files one call writes together (``Unwritten``: OpenVINO's
``save_model`` writes an IR's .xml and .bin) are written by that call straight to the temporary
names, never copied through memory.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
            # the size first (a read of limit + 1 bytes allocates them: 1 GiB, ~15 ms), then what it grew by
            data = handle.read(size + 1)
            if len(data) > size:
                data += handle.read(-1 if limit is None else limit + 1 - len(data))
    except OSError as exc:
        raise InputFileError.in_file(path, f"cannot be read ({exc.strerror or exc})") from None
    if limit is not None and len(data) > limit:  # it grew while being read
        raise InputFileError.in_file(path, f"is over the limit of {limit} bytes for {what}")
    return data


def read_at(fd: int, start: int, count: int) -> bytes:
    """Up to ``count`` bytes of the open file ``fd`` from byte ``start`` (fewer at its end):
    ``os.pread`` where the platform has it, else a seek and a read (Windows)."""
    if hasattr(os, "pread"):
        return os.pread(fd, count, start)
    os.lseek(fd, start, os.SEEK_SET)
    return os.read(fd, count)


MAX_JSON_DEPTH = 32
MAX_INT_DIGITS = 20
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_DEEP_OPENING = re.compile(r"[\[{]{" + str(MAX_JSON_DEPTH + 1) + "}")


class _Unreadable(ValueError):
    """JSON that parses but is no document: too deep, a huge integer, NaN."""


def parse_json(data: bytes, source: str | os.PathLike[str], what: str) -> object:
    """``data`` (UTF-8, a byte-order mark allowed) as JSON, within bounds Python's parser lacks:
    nesting deeper than ``MAX_JSON_DEPTH`` (it recurses), integers of more than ``MAX_INT_DIGITS``
    digits and NaN/Infinity are refused. Every refusal is an ``InputFileError`` of ``source``:
    ``f.json: not a JSON file (Expecting value: line 1 column 1 (char 0))``, or with ``what`` =
    "an OVMS config", ``config.json: not an OVMS config (nested more than 32 deep)``."""
    try:
        text = data.decode("utf-8-sig")
        _check_depth(text)
        return json.loads(text, parse_int=_bounded_int, parse_constant=_no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError.in_file(source, f"not a JSON file ({exc})") from exc
    except _Unreadable as exc:
        raise InputFileError.in_file(source, f"not {what} ({exc})") from None


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than ``MAX_JSON_DEPTH`` before parsing (Python's parser recurses):
    brackets outside strings, innermost pairs removed ``MAX_JSON_DEPTH`` times; a pair left, or
    more openings in a row than that, means deeper (``[[1]]`` is depth 2). Other unbalanced
    brackets are left to the parser to report."""
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub('""', text))
    for _ in range(MAX_JSON_DEPTH):
        if not brackets:
            return
        brackets = brackets.replace("[]", "").replace("{}", "")
    if "[]" in brackets or "{}" in brackets or _DEEP_OPENING.search(brackets):
        raise _Unreadable(f"nested more than {MAX_JSON_DEPTH} deep")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Unreadable(f"an integer of {len(text.lstrip('-'))} digits, {text[:12]}...")
    return int(text)


def _no_constant(text: str) -> float:
    raise _Unreadable(f"{text} is not a JSON value")


def regular_size(path: str | os.PathLike[str]) -> int:
    """The size of ``path`` if it is a regular file (symlinks followed), else an ``InputFileError``
    saying what it is: ``x.onnx: is a folder, not a file``, ``/dev/zero: is a device, not a file``,
    ``l.onnx: is a symbolic link loop``."""
    path = Path(path)
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise InputFileError.in_file(path, "no such file") from None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise InputFileError.in_file(path, f"cannot be read ({exc.strerror or exc})") from None
        raise InputFileError.in_file(path, _loop(path)) from None
    except ValueError:  # a NUL in the path
        raise InputFileError.in_file(repr(str(path)), "a path cannot hold a NUL character") from None
    kind = _kind(info.st_mode)
    if kind is not None:
        raise InputFileError.in_file(path, f"is {kind}, not a file")
    return info.st_size


def real_path(path: str | os.PathLike[str], error: type[OvpoolError] = InputFileError) -> Path:
    """``path`` with every symbolic link followed, for telling whether an output is an input: in
    ``/w``, ``out/../m.onnx`` and a link ``l.onnx -> m.onnx`` are both ``/w/m.onnx`` (a path that
    does not exist yet is followed as far as it goes). A link loop on the way is ``error`` naming
    the path (an ``InputFileError`` for an input, ``OutputError`` for an output), never
    ``RuntimeError``: ``a.xml: is a symbolic link loop``, ``d/m.xml: d is a symbolic link loop``."""
    path = Path(path)
    if "\0" in str(path):
        raise error.in_file(repr(str(path)), "a path cannot hold a NUL character")
    real = Path(os.path.realpath(path))
    try:
        os.stat(real)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error.in_file(path, _loop(path)) from None
    return real


def _loop(path: Path) -> str:
    """Where the loop that makes ``os.stat(path)`` fail with ELOOP is: the path itself or the
    first of its folders that loops (``d is a symbolic link loop``)."""
    for prefix in (*reversed(path.parents), path):
        try:
            os.stat(prefix)
        except OSError as exc:
            if exc.errno == errno.ELOOP and prefix != path:
                return f"{prefix} is a symbolic link loop"
            break
    return "is a symbolic link loop"


def same_file(first: str | os.PathLike[str], second: str | os.PathLike[str], error: type[OvpoolError] = InputFileError) -> bool:
    """Whether two paths name one file: the same path once links are followed (``real_path``;
    a loop in either is ``error``), or hard links to one file (``m.onnx`` and ``ln m.onnx h.onnx``)."""
    if real_path(first, error) == real_path(second, error):
        return True
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):  # either missing
        return False


def check_outputs(outputs: Iterable[Path], sources: Iterable[Path], force: bool) -> None:
    """Refuse before any work: an output that is a source (the same path, or a link to the same
    file), a folder, under something that is not a folder, behind a link loop, a name the file
    system cannot hold, or an existing file without ``force``."""
    sources = [Path(s) for s in sources]
    for source in sources:
        real_path(source)  # a loop in an input is the input's error
    for out in map(Path, outputs):
        _check_name(out)
        real_path(out, OutputError)
        if any(same_file(out, s, OutputError) for s in sources):
            raise OutputExistsError.in_file(out, "refusing to overwrite an input file")
        _check_folder(out)
        try:
            mode: int | None = os.stat(out).st_mode
        except (FileNotFoundError, NotADirectoryError):  # none yet, or a link to nothing (replaced)
            mode = None
        except OSError as exc:
            raise OutputError.in_file(out, f"cannot write ({exc.strerror or exc})") from None
        kind = _kind(mode) if mode is not None else None
        if kind == "a folder":
            raise OutputError.in_file(out, "is a folder; give a file name")
        if kind is not None:
            raise OutputError.in_file(out, f"is {kind}; give a file name")
        if mode is not None and not force:
            raise OutputExistsError.in_file(out, "exists (use --force to replace it)")


def check_batch(plans: Sequence[tuple[Path, Iterable[Path], Iterable[Path]]]) -> None:
    """Refuse a batch (one command over several sources, ``(source, outputs, inputs)`` each) in
    which two sources write one file (``a/m.onnx`` and ``b/m.onnx`` both to ``out/m.xml``, or one
    source given twice), or one source writes a file another reads (``convert m.onnx m.xml``:
    ``m.xml`` is written by the first and read by the second), before any of them is done."""
    writers: dict[Path, int] = {}
    for index, (src, outputs, _) in enumerate(plans):
        for out in outputs:
            other = writers.setdefault(real_path(out, OutputError), index)
            if other != index and real_path(plans[other][0]) == real_path(src):
                raise OutputExistsError.in_file(src, f"given twice; both would write {out}")
            if other != index:
                raise OutputExistsError.in_file(
                    out, f"both {plans[other][0]} and {src} would write it; give them separate outputs"
                )
    for index, (src, _, inputs) in enumerate(plans):
        for read in inputs:
            writer = writers.get(real_path(read))
            if writer is not None and writer != index:
                raise OutputExistsError.in_file(
                    read, f"an input of this command ({src}) would be overwritten by {plans[writer][0]}'s output"
                )


def _check_name(out: Path) -> None:
    """A name longer than the file system allows (255 bytes on most) is refused up front, rather
    than failing after the work (and a temporary name is longer still)."""
    if "\0" in str(out):
        raise OutputError.in_file(repr(str(out)), "a path cannot hold a NUL character")
    folder = out.parent if str(out.parent) else Path(".")
    while not os.path.exists(folder) and folder != folder.parent:
        folder = folder.parent
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    for part in out.parts:
        if len(os.fsencode(part)) > longest:
            raise OutputError.in_file(
                out, f"the name {part[:20]}... is {len(os.fsencode(part))} bytes long; the file system allows {longest}"
            )


def _check_folder(out: Path) -> None:
    """The nearest existing folder above ``out`` must be a folder (links followed), else it is
    named with what it is: ``ff/m.xml: cannot write: ff is a FIFO (named pipe), not a folder``,
    ``/dev/null/m.xml: ... /dev/null is a device``, ``d/m.xml: ... d is a link to nothing (x)``."""
    for parent in out.parents:
        if not os.path.lexists(parent):
            continue
        try:
            kind = _kind(os.stat(parent).st_mode) or "a file"
        except OSError as exc:  # a link to nothing; loops are real_path's, anything else the write's to say
            if exc.errno != errno.ENOENT or not os.path.islink(parent):
                return
            kind = f"a symbolic link to nothing ({os.readlink(parent)})"
        if kind != "a folder":
            raise OutputError.in_file(out, f"cannot write: {parent} is {kind}, not a folder")
        return


class Unwritten(Mapping[str, bytes]):
    """Files one call writes together, named alike: ``save(main)`` writes the first suffix's file
    at ``main`` and each other one beside it (``main.with_suffix(suffix)``), as OpenVINO's
    ``save_model(model, "d/.m.1a2b3c4d.xml")`` writes ``d/.m.1a2b3c4d.xml`` and ``.bin``.
    ``write_atomic`` calls ``save`` once with temporary names beside the targets and renames them
    into place: a 54 MB IR is not read back into memory and written again (~1.1 ms per MB). Read
    as a mapping (``files[".bin"]``: ``--verify``, ``--dry-run``, a caller wanting bytes) it is
    saved once into a private temporary folder and read back; ``save``'s errors come through."""

    def __init__(self, suffixes: Sequence[str], save: Callable[[Path], None]) -> None:
        self.suffixes = tuple(suffixes)
        self.save = save
        self.data: dict[str, bytes] | None = None

    def __getitem__(self, suffix: str) -> bytes:
        if self.data is None:
            with tempfile.TemporaryDirectory(prefix="ovpool-") as folder:
                main = Path(folder) / f"model{self.suffixes[0]}"
                self.save(main)
                self.data = {suffix: main.with_suffix(suffix).read_bytes() for suffix in self.suffixes}
        return self.data[suffix]

    def __iter__(self) -> Iterator[str]:
        return iter(self.suffixes)

    def __len__(self) -> int:
        return len(self.suffixes)


def write_atomic(files: Mapping[Path, bytes | Unwritten], force: bool = False, sources: Iterable[Path] = ()) -> list[Path]:
    """Write every ``path: content`` pair, all of them or none: each path ends up with its old
    content or the whole new one, and an IR's ``m.xml`` and ``m.bin`` are both replaced or both
    kept. Each file is written to a temporary name beside its target; the targets that exist are
    kept under a second name (a hard link, else a copy) until every rename is done, and put back if
    one fails. A failure removes the temporary files, the second names and the folders this call
    created (``-o new/sub/m.xml`` leaves no ``new/``). Paths whose content is one ``Unwritten``
    (``{m.xml: ir, m.bin: ir}``, its suffixes in order) are written by one ``save`` of it; an
    ``OvpoolError`` of ``save`` is located at the first of them. Returns the paths written."""
    check_outputs(files, sources, force)
    write = _Write()
    saved: set[int] = set()
    try:
        for target, content in files.items():
            if not isinstance(content, Unwritten):
                write.stage(Path(target), content)
            elif id(content) not in saved:
                saved.add(id(content))
                write.stage_saved([Path(t) for t, c in files.items() if c is content], content)
        write.commit()
    except BaseException as exc:
        failed = write.undo()
        if isinstance(exc, OvpoolError):
            raise exc.located(write.current) from None
        if not isinstance(exc, OSError):
            raise
        why = "the name is longer than the file system allows" if exc.errno == errno.ENAMETOOLONG else exc.strerror or exc
        raise OutputError.in_file(write.current, f"cannot write ({why}){failed}") from exc
    write.discard_backups()
    return [Path(p) for p in files]


class _Write:
    """The state of one ``write_atomic``: what it staged, created, kept and replaced so far."""

    def __init__(self) -> None:
        self.current = Path()
        self.created: list[Path] = []
        self.staged: list[tuple[str, Path]] = []
        self.backups: dict[Path, str] = {}
        self.replaced: list[Path] = []

    def stage(self, target: Path, content: bytes) -> None:
        """Write ``content`` to a temporary file beside ``target``, creating missing folders."""
        self.current = target
        self._make_folders(target.parent)
        # the temporary name adds 14 bytes to the target's, which may already be near the limit
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:200]}.", suffix=".tmp", dir=target.parent)
        self.staged.append((tmp, target))
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.chmod(tmp, _new_file_mode())

    def stage_saved(self, targets: Sequence[Path], files: Unwritten) -> None:
        """Have ``files.save`` write ``targets`` (one folder, one stem, ``files``' suffixes in
        order: ``d/m.xml``, ``d/m.bin``) to temporary names beside them, ``d/.m.1a2b3c4d.xml``
        and ``d/.m.1a2b3c4d.bin``, each made first (exclusively: no other file is overwritten)."""
        import secrets

        main = targets[0]
        if [t.suffix for t in targets] != list(files.suffixes) or any(t.with_suffix(main.suffix) != main for t in targets):
            raise ValueError(f"{[str(t) for t in targets]}: not the files {files.suffixes} of one stem")
        self.current = main
        self._make_folders(main.parent)
        while True:
            stem = f".{main.stem[:200]}.{secrets.token_hex(4)}"
            temporary = [main.parent / f"{stem}{suffix}" for suffix in files.suffixes]
            made: list[Path] = []
            try:
                for path in temporary:
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                    made.append(path)
                break
            except FileExistsError:
                continue  # a name taken: fresh names
            finally:
                if len(made) < len(temporary):  # not all made: none kept
                    for path in made:
                        with contextlib.suppress(OSError):
                            os.unlink(path)
        self.staged.extend((str(tmp), target) for tmp, target in zip(temporary, targets))
        files.save(temporary[0])
        for tmp in temporary:
            os.chmod(tmp, _new_file_mode())

    def commit(self) -> None:
        """Keep a second name for every existing target but the last (whose failed rename leaves
        it as it was), then rename each staged file onto its target."""
        for _, target in self.staged[:-1]:
            self.current = target
            if os.path.lexists(target):
                self.backups[target] = _backup(target)
        for tmp, target in self.staged:
            self.current = target
            os.replace(tmp, target)
            self.replaced.append(target)

    def undo(self) -> str:
        """Put everything back as it was; what could not be (`` ; m.xml could not be put back:
        its old content is .m.xml.1a2b3c4d.tmp``), else ""."""
        failed = ""
        for tmp, _ in self.staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        for target in reversed(self.replaced):
            backup = self.backups.pop(target, None)
            try:
                if backup is None:
                    os.unlink(target)
                else:
                    os.replace(backup, target)
            except OSError:
                failed += f"; {target} could not be put back" + (f": its old content is {backup}" if backup else "")
        self.discard_backups()
        for folder in reversed(self.created):
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        return failed

    def discard_backups(self) -> None:
        for backup in self.backups.values():
            with contextlib.suppress(OSError):
                os.unlink(backup)

    def _make_folders(self, folder: Path) -> None:
        """Create ``folder`` and the missing folders above it, each recorded (outermost first); a
        folder another worker of a ``--jobs`` batch creates meanwhile is used, not recorded."""
        missing = []
        while not os.path.lexists(folder) and folder != folder.parent:
            missing.append(folder)
            folder = folder.parent
        for new in reversed(missing):
            try:
                os.mkdir(new)
            except FileExistsError:
                if not os.path.isdir(new):
                    raise
                continue  # another process of the batch (--jobs) made it first: not ours to remove
            self.created.append(new)


def _backup(target: Path) -> str:
    """A second name beside ``target`` (``.m.xml.1a2b3c4d.tmp``) for its current content: a hard
    link (to the link itself if ``target`` is a symbolic link), else a copy."""
    import secrets

    while True:
        backup = str(target.parent / f".{target.name[:200]}.{secrets.token_hex(4)}.tmp")
        try:
            os.link(target, backup, follow_symlinks=False)
            return backup
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links
            break
    fd, backup = tempfile.mkstemp(prefix=f".{target.name[:200]}.", suffix=".tmp", dir=target.parent)
    with os.fdopen(fd, "wb") as handle, open(target, "rb") as old:
        shutil.copyfileobj(old, handle)
    shutil.copymode(target, backup)
    return backup


def _new_file_mode() -> int:
    """The mode ``open()`` would give a new file (0o666 less the umask: 0o644 under umask 022);
    ``mkstemp`` makes its files 0o600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
