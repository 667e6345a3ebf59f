"""ovpool validate: the OpenVINO AvgPool-1 spec examples, version traps, dynamic dims, edges, output formats."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from ir_fixtures import dims_xml, pool_ir, write
from lxml import etree
from typer.testing import CliRunner

import ovpool
from ovpool.cli import validate as validate_cli
from ovpool.cli.app import app
from ovpool.errors import InputFileError
from ovpool.ir.validation import validate_file

runner = CliRunner()
N32 = (1, 3, 32, 32)

# The five <layer> examples of the OpenVINO AvgPool-1 specification (avg-pool-1.rst), as printed:
# the first two declare 32x32 where same_upper with stride 2 gives 16x16.
SPEC_EXAMPLES = [
    (
        'auto_pad="same_upper" exclude-pad="true" kernel="2,2" pads_begin="0,0" pads_end="1,1" strides="2,2"',
        (1, 3, 32, 32),
        [1, 3, 16, 16],
    ),
    (
        'auto_pad="same_upper" exclude-pad="false" kernel="5,5" pads_begin="0,0" pads_end="1,1" strides="2,2"',
        (1, 3, 32, 32),
        [1, 3, 16, 16],
    ),
    ('auto_pad="explicit" exclude-pad="true" kernel="5,5" pads_begin="1,1" pads_end="1,1" strides="3,3"', (1, 3, 10, 10), None),
    ('auto_pad="explicit" exclude-pad="false" kernel="5,5" pads_begin="1,1" pads_end="1,1" strides="2,2"', (1, 3, 15, 15), None),
    ('auto_pad="valid" exclude-pad="true" kernel="5,5" pads_begin="1,1" pads_end="1,1" strides="2,2"', (1, 3, 14, 14), None),
]


@pytest.mark.parametrize("data, declared, expected", SPEC_EXAMPLES)
def test_avgpool1_spec_examples(tmp_path, data, declared, expected):
    findings = validate_file(write(tmp_path, pool_ir(data, N32, declared))).findings
    if expected is None:
        assert findings == []
    else:
        assert [(f.code, f.declared, f.expected) for f in findings] == [("OVP201", list(declared), expected)]


TRAPS = [
    # (type, version, data, outputs, expected code, attribute)
    (
        "AvgPool",
        "opset14",
        'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" exclude-pad="true" dilations="2,2"',
        1,
        "OVP102",
        "dilations",
    ),
    (
        "AvgPool",
        "opset1",
        'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" exclude-pad="true" rounding_type="ceil_torch"',
        1,
        "OVP104",
        "rounding_type",
    ),
    (
        "MaxPool",
        "opset8",
        'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" rounding_type="ceil_torch"',
        2,
        "OVP104",
        "rounding_type",
    ),
    ("MaxPool", "opset1", 'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" dilations="1,1"', 1, "OVP102", "dilations"),
    ("MaxPool", "opset1", 'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" axis="0"', 1, "OVP102", "axis"),
    ("AvgPool", "opset16", 'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0"', 1, "OVP103", "exclude-pad"),
    (
        "AvgPool",
        "opset14",
        'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" exclude-pad="true" auto_pad="notset"',
        1,
        "OVP104",
        "auto_pad",
    ),
    (
        "AvgPool",
        "opset14",
        'kernel="2,2" strides="0,1" pads_begin="0,0" pads_end="0,0" exclude-pad="true"',
        1,
        "OVP104",
        "strides",
    ),
    (
        "AvgPool",
        "opset14",
        'kernel="2,2" strides="1,1,1" pads_begin="0,0" pads_end="0,0" exclude-pad="true"',
        1,
        "OVP105",
        "strides",
    ),
    ("AvgPool", "opset14", 'kernel="2,2" strides="1,1" pads_begin="2,0" pads_end="0,0" exclude-pad="true"', 1, "OVP105", "pads"),
    ("MaxPool", "opset14", 'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" axis="4"', 2, "OVP104", "axis"),
    (
        "AvgPool",
        "opset17",
        'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" exclude-pad="true"',
        1,
        "OVP101",
        "version",
    ),
    (
        "AvgPool",
        "experimental",
        'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" exclude-pad="true"',
        1,
        "OVP101",
        "version",
    ),
]


@pytest.mark.parametrize("layer_type, version, data, outputs, code, attribute", TRAPS)
def test_version_traps(tmp_path, layer_type, version, data, outputs, code, attribute):
    text = pool_ir(data, (1, 1, 6, 6), (1, 1, 5, 5), layer_type, version, outputs)
    findings = validate_file(write(tmp_path, text)).findings
    assert (code, attribute) in [(f.code, f.attribute) for f in findings], findings
    assert all(f.layer_id == "1" and f.name == "pool" and f.type == layer_type for f in findings)


def test_dilations_on_avgpool14_is_what_openvino_silently_ignores(tmp_path):
    """The trap is real: OpenVINO reads the file and pools undilated (5x5, not 4x4)."""
    ov = pytest.importorskip("openvino")
    data = 'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" exclude-pad="true" dilations="2,2"'
    path = write(tmp_path, pool_ir(data, (1, 1, 6, 6), (1, 1, 4, 4), version="opset14"))
    model = ov.Core().read_model(path)
    assert [list(o.get_partial_shape().to_shape()) for o in model.outputs] == [[1, 1, 5, 5]]
    assert {f.code for f in validate_file(path).findings} == {"OVP102"}


DYNAMIC = [
    # input dims, declared output dims, finding?  (k3 s2 pads 1/0 floor)
    (("?", 3, "1..10", -1), ("?", 3, "1..5", "1.."), False),
    (("?", 3, "1..10", -1), (-1, 3, "?", -1), False),
    (("?", 3, "1..10", 9), ("?", 3, "1..5", 4), False),
    (("?", 3, "1..10", 9), ("?", 3, "1..6", 4), True),
    (("?", 3, "4..", 9), (1, 3, "2..", 4), True),
    (("..3", 3, "4..", 9), ("..3", 3, "2..", 4), False),
    (("?", 3, 9, 9), ("?", 3, 5, 4), True),
]


@pytest.mark.parametrize("input_dims, output_dims, flagged", DYNAMIC)
def test_dynamic_dims(tmp_path, input_dims, output_dims, flagged):
    data = 'kernel="3,3" strides="2,2" pads_begin="1,1" pads_end="0,0" exclude-pad="true"'
    findings = validate_file(write(tmp_path, pool_ir(data, input_dims, output_dims))).findings
    assert [f.code for f in findings] == (["OVP201"] if flagged else [])


def test_dynamic_dims_agree_with_openvino_inference(tmp_path):
    ov = pytest.importorskip("openvino")
    data = 'kernel="3,3" strides="2,2" pads_begin="1,1" pads_end="0,0" exclude-pad="true"'
    dims = (-1, 3, -1, -1)
    path = write(tmp_path, pool_ir(data, dims, dims, parameter_shape="?,3,1..10,?"))
    model = ov.Core().read_model(path)
    assert str(model.output(0).get_partial_shape()) == "[?,3,1..5,1..]"
    assert validate_file(path, strict=True).findings == []
    ranged = write(tmp_path, pool_ir(data, ("?", 3, "1..10", -1), (1, 1, 1, 1)), "ranged.xml")
    [finding] = validate_file(ranged).findings
    assert finding.expected_dims == ["?", "3", "1..5", "1.."]


def test_strict_reports_openvino_disagreement(tmp_path):
    pytest.importorskip("openvino")
    data = 'kernel="2,2" strides="2,2" pads_begin="0,0" pads_end="0,0" exclude-pad="true"'
    path = write(tmp_path, pool_ir(data, (1, 1, 6, 6), (1, 1, 4, 4)))
    codes = [f.code for f in validate_file(path, strict=True).findings]
    assert codes == ["OVP201", "OVP401"]


def test_ports_precision_and_edges(tmp_path):
    data = 'kernel="2,2" strides="2,2" pads_begin="0,0" pads_end="0,0"'
    two_outputs_on_v1 = pool_ir(data, (1, 1, 6, 6), (1, 1, 3, 3), "MaxPool", "opset1", outputs=2)
    assert "OVP202" in [f.code for f in validate_file(write(tmp_path, two_outputs_on_v1, "a.xml")).findings]
    wrong_index_type = pool_ir(data + ' index_element_type="i32"', (1, 1, 6, 6), (1, 1, 3, 3), "MaxPool", "opset8", outputs=2)
    assert [f.code for f in validate_file(write(tmp_path, wrong_index_type, "b.xml")).findings] == ["OVP205"]
    edge = pool_ir(data, (1, 1, 6, 6), (1, 1, 3, 3), "MaxPool", "opset1", result_dims=(1, 1, 4, 4))
    [finding] = validate_file(write(tmp_path, edge, "c.xml")).findings
    assert (finding.code, finding.declared, finding.expected) == ("OVP301", [1, 1, 3, 3], [1, 1, 4, 4])
    bad_dim = pool_ir(data, (1, 1, 6, 6), (1, 1, "x", 3), "MaxPool", "opset1")
    assert "OVP206" in [f.code for f in validate_file(write(tmp_path, bad_dim, "d.xml")).findings]
    small = pool_ir('kernel="7,7" strides="1,1" pads_begin="0,0" pads_end="0,0"', (1, 1, 6, 6), (1, 1, 1, 1), "MaxPool", "opset1")
    assert [f.code for f in validate_file(write(tmp_path, small, "e.xml")).findings] == ["OVP204"]


BILLION_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE net [<!ENTITY a "aaaaaaaaaa">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
    + ']><net version="11"><layers><layer id="0" name="&j;" type="Parameter" version="opset1"/></layers></net>'
)
XXE = '<?xml version="1.0"?><!DOCTYPE net [<!ENTITY x SYSTEM "file:///etc/passwd">]><net version="11"><layers><layer id="0" name="&x;"/></layers></net>'


@pytest.mark.parametrize("text", [BILLION_LAUGHS, XXE, "<!-- " + "pad " * 5000 + "-->" + BILLION_LAUGHS.split("?>", 1)[1]])
def test_hostile_xml_is_refused(tmp_path, text):
    start = time.perf_counter()
    with pytest.raises(InputFileError, match="DOCTYPE"):
        validate_file(write(tmp_path, text))
    assert time.perf_counter() - start < 5  # generous: a failure here means entities were expanded


def test_truncated_and_unreadable(tmp_path):
    good = pool_ir('kernel="2,2" strides="2,2" pads_begin="0,0" pads_end="0,0"', (1, 1, 6, 6), (1, 1, 3, 3), "MaxPool")
    truncated = write(tmp_path, good[: len(good) // 2], "t.xml")
    with pytest.raises(InputFileError, match=r"t\.xml:\d+:\d+: malformed XML"):
        validate_file(truncated)
    result = runner.invoke(
        app, ["validate", str(truncated), str(tmp_path / "missing.xml"), str(write(tmp_path, "<onnx/>", "o.xml"))]
    )
    assert result.exit_code == 2
    assert "malformed XML" in result.output and "no such file" in result.output and "not an OpenVINO IR" in result.output


def test_cli_formats_and_exit_codes(tmp_path):
    clean = write(tmp_path, pool_ir(SPEC_EXAMPLES[2][0], N32, SPEC_EXAMPLES[2][1]), "clean.xml")
    bad = write(tmp_path, pool_ir(SPEC_EXAMPLES[0][0], N32, SPEC_EXAMPLES[0][1]), "bad.xml")
    result = runner.invoke(app, ["validate", str(clean)])
    assert result.exit_code == 0 and "0 finding(s)" in result.output
    result = runner.invoke(app, ["validate", str(clean), str(bad)])
    assert result.exit_code == 1
    assert "OVP201" in result.output and "bad.xml:" in result.output
    result = runner.invoke(app, ["validate", "--format", "json", str(clean), str(bad)])
    doc = json.loads(result.output)
    assert doc["summary"] == {"files": 2, "pooling_layers": 2, "findings": 1, "unreadable": 0}
    [finding] = doc["files"][1]["findings"]
    assert {k: finding[k] for k in ("code", "rule", "layer_id", "name", "type", "version", "declared", "expected")} == {
        "code": "OVP201",
        "rule": "output-shape",
        "layer_id": "1",
        "name": "pool",
        "type": "AvgPool",
        "version": "opset1",
        "declared": [1, 3, 32, 32],
        "expected": [1, 3, 16, 16],
    }
    result = runner.invoke(app, ["validate", "--format", "junit", str(clean), str(bad)])
    suites = etree.fromstring(result.output.encode())
    assert [s.get("failures") for s in suites.iter("testsuite")] == ["0", "1"]
    assert suites.find(".//failure").get("type") == "OVP201"
    assert runner.invoke(app, ["validate", "--format", "yaml", str(clean)]).exit_code == 2


def test_python_api(tmp_path):
    bad = write(tmp_path, pool_ir(SPEC_EXAMPLES[1][0], N32, SPEC_EXAMPLES[1][1]))
    assert [f.code for f in ovpool.validate(bad)] == ["OVP201"]
    assert [f.code for f in ovpool.validate([bad, bad])] == ["OVP201", "OVP201"]


def test_does_not_import_openvino(tmp_path):
    path = write(tmp_path, pool_ir(SPEC_EXAMPLES[0][0], N32, SPEC_EXAMPLES[0][1]))
    code = (
        "import sys\nfrom ovpool.cli.app import main\nsys.argv = ['ovpool', 'validate', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    print(e.code, 'openvino' in sys.modules, 'onnx' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.split()[-3:] == ["1", "False", "False"]


def test_plain_validate_skips_typer_argument_processing_and_answers_alike(tmp_path):
    """``ovpool validate`` without typer's argument processing (which imports pydantic) prints and
    exits exactly as the typer command does; numpy is not needed either."""
    clean = write(tmp_path, pool_ir(SPEC_EXAMPLES[2][0], N32, SPEC_EXAMPLES[2][1]), "clean.xml")
    bad = write(tmp_path, pool_ir(SPEC_EXAMPLES[0][0], N32, SPEC_EXAMPLES[0][1]), "bad.xml")
    code = (
        "import sys\nfrom ovpool.cli.app import main\nsys.argv = ['ovpool'] + sys.argv[1:]\n"
        "try:\n    main()\nfinally:\n    print('MODULES', 'pydantic' in sys.modules, 'numpy' in sys.modules)\n"
    )
    for args in (
        ["validate", str(clean)],
        ["validate", str(bad), "--format", "json", str(clean)],
        ["validate", "--format=junit", str(bad)],
        ["validate", str(bad), "--jobs", "2", str(clean)],
    ):
        assert validate_cli.quick(args) is not None
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
        output, modules = done.stdout.rsplit("MODULES", 1)
        assert modules.split() == ["False", "False"]
        expected = runner.invoke(app, args)
        assert (done.returncode, output) == (expected.exit_code, expected.output)


@pytest.mark.parametrize(
    "args",
    [
        ["validate"],
        ["validate", "--help"],
        ["validate", "a.xml", "--format", "yaml"],
        ["validate", "--", "a.xml"],
        ["validate", "-x", "a.xml"],
        ["convert", "a.xml"],
        ["validate", "a.xml", "--format"],
        ["validate", "a.xml", "--jobs", "0"],
        ["validate", "a.xml", "-j", "two"],
    ],
)
def test_anything_but_plain_validate_is_left_to_typer(args):
    assert validate_cli.quick(args) is None


def test_layers_nested_in_a_body_are_not_top_level_layers(tmp_path):
    """A TensorIterator/Loop body has its own <layers>/<edges>: they belong to the outer layer."""
    text = pool_ir('kernel="2,2" strides="2,2" pads_begin="0,0" pads_end="0,0"', (1, 1, 6, 6), (1, 1, 3, 3), "MaxPool")
    body = (
        '<layer id="7" name="loop" type="Loop" version="opset5"><body><layers>'
        '<layer id="1" name="inner" type="MaxPool" version="opset1"><data kernel="9,9" strides="1,1" pads_begin="0,0" pads_end="0,0"/>'
        '<input><port id="0" precision="FP32"><dim>1</dim><dim>1</dim><dim>2</dim><dim>2</dim></port></input>'
        '<output><port id="1" precision="FP32"><dim>1</dim></port></output></layer></layers>'
        '<edges><edge from-layer="1" from-port="1" to-layer="99" to-port="0"/></edges></body></layer>'
    )
    report = validate_file(write(tmp_path, text.replace("  </layers>", body + "\n  </layers>")))
    assert report.pooling_layers == [("1", "pool")] and report.findings == []


def test_layers_that_differ_only_in_dims_are_each_checked(tmp_path):
    """The validator works out each configuration once: a second layer with the same attributes
    but other dims must still get its own verdict."""
    data = 'kernel="2,2" strides="2,2" pads_begin="0,0" pads_end="0,0"'
    text = pool_ir(data, (1, 1, 6, 6), (1, 1, 3, 3), "MaxPool")
    second = (
        f'<layer id="5" name="pool2" type="MaxPool" version="opset1"><data {data}/>'
        '<input><port id="0" precision="FP32"><dim>1</dim><dim>1</dim><dim>8</dim><dim>8</dim></port></input>'
        '<output><port id="1" precision="FP32"><dim>1</dim><dim>1</dim><dim>3</dim><dim>3</dim></port></output></layer>'
        '<layer id="6" name="x2" type="Parameter" version="opset1"><data shape="1,1,8,8" element_type="f32"/>'
        '<output><port id="0" precision="FP32"><dim>1</dim><dim>1</dim><dim>8</dim><dim>8</dim></port></output></layer>'
    )
    text = text.replace("  </layers>", second + "\n  </layers>").replace(
        "</edges>", '<edge from-layer="6" from-port="0" to-layer="5" to-port="0"/></edges>'
    )
    findings = validate_file(write(tmp_path, text)).findings
    assert [(f.name, f.code, f.expected) for f in findings] == [("pool2", "OVP201", [1, 1, 4, 4])]


def test_a_max_pool_on_a_dimless_input_is_a_finding_not_a_crash(tmp_path):
    # No <dim> on the input: rank 0, where even MaxPool-8's default axis 0 is out of range.
    path = write(
        tmp_path,
        pool_ir('kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0"', (), (1, 3, 4, 4), "MaxPool", "opset8", outputs=2),
    )
    assert [(f.code, f.attribute) for f in validate_file(path).findings] == [("OVP104", "axis")]


def test_findings_name_the_line_of_their_layer(tmp_path):
    """Lines are worked out only when a finding asks: the line where the layer's start tag ends
    (as lxml numbers elements), not that of a ``<layer`` in a comment or in a body before it."""
    data = 'kernel="2,2" strides="2,2" pads_begin="0,0" pads_end="0,0"'
    text = pool_ir(data, (1, 1, 6, 6), (1, 1, 3, 3), "MaxPool")
    before = (
        '<!-- <layer id="5" name="pool2"> -->\n'
        '<layer id="7" name="loop" type="Loop" version="opset5"><body><layers>\n'
        '<layer id="5" name="pool2" type="MaxPool" version="opset1"/></layers></body></layer>\n'
    )
    second = (
        '<layer id="5" name="pool2"\n type="MaxPool" version="opset1"><data kernel="9,9"\n/>'
        '<input><port id="0" precision="FP32"><dim>1</dim><dim>1</dim><dim>8</dim><dim>8</dim></port></input>'
        '<output><port id="1" precision="FP32"><dim>1</dim><dim>1</dim><dim>3</dim><dim>3</dim></port></output></layer>'
    )
    text = text.replace("<layers>", "<layers>\n" + before, 1).replace("  </layers>", second + "\n  </layers>")
    line = text.splitlines().index(' type="MaxPool" version="opset1"><data kernel="9,9"') + 1  # where the start tag ends
    findings = validate_file(write(tmp_path, text)).findings
    assert {(f.name, f.line) for f in findings} == {("pool2", line)} and findings


def global_pool_ir(tmp_path, axes, input_dims, output_dims, keep_dims="true", layer_type="ReduceMean", with_bin=True):
    """IR v11: Parameter -> ReduceMean/ReduceMax (axes from a Const in model.bin) -> Result."""
    import struct

    dims = dims_xml
    text = f"""<?xml version="1.0"?>
