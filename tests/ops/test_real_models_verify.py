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
from ovpool.check.verify import VerifyOptions
from ovpool.errors import ModelError

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


_FILES = sorted({m.file: m for m in MODELS}.values(), key=lambda m: m.file)


# One conversion in a fresh process (OpenVINO numbers the nodes of a Loop or If body it makes
# after every node it made in the process before), read apart at any size with "apart", whole
# with "whole" (``load``).
_CONVERT = """
import sys
import openvino as ov
from ovpool.onnx import model
from ovpool.ov import from_onnx
model.APART_BYTES = 0
if sys.argv[3] == "whole":
    from_onnx.load_apart = lambda path: (model.load(path, load_data=False), None)
ov.save_model(from_onnx.onnx_to_ov_model(sys.argv[1]), sys.argv[2], compress_to_fp16=False)
"""


@pytest.mark.parametrize("model", _FILES, ids=lambda m: m.file)
def test_a_file_read_apart_converts_as_the_whole_model(model: RealModel, tmp_path) -> None:
    """The conversion of the file, its weights left in it (``load_apart``), is byte for byte its
    conversion with the model read whole (``load``), and ``frontend_fixes`` rewrites both alike."""
    import subprocess
    import sys

    from ovpool.onnx.model import load, load_apart
    from ovpool.ov import frontend_fixes

    if not model.path.is_file():
        pytest.skip(f"{model.path} absent: run python tests/fetch_real_models.py")
    whole = load(model.path)
    proto, weights = load_apart(model.path, least=0)
    values = [a.t for n in whole.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"]
    floats = [t for t in [*whole.graph.initializer, *values] if t.data_type == 1 and len(t.raw_data) > 4096]
    assert (weights is not None) == bool(floats)  # initializers, or paddle2onnx's Constant nodes
    assert frontend_fixes.rewrite(proto, "m", weights=weights) == frontend_fixes.rewrite(whole, "m")
    if model.file in NOT_CONVERTED or weights is None:
        return  # read whole either way
    written = []
    for name in ("apart", "whole"):
        xml = tmp_path / f"{name}.xml"
        subprocess.run([sys.executable, "-c", _CONVERT, str(model.path), str(xml), name], check=True)
        written.append((xml.read_bytes(), xml.with_suffix(".bin").read_bytes()))
    assert written[0] == written[1]
