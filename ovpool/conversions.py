"""``ovpool.convert``: one entry point for every direction, dispatched on (source, target) format.

The source format comes from the file extension (.onnx, .xml IR, .json DirectML); the target from
``to`` or else the output's extension, else the default for the source (ONNX -> IR, IR -> ONNX,
DirectML -> ONNX). Each route returns its files (``{suffix: bytes}``, in memory or, for IR,
``ovpool.files.Unwritten``: saved by OpenVINO when written) and this module writes them atomically.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ovpool.errors import InputFileError, OvpoolError, UsageError
from ovpool.files import OutputError, Unwritten, check_outputs, real_path, regular_size, write_atomic
from ovpool.inputs import input_shapes
from ovpool.ir import releases
from ovpool.onnx.facts import ModelFacts
from ovpool.onnx.model import external_data_files

if TYPE_CHECKING:
    from ovpool.check.compare import Comparison
    from ovpool.check.verify import VerifyOptions

FORMAT_OF_SUFFIX = {".onnx": "onnx", ".xml": "ir", ".json": "dml", ".h": "dml"}
MAIN_SUFFIX = {"onnx": ".onnx", "ir": ".xml", "dml": ".json"}
DEFAULT_TARGET = {"onnx": "ir", "ir": "onnx", "dml": "onnx"}
# The extensions an output of each format may have (DirectML: the JSON document or the C++ header).
OUTPUT_SUFFIXES = {"onnx": (".onnx",), "ir": (".xml",), "dml": (".json", ".h")}
# Files a format writes besides the main one (IR: the weights next to the .xml).
COMPANION_SUFFIXES = {"ir": (".bin",)}

# (source, target) -> "module:function"; each takes (source path, output suffix, **options) and
# returns {suffix: bytes}, e.g. {".xml": ..., ".bin": ...} for IR.
ROUTES: dict[tuple[str, str], str] = {
    ("onnx", "dml"): "ovpool.dml.export:onnx_to_dml",
    ("ir", "dml"): "ovpool.dml.export:ir_to_dml",
    ("dml", "onnx"): "ovpool.dml.importer:dml_to_onnx",
    ("dml", "ir"): "ovpool.dml.importer:dml_to_ir",
    ("onnx", "ir"): "ovpool.ov.from_onnx:onnx_to_ir",
    ("ir", "onnx"): "ovpool.ir.to_onnx:ir_to_onnx",
}

# The options each route takes (ovpool.convert's **options); any other is a UsageError.
ROUTE_OPTIONS: dict[tuple[str, str], frozenset[str]] = {
    ("onnx", "ir"): frozenset({"inputs", "compress_to_fp16", "exact_quantization", "allow_inexact", "target_openvino"}),
    ("onnx", "dml"): frozenset({"feature_level", "inputs"}),
    ("ir", "dml"): frozenset({"feature_level"}),
}
# The routes ``verify`` checks: one side runs on OpenVINO CPU at f32, the other on numpy.
VERIFIED_ROUTES = frozenset({("onnx", "ir"), ("ir", "onnx")})
# The command-line flags of those options, for errors: ``inputs`` is ``--input`` (or ``--shape``).
OPTION_FLAGS = {
    "inputs": "--input/--shape",
    "compress_to_fp16": "--compress-to-fp16",
    "exact_quantization": "--exact-quantization",
    "allow_inexact": "--allow-inexact",
    "target_openvino": "--target-openvino",
    "feature_level": "--feature-level",
}

Route = Callable[..., Mapping[str, bytes]]


def source_format(path: Path) -> str:
    fmt = FORMAT_OF_SUFFIX.get(path.suffix.lower())
    if fmt is None or path.suffix.lower() == ".h":
        raise InputFileError.in_file(path, "unknown source format (expected .onnx, .xml or .json)")
    return fmt


def target_format(source: str, to: str | None, out: Path | None) -> str:
    if to:
        if to not in MAIN_SUFFIX:
            raise UsageError(f"--to {to}: expected one of {', '.join(MAIN_SUFFIX)}")
        return to
    if out is not None and out.suffix.lower() in FORMAT_OF_SUFFIX:
        return FORMAT_OF_SUFFIX[out.suffix.lower()]
    return DEFAULT_TARGET[source]


def output_path(src: Path, target: str, out: Path | None = None, output_dir: Path | None = None) -> Path:
    """``out`` as given; else ``<output_dir or cwd>/<source stem><target suffix>`` (as ovc does).
    An ``out`` whose extension is not the target's is refused (``-o o.txt`` for IR would write
    ``o.xml`` and ``o.bin``, not the file named): the files checked are the files written."""
    if out is not None:
        check_output_suffix(out, target)
        return out
    return (output_dir or Path.cwd()) / (src.stem + MAIN_SUFFIX[target])


def check_output_suffix(out: Path, target: str) -> None:
    """An ``-o`` named for another format is a ``UsageError``: ``-o o.txt`` for IR reads
    ``-o o.txt: IR output is named .xml``, ``-o out.xml`` for ONNX ``ONNX output is named .onnx``."""
    allowed = OUTPUT_SUFFIXES[target]
    if out.suffix.lower() not in allowed:
        raise UsageError(f"-o {out}: {target.upper()} output is named {' or '.join(allowed)}")


def route(source: str, target: str) -> Route:
    """The function converting ``source`` to ``target``; a pair with no route (ONNX to ONNX, IR to
    IR) is a ``UsageError`` saying where the source can go: ``converting onnx to onnx is not
    supported; onnx converts to dml or ir (--to, or -o's extension)``."""
    spec = ROUTES.get((source, target))
    if spec is None:
        targets = " or ".join(sorted(t for s, t in ROUTES if s == source))
        raise UsageError(
            f"converting {source} to {target} is not supported; {source} converts to {targets} (--to, or -o's extension)"
        )
    module, function = spec.split(":")
    return getattr(importlib.import_module(module), function)


def convert(
    src: str | os.PathLike,
    out: str | os.PathLike | None = None,
    to: str | None = None,
    force: bool = False,
    output_dir: str | os.PathLike | None = None,
    verify: bool | VerifyOptions = False,
    **options: object,
) -> list[Path]:
    """Convert one file; returns the files written (IR: the .xml and its .bin). ``options`` are the
    route's (``ROUTE_OPTIONS``): ONNX -> IR ``inputs`` (``"x[1,3,640,640]"``) and
    ``compress_to_fp16``, ``exact_quantization``, ``allow_inexact`` (write the nodes OpenVINO's
    frontend converts wrong and ovpool cannot lower, with a warning each) and ``target_openvino``
    (``"2023.3"``: only layers that OpenVINO release reads); -> DirectML ``feature_level`` and
    ``inputs``. With ``verify``
    (True, or ``ovpool.check.verify.VerifyOptions`` for inputs and tolerances) an ONNX <-> IR
    conversion is checked against its source before anything is written (``VerifyError``, exit
    1, names the first layer beyond tolerance)."""
    return convert_verified(src, out, to, force, output_dir, verify, False, **options)[0]


def convert_verified(
    src: str | os.PathLike,
    out: str | os.PathLike | None = None,
    to: str | None = None,
    force: bool = False,
    output_dir: str | os.PathLike | None = None,
    verify: bool | VerifyOptions = False,
    dry_run: bool = False,
    **options: object,
) -> tuple[list[Path], Comparison | None]:
    """``convert``, and the comparison that verified it (None without ``verify``). With
    ``dry_run`` nothing is written and no output is checked: the files that would be written are
    returned (a pre-commit check that a model converts, and exactly with ``verify``)."""
    return run(planned(src, out, to, output_dir), force, verify, dry_run, **options)


@dataclass(frozen=True)
class Conversion:
    """One conversion as planned, its formats decided once: ``src`` of format ``source`` to
    ``target``, writing ``writes`` (the main output first) and reading ``reads``:
    ``planned("m.onnx")`` is m.onnx, "onnx" -> "ir", writing ``[m.xml, m.bin]``, reading ``[m.onnx]``."""

    src: Path
    source: str
    target: str
    writes: tuple[Path, ...]
    reads: tuple[Path, ...]

    @property
    def through_openvino(self) -> bool:
        """Whether it is ONNX -> IR, OpenVINO's frontend's work."""
        return (self.source, self.target) == ("onnx", "ir")


def planned(
    src: str | os.PathLike,
    out: str | os.PathLike | None = None,
    to: str | None = None,
    output_dir: str | os.PathLike | None = None,
    reading: bool = True,
) -> Conversion:
    """The ``Conversion`` of ``src`` (``plan``'s files; with ``reading``, the conversion itself,
    the source must be a regular file first): its formats decided here, once, for every stage
    (the command's choice of imports, the route, the options it takes, ``--verify``)."""
    src = Path(src)
    if reading:
        regular_size(src)
    source = source_format(src)
    out_path = Path(out) if out is not None else None
    target = target_format(source, to, out_path)
    dest = output_path(src, target, out_path, Path(output_dir) if output_dir is not None else None)
    writes = [dest, *(dest.with_suffix(suffix) for suffix in COMPANION_SUFFIXES.get(target, ()))]
    return Conversion(src, source, target, tuple(writes), tuple(input_files(src, source, writes if reading else None)))


def run(
    conversion: Conversion, force: bool = False, verify: bool | VerifyOptions = False, dry_run: bool = False, **options: object
) -> tuple[list[Path], Comparison | None]:
    """``convert_verified`` of a planned ``conversion``. An ONNX -> IR conversion reads the model
    once (``ovpool.onnx.facts.ModelFacts``, its ``inputs`` shapes as ``InputShape`` objects or
    text) and hands those facts to every stage: the conversion and ``verify``'s source."""
    src, source = conversion.src, conversion.source
    dest = conversion.writes[0]
    target = conversion.target
    convert_route = route(source, target)
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    stray = sorted(set(given) - ROUTE_OPTIONS.get((source, target), frozenset()))
    if stray:
        named = ", ".join(f"{OPTION_FLAGS.get(name, '--' + name)} ({name}=)" for name in stray)
        raise UsageError(f"{named}: not an option of {source} -> {target} conversion")
    if verify and (source, target) not in VERIFIED_ROUTES:
        raise UsageError(f"--verify checks ONNX -> IR and IR -> ONNX conversions, not {source} -> {target}")
    if not dry_run:
        check_outputs(list(conversion.writes), list(conversion.reads), force)
    facts = None
    try:
        if conversion.through_openvino:
            if given.get("target_openvino") is not None:
                releases.parse(str(given["target_openvino"]))  # refused before the model is read, as onnx_to_ov_model does
            facts = ModelFacts.read(src, input_shapes(given.pop("inputs", None)))  # type: ignore[arg-type]
        files = convert_route(facts if facts is not None else src, dest.suffix.lower(), **given)
        if dry_run or verify:  # in memory, made as a write makes them (an IR saved: its errors too)
            files = {suffix: files[suffix] for suffix in files}
    except OutputError as exc:  # OpenVINO's save_model, into a temporary folder
        raise exc.located(dest) from None
    verified = None
    if verify:
        from ovpool.check.verify import VerifyOptions, verify_files
        from ovpool.execution.model import Model, open_model

        try:
            source_model = Model("onnx", str(src), proto=facts.with_data) if facts is not None else open_model(src)
            checks = verify if isinstance(verify, VerifyOptions) else VerifyOptions()
            verified = verify_files(files, dest.suffix.lower(), source_model, checks)
        except OvpoolError as exc:
            raise exc.located(src) from None
    # an IR not yet saved is saved by write_atomic beside its outputs (ovpool.files.Unwritten)
    written = {dest.with_suffix(suffix): files if isinstance(files, Unwritten) else files[suffix] for suffix in files}
    return (list(written) if dry_run else write_atomic(written, force, list(conversion.reads))), verified


def plan(
    src: str | os.PathLike,
    out: str | os.PathLike | None = None,
    to: str | None = None,
    output_dir: str | os.PathLike | None = None,
    reading: bool = False,
) -> tuple[list[Path], list[Path]]:
    """(the files converting ``src`` writes, the files it reads), without converting:
    ``plan("m.onnx", output_dir="ir")`` is ``([ir/m.xml, ir/m.bin], [m.onnx])``, and
    ``[m.onnx, w.bin]`` are read if m.onnx keeps its weights in ``w.bin`` (``input_files``). With
    ``reading`` (the conversion itself, which reads the model and its data then) the files read
    are those these outputs could replace (``input_files``' ``outputs``); without it (a batch's
    check against every other source's outputs), all of them."""
    conversion = planned(src, out, to, output_dir, reading)
    return list(conversion.writes), list(conversion.reads)


def input_files(src: Path, source: str, outputs: Sequence[Path] | None = None) -> list[Path]:
    """Every file a conversion of ``src`` reads, which no output may replace: the source, an IR's
    ``.bin``, an ONNX model's external-data files (``m.onnx`` with its weights in ``m.bin`` is never
    overwritten by the ``m.bin`` of ``-o m.xml --force``, nor by another source's in a batch).
    Given the ``outputs``, an ONNX model's external data is looked for only when one of them lies
    in the model's folder, the only place it may be (``check_external_data``): converting
    ``models/m.onnx`` into ``ir/`` does not search the model's bytes for it (54 MB: ~35 ms)."""
    if source == "ir":
        return [src, src.with_suffix(".bin")]
    if source == "onnx":
        if outputs is not None and not any(_inside(output, src.parent) for output in outputs):
            return [src]
        return [src, *external_data_files(src)]
    return [src]


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (followed through links as far as it exists) lies under ``folder``."""
    return real_path(folder, OutputError) in real_path(path, OutputError).parents


def model_files(model: str | os.PathLike) -> list[Path]:
    """Every file reading the model at ``model`` reads, by its extension (``input_files``): an
    IR's ``m.xml`` gives ``[m.xml, m.bin]``; a file of another extension is only itself."""
    path = Path(model)
    return input_files(path, FORMAT_OF_SUFFIX.get(path.suffix.lower(), ""))
