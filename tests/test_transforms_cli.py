"""The pass framework's contract and ``ovpool transform``: refusals name the node and axis, broken
promises are caught, outputs are written atomically, never over a source, only with --force."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from transform_models import pool_model

import ovpool
from ovpool.cli.app import main
from ovpool.errors import OvpoolError, UnsupportedError
from ovpool.transforms.framework import VALID, Pass, UnknownPassError, run_passes

SAME = {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}


@dataclass
class Ran:
    returncode: int
    stderr: str


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run ``ovpool ARGS...`` in this process, through the same entry point as the console script."""

    def run(*args):
        monkeypatch.setattr(sys, "argv", ["ovpool", *map(str, args)])
        with pytest.raises(SystemExit) as exit_info:
            main()
        return Ran(exit_info.value.code, capsys.readouterr().err)

    return run


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(pool_model("MaxPool", SAME, [1, 1, 5, 5], 13), path)
    return path


def test_dynamic_dims_are_refused_with_node_and_axis():
    model = pool_model("MaxPool", SAME, [1, 1, "H", 5], 13)
    with pytest.raises(UnsupportedError, match=r"node 'pool'.*explicit-pads.*\[\?, 5\]"):
        ovpool.transform(model, ["explicit-pads"])
    valid_only = pool_model("MaxPool", {"kernel_shape": [3, 3], "auto_pad": "VALID"}, [1, 1, "H", 5], 13)
    assert "auto_pad" not in str(ovpool.transform(valid_only, ["explicit-pads"]).graph.node[0].attribute)


def test_a_model_failing_the_checker_is_refused():
    model = pool_model("MaxPool", SAME, [1, 1, 5, 5], 13)
    model.graph.node[0].input[0] = "missing"
    with pytest.raises(UnsupportedError, match="pass 'no-ceil' needs a model that passes onnx.checker"):
        ovpool.transform(model, ["no-ceil"])


