"""ovpool explain: derivations, pictures and divisors on small cases checked against the naive oracle."""

from __future__ import annotations

import numpy as np
from lxml import etree
from typer.testing import CliRunner

from ovpool.cli.app import app
from ovpool.explain import explain, render_svg
from ovpool.ir_emit import emit_single
from ovpool.spec import Divisor, PoolKind, PoolSpec, Rounding
from tests import oracle

runner = CliRunner()


def test_drop_rule_and_overhang_are_shown():
    result = runner.invoke(app, ["explain", "--op", "max", "--kernel", "3", "--strides", "2", "--pads", "0,2", "--ceil", "--input-shape", "1,1,4"])
    assert result.exit_code == 0, result.output
    assert "ceil((4 + 0 + 2 - 3)/2) + 1 = 3" in result.output
    assert "drops it: out = 2" in result.output
    assert "dropped by the drop rule" in result.output
    assert "output [1, 1, 2]" in result.output


def test_counts_and_divisors_agree_with_the_oracle():
    """Window count per axis and the divisor grid equal the naive oracle's (average of ones
    with divisor d is taps_inside/d, so the oracle's divisor is taps_inside / value)."""
    spec = PoolSpec(PoolKind.AVERAGE, (3, 2), (2, 2), pads_begin=(1, 0), pads_end=(1, 1), rounding=Rounding.CEIL, divisor=Divisor.INCLUDE_PAD)
    ex = explain(spec, (1, 1, 6, 5))
    ones = np.ones((1, 1, 6, 5))
    attrs = {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1], "ceil_mode": 1, "count_include_pad": 1}
    averaged = oracle.pool(ones, "avg", attrs)[0, 0]
    inside = oracle.pool(ones, "avg", attrs, divisor="exclude")[0, 0]  # 1 wherever a window has input
    assert [ax.output for ax in ex.axes] == list(averaged.shape)
    taps_inside = np.outer(*[[sum(0 <= t < ax.length for t in w.taps) for w in ax.windows] for ax in ex.axes])
    np.testing.assert_allclose(taps_inside / ex.divisor_grid, averaged * inside)


def test_ceil_no_drop_window_wholly_in_padding(tmp_path):
    result = runner.invoke(app, ["explain", "--op", "max", "--kernel", "2", "--strides", "3", "--rounding", "ceil_no_drop", "--input-shape", "6"])
    assert result.exit_code == 0
    assert "wholly in padding" in result.output and "output [1, 1, 3]" in result.output


def test_svg_from_ir_layer_is_written_atomically(tmp_path):
    spec = PoolSpec(PoolKind.AVERAGE, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), rounding=Rounding.CEIL_NO_DROP, divisor=Divisor.FULL_KERNEL_IF_PADDED, name="p")
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


def test_onnx_node_and_errors():
    result = runner.invoke(app, ["explain", "--onnx", "ovpool/examples/tiny_pool.onnx", "--node", "pool2"])
    assert result.exit_code == 0 and "divisor include_pad" in result.output
    refused = runner.invoke(app, ["explain", "--onnx", "ovpool/examples/tiny_pool.onnx", "--node", "relu1"])
    assert refused.exception.exit_code == 1 and "not a pooling node" in str(refused.exception)
    assert runner.invoke(app, ["explain", "--kernel", "3,3"]).exit_code == 2
