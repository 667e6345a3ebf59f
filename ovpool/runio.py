"""Inputs and outputs of ``ovpool run``: .npz / .npy files in, .npz and a summary out."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ovpool.errors import InputFileError
from ovpool.files import write_atomic


def load_inputs(npz: Path | None, pairs: Sequence[str]) -> dict[str, np.ndarray]:
    """Arrays from an .npz (keyed by input name) and ``NAME=file.npy`` pairs."""
    arrays: dict[str, np.ndarray] = {}
    if npz is not None:
        try:
            with np.load(npz, allow_pickle=False) as data:
                arrays.update({k: data[k] for k in data.files})
        except (OSError, ValueError) as exc:
            raise InputFileError(f"{npz}: not a readable .npz ({exc})") from exc
    for pair in pairs:
        name, sep, file = pair.partition("=")
        if not sep or not name or not file:
            raise InputFileError(f"-i {pair}: expected NAME=file.npy")
        try:
            arrays[name] = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputFileError(f"{file}: not a readable .npy ({exc})") from exc
    return arrays


def save_outputs(path: Path, results: Mapping[str, np.ndarray], force: bool, sources: Sequence[Path] = ()) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **results)
    write_atomic({path: buffer.getvalue()}, force, sources)


def summary(results: Mapping[str, np.ndarray]) -> str:
    """One line per output: ``y: shape [1, 3, 16, 16] float32 min -1.2 max 3.4``."""
    lines = []
    for name, value in results.items():
        extent = f" min {value.min()} max {value.max()}" if value.size else ""
        lines.append(f"{name}: shape {list(value.shape)} {value.dtype}{extent}")
    return "\n".join(lines)