def test_pools_inside_subgraphs_are_refused():
    inner = pool_model("MaxPool", {"kernel_shape": [2]}, [1, 1, 4], 13).graph
    del inner.input[:]
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 3)
    node = helper.make_node("If", ["c"], ["y"], name="branch", then_branch=inner, else_branch=inner)
    model = helper.make_model(helper.make_graph([node], "g", [cond, x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedError, match="subgraph of node 'branch'"):
        ovpool.transform(model, ["no-ceil"])


def test_the_runner_catches_a_pass_that_renames_a_node():
    def rename(model):
        model.graph.node[0].name = "other"
        return True

    with pytest.raises(OvpoolError, match="pass 'bad' lost node name"):
        run_passes(pool_model("MaxPool", SAME, [1, 1, 5, 5], 13), [Pass("bad", "", (VALID,), (VALID,), rename)])


def test_unknown_pass_is_a_usage_error():
    with pytest.raises(UnknownPassError, match="known: explicit-pads"):
        ovpool.transform(pool_model("MaxPool", SAME, [1, 1, 5, 5], 13), ["bogus"])
    assert UnknownPassError.exit_code == 2


def test_cli_writes_atomically_and_needs_force(cli, model_file, tmp_path):
    out = tmp_path / "out.onnx"
    first = cli("transform", model_file, "-o", out, "--pass", "explicit-pads", "--pass", "opset=22")
    assert first.returncode == 0, first.stderr
    assert "changed by explicit-pads, opset=22" in " ".join(first.stderr.split())
    written = onnx.load(out)
    assert written.opset_import[0].version == 22
    again = cli("transform", model_file, "-o", out, "--pass", "no-ceil")
    assert again.returncode == 2 and "--force" in again.stderr
    assert onnx.load(out) == written
    forced = cli("transform", model_file, "-o", out, "--pass", "no-ceil", "--force")
    assert forced.returncode == 0 and "no pass changed anything" in " ".join(forced.stderr.split())


def test_cli_batch_never_overwrites_a_source(cli, model_file, tmp_path):
    other = tmp_path / "n.onnx"
    onnx.save(pool_model("AveragePool", {"kernel_shape": [2]}, [1, 1, 4], 13), other)
    before = model_file.read_bytes()
    same_dir = cli("transform", model_file, other, "--output-dir", tmp_path, "-p", "dml-legal", "--force")
    assert same_dir.returncode == 2 and "refusing to overwrite an input file" in same_dir.stderr
    assert model_file.read_bytes() == before
    out_dir = tmp_path / "out"
    batch = cli("transform", model_file, other, "--output-dir", out_dir, "-p", "dml-legal")
    assert batch.returncode == 0, batch.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["m.onnx", "n.onnx"]


def test_cli_usage_errors(cli, model_file, tmp_path):
    assert cli("transform", model_file).returncode == 2
    for name, words in (
        ("opset=x", "must be a whole number"),
        ("opset=0", "knows opsets 1 to"),
        ("opset=999", "knows opsets 1 to"),
        ("bogus", "unknown pass"),
    ):
        result = cli("transform", model_file, "-p", name, "-o", tmp_path / "never.onnx")
        assert result.returncode == 2 and words in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "never.onnx").exists()
    not_onnx = tmp_path / "m.json"
    not_onnx.write_text("{}")
    assert cli("transform", not_onnx, "-p", "no-ceil").returncode == 2
    missing = cli("transform", tmp_path / "none.onnx", "-p", "no-ceil")
    assert missing.returncode == 2 and "none.onnx" in missing.stderr
    ceil = tmp_path / "ceil.onnx"
    onnx.save(pool_model("MaxPool", {"kernel_shape": [2], "ceil_mode": 1}, [1, 1, 5], 13), ceil)
    refused = cli("transform", ceil, "-p", "opset=9", "-o", tmp_path / "o.onnx")
    assert refused.returncode == 1 and "node 'pool'" in refused.stderr and "Traceback" not in refused.stderr


def _untyped_output_model(keep_type: bool) -> onnx.ModelProto:
    """Relu -> ceil-mode MaxPool -> Relu whose graph output has a type without a shape, or no type:
    onnxruntime and OpenVINO load it, the ONNX checker does not."""
    model = pool_model("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, [1, 2, 5, 5], 13, relu=True)
    model.graph.node.append(helper.make_node("Relu", ["y"], ["z"], name="after"))
    del model.graph.output[:]
    model.graph.output.append(
        helper.make_tensor_value_info("z", TensorProto.FLOAT, None) if keep_type else onnx.ValueInfoProto(name="z")
    )
    return model


@pytest.mark.parametrize("keep_type", [True, False])
def test_outputs_without_shapes_are_completed_as_runtimes_take_them(keep_type):
    ort = pytest.importorskip("onnxruntime")
    import numpy as np

    model = _untyped_output_model(keep_type)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model, full_check=True)
    rewritten = ovpool.transform(model, ["no-ceil"])
    onnx.checker.check_model(rewritten, full_check=True)
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32)
    [want] = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    [got] = ort.InferenceSession(rewritten.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    declared = [d.dim_value for d in rewritten.graph.output[0].type.tensor_type.shape.dim]
    assert declared == list(want.shape) == [1, 2, 3, 3]
    assert rewritten.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
    np.testing.assert_array_equal(got, want)


def test_checker_failures_name_the_value_or_node():
    no_shape = pool_model("MaxPool", SAME, [1, 1, 5, 5], 13)
    no_shape.graph.input[0].type.tensor_type.ClearField("shape")
    with pytest.raises(UnsupportedError, match=r"not true of: graph input 'x': has a type without a shape"):
        ovpool.transform(no_shape, ["no-ceil"])
    bogus = pool_model("MaxPool", SAME, [1, 1, 5, 5], 13)
    bogus.graph.node[0].attribute.append(helper.make_attribute("bogus", 3))
    with pytest.raises(UnsupportedError, match=r"not true of: node 'pool' \(MaxPool\): Unrecognized attribute: bogus"):
        ovpool.transform(bogus, ["no-ceil"])


def test_cli_jobs_gives_the_same_outputs_and_report(cli, model_file, tmp_path):
    other = tmp_path / "n.onnx"
    onnx.save(pool_model("AveragePool", {"kernel_shape": [2]}, [1, 1, 4], 13), other)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not onnx")
    runs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        ran = cli("transform", model_file, bad, other, "--output-dir", out, "-p", "dml-legal", "--jobs", jobs)
        runs[jobs] = (ran.returncode, ran.stderr.replace(str(out), "OUT"), {p.name: p.read_bytes() for p in out.iterdir()})
    assert runs["1"] == runs["2"]
    code, report, written = runs["1"]
    assert code == 2 and sorted(written) == ["m.onnx", "n.onnx"]
    assert [line.split(":")[0] for line in report.splitlines()] == [str(model_file), "error", str(other), "transform"]


def test_the_issue_22_command_takes_what_onnx_shape_inference_cannot_size(cli, tmp_path):
    """A ceil window starting in the right padding (onnx 1.23 infers 4 windows, the rule 3) and a
    MaxUnpool fed output_shape (onnx infers nothing), outputs declared without shapes."""
    from pool_space import build

    ceil = build("MaxPool", {"kernel_shape": [2], "strides": [3], "pads": [1, 1], "ceil_mode": 1}, [1, 1, 7], 12, np.float32)
    unpool = build("MaxUnpool", {"kernel_shape": [2], "strides": [2]}, [1, 1, 3], 11, np.float32, output_shape=True)
    onnx.save(ceil.model, tmp_path / "ceil.onnx")
    onnx.save(unpool.model, tmp_path / "unpool.onnx")
    out = tmp_path / "out"
    ran = cli(
        "transform",
        tmp_path / "ceil.onnx",
        tmp_path / "unpool.onnx",
        "--output-dir",
        out,
        "--pass",
        "explicit-pads",
        "--pass",
        "no-ceil",
        "--pass",
        "opset=22",
    )
    assert ran.returncode == 0, ran.stderr
    written = onnx.load(out / "ceil.onnx")
    assert [d.dim_value for d in written.graph.output[0].type.tensor_type.shape.dim] == [1, 1, 3]
    assert onnx.load(out / "unpool.onnx").graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT


def test_a_wrong_declared_size_after_a_pool_is_still_refused():
    """Strict shape inference still runs on every other node, over the pools' true sizes."""
    model = pool_model("MaxPool", {"kernel_shape": [2], "strides": [3], "pads": [1, 1], "ceil_mode": 1}, [1, 1, 7], 12)
    model.graph.node.append(helper.make_node("Relu", ["y"], ["r"], name="relu"))
    model.graph.output.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 1, 4]))
    with pytest.raises(UnsupportedError, match=r"needs a model that passes.*Relu.*\(3\) vs \(4\)"):
        ovpool.transform(model, ["no-ceil"])


