"""Run IRs on another OpenVINO release:
``python old_openvino_run.py model.xml inputs.npz outputs.npz [model2.xml inputs2.npz outputs2.npz ...]``.

Run by the Python of a virtualenv holding that release (``tests/ops/test_target_openvino_releases.py``),
so it imports nothing but OpenVINO and numpy. Each model is read, compiled for CPU at
INFERENCE_PRECISION_HINT f32 and run once on the arrays of its ``inputs.npz`` (keyed by input
tensor name); its ``outputs.npz`` gets each output's array under its first tensor name (sorted).
A model OpenVINO refuses gets no ``outputs.npz``: OpenVINO's message goes to stderr, prefixed by
the model's path, and the exit code is 1 once all models ran. ``--version`` prints the release
and the newest opset it reads: the newest N for which an IR holding a Relu of ``version="opsetN"``
reads (``ovpool.ov.releases`` keeps the table this measures).
"""

from __future__ import annotations

import sys

import numpy as np
import openvino as ov

try:
    from openvino import Core
except ImportError:  # 2023.0 has it in openvino.runtime only
    from openvino.runtime import Core


def run(core, xml: str, inputs: str, outputs: str) -> bool:
    try:
        model = core.read_model(xml)
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    except RuntimeError as exc:
        print(f"{xml}: OpenVINO {ov.__version__}: {exc}", file=sys.stderr)
        return False
    with np.load(inputs) as given:
        feed = {name: given[name] for name in given.files}
    result = compiled.create_infer_request().infer(feed)
    arrays = {sorted(port.get_names())[0]: np.asarray(value) for port, value in result.items()}
    np.savez(outputs, **arrays)
    return True


PROBE = """<?xml version="1.0"?>
<net name="probe" version="11"><layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1" element_type="f32"/>
<output><port id="0" precision="FP32"><dim>1</dim></port></output></layer>
<layer id="1" name="r" type="Relu" version="opset{n}"><input><port id="0" precision="FP32"><dim>1</dim></port></input>
<output><port id="1" precision="FP32"><dim>1</dim></port></output></layer>
<layer id="2" name="y" type="Result" version="opset1"><input><port id="0" precision="FP32"><dim>1</dim></port></input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
<edge from-layer="1" from-port="1" to-layer="2" to-port="0"/></edges></net>"""


def newest_opset(core) -> int:
    newest = 0
    for n in range(1, 40):
        try:
            core.read_model(PROBE.format(n=n).encode(), b"")
        except RuntimeError:
            continue
        newest = n
    return newest


def main(args: list[str]) -> int:
    core = Core()
    if args == ["--version"]:
        print(ov.__version__ if hasattr(ov, "__version__") else ov.runtime.get_version(), newest_opset(core))
        return 0
    ran = [run(core, *args[i : i + 3]) for i in range(0, len(args), 3)]
    return 0 if all(ran) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
