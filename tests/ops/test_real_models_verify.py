"""``ovpool convert --verify`` on the real third-party models (``real_models.py``): each model that
OpenVINO's frontend converts is verified, its IR on OpenVINO CPU at f32 against the ONNX model on
ovpool's numpy executor, with the model's own inputs and tolerance; the IR is written. The models
OpenVINO cannot convert at all (an If whose branches leave a dynamic rank) are refused with
OpenVINO's reason, before any verification.
"""

from __future__ import annotations

import pytest
from real_models import MODELS, RealModel

import ovpool
from ovpool.errors import ModelError
from ovpool.runtime.verify import VerifyOptions

pytest.importorskip("openvino")

# OpenVINO 2026.4's frontend cannot convert these files (not an ovpool check): the reason it gives.
# (SLANet's Loop, refused when OpenVINO reads the file by path, converts from the bytes ovpool
# hands it once frontend_fixes rewrites the Range nodes of its body.)
NOT_CONVERTED = {
    "silero_vad.onnx": "Conv-16",
}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_convert_verify_passes(model: RealModel, tmp_path) -> None:
    if not model.path.is_file():
        pytest.skip(f"{model.path} absent: run python tests/fetch_real_models.py")
    checks = VerifyOptions(inputs=model.feeds(), rtol=model.rtol)
    if model.file in NOT_CONVERTED:
        with pytest.raises(ModelError, match=f"OpenVINO could not convert the model: {NOT_CONVERTED[model.file]}"):
            ovpool.convert(model.path, output_dir=tmp_path, verify=checks)
        return
    written = ovpool.convert(model.path, output_dir=tmp_path, verify=checks)
    assert sorted(p.suffix for p in written) == [".bin", ".xml"]
