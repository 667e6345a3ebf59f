"""ovpool explain: derivations, pictures and divisors on small cases checked against the naive oracle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lxml import etree
from onnx import TensorProto, helper
from typer.testing import CliRunner

import ovpool
from ovpool.cli.app import app
from ovpool.explain.explanation import explain, render_svg
from ovpool.ir.writer import emit_single
from ovpool.spec import Divisor, PoolKind, PoolSpec, Rounding
from tests import oracle

runner = CliRunner()


def test_drop_rule_and_overhang_are_shown():
    result = runner.invoke(
        app, ["explain", "--op", "max", "--kernel", "3", "--strides", "2", "--pads", "0,2", "--ceil", "--input-shape", "1,1,4"]
    )
    assert result.exit_code == 0, result.output
    assert "ceil((4 + 0 + 2 - 3)/2) + 1 = 3" in result.output
    assert "drops it: out = 2" in result.output
    assert "dropped by the drop rule" in result.output
    assert "output [1, 1, 2]" in result.output


def test_counts_and_divisors_agree_with_the_oracle():
    """Window count per axis and the divisor grid equal the naive oracle's (average of ones
    with divisor d is taps_inside/d, so the oracle's divisor is taps_inside / value)."""
    spec = PoolSpec(
        PoolKind.AVERAGE, (3, 2), (2, 2), pads_begin=(1, 0), pads_end=(1, 1), rounding=Rounding.CEIL, divisor=Divisor.INCLUDE_PAD
    )
    ex = explain(spec, (1, 1, 6, 5))
    ones = np.ones((1, 1, 6, 5))
    attrs = {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1], "ceil_mode": 1, "count_include_pad": 1}
    averaged = oracle.pool(ones, "avg", attrs)[0, 0]
    inside = oracle.pool(ones, "avg", attrs, divisor="exclude")[0, 0]  # 1 wherever a window has input
    assert [ax.output for ax in ex.axes] == list(averaged.shape)
    taps_inside = np.outer(*[[sum(0 <= t < ax.length for t in w.taps) for w in ax.windows] for ax in ex.axes])
    np.testing.assert_allclose(taps_inside / ex.divisor_grid, averaged * inside)


def test_ceil_no_drop_window_wholly_in_padding(tmp_path):
    result = runner.invoke(
        app, ["explain", "--op", "max", "--kernel", "2", "--strides", "3", "--rounding", "ceil_no_drop", "--input-shape", "6"]
    )
    assert result.exit_code == 0
    assert "wholly in padding" in result.output and "output [1, 1, 3]" in result.output


def test_svg_from_ir_layer_is_written_atomically(tmp_path):
    spec = PoolSpec(
        PoolKind.AVERAGE,
        (3, 3),
        (2, 2),
        (1, 1),
        (1, 1),
        (1, 1),
        rounding=Rounding.CEIL_NO_DROP,
        divisor=Divisor.FULL_KERNEL_IF_PADDED,
        name="p",
    )
    files = emit_single(spec, (1, 2, 5, 4))
    (tmp_path / "m.xml").write_bytes(files[".xml"])
    svg = tmp_path / "p.svg"
    result = runner.invoke(app, ["explain", "--ir", str(tmp_path / "m.xml"), "--layer", "p", "--svg", str(svg)])
    assert result.exit_code == 0, result.output
    assert "input [1, 2, 5, 4] -> output [1, 2, 3, 3]" in result.output
    root = etree.fromstring(svg.read_bytes())
    assert root.tag.endswith("svg") and len(root) > 20
    again = runner.invoke(app, ["explain", "--ir", str(tmp_path / "m.xml"), "--layer", "p", "--svg", str(svg)])
    assert again.exception.exit_code == 2 and "--force" in str(again.exception)  # main() turns it into exit 2
    assert render_svg(explain(spec, (1, 1, 5, 4))).startswith("<svg")


EXAMPLE = str(Path(ovpool.__file__).parent / "examples" / "tiny_pool.onnx")


def test_onnx_node_and_errors():
    result = runner.invoke(app, ["explain", "--onnx", EXAMPLE, "--node", "pool2"])
    assert result.exit_code == 0 and "divisor include_pad" in result.output
    refused = runner.invoke(app, ["explain", "--onnx", EXAMPLE, "--node", "relu1"])
    assert refused.exception.exit_code == 1 and "not a pooling node" in str(refused.exception)
    assert runner.invoke(app, ["explain", "--kernel", "3,3"]).exception.exit_code == 2


def usage_error(args: list[str]) -> str:
    """The one-line message of a command that must fail with exit 2 (typer's BadParameter or
    ovpool's UsageError, which ``main()`` prints as ``error: ...``)."""
    result = runner.invoke(app, ["explain", *args])
    code = (
        result.exit_code
        if result.exception is None or isinstance(result.exception, SystemExit)
        else getattr(result.exception, "exit_code", None)
    )
    assert code == 2, (args, result.output, result.exception)
    return result.output + str(result.exception or "")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--op", "min", "--kernel", "3", "--input-shape", "4"], "--op min: must be avg or max"),
        (["--kernel", "3", "--strides", "0", "--input-shape", "4"], "--strides 0: must be >= 1"),
        (["--kernel", "3", "--pads", "1,1,1", "--input-shape", "4"], "--pads 1,1,1: needs 2 values"),
        (["--kernel", "3", "--rounding", "up", "--input-shape", "4"], "--rounding up: must be one of floor, ceil, ceil_no_drop"),
        (["--kernel", "3", "--input-shape", "0"], "every dim must be >= 1"),
        (["--kernel", "3", "--input-shape", "1"], "--kernel 3 on --input-shape 1,1,1: axis 0: input length 1"),
        (["--kernel", "3", "--input-shape", "5000"], "explain draws at most 1024"),
        (["--kernel", "3", "--ceil", "--rounding", "floor", "--input-shape", "4"], "say the same thing"),
        (["--kernel", "3", "--onnx", EXAMPLE, "--node", "pool1"], "--kernel: the spec comes from the model"),
        (["--node", "pool1", "--kernel", "3", "--input-shape", "4"], "--node goes with --onnx"),
    ],
)
def test_bad_flags_are_usage_errors_naming_the_flag(args, message):
    assert message in usage_error(args)


def test_max_unpool_is_refused_not_drawn_as_a_pool(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    nodes = [
        helper.make_node("MaxPool", ["x"], ["y", "i"], name="mp", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxUnpool", ["y", "i"], ["z"], name="up", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 1, 4, 4])
    path = tmp_path / "u.onnx"
    path.write_bytes(
        helper.make_model(
            helper.make_graph(nodes, "g", [x], [z]), opset_imports=[helper.make_opsetid("", 13)]
        ).SerializeToString()
    )
    result = runner.invoke(app, ["explain", "--onnx", str(path), "--node", "up"])
    assert result.exception.exit_code == 1 and "node 'up' is MaxUnpool" in str(result.exception)
    assert runner.invoke(app, ["explain", "--onnx", str(path), "--node", "mp"]).exit_code == 0


def test_documented_example_is_the_real_output():
    reference = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    command = "ovpool explain --kernel 3 --strides 2 --pads 1,1 --ceil --count-include-pad --input-shape 4"
    assert command in reference
    result = runner.invoke(app, command.split()[1:])
    assert result.exit_code == 0 and result.output.strip() in reference
