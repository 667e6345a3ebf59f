"""``ovpool convert --target-openvino`` on the real older OpenVINO releases.

``OVPOOL_OLD_OPENVINO`` lists the Python of one virtualenv per release, separated by ``:``
(``tests/old_openvino_venvs.sh`` makes them: ``/tmp/ov2023.3/bin/python:/tmp/ov2024.6/bin/python``);
without it every test here is skipped. For each release:

* the release reads exactly the opsets ``ovpool.ov.releases`` says (measured with a probe IR);
* the bundled example, every real model of ``real_models.py`` that the installed OpenVINO
  converts, and a seeded corpus of ceil-mode pools (the cases MaxPool-14 and AvgPool-14 carry;
  ``OVPOOL_RELEASE_POOLS`` of them, 40 by default)
  are converted with ``target_openvino=<release>``, and the IR is read, compiled and run on that
  release (``old_openvino_run.py`` in its Python, arrays through ``.npz`` files) on CPU at f32;
* its results equal those of the IR converted for the installed release run on the installed
  OpenVINO: within ``rtol`` of the output's largest magnitude (the real model's own, 1e-4; the
  CPU kernels of two releases sum in other orders), indices exactly; the pools also equal the naive
  loop oracle.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import oracle
import pytest
from fetch_real_models import default_dir
from onnx import TensorProto, helper
from real_models import MODELS
from test_real_models_numpy import mismatch

from ovpool.errors import OvpoolError, UnsupportedError
from ovpool.ov import releases
from ovpool.ov.from_onnx import ir_files, onnx_to_ov_model

PYTHONS = [p for p in os.environ.get("OVPOOL_OLD_OPENVINO", "").split(os.pathsep) if p]
# ceil-mode pools in the corpus: 40 in CI, more with OVPOOL_RELEASE_POOLS=400
POOLS = int(os.environ.get("OVPOOL_RELEASE_POOLS", "40"))
RUNNER = Path(__file__).with_name("old_openvino_run.py")
EXAMPLE = Path(__file__).parents[2] / "ovpool" / "examples" / "tiny_pool.onnx"
F32 = {"INFERENCE_PRECISION_HINT": "f32"}

pytestmark = [
    pytest.mark.openvino,
    pytest.mark.skipif(not PYTHONS, reason="OVPOOL_OLD_OPENVINO unset (tests/old_openvino_venvs.sh makes the virtualenvs)"),
]


@dataclass
class Case:
    """One model to run on the old release: its ONNX form, inputs, tolerance and, for a pool, the
    oracle's outputs."""

    name: str
    model: onnx.ModelProto | Path
    feeds: dict[str, np.ndarray]
    rtol: float = 1e-4
    oracle: list[np.ndarray] | None = None


def pool_corpus(count: int = POOLS, seed: int = 22) -> list[Case]:
    """Seeded ceil-mode MaxPool-12 (values, indices) and AveragePool-19 over ranks 1-3, static or
    dynamic spatial dims: the windows that OpenVINO's ``ceil_torch`` (MaxPool-14, AvgPool-14)
    carries and an older release reads as ``ceil`` + Slice; some static averages dilated
    (AvgPool-16)."""
    rng = np.random.default_rng(seed)
    cases = []
    for number in range(count):
        rank = int(rng.integers(1, 4))
        spatial = [int(rng.integers(3, 10)) for _ in range(rank)]
        kernel = [int(rng.integers(1, 4)) for _ in range(rank)]
        strides = [int(rng.integers(1, 4)) for _ in range(rank)]
        pads = [int(rng.integers(0, k)) for k in kernel] + [int(rng.integers(0, k)) for k in kernel]
        op = "MaxPool" if number % 2 else "AveragePool"
        attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads, "ceil_mode": 1}
        static = bool(rng.integers(0, 2))
        if op == "AveragePool":
            attrs["count_include_pad"] = int(rng.integers(0, 2))
            if static and number % 4 == 0:  # AvgPool-16 -> Pad, a Slice per tap, their sum / divisor
                attrs["dilations"] = [2] * rank
                attrs["pads"] = [min(p, 2 * k - 2) for p, k in zip(pads, kernel * 2)]
                spatial = [max(n, 2 * k - 1) for n, k in zip(spatial, kernel)]
        outputs = ["y", "i"] if op == "MaxPool" else ["y"]
        dims: list[int | str] = [1, 2, *spatial] if static else [1, 2, *(f"s{a}" for a in range(rank))]
        x = (rng.integers(-8, 8, (1, 2, *spatial)) / 4.0).astype(np.float32)
        graph = helper.make_graph(
            [helper.make_node(op, ["x"], outputs, name="pool", **attrs)],
            f"pool{number}",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
            [helper.make_tensor_value_info(o, TensorProto.INT64 if o == "i" else TensorProto.FLOAT, None) for o in outputs],
        )
        opset = 12 if op == "MaxPool" else 19
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
        want = oracle.pool(x.astype(np.float64), "max" if op == "MaxPool" else "avg", attrs)
        cases.append(Case(f"{op}-{number}", model, {"x": x}, 1e-6, list(want) if op == "MaxPool" else [want]))
    return cases


