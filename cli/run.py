"""``ovpool run MODEL [--device D] [--precision P] [--no-fallback] [--inputs in.npz | -i NAME=x.npy ...]
[--random-inputs [--seed N] [--shape NAME=d0,d1,...]] [--output out.npz [--force]] [--no-cache]``."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        model: Path = typer.Argument(..., help="ONNX model (.onnx) or OpenVINO IR (.xml)."),
        device: str = typer.Option("CPU", "--device", help="CPU, GPU, NPU, AUTO (OpenVINO) or numpy (exact executor)."),
        precision: str = typer.Option(
            "f32", "--precision", help="OpenVINO inference precision: f32, bf16, f16 or default (the device's own)."
        ),
        no_fallback: bool = typer.Option(
            False, "--no-fallback", help="Fail (exit 1) instead of running on numpy when the device cannot run the model."
        ),
        inputs: Path | None = typer.Option(None, "--inputs", help=".npz keyed by input name."),
        input_files: list[str] = typer.Option([], "-i", "--input", help="NAME=file.npy, repeatable."),
        random: bool = typer.Option(False, "--random-inputs", help="Generate inputs from the declared shapes and types."),
        seed: int = typer.Option(0, "--seed", help="Seed for --random-inputs."),
        shapes: list[str] = typer.Option([], "--shape", help="NAME=d0,d1,... for dynamic dims with --random-inputs."),
        output: Path | None = typer.Option(None, "--output", help="Write outputs to this .npz (keyed by output name)."),
        force: bool = typer.Option(False, "--force", help="Replace an existing --output."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the compiled-model cache."),
        max_memory: str | None = typer.Option(
            None, "--max-memory", help="Largest tensor to allocate, e.g. 16G (default 4G, or $OVPOOL_MAX_MEMORY)."
        ),
    ) -> None:
        """Run a model on a device (falling back to numpy) and print a summary of its outputs (or save them)."""
        import os

        from ovpool.errors import InputFileError, OvpoolError, UsageError
        from ovpool.files import check_outputs
        from ovpool.memory import MEMORY_ENV, parse_bytes
        from ovpool.conversions import model_files
        from ovpool.runtime import DeviceError, open_model, open_session
        from ovpool.runtime.tensors import (
            check_inputs,
            load_inputs,
            parse_shapes,
            random_inputs,
            save_outputs,
            summary,
        )

        given = inputs is not None or bool(input_files)
        if random == given:
            raise InputFileError("give the inputs (--inputs in.npz or -i NAME=x.npy) or --random-inputs, not both")
        if shapes and not random:
            raise InputFileError("--shape only applies with --random-inputs")
        if seed < 0:
            raise UsageError(f"--seed {seed}: must be >= 0")
        if max_memory is not None:
            os.environ[MEMORY_ENV] = str(parse_bytes(max_memory))
        read = [*([inputs] if inputs else []), *(Path(pair.partition("=")[2]) for pair in input_files)]
        if output is not None:
            read += model_files(model)
            check_outputs([output], read, force)
        arrays = None if random else load_inputs(inputs, input_files)
        try:
            loaded = open_model(model)
            opened = open_session(loaded, device, precision, fallback=not no_fallback, cache=not no_cache)
            if opened.notice:
                typer.echo(f"warning: {opened.notice}", err=True)
            session = opened.session
            if arrays is None:
                arrays = random_inputs(loaded.label, session.inputs, parse_shapes(shapes), seed)
            else:
                check_inputs(loaded.label, session.inputs, arrays)
            results = session.infer(arrays)
        except DeviceError:
            raise  # about the device; it names the model where the model is the reason
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