<net name="g" version="11">
  <layers>
    <layer id="0" name="x" type="Parameter" version="opset1">
      <data shape="{",".join(map(str, input_dims))}" element_type="f32"/>
      <output><port id="0" precision="FP32" names="x">{dims(input_dims)}</port></output>
    </layer>
    <layer id="1" name="axes" type="Const" version="opset1">
      <data element_type="i64" shape="{len(axes)}" offset="8" size="{8 * len(axes)}"/>
      <output><port id="0" precision="I64">{dims([len(axes)])}</port></output>
    </layer>
    <layer id="2" name="gap" type="{layer_type}" version="opset1">
      <data keep_dims="{keep_dims}"/>
      <input><port id="0" precision="FP32">{dims(input_dims)}</port><port id="1" precision="I64">{dims([len(axes)])}</port></input>
      <output><port id="2" precision="FP32" names="y">{dims(output_dims)}</port></output>
    </layer>
    <layer id="3" name="y" type="Result" version="opset1">
      <input><port id="0" precision="FP32">{dims(output_dims)}</port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
    <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>
    <edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>
  </edges>
</net>
"""
    path = write(tmp_path, text)
    if with_bin:
        path.with_suffix(".bin").write_bytes(b"\xff" * 8 + struct.pack(f"<{len(axes)}q", *axes))
    return path


@pytest.mark.parametrize(
    "layer_type, axes, input_dims, output_dims, keep_dims",
    [
        ("ReduceMean", [2, 3], [1, 4, 5, 5], [1, 4, 1, 1], "true"),
        ("ReduceMax", [-2, -1], [1, 4, 5, 5], [1, 4, 1, 1], "true"),
        ("ReduceMean", [2], [2, 3, 7], [2, 3], "false"),
        ("ReduceMean", [4, 2, 3], [1, 2, 3, 4, 5], [1, 2, 1, 1, 1], "true"),
        ("ReduceMean", [2, 3], [-1, 4, -1, -1], [-1, 4, 1, 1], "true"),
    ],
)
def test_global_pools_are_counted_and_clean_when_right(tmp_path, layer_type, axes, input_dims, output_dims, keep_dims):
    report = validate_file(global_pool_ir(tmp_path, axes, input_dims, output_dims, keep_dims, layer_type))
    assert report.pooling_layers == [("2", "gap")] and report.findings == []


@pytest.mark.parametrize(
    "output_dims, keep_dims, expected",
    [([1, 4, 5, 5], "true", [1, 4, 1, 1]), ([1, 4, 1, 1], "false", [1, 4]), ([1, 3, 1, 1], "true", [1, 4, 1, 1])],
)
def test_global_pool_dims_are_checked_as_openvino_infers_them(tmp_path, output_dims, keep_dims, expected):
    """The expected dims are OpenVINO's own inference (``--strict`` reports it as OVP401 too)."""
    pytest.importorskip("openvino")
    path = global_pool_ir(tmp_path, [2, 3], [1, 4, 5, 5], output_dims, keep_dims)
    findings = validate_file(path, strict=True).findings
    assert [(f.code, f.layer_id, f.declared, f.expected) for f in findings] == [
        ("OVP201", "2", output_dims, expected),
        ("OVP401", "2", output_dims, expected),
    ]


