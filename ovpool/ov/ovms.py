"""The model repository OpenVINO Model Server (OVMS) serves, as ``ovpool convert --ovms-repo DIR`` writes it.

OVMS serves each model from ``<base_path>/<version>/`` holding one IR (any file names), and reads
the models to serve from a ``config.json`` whose ``base_path`` may be relative to the file::

    DIR/config.json                  {"model_config_list": [{"config": {"name": "yolo", "base_path": "yolo"}}]}
    DIR/yolo/1/model.xml, model.bin

served by ``docker run --rm -p 9000:9000 -p 8000:8000 -v "$PWD/DIR:/models" openvino/model_server:latest
--config_path /models/config.json --port 9000 --rest_port 8000``. A model's name is its source's
stem; converting into an existing repository adds to its config (an entry of the same name is
replaced, the others are kept).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from ovpool.conversions import model_files
from ovpool.errors import InputFileError, UsageError
from ovpool.files import parse_json, read_input, real_path, same_file, write_atomic

CONFIG = "config.json"
VERSION = "1"
# An OVMS config lists one small object per model: 16 MiB is thousands of models.
MAX_CONFIG_BYTES = 16 << 20


def model_name(src: str | Path) -> str:
    """The name a source is served under: its stem (``models/yolo.onnx`` -> ``yolo``)."""
    return Path(src).stem


def model_path(repo: str | Path, name: str) -> Path:
    """Where the model's IR goes: ``DIR/<name>/1/model.xml`` (its weights beside it)."""
    return Path(repo) / name / VERSION / "model.xml"


def check_sources(repo: str | Path, sources: Sequence[Path], to: str | None) -> None:
    """Refuse, before converting anything, what cannot fill a repository: a target other than IR,
    an IR source (nothing to convert), two sources served under one name (``a/m.onnx``, ``b/m.onnx``),
    a ``config.json`` there that is not an OVMS config, or that is a file the command reads (a
    source, or an ONNX source's external data: ``m.onnx`` keeping its weights in ``config.json``)."""
    config = Path(repo) / CONFIG
    if to not in (None, "ir"):
        raise UsageError(f"--ovms-repo writes OpenVINO IR; --to {to} does not")
    seen: dict[str, Path] = {}
    for src in sources:
        for read in model_files(src):
            if same_file(read, config):
                reader = "" if read == src else f"read by {src} and "
                raise UsageError.in_file(read, f"is {reader}the repository's {CONFIG}, which --ovms-repo writes")
        if src.suffix.lower() == ".xml":
            raise UsageError.in_file(src, "--ovms-repo converts ONNX or DirectML models; this is IR already")
        name = model_name(src)
        if name in seen:
            raise UsageError(f"{seen[name]} and {src} would both be served as '{name}'")
        seen[name] = src
    _existing(config)


def write_config(repo: str | Path, sources: Sequence[Path]) -> Path:
    """``DIR/config.json`` listing the models of ``sources`` (each at ``base_path`` ``<name>``)
    after the entries it already lists under other names; returns its path. It replaces an
    existing config, never a file the sources read."""
    path = Path(repo) / CONFIG
    names = [model_name(src) for src in sources]
    entries = [e for e in _existing(path) if _name(e) not in set(names)]
    entries += [{"config": {"name": name, "base_path": name}} for name in names]
    text = json.dumps({"model_config_list": entries}, indent=2) + "\n"
    write_atomic({path: text.encode()}, force=True, sources=[read for src in sources for read in model_files(src)])
    return path


def _name(entry: dict) -> object:
    config = entry.get("config")
    return config.get("name") if isinstance(config, dict) else None


def _existing(path: Path) -> list[dict]:
    """The entries of an existing config (none if there is none yet, or a link to nothing, which
    the new config replaces). It is read as any input is (a regular file of at most
    ``MAX_CONFIG_BYTES``, bounded JSON): a folder, FIFO, device, link loop or anything but an
    OVMS config is an ``InputFileError`` naming it."""
    real_path(path)
    if not os.path.exists(path):
        return []
    document = parse_json(read_input(path, MAX_CONFIG_BYTES, "OVMS configs"), path, "an OVMS config")
    entries = document.get("model_config_list") if isinstance(document, dict) else None
    if entries is None:
        raise InputFileError.in_file(path, "not an OVMS config (it has no model_config_list)")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputFileError.in_file(path, "model_config_list is not a list of objects")
    return entries
