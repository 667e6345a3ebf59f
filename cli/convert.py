"""``ovpool convert MODEL... [-o OUT | --output-dir DIR | --ovms-repo DIR] [--to ir|onnx|dml]
[--input NAME[d0,d1,...] | --shape NAME=d0,d1,...] [--compress-to-fp16] [--exact-quantization] [--allow-inexact]
[--target-openvino RELEASE] [--verify [--verify-inputs FILE.npz] [--rtol R] [--atol A]
[--seed N]] [--dry-run] [--jobs N] [--force]``."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

    from ovpool.check.verify import VerifyOptions
    from ovpool.inputs import InputShape

OUTPUTS = (
    "<stem>.xml + <stem>.bin (IR), <stem>.onnx or <stem>.json in the current folder; -o FILE for one model, "
    "--output-dir DIR for DIR/<stem>.<ext>, --ovms-repo DIR for DIR/<stem>/1/model.xml + .bin and DIR/config.json. "
    "An existing output needs --force; an input is never overwritten."
)


def register(app: typer.Typer) -> None:
    import typer

    from ovpool.cli.common import (
        apply_max_memory,
        max_memory_option,
        path_parser,
        seed_option,
        verify_atol_option,
        verify_inputs_option,
        verify_options,
        verify_rtol_option,
    )
    from ovpool.cli.helptext import command

    @command(app, OUTPUTS, {1: "a model ovpool cannot convert exactly (unsupported or bad model)"})
    def convert(
        sources: list[Path] = typer.Argument(..., metavar="MODEL...", help="Models: .onnx, .xml (IR) or .json (DirectML)."),
        output: Path | None = typer.Option(
            None, "-o", "--output", metavar="PATH", parser=path_parser("-o"), help="Output file (one model only)."
        ),
        output_dir: Path | None = typer.Option(
            None, "--output-dir", metavar="DIR", parser=path_parser("--output-dir"), help="Write DIR/<stem>.<ext> per model."
        ),
        to: str | None = typer.Option(
            None, "--to", metavar="FORMAT", help="ir, onnx or dml (default: from -o, else ONNX->IR, IR->ONNX, DirectML->ONNX)."
        ),
        inputs: list[str] = typer.Option(
            [],
            "--input",
            metavar="NAME[DIMS]",
            help="Input shapes in ovc's syntax, e.g. x[1,3,640,640] or x[1,3,640,640],y[1,?]; ? or -1 dynamic, 1..10 a range. ONNX->IR.",
        ),
        shapes: list[str] = typer.Option(
            [], "--shape", metavar="NAME=DIMS", help="An input shape as ovpool run takes it, e.g. x=1,3,640,640; repeatable."
        ),
        compress_to_fp16: bool = typer.Option(
            False,
            "--compress-to-fp16",
            help="Store weights as f16 (ovc does by default). Off by default: ovpool writes the weights ONNX computes with.",
        ),
        exact_quantization: bool = typer.Option(
            False,
            "--exact-quantization",
            help="Write QuantizeLinear, DequantizeLinear and quantized pools in forms exact to ONNX on OpenVINO CPU "
            "(no FakeQuantize: the layers around them leave INT8 execution). Default: FakeQuantize, INT8 kept, within one step.",
        ),
        allow_inexact: bool = typer.Option(
            False,
            "--allow-inexact",
            help="Write nodes OpenVINO's ONNX frontend converts wrong and ovpool cannot lower exactly (a warning each); "
            "default: refuse them.",
        ),
        target_openvino: str | None = typer.Option(
            None,
            "--target-openvino",
            metavar="RELEASE",
            help="ONNX->IR: write only layers this OpenVINO release reads (2023.0 or later, e.g. 2023.3): newer ones "
            "in exact older forms (MaxPool-14 -> MaxPool-8 + Slice), else refused by name. Default: the installed release.",
        ),
        feature_level: str | None = typer.Option(
            None, "--feature-level", metavar="X.Y", help="DirectML: highest feature level to use, e.g. 4.0."
        ),
        ovms_repo: Path | None = typer.Option(
            None,
            "--ovms-repo",
            metavar="DIR",
            parser=path_parser("--ovms-repo"),
            help="Write an OpenVINO Model Server repository: DIR/<stem>/1/model.xml|bin and DIR/config.json.",
        ),
        verify: bool = typer.Option(
            False,
            "--verify",
            help="Before writing, run the converted model on OpenVINO CPU at f32 and the ONNX side on ovpool's numpy executor "
            "with the same seeded random inputs; beyond --rtol/--atol nothing is written, exit 1, the first layer named.",
        ),
        verify_inputs: Path | None = verify_inputs_option(),
        rtol: float | None = verify_rtol_option(),
        atol: float | None = verify_atol_option(),
        seed: int = seed_option(),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="Convert (and --verify) but write nothing: a check for pre-commit hooks and CI."
        ),
        jobs: int = typer.Option(1, "--jobs", "-j", min=1, metavar="N", help="Convert N models at a time, in N processes."),
        force: bool = typer.Option(False, "--force", help="Replace existing outputs."),
        max_memory: str | None = max_memory_option(),
    ) -> None:
        """Convert models between ONNX, OpenVINO IR and DirectML with exact pooling."""
        from ovpool.inputs import input_shapes, parse_shape_pairs

        apply_max_memory(max_memory)
        checks = verify_options(verify, verify_inputs, rtol, atol, seed)
        if sum(x is not None for x in (output, output_dir, ovms_repo)) > 1:
            raise typer.BadParameter("give one of -o, --output-dir and --ovms-repo")
        if output is not None and len(sources) > 1:
            raise typer.BadParameter("-o takes one model; use --output-dir for several")
        if inputs and shapes:
            raise typer.BadParameter("give input shapes with --input or with --shape, not both")
        given = input_shapes(inputs) or parse_shape_pairs(shapes)
        if ovms_repo is not None and dry_run:
            raise typer.BadParameter("--dry-run writes nothing; it takes no --ovms-repo")
        options: dict[str, object] = {
            "feature_level": feature_level,
            "compress_to_fp16": compress_to_fp16,
            "exact_quantization": exact_quantization,
            "allow_inexact": allow_inexact,
            "target_openvino": target_openvino,
        }
        raise typer.Exit(convert_all(sources, output, output_dir, ovms_repo, to, given, options, checks, dry_run, jobs, force))


def convert_all(
    sources: Sequence[Path],
    output: Path | None,
    output_dir: Path | None,
    ovms_repo: Path | None,
    to: str | None,
    given: Sequence[InputShape],
    options: dict[str, object],
    checks: VerifyOptions | None,
    dry_run: bool,
    jobs: int,
    force: bool,
) -> int:
    """Convert every source as the command's options say (checked already: one of ``output``,
    ``output_dir`` and ``ovms_repo`` at most, ``output`` for one source, no ``dry_run`` with
    ``ovms_repo``); the exit code. ``given`` are the input shapes, ``options`` the routes' other
    options (``ovpool.convert``'s)."""
    from ovpool.cli.common import batch
    from ovpool.ov import ovms

    options = {**options, "inputs": list(given) or None}  # the shapes as objects, to ModelFacts
    if ovms_repo is not None:
        ovms.check_sources(ovms_repo, sources, to)
    if len(sources) > 1 and not dry_run:
        check_batch(sources, output_dir, ovms_repo, to)
    one = partial(
        convert_one,
        output=output,
        output_dir=output_dir,
        ovms_repo=ovms_repo,
        to=to,
        force=force,
        verify=checks,
        dry_run=dry_run,
        options=options,
    )
    succeeded: list[Path] = []
    code = batch(sources, one, "convert", jobs, succeeded)
    if ovms_repo is not None and succeeded:
        config = ovms.write_config(ovms_repo, succeeded)
        print(f"wrote {config}", file=sys.stderr)
    return code


def check_batch(sources: Sequence[Path], output_dir: Path | None, ovms_repo: Path | None, to: str | None) -> None:
    """Refuse the batch before any conversion if two sources would write one file or one would
    overwrite another's input (a source, an IR's .bin, an ONNX model's external data). A source
    that cannot be planned writes nothing (it reports its own error) but is still read."""
    from ovpool import files
    from ovpool.conversions import plan
    from ovpool.errors import OvpoolError
    from ovpool.ov import ovms

    plans: list[tuple[Path, list[Path], list[Path]]] = []
    for src in sources:
        out = ovms.model_path(ovms_repo, ovms.model_name(src)) if ovms_repo is not None else None
        try:
            plans.append((src, *plan(src, out, to, output_dir)))
        except OvpoolError:
            plans.append((src, [], [src]))
    files.check_batch(plans)


def convert_one(
    src: Path,
    output: Path | None,
    output_dir: Path | None,
    ovms_repo: Path | None,
    to: str | None,
    force: bool,
    verify: VerifyOptions | None,
    dry_run: bool,
    options: dict[str, object],
) -> str:
    """Convert one source (a worker process runs this with ``--jobs``); what it wrote, and how it
    was verified."""
    from ovpool.conversions import planned, run
    from ovpool.ov import ovms

    if ovms_repo is not None:
        output = ovms.model_path(ovms_repo, ovms.model_name(src))
    conversion = planned(src, output, to, output_dir)  # the formats, decided once
    if conversion.through_openvino:
        from ovpool.cli.common import import_without

        import_without("openvino", "openvino.tools.ovc")  # the frontend API is all it uses
    written, verified = run(conversion, force, verify or False, dry_run, **options)
    done = ("would write " if dry_run else "wrote ") + ", ".join(str(p) for p in written)
    if verified is None:
        return done
    from ovpool.check.verify import summary

    return f"{done} ({summary(verified)})"


# The plain form ``quick`` takes: flags, and options with one value each (``--to ir`` or ``--to=ir``).
_QUICK_FLAGS = {
    "--force": "force",
    "--compress-to-fp16": "compress_to_fp16",
    "--exact-quantization": "exact_quantization",
    "--allow-inexact": "allow_inexact",
    "--dry-run": "dry_run",
}
_QUICK_VALUES = {
    "-o": "output",
    "--output": "output",
    "--output-dir": "output_dir",
    "--to": "to",
    "--input": "inputs",
    "--target-openvino": "target_openvino",
}
_LONG_VALUE = re.compile(r"(--[a-z0-9-]+)=(.*)", re.DOTALL)


def quick(argv: Sequence[str]) -> Callable[..., int] | None:
    """``ovpool convert`` for the argument list after ``ovpool`` when it reads plainly: a callable
    giving the exit code, else None (typer takes it). Plain is models with ``-o``/``--output`` (one
    model) or ``--output-dir``, ``--to``, ``--input`` (repeatable), ``--target-openvino`` and the
    flags of ``_QUICK_FLAGS``, each value non-empty; anything else (``--help``, ``--verify``,
    ``--jobs``, ``--``, an unknown option, ``-o`` with ``--output-dir``) goes to typer, so the two
    paths answer alike. ``["convert", "m.onnx", "--output-dir=ir", "--force"]`` is quick. It
    skips typer's argument processing, which imports pydantic (~0.1 s, as long as converting a
    5 MB model)."""
    if not argv or argv[0] != "convert":
        return None
    sources: list[Path] = []
    flags = dict.fromkeys(_QUICK_FLAGS.values(), False)
    values: dict[str, str] = {}
    inputs: list[str] = []
    tokens = iter(argv[1:])
    for token in tokens:
        named = _LONG_VALUE.fullmatch(token)
        option, value = (named.group(1), named.group(2)) if named else (token, None)
        if option in _QUICK_FLAGS and value is None:
            flags[_QUICK_FLAGS[option]] = True
        elif option in _QUICK_VALUES:
            value = next(tokens, "") if value is None else value
            if not value:
                return None
            if option == "--input":
                inputs.append(value)
            else:
                values[_QUICK_VALUES[option]] = value
        elif token.startswith("-"):
            return None
        else:
            sources.append(Path(token))
    if not sources or ("output" in values and ("output_dir" in values or len(sources) > 1)):
        return None
    return partial(_quick_convert, sources, values, inputs, flags)


def _quick_convert(
    sources: Sequence[Path], values: dict[str, str], inputs: Sequence[str], flags: dict[str, bool], standalone_mode: bool = False
) -> int:
    """The command as typer runs it with these options and every other one at its default, with
    Python's cyclic garbage collector paused (``gc.disable``) until it returns: its full
    collections while onnx, numpy and OpenVINO are imported and the model is read take ~70 ms of
    CPU, and a conversion leaves next to no cyclic garbage (3 objects on the real models, once
    imported) for it to find."""
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        return _converted_quickly(sources, values, inputs, flags)
    finally:
        if collecting:
            gc.enable()


def _converted_quickly(sources: Sequence[Path], values: dict[str, str], inputs: Sequence[str], flags: dict[str, bool]) -> int:
    """``_quick_convert``'s work: ``convert_all`` with its options."""
    from ovpool.cli.common import apply_max_memory
    from ovpool.inputs import input_shapes

    apply_max_memory(None)
    output, output_dir = values.get("output"), values.get("output_dir")
    options: dict[str, object] = {
        "feature_level": None,
        "compress_to_fp16": flags["compress_to_fp16"],
        "exact_quantization": flags["exact_quantization"],
        "allow_inexact": flags["allow_inexact"],
        "target_openvino": values.get("target_openvino"),
    }
    return convert_all(
        sources,
        Path(output) if output else None,
        Path(output_dir) if output_dir else None,
        None,
        values.get("to"),
        input_shapes(inputs),
        options,
        None,
        flags["dry_run"],
        1,
        flags["force"],
    )
