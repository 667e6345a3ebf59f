"""GridSample through OpenVINO: the IR layer GridSample-9 on ovpool's IR numpy executor against the
CPU plugin at f32, and one-node ONNX GridSample models converted by ovpool (OpenVINO's frontend)
and run on the CPU plugin against onnxruntime.

The CPU plugin computes a pixel coordinate as one fused ``g * L/2 + (L - 1)/2``; OpenVINO's
reference, onnxruntime and ovpool round twice (``((g + 1) * L - 1) / 2``), so a grid value within an
ulp of a tie can make ``nearest`` read the neighbouring pixel (docs/semantics.md). The grids drawn
here are uniform (no ties), multiples of 1/16 (exact ties, which every formula computes exactly) or
far outside the image.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ovpool.engine.ir_executor import IrGraph
from ovpool.errors import OvpoolError

ov = pytest.importorskip("openvino")
from openvino import opset1, opset9  # noqa: E402

RTOL = 1e-5
EXAMPLES = settings(max_examples=max(10, settings().max_examples // 6))


def _cpu(xml: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return np.asarray(compiled(feeds)[compiled.outputs[0]])


def _assert_close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Same shape and type, ``|got - want| <= RTOL * max(1, max|want|)``."""
    assert got.shape == want.shape and got.dtype == want.dtype, f"{what}: {got.shape} {got.dtype} != {want.shape} {want.dtype}"
    error = float(np.max(np.abs(got.astype(np.float64) - want), initial=0))
    assert error <= RTOL * max(1.0, float(np.max(np.abs(want), initial=0))), f"{what}: max error {error:.3g}"


@st.composite
def _case(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """A 4-D image and a grid: uniform over [-1.4, 1.4], multiples of 1/16 in [-2.5, 2.5], or far out."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    h, w, ho, wo = (draw(st.integers(1, 5)) for _ in range(4))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    kind = draw(st.sampled_from(["uniform", "sixteenths", "far"]))
    if kind == "uniform":
        grid = rng.uniform(-1.4, 1.4, (n, ho, wo, 2))
    elif kind == "sixteenths":
        grid = rng.integers(-40, 41, (n, ho, wo, 2)) / 16
    else:
        grid = rng.uniform(3, 9, (n, ho, wo, 2)) * rng.choice([-1.0, 1.0], (n, ho, wo, 2))
    return x, grid.astype(np.float32)


MODES = ("bilinear", "bicubic", "nearest")
PADDINGS = ("zeros", "border", "reflection")


@pytest.mark.parametrize("mode", MODES)
@EXAMPLES
@given(case=_case(), padding=st.sampled_from(PADDINGS), align=st.booleans())
def test_grid_sample_9_matches_the_cpu_plugin(mode: str, case: tuple[np.ndarray, np.ndarray], padding: str, align: bool) -> None:
    x, grid = case
    data = opset1.parameter(list(x.shape), ov.Type.f32, name="x")
    where = opset1.parameter(list(grid.shape), ov.Type.f32, name="grid")
    y = opset9.grid_sample(data, where, {"mode": mode, "padding_mode": padding, "align_corners": align})
    feeds = {"x": x, "grid": grid}
    with tempfile.TemporaryDirectory() as folder:
        xml = Path(folder) / "m.xml"
        ov.save_model(ov.Model([y], [data, where]), str(xml), compress_to_fp16=False)
        got = next(iter(IrGraph.read(xml).run(feeds).values()))
        _assert_close(got, _cpu(xml, feeds), f"{mode} {padding} align_corners={align}")


def test_grid_sample_9_bad_attribute_names_the_layer(tmp_path: Path) -> None:
    data = opset1.parameter([1, 1, 2, 2], ov.Type.f32, name="x")
    where = opset1.parameter([1, 1, 1, 2], ov.Type.f32, name="grid")
    ov.save_model(ov.Model([opset9.grid_sample(data, where, {"mode": "nearest"})], [data, where]), str(tmp_path / "m.xml"))
    xml = tmp_path / "m.xml"
    xml.write_text(xml.read_text().replace('mode="nearest"', 'mode="area"'))
    with pytest.raises(OvpoolError, match=r"layer '.*' \(GridSample-opset9, line \d+\): attribute 'mode': 'area' is not one of"):
        IrGraph.read(xml)


# --- ONNX GridSample converted by ovpool -----------------------------------------------------------


def _model(opset: int, x: np.ndarray, grid: np.ndarray, attrs: dict[str, Any]) -> onnx.ModelProto:
    from onnx import TensorProto, helper

    node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="sampler", **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
            helper.make_tensor_value_info("grid", TensorProto.FLOAT, list(grid.shape)),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _converted_on_cpu(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    from ovpool.ov.from_onnx import onnx_to_ir

    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "m.onnx"
        onnx.save(model, src)
        files = onnx_to_ir(src)
        xml = Path(folder) / "m.xml"
        xml.write_bytes(files[".xml"])
        xml.with_suffix(".bin").write_bytes(files[".bin"])
        return _cpu(xml, feeds)


def _onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, feeds)[0])


@pytest.mark.parametrize("opset", [16, 20, 22])
@settings(max_examples=max(6, settings().max_examples // 10))
@given(case=_case(), which=st.integers(0, 2), padding=st.sampled_from(PADDINGS), align=st.integers(0, 1))
def test_converted_4d_grid_sample_matches_onnxruntime(
    opset: int, case: tuple[np.ndarray, np.ndarray], which: int, padding: str, align: int
) -> None:
    x, grid = case
    if 1 in x.shape[2:] and align and padding == "reflection":
        padding = "border"  # onnxruntime reads outside a single pixel there (tests/ops/test_ops_gridsample.py)
    mode = (("bilinear", "bicubic", "nearest") if opset < 20 else ("linear", "cubic", "nearest"))[which]
    model = _model(opset, x, grid, {"mode": mode, "padding_mode": padding, "align_corners": align})
    feeds = {"x": x, "grid": grid}
    _assert_close(_converted_on_cpu(model, feeds), _onnxruntime(model, feeds), f"GridSample-{opset} {mode} {padding}")


@pytest.mark.parametrize(("rank", "mode"), [(3, "linear"), (5, "linear"), (5, "nearest")])
def test_converting_other_ranks_is_refused_by_name(rank: int, mode: str, tmp_path: Path) -> None:
    """OpenVINO's frontend converts 4-D GridSample only: 3-D and 5-D (which onnxruntime and ovpool's
    numpy executor run) are refused at convert time, in one line naming the node (by its output:
    OpenVINO's frontend names nodes by their first output)."""
    from ovpool.ov.from_onnx import onnx_to_ir

    spatial = rank - 2
    x = np.zeros((1, 1, *[2] * spatial), np.float32)
    grid = np.zeros((1, *[1] * spatial, spatial), np.float32)
    src = tmp_path / "m.onnx"
    onnx.save(_model(20, x, grid, {"mode": mode}), src)
    with pytest.raises(OvpoolError, match=r"GridSample-20 \(node '(sampler|y)'\): .*4D") as error:
        onnx_to_ir(src)
    assert "\n" not in str(error.value)
