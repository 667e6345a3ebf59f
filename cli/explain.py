"""``ovpool explain``: a pooling spec (from flags, an ONNX node or an IR layer) on an input shape:
the output-size derivation per axis and a picture of the windows; ``--svg FILE`` writes it as SVG."""

from __future__ import annotations

from pathlib import Path

import typer

from ovpool.cli.common import path_parser
from ovpool.cli.helptext import command

OUTPUTS = "the explanation on stdout; --svg FILE also writes the picture (an existing one needs --force)."


def _ints(text: str | None, flag: str) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        return tuple(int(v) for v in text.replace(" ", "").split(","))
    except ValueError:
        raise typer.BadParameter(f"{flag} {text}: expected comma-separated integers") from None


def register(app: typer.Typer) -> None:
    @command(app, OUTPUTS, {1: "the model has no such node or layer, or a bad model"})
    def explain(
        input_shape: str | None = typer.Option(
            None, "--input-shape", metavar="DIMS", help="N,C,spatial... or only the spatial dims, e.g. 1,1,7,7 or 7,7."
        ),
        op: str = typer.Option("avg", "--op", metavar="OP", help="avg or max (flags mode)."),
        kernel: str | None = typer.Option(None, "--kernel", metavar="DIMS", help="Kernel per spatial axis, e.g. 3,3."),
        strides: str | None = typer.Option(None, "--strides", metavar="DIMS", help="Strides, e.g. 2,2 (default 1)."),
        pads: str | None = typer.Option(None, "--pads", metavar="PADS", help="ONNX order: begins then ends, e.g. 1,1,1,1."),
        dilations: str | None = typer.Option(None, "--dilations", metavar="DIMS", help="Dilations (default 1)."),
        auto_pad: str = typer.Option("NOTSET", "--auto-pad", metavar="MODE", help="NOTSET, SAME_UPPER, SAME_LOWER or VALID."),
        ceil: bool = typer.Option(False, "--ceil", help="ONNX ceil_mode=1 (round up with the drop rule)."),
        rounding: str | None = typer.Option(
            None, "--rounding", metavar="MODE", help="floor, ceil (drop rule) or ceil_no_drop (OpenVINO ceil)."
        ),
        count_include_pad: bool = typer.Option(False, "--count-include-pad", help="ONNX count_include_pad=1."),
        divisor: str | None = typer.Option(
            None, "--divisor", metavar="RULE", help="exclude_pad, include_pad or full_kernel_if_padded."
        ),
        onnx_model: Path | None = typer.Option(
            None, "--onnx", metavar="MODEL", help="Take the spec from this ONNX model (with --node)."
        ),
        node: str | None = typer.Option(None, "--node", metavar="NAME", help="ONNX node name."),
        ir_model: Path | None = typer.Option(
            None, "--ir", metavar="MODEL", help="Take the spec from this IR .xml (with --layer)."
        ),
        layer: str | None = typer.Option(None, "--layer", metavar="NAME|ID", help="IR layer name or id."),
        svg: Path | None = typer.Option(
            None, "--svg", metavar="FILE", parser=path_parser("--svg"), help="Also write the picture as SVG to FILE."
        ),
        force: bool = typer.Option(False, "--force", help="Replace an existing --svg file."),
    ) -> None:
        """Explain a pooling: output size per axis, windows over the padded input, divisors."""
        from ovpool.cli.common import apply_max_memory
        from ovpool.conversions import model_files
        from ovpool.errors import OvpoolError, SpecError, UsageError
        from ovpool.explain.explanation import explain as build
        from ovpool.explain.explanation import input_shape_for, render_svg, render_text
        from ovpool.explain.sources import flag_error, spec_from_flags, spec_from_ir, spec_from_onnx
        from ovpool.files import check_outputs, write_atomic

        apply_max_memory(None)  # $OVPOOL_MAX_MEMORY, which bounds an --onnx model's external data
        read = [path for model in (onnx_model, ir_model) if model is not None for path in model_files(model)]
        if svg is not None:
            check_outputs([svg], read, force)
        shape_dims = _ints(input_shape, "--input-shape")
        if shape_dims and min(shape_dims) < 1:
            raise UsageError(f"--input-shape {input_shape}: every dim must be >= 1")
        flags = {
            "--op": op != "avg",
            "--kernel": kernel,
            "--strides": strides,
            "--pads": pads,
            "--dilations": dilations,
            "--auto-pad": auto_pad != "NOTSET",
            "--ceil": ceil,
            "--rounding": rounding,
            "--count-include-pad": count_include_pad,
            "--divisor": divisor,
        }
        given = [flag for flag, value in flags.items() if value]
        if onnx_model is not None and ir_model is not None:
            raise typer.BadParameter("give --onnx or --ir, not both")
        if (onnx_model is not None or ir_model is not None) and given:
            raise typer.BadParameter(f"{', '.join(given)}: the spec comes from the model; drop these flags or the model")
        if node and onnx_model is None or layer and ir_model is None:
            raise typer.BadParameter("--node goes with --onnx, --layer with --ir")
        if ceil and rounding or count_include_pad and divisor:
            raise typer.BadParameter("--ceil and --rounding (or --count-include-pad and --divisor) say the same thing: give one")
        if onnx_model is not None:
            if not node:
                raise typer.BadParameter("--onnx needs --node NAME")
            try:
                spec, found_shape = spec_from_onnx(onnx_model, node)
            except OvpoolError as exc:
                raise exc.located(onnx_model) from None
        elif ir_model is not None:
            if not layer:
                raise typer.BadParameter("--ir needs --layer NAME|ID")
            try:
                spec, found_shape = spec_from_ir(ir_model, layer)
            except OvpoolError as exc:
                raise exc.located(ir_model) from None
        else:
            if not kernel:
                raise typer.BadParameter("give --kernel (or --onnx/--ir)")
            spec = spec_from_flags(
                op,
                _ints(kernel, "--kernel"),
                _ints(strides, "--strides"),
                _ints(pads, "--pads"),
                _ints(dilations, "--dilations"),
                auto_pad,
                rounding or ("ceil" if ceil else "floor"),
                divisor or ("include_pad" if count_include_pad else "exclude_pad"),
            )
            found_shape = None
        if shape_dims:
            dims = input_shape_for(spec, shape_dims)
        elif found_shape is not None:
            dims = found_shape
        elif onnx_model is not None or ir_model is not None:
            where = f"node '{node}'" if onnx_model is not None else f"layer '{layer}'"
            raise UsageError.in_file(
                onnx_model or ir_model or "", f"{where}: the model gives its input no static shape; give --input-shape N,C,D1,..."
            )
        else:
            raise UsageError("give --input-shape N,C,D1,... (the input the windows cover)")
        try:
            result = build(spec, dims)
        except SpecError as exc:  # the spec does not fit this input
            if onnx_model is not None:
                raise exc.at(f"node '{node}' on input {list(dims)}").located(onnx_model) from None
            if ir_model is not None:
                raise exc.at(f"layer '{layer}' on input {list(dims)}").located(ir_model) from None
            raise flag_error(exc, f"--input-shape {','.join(map(str, dims))}") from None
        typer.echo(render_text(result), nl=False)
        if svg is not None:
            write_atomic({svg: render_svg(result).encode()}, force=force, sources=read)
            typer.echo(f"wrote {svg}")