def test_input_shapes_make_the_result_static(tmp_path, capsys):
    """``--input`` (and ``inputs=``) sets the graph input's dims before the passes, as ``ovc
    --input`` does; a range is refused (numbers only), a wrong name names the inputs."""
    import onnx
    from onnx import TensorProto, helper
    from runtime_support import invoke

    import ovpool
    from ovpool.errors import UsageError

    node = helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2], pads=[0, 1])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    src = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), src)
    out = ovpool.transform(src, ["dml-legal"], inputs="x[1,2,9]", verify=True)
    assert [d.dim_value for d in out.graph.input[0].type.tensor_type.shape.dim] == [1, 2, 9]
    with pytest.raises(UsageError, match="give every dim as a number"):
        ovpool.transform(src, ["dml-legal"], inputs="x[1,2,1..9]")
    with pytest.raises(ovpool.ModelError, match="the model has no such input"):
        ovpool.transform(src, ["dml-legal"], inputs="y[1,2,9]")
    code, _, err = invoke(capsys, "transform", src, "--pass", "dml-legal", "--shape", "x=1,2,9", "-o", tmp_path / "t.onnx")
    assert code == 0, err
    written = onnx.load(tmp_path / "t.onnx")
    assert [d.dim_value for d in written.graph.input[0].type.tensor_type.shape.dim] == [1, 2, 9]


def test_the_pass_catalog_is_the_one_list(monkeypatch, capsys):
    """Each row of the catalog is the pass it names, with the row's name and summary (a family's
    for N = 19), and ``--list-passes`` prints every row, in order, without a model."""
    from ovpool.transforms.catalog import catalog, parse_pass, pass_names

    for row in catalog():
        made = parse_pass(row.named(19)[0])
        assert (made.name, made.summary) == row.named(19)
    monkeypatch.setattr(sys, "argv", ["ovpool", "transform", "--list-passes"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == pass_names()
