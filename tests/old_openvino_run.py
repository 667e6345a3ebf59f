"""Run an IR on another OpenVINO release: ``python old_openvino_run.py model.xml inputs.npz outputs.npz``.

Run by the Python of a virtualenv holding that release (``tests/test_target_openvino.py``), so it
imports nothing but OpenVINO and numpy. The model is read, compiled for CPU at
INFERENCE_PRECISION_HINT f32 and run once on the arrays of ``inputs.npz`` (keyed by input tensor
name); ``outputs.npz`` gets each output's array under its first tensor name. A failure prints
OpenVINO's message on stderr and exits 1.
"""

from __future__ import annotations

import sys

import numpy as np
import openvino as ov


def main(xml: str, inputs: str, outputs: str) -> int:
    core = ov.Core()
    try:
        model = core.read_model(xml)
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    except RuntimeError as exc:
        print(f"OpenVINO {ov.__version__}: {exc}", file=sys.stderr)
        return 1
    with np.load(inputs) as given:
        feed = {name: given[name] for name in given.files}
    result = compiled.create_infer_request().infer(feed)
    arrays = {sorted(port.get_names())[0]: np.asarray(value) for port, value in result.items()}
    np.savez(outputs, **arrays)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
