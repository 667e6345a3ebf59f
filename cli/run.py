"""``ovpool run MODEL [--device D] [--precision P] [--fallback cpu|numpy|none | --no-fallback]
[--inputs in.npz | -i NAME=x.npy ...]
[--random-inputs [--seed N] [--shape NAME=d0,d1,...]] [--output out.npz [--force]] [--no-cache]``."""

from __future__ import annotations

from pathlib import Path

import typer

from ovpool.cli.common import apply_max_memory, import_without, max_memory_option, path_parser, seed_option
from ovpool.cli.helptext import command

OUTPUTS = (
    "a summary of each output on stdout (shape, dtype, min, max), or --output FILE.npz (an existing one needs --force); "
    "compiled models are cached in $OVPOOL_CACHE_DIR, else $XDG_CACHE_HOME/ovpool/openvino, else ~/.cache/ovpool/openvino "
    "(--no-cache: none)."
)


def register(app: typer.Typer) -> None:
    @command(app, OUTPUTS, {1: "the device cannot run the model (with --fallback cpu|none) or a bad model or input"})
    def run(
        model: Path = typer.Argument(..., metavar="MODEL", help="ONNX model (.onnx) or OpenVINO IR (.xml)."),
        device: str = typer.Option(
            "CPU", "--device", metavar="DEVICE", help="CPU, GPU, NPU, AUTO (OpenVINO) or numpy (exact executor)."
        ),
        precision: str = typer.Option(
            "f32",
            "--precision",
            metavar="PRECISION",
            help="OpenVINO inference precision: f32, bf16, f16 or default (the device's own).",
        ),
        fallback: str | None = typer.Option(
            None,
            "--fallback",
            metavar="LEVEL",
            help="How far to fall back when the device cannot run the model: numpy (device, then CPU, then numpy; "
            "the default), cpu (device, then CPU) or none.",
        ),
        no_fallback: bool = typer.Option(
            False, "--no-fallback", help="Same as --fallback none: fail (exit 1) instead; not with another --fallback."
        ),
        inputs: Path | None = typer.Option(None, "--inputs", metavar="FILE.npz", help=".npz keyed by input name."),
        input_files: list[str] = typer.Option(
            [], "-i", "--input", metavar="NAME=FILE.npy", help="One input from a .npy file, repeatable."
        ),
        random: bool = typer.Option(False, "--random-inputs", help="Generate inputs from the declared shapes and types."),
        seed: int = seed_option(),
        shapes: list[str] = typer.Option(
            [], "--shape", metavar="NAME=DIMS", help="NAME=d0,d1,... for dynamic dims with --random-inputs, repeatable."
        ),
        output: Path | None = typer.Option(
            None,
            "--output",
            metavar="FILE.npz",
            parser=path_parser("--output"),
            help="Write outputs to this .npz (keyed by output name).",
        ),
        force: bool = typer.Option(False, "--force", help="Replace an existing --output."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the compiled-model cache."),
        max_memory: str | None = max_memory_option(),
    ) -> None:
        """Run a model on a device (falling back to CPU, then numpy) and print a summary of its outputs (or save them)."""

        from ovpool.cli.common import check_input_options, fallback_level, model_inputs
        from ovpool.conversions import model_files
        from ovpool.errors import OvpoolError, UsageError
        from ovpool.execution import DeviceError, open_model, open_session
        from ovpool.files import check_outputs
        from ovpool.tensors import save_outputs, summary

        check_input_options(inputs, input_files, random, shapes)
        level = fallback_level(fallback, no_fallback, "numpy")
        apply_max_memory(max_memory)
        if device.lower() != "numpy":
            import_without("openvino", "openvino.tools.ovc")  # OpenVINO's runtime and frontend only
        read = [*([inputs] if inputs else []), *(Path(pair.partition("=")[2]) for pair in input_files)]
        if output is not None:
            read += model_files(model)
            check_outputs([output], read, force)
        try:
            loaded = open_model(model)
            opened = open_session(loaded, device, precision, fallback=level, cache=not no_cache)
            for notice in opened.notices:
                typer.echo(f"warning: {notice}", err=True)
            session = opened.session
            arrays = model_inputs(loaded.label, session.inputs, inputs, input_files, random, shapes, seed, [session])
            results = session.infer(arrays)
        except (DeviceError, UsageError):
            raise  # about the device or an option; the device's names the model where the model is the reason
        except OvpoolError as exc:
            raise exc.located(model) from None
        typer.echo(f"ran {model} on {session.device}{_precision_note(session, precision)}", err=True)
        if output is not None:
            save_outputs(output, results, force, sources=read)
            typer.echo(f"wrote {output} ({', '.join(results)})", err=True)
        else:
            typer.echo(summary(results))


def _precision_note(session, asked: str) -> str:
    """`` (OpenVINO, precision f32)``; ``(OpenVINO, precision bf16, asked for f16)`` when the device
    chose otherwise; `` (exact numpy executor)`` on numpy (which computes in the model's types)."""
    if session.device == "numpy":
        return " (exact numpy executor)"
    used = session.precision or asked
    differs = asked != "default" and used != asked
    return f" (OpenVINO, precision {used}{f', asked for {asked}' if differs else ''})"