def all_cases() -> list[Case]:
    example = Case("tiny_pool", EXAMPLE, {"input": np.random.default_rng(0).standard_normal((1, 3, 14, 14)).astype(np.float32)})
    real = [Case(m.name, m.path, m.feeds(), m.rtol) for m in MODELS if (default_dir() / m.file).exists()]
    return [example, *real, *pool_corpus()]


def installed_run(model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model on the installed release, its outputs by their ONNX names: a compiled output port
    can carry the names of the no-op layers the plugin removed before it (a Reshape back to the
    same shape: ``Softmax@0/2d`` beside ``save_infer_model/scale_0.tmp_1``)."""
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model), load_external_data=False)
    outputs = {o.name for o in proto.graph.output}
    compiled = ov.Core().compile_model(onnx_to_ov_model(model), "CPU", F32)
    result = compiled.create_infer_request().infer(feeds)
    named = {}
    for port, value in result.items():
        names = sorted(port.get_names())
        named[next((n for n in names if n in outputs), names[0])] = np.asarray(value)
    return named


def release_of(python: str) -> tuple[str, int]:
    line = subprocess.run([python, str(RUNNER), "--version"], capture_output=True, text=True, check=True).stdout.split()
    return line[0], int(line[1])


@pytest.fixture(scope="module", params=PYTHONS)
def old_runs(request, tmp_path_factory):
    """(release, newest opset it reads, {case name: (outputs on the release | its error, installed outputs, case)})."""
    python = request.param
    version, newest = release_of(python)
    release = releases.shown(releases.parse(version, build=True))
    folder = tmp_path_factory.mktemp(f"ov{release}")
    args, planned, results = [], {}, {}
    for case in all_cases():
        try:
            want = installed_run(case.model, case.feeds)
        except OvpoolError:
            continue  # the installed release does not convert it either (tests/test_real_models.py)
        try:
            files = ir_files(onnx_to_ov_model(case.model, target_openvino=release))
        except UnsupportedError as exc:
            results[case.name] = (str(exc), want, case)
            continue
        xml = folder / f"{case.name}.xml"
        xml.write_bytes(files[".xml"])
        xml.with_suffix(".bin").write_bytes(files[".bin"])
        np.savez(folder / f"{case.name}.in.npz", **case.feeds)
        args += [str(xml), str(folder / f"{case.name}.in.npz"), str(folder / f"{case.name}.out.npz")]
        planned[case.name] = (want, case)
    done = subprocess.run([python, str(RUNNER), *args], capture_output=True, text=True, timeout=1800)
    for name, (want, case) in planned.items():
        out = folder / f"{name}.out.npz"
        if out.exists():
            with np.load(out) as got:
                results[name] = ({k: got[k] for k in got.files}, want, case)
        else:
            results[name] = (_error_of(done.stderr, folder / f"{name}.xml"), want, case)
    return release, newest, results


def _error_of(stderr: str, xml: Path) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith(str(xml))]
    return lines[0] if lines else stderr[-2000:]


def test_release_reads_the_opsets_of_the_table(old_runs):
    release, newest, _ = old_runs
    assert releases.newest_opset(release) == newest


CASE_NAMES = [case.name for case in all_cases()] if PYTHONS else []


@pytest.mark.parametrize("name", CASE_NAMES)
def test_targeted_ir_runs_on_the_release_as_on_the_installed_one(old_runs, name):
    release, _, results = old_runs
    if name not in results:
        pytest.skip("the installed OpenVINO does not convert it either")
    got, want, case = results[name]
    assert isinstance(got, dict), f"OpenVINO {release}: {got}"
    assert sorted(got) == sorted(want)
    for output, expected in want.items():
        problem = mismatch(got[output], expected, case.rtol)
        assert problem is None, f"{name} output {output!r} on OpenVINO {release}: {problem}"
    if case.oracle is not None:
        np.testing.assert_allclose(got["y"].astype(np.float64), case.oracle[0], rtol=1e-5, atol=1e-5)
        if len(case.oracle) > 1:
            np.testing.assert_array_equal(got["i"], case.oracle[1])