@pytest.mark.parametrize("axes, with_bin", [([1, 2, 3], True), ([3], True), ([2, 3], False)])
def test_other_reductions_are_not_pools(tmp_path, axes, with_bin):
    """Not every spatial axis (or axes that cannot be read without the .bin): an ordinary reduction."""
    report = validate_file(global_pool_ir(tmp_path, axes, [1, 4, 5, 5], [1, 4, 5, 5], with_bin=with_bin))
    assert report.pooling_layers == [] and report.findings == []


def test_a_model_whose_only_pooling_is_global(tmp_path):
    """PaddleOCR's DB text detector has 8 GlobalAveragePool nodes and no other pooling: its IR has
    8 pooling layers to check, not 0."""
    from fetch_real_models import default_dir

    src = default_dir() / "en_PP-OCRv3_det_infer.onnx"
    if not src.is_file():
        pytest.skip(f"{src} absent: run python tests/fetch_real_models.py")
    import onnx

    pools = [n.op_type for n in onnx.load(str(src), load_external_data=False).graph.node if "Pool" in n.op_type]
    written = ovpool.convert(src, output_dir=tmp_path, inputs="x[1,3,64,64]")
    report = validate_file(written[0])
    assert pools == ["GlobalAveragePool"] * 8
    assert len(report.pooling_layers) == 8 and report.findings == []


def test_validate_jobs_gives_the_same_report(tmp_path):
    clean = write(tmp_path, pool_ir(SPEC_EXAMPLES[2][0], N32, SPEC_EXAMPLES[2][1]), "clean.xml")
    bad = write(tmp_path, pool_ir(SPEC_EXAMPLES[0][0], N32, SPEC_EXAMPLES[0][1]), "bad.xml")
    args = ["validate", "--format", "json", str(bad), str(tmp_path / "missing.xml"), str(clean), str(bad)]
    serial = runner.invoke(app, args)
    parallel = runner.invoke(app, [*args, "--jobs", "2"])
    assert (parallel.exit_code, parallel.stdout) == (serial.exit_code, serial.stdout) and serial.exit_code == 2
    assert [f["file"] for f in json.loads(serial.stdout)["files"]] == [str(bad), str(clean), str(bad)]
