"""``transform``: load a model, run passes by name, and optionally write the result atomically."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from onnx import ModelProto

from ovpool.conversions import check_output_suffix, model_files
from ovpool.errors import OvpoolError, UnsupportedError
from ovpool.files import check_outputs, write_atomic
from ovpool.inputs import input_shapes
from ovpool.onnx.model import load
from ovpool.onnx.static_shapes import with_input_shapes
from ovpool.transforms.catalog import parse_pass
from ovpool.transforms.framework import Pass, Transformed, UnknownPassError, run_passes
from ovpool.transforms.shapes import complete_value_types

if TYPE_CHECKING:
    from ovpool.check.verify import VerifyOptions


def transform(
    src: str | os.PathLike | ModelProto,
    passes: Sequence[str | Pass],
    out: str | os.PathLike | None = None,
    force: bool = False,
    verify: bool | VerifyOptions = False,
    inputs: str | Sequence[str] | Mapping[str, Sequence[int | str]] | None = None,
) -> Transformed:
    """Run ``passes`` (names such as ``"explicit-pads"``, ``"opset=11"``, or ``Pass`` objects) in
    order on a model file or ModelProto; write the result to ``out`` if given (a .onnx, never over
    the source; an existing file only with ``force``). Graph outputs without a type or shape are
    completed first (``shapes.complete_value_types``: pooling outputs by ovpool's shape engine), as
    runtimes take them. With ``verify`` (True, or ``ovpool.check.verify.VerifyOptions``) the
    result runs against the source on the numpy executor before it is written (``VerifyError``
    beyond tolerance). ``inputs`` (``"x[1,3,640,640]"``, as ``ovpool convert --input``) gives
    dynamic graph inputs static dims first, so every pooling size is known to the passes
    (``dml-legal`` then judges DirectML's limits on numbers)."""
    if not passes:
        raise UnknownPassError("no pass given (e.g. --pass explicit-pads)")
    chosen = [parse_pass(p) if isinstance(p, str) else p for p in passes]
    sources: list[Path] = []
    if out is not None:  # refused before any pass runs
        check_output_suffix(Path(out), "onnx")
        sources = [] if isinstance(src, ModelProto) else model_files(src)
        check_outputs([Path(out)], sources, force)
    source = load(src)
    label = source.graph.name or "model" if isinstance(src, ModelProto) else str(src)
    shaped = with_input_shapes(source, input_shapes(inputs), label)
    result = run_passes(complete_value_types(shaped), chosen)
    if verify:
        _verify(result.model, source, src, verify)
    if out is not None:
        try:
            data = result.model.SerializeToString()
        except ValueError as exc:
            raise UnsupportedError.in_file(out, f"the model cannot be written as one protobuf file ({exc})") from exc
        write_atomic({Path(out): data}, force, sources)
    return result


def _verify(model: ModelProto, source: ModelProto, src: str | os.PathLike | ModelProto, verify: bool | VerifyOptions) -> None:
    """The rewritten model against its source, both on the numpy executor (``ovpool.check.verify``)."""
    from ovpool.check.verify import VerifyOptions, verify_proto
    from ovpool.execution import open_model
    from ovpool.execution.model import Model

    checks = verify if isinstance(verify, VerifyOptions) else VerifyOptions()
    original = Model("onnx", source.graph.name or "model", proto=source) if isinstance(src, ModelProto) else open_model(src)
    try:
        verify_proto(model, original, checks)
    except OvpoolError as exc:
        raise exc.located(original.label) from None
