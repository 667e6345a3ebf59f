"""``transform``: load a model, run passes by name, and optionally write the result atomically."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from onnx import ModelProto

from ovpool.conversions import check_output_suffix, model_files
from ovpool.errors import UnsupportedError
from ovpool.files import check_outputs, write_atomic
from ovpool.onnx.model import load
from ovpool.transforms.catalog import parse_pass
from ovpool.transforms.framework import Pass, Transformed, UnknownPassError, run_passes
from ovpool.transforms.shapes import complete_value_types


def transform(
    src: str | os.PathLike | ModelProto,
    passes: Sequence[str | Pass],
    out: str | os.PathLike | None = None,
    force: bool = False,
) -> Transformed:
    """Run ``passes`` (names such as ``"explicit-pads"``, ``"opset=11"``, or ``Pass`` objects) in
    order on a model file or ModelProto; write the result to ``out`` if given (a .onnx, never over
    the source; an existing file only with ``force``). Graph outputs without a type or shape are
    completed first (``shapes.complete_value_types``: pooling outputs by ovpool's shape engine), as runtimes take them."""
    if not passes:
        raise UnknownPassError("no pass given (e.g. --pass explicit-pads)")
    chosen = [parse_pass(p) if isinstance(p, str) else p for p in passes]
    sources: list[Path] = []
    if out is not None:  # refused before any pass runs
        check_output_suffix(Path(out), "onnx")
        sources = [] if isinstance(src, ModelProto) else model_files(src)
        check_outputs([Path(out)], sources, force)
    result = run_passes(complete_value_types(load(src)), chosen)
    if out is not None:
        try:
            data = result.model.SerializeToString()
        except ValueError as exc:
            raise UnsupportedError.in_file(out, f"the model cannot be written as one protobuf file ({exc})") from exc
        write_atomic({Path(out): data}, force, sources)
    return result
