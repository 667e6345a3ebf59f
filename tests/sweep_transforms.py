"""The issue-22 sweep: ``ovpool transform --pass explicit-pads --pass no-ceil --pass opset=22`` on
every case of ``pool_space.grid()`` (about 1,800 single-node pooling models), then each result on
onnxruntime and on ovpool's ONNX -> OpenVINO conversion (CPU, f32) against the naive oracle.

    PYTHONPATH=. python tests/sweep_transforms.py [PASS ...]    # from the checkout whose ovpool to measure

Other passes than the issue's three are given as arguments (``explicit-pads no-ceil opset=22
dml-legal``); a pass's refusal is counted as ``refused``.

Prints one line of counts: refused by the passes, rejected by onnxruntime (not for a missing
kernel), onnxruntime values off the oracle, OpenVINO conversions or values off; then the first
few messages of each kind. Not a test (it takes minutes); ``test_transforms_properties`` draws
from the same space in CI.
"""

from __future__ import annotations

import collections
import sys

import numpy as np
import pool_space

import ovpool
from ovpool.errors import OvpoolError

NO_KERNEL = ("NOT_IMPLEMENTED", "Could not find an implementation", "does not support double")


def main(passes: list[str]) -> int:
    import onnxruntime as ort
    import openvino as ov

    from ovpool.ov.from_onnx import onnx_to_ov_model

    core = ov.Core()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    counts: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    seen: set[tuple[str, str]] = set()

    def note(kind: str, case: pool_space.PoolCase, message: str) -> None:
        counts[kind] += 1
        line = message.strip().splitlines()[0][:240]
        if len(examples[kind]) < 8 and (kind, line[:50]) not in seen:
            seen.add((kind, line[:50]))
            examples[kind].append(f"{case!r}: {line}")

    for case in pool_space.grid():
        counts["cases"] += 1
        try:
            out = ovpool.transform(case.model, passes)
        except OvpoolError as exc:
            note("refused", case, str(exc))
            continue
        try:
            session = ort.InferenceSession(out.SerializeToString(), options, providers=["CPUExecutionProvider"])
            got = dict(zip([o.name for o in session.get_outputs()], session.run(None, case.feeds)))
            if not _same(case, got):
                note("ort_values_off", case, "values differ from the oracle")
            else:
                counts["ort_equal"] += 1
        except Exception as exc:  # onnxruntime raises its own exception types
            note("ort_no_kernel" if any(t in str(exc) for t in NO_KERNEL) else "ort_rejected", case, str(exc))
        try:
            compiled = core.compile_model(onnx_to_ov_model(out), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            request = compiled.create_infer_request()
            request.infer(case.feeds)
            got = {name: request.get_tensor(o).data.copy() for o in compiled.outputs for name in o.get_names()}
            if not _same(case, got):
                note("ov_values_off", case, "values differ from the oracle")
            else:
                counts["ov_equal"] += 1
        except Exception as exc:  # OpenVINO raises its own exception types
            note("ov_failed", case, str(exc))
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    for kind, lines in examples.items():
        print(f"{kind}:")
        for line in lines:
            print(f"  {line}")
    return 0


def _same(case: pool_space.PoolCase, got: dict[str, np.ndarray]) -> bool:
    tol = 2e-3 if case.dtype == np.float16 else 1e-6
    return all(
        name in got
        and got[name].shape == want.shape
        and np.allclose(got[name].astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
        for name, want in case.expected.items()
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["explicit-pads", "no-ceil", "opset=22"]))
