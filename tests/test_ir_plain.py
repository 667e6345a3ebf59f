"""ovpool.ir.fast_reader against lxml's own reading: a document read plainly is the document lxml's
parser target reads (``_IRTarget``, what ``read_ir`` used for every file), and one lxml refuses
is never read plainly. Hypothesis edits bytes of plain IRs (the XML-significant characters
first) and compares the two readings; the cases below name the forms left to lxml."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from ovpool.errors import InputFileError
from ovpool.examples import path as example_path
from ovpool.ir.fast_reader import read_plain
from ovpool.ir.reader import PARSER_OPTIONS, IRDocument, SourceLines, _IRTarget, read_ir
from ovpool.ir.writer import IRGraph
from ovpool.spec import Divisor, Indices, PoolKind, PoolSpec, Rounding


def lxml_reading(data: bytes) -> tuple | None:
    """What lxml's parser target reads of ``data`` (None: lxml refuses it, or the target does),
    as plain values: root attributes, then each layer and each edge as written."""
    target = _IRTarget("x", SourceLines(data))
    try:
        etree.fromstring(data, etree.XMLParser(target=target, **PARSER_OPTIONS))
    except (etree.XMLSyntaxError, InputFileError):
        return None
    read = target.release()
    if read.doctype_seen or read.root_tag != "net" or not read.has_layers:
        return None
    layers = [(l.id, l.name, l.type, l.version, dict(l.data), l.inputs, l.outputs, l.position) for l in read.layers.values()]
    return dict(read.root_attributes), layers, [tuple(e[:5]) for e in read.edges]


def plain_reading(doc: IRDocument) -> tuple:
    layers = [(l.id, l.name, l.type, l.version, dict(l.data), l.inputs, l.outputs, l.position) for l in doc.layers.values()]
    return doc.name, doc.version, layers, [tuple(e[:5]) for e in doc.edges]


def assert_same(data: bytes) -> bool:
    """The plain reading, if any, is lxml's; whether there was one."""
    doc = read_plain(data, "x", SourceLines(data))
    if doc is None:
        return False
    expected = lxml_reading(data)
    assert expected is not None, "read plainly, refused by lxml"
    root, layers, edges = expected
    version = root.get("version", "")
    assert plain_reading(doc) == (
        root.get("name", ""),
        int(version) if version.isascii() and version.isdigit() else None,
        layers,
        edges,
    )
    return True


def pooling_ir(seed: int, layers: int = 6) -> bytes:
    """A chain of pooling layers as ovpool's IR writer writes them (OpenVINO's layout)."""
    rng = random.Random(seed)
    graph = IRGraph(f"chain{seed}")
    x = graph.parameter("x", (1, 4, 16, 16))
    for i in range(layers):
        if rng.random() < 0.5:
            spec = PoolSpec(PoolKind.AVERAGE, (3, 3), (1, 1), pads_begin=(1, 1), pads_end=(1, 1), divisor=Divisor.EXCLUDE_PAD)
        else:
            spec = PoolSpec(
                PoolKind.MAX, (3, 3), (1, 1), pads_begin=(1, 1), pads_end=(1, 1), rounding=Rounding.CEIL, indices=Indices()
            )
        x = graph.pool(spec.with_(name=f"pool{i}"), x)[0]
    graph.result(x, "y")
    return graph.render()[".xml"]


# Characters that change what XML means, then any byte.
SIGNIFICANT = b"<>&\"'/=\n\t\r !?-[];#x"


@pytest.mark.parametrize("name", ["spec_example1.xml", "trap.xml"])
def test_bundled_examples_read_alike(name):
    assert assert_same(Path(example_path(name)).read_bytes())


@pytest.mark.parametrize("seed", range(4))
def test_written_irs_read_plainly_and_alike(seed):
    assert assert_same(pooling_ir(seed))


@given(
    seed=st.integers(0, 3),
    edits=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True), st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 255)),
        min_size=1,
        max_size=3,
    ),
    significant=st.booleans(),
)
def test_edited_irs_read_alike_or_not_plainly(seed, edits, significant):
    data = bytearray(pooling_ir(seed, layers=2))
    for where, how, value in edits:
        at = int(where * len(data))
        byte = SIGNIFICANT[value % len(SIGNIFICANT)] if significant else value
        if how == "insert":
            data[at:at] = bytes([byte])
        elif how == "delete" and data:
            del data[at]
        elif data:
            data[at] = byte
    assert_same(bytes(data))


def one_layer(data: str = '<data kernel="2,2"/>', name: str = "p", extra: str = "", port_names: str = "y") -> str:
    return (
        '<?xml version="1.0"?>\n<net name="n" version="11">\n\t<layers>\n'
        f'\t\t<layer id="0" name="{name}" type="Parameter" version="opset1"{extra}>\n\t\t\t{data}\n'
        f'\t\t\t<output>\n\t\t\t\t<port id="0" precision="FP32" names="{port_names}">\n'
        "\t\t\t\t\t<dim>1</dim>\n\t\t\t\t\t<dim>4</dim>\n\t\t\t\t</port>\n\t\t\t</output>\n\t\t</layer>\n"
        '\t</layers>\n\t<edges>\n\t</edges>\n\t<rt_info>\n\t\t<info name="OpenVINO Runtime" value="x" />\n\t</rt_info>\n</net>\n'
    )


@pytest.mark.parametrize(
    "text",
    [
        one_layer(name="a&amp;b&gt;c&#65;", port_names="t&amp;"),  # references: lxml keeps &#38; for & in attributes
        one_layer(data="<data kernel='2,2' />"),
        one_layer(extra=' output_names="y"'),
        one_layer().replace("<dim>4</dim>", "<dim> 4 </dim>"),
    ],
)
def test_plain_forms_read_alike(text):
    assert assert_same(text.encode())


@pytest.mark.parametrize(
    "text",
    [
        one_layer().replace("\n", "\r\n"),  # lxml rewrites CR LF
        one_layer().replace("<layers>", "<layers><!-- c -->"),
        one_layer().replace('<net name="n"', '<net xmlns="urn:x" name="n"'),
        one_layer(data='<data kernel="2,2" kernel="3,3"/>'),  # not well formed
        one_layer(data='<data kernel="2,\n2"/>'),  # attribute normalisation
        one_layer(extra=' id="1"'),
        one_layer().replace("<dim>4</dim>", "<dim>4]]></dim>"),
        one_layer().replace("<dim>4</dim>", "<dim>4\x01</dim>"),
        one_layer().replace("</layers>", "</layer>"),
        one_layer().replace("<rt_info>", "<rt_info><a>"),
        one_layer().replace("<info ", "<layer "),
        one_layer(name="a&nbsp;b"),  # an entity XML does not define
    ],
)
def test_other_forms_are_left_to_lxml(text):
    data = text.encode()
    assert not assert_same(data)


def test_read_ir_refuses_what_it_refused(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_bytes(one_layer(data='<data kernel="2,2" kernel="3,3"/>').encode())
    with pytest.raises(InputFileError, match="malformed XML"):
        read_ir(bad)
    twice = tmp_path / "twice.xml"
    twice.write_text(one_layer().replace("</layers>", one_layer().split("<layers>")[1].split("</layers>")[0] + "</layers>"))
    with pytest.raises(InputFileError, match="layer id 0 appears twice"):
        read_ir(twice)
