"""Reading an IR written plainly, as OpenVINO writes one, a layer per regular-expression match.

``ovpool.ir.reader.read_ir`` hands every start tag, text and end tag of a document to Python:
~17 calls a pooling layer, ~0.35 s for 20,000 layers before any of them is looked at. An IR as
OpenVINO writes it has one layout: ``<net>`` holding ``<layers>`` then ``<edges>`` (then
``<rt_info>``); a layer is ``<layer id= name= type= version=>`` with a ``<data/>``, an
``<input>`` and an ``<output>`` of ``<port>``s of ``<dim>``s (and ``<rt_info>`` of
``<attribute name= version= value=/>``); an edge is ``<edge from-layer= from-port= to-layer=
to-port=/>``; no comments, references, CDATA, processing instructions, namespaces or carriage
returns. ``read_plain`` reads that layout: each layer is one match of ``_LAYER`` (its first
output port's id, precision, names and dims among the groups), and what layers repeat (``<data>``
attributes, input ports, dims) is read once per distinct text.

The expressions admit only well-formed XML: ASCII names, each attribute once, values in quotes
without ``<``, every element closed where the layout closes it; over the whole text, no character
XML forbids and no ``]]>``; nesting at most 7 deep and no layer or edges section as long as
libxml2's 10,000,000-character limit on a text; what follows ``</edges>`` (and a document with
a reference, ``&amp;``) is parsed by lxml with ``read_ir``'s options. So a document this reads
is one lxml would read, without lxml's ~5 ns a byte. Anything outside the layout gives None and
``read_ir`` reads the document its own way (its errors included); where this reading gives a
document, the two readings give the same one (``tests/test_ir_plain.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from ovpool.ir.document import PARSER_OPTIONS, Edge, IRDocument, Layer, Port, SourceLines

_WS = r"[ \t\n]"
_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
# An attribute value: in either quotes, without a character XML would change (a reference, or a
# tab or line break that attribute-value normalisation makes a space).
_VALUE = r"""(?:"[^"<\t\n]*"|'[^'<\t\n]*')"""
_ATTRIBUTES = rf"(?:{_WS}+{_NAME}{_WS}*={_WS}*{_VALUE})*"
_ATTRIBUTE = re.compile(rf"""({_NAME}){_WS}*={_WS}*(?:"([^"<\t\n]*)"|'([^'<\t\n]*)')""")
_QUOTED = r'"([^"<\t\n]*)"'
_DOUBLE_QUOTED = r'"[^"<\t\n]*"'
_DIMS = rf"(?:{_WS}*<dim>[^<]*</dim>)*"
_DIM = re.compile(r"<dim>([^<]*)</dim>")
_RT_ATTRIBUTE = rf"<attribute{_WS}+name={_DOUBLE_QUOTED}{_WS}+version={_DOUBLE_QUOTED}{_WS}+value={_DOUBLE_QUOTED}{_WS}*/>"
_RT_INFO = rf"<rt_info(?:{_WS}*/>|>(?:{_WS}*{_RT_ATTRIBUTE})*{_WS}*</rt_info>)"
# What a port holds: its dims, then perhaps its rt_info.
_PORT_INNER = rf"{_DIMS}(?:{_WS}*{_RT_INFO})?{_WS}*"
_PORT_INNER_FULL = re.compile(_PORT_INNER)
_PORT = re.compile(rf"<port({_ATTRIBUTES}){_WS}*(?:/>|>({_PORT_INNER})</port>)")
_PORTS = re.compile(rf"(?:{_WS}*<port{_ATTRIBUTES}{_WS}*(?:/>|>{_PORT_INNER}</port>))*{_WS}*")
_ATTRIBUTES_FULL = re.compile(rf"{_ATTRIBUTES}{_WS}*")


def _until(tag: str) -> str:
    """Any text up to the first ``</tag>`` (matched in one pass: ``[^<]`` runs, and each ``<`` that starts no ``</tag>``)."""
    return rf"[^<]*(?:<(?!/{tag}>)[^<]*)*"


# The layer's expression reads the texts that repeat from layer to layer loosely (up to the tag
# that closes them) and ``_Reading`` checks each distinct one once against the strict form:
# attributes (``_ATTRIBUTES_FULL``), a port section (``_PORTS``), what a port holds
# (``_PORT_INNER_FULL``). An output port as OpenVINO writes one has its id, precision, names and
# what it holds among the groups, the first two output ports so; the rest is a section.
_OUTPUT_PORT = (
    rf"<port{_WS}+id={_QUOTED}{_WS}+precision={_QUOTED}(?:{_WS}+names={_QUOTED})?{_WS}*(?:/>|>({_until('port')})</port>)"
)
_LAYER = re.compile(
    rf"{_WS}*<layer{_WS}+id={_QUOTED}{_WS}+name={_QUOTED}{_WS}+type={_QUOTED}{_WS}+version={_QUOTED}([^<>]*)>"
    rf"{_WS}*(?:<data([^<>]*)/>{_WS}*)?"
    rf"(?:<input>({_until('input')})</input>{_WS}*)?"
    rf"(?:<output>{_WS}*{_OUTPUT_PORT}(?:{_WS}*{_OUTPUT_PORT})?({_until('output')})</output>{_WS}*)?"
    rf"(?:{_RT_INFO}{_WS}*)?</layer>"
)
_DECLARATION = (
    rf"<\?xml{_WS}+version{_WS}*={_WS}*(?:\"1\.0\"|'1\.0')"
    rf"(?:{_WS}+encoding{_WS}*={_WS}*(?:\"[Uu][Tt][Ff]-8\"|'[Uu][Tt][Ff]-8'))?"
    rf"(?:{_WS}+standalone{_WS}*={_WS}*(?:\"(?:yes|no)\"|'(?:yes|no)'))?{_WS}*\?>"
)
_HEAD = re.compile(rf"\ufeff?(?:{_DECLARATION})?{_WS}*<net({_ATTRIBUTES}){_WS}*>{_WS}*<layers{_WS}*>")
_LAYERS_END = re.compile(rf"{_WS}*</layers{_WS}*>{_WS}*<edges{_WS}*>")
_EDGE = rf"{_WS}*<edge{_WS}+from-layer={_QUOTED}{_WS}+from-port={_QUOTED}{_WS}+to-layer={_QUOTED}{_WS}+to-port={_QUOTED}{_WS}*/>"
_EDGES = re.compile(rf"(?:{_EDGE.replace(_QUOTED, _DOUBLE_QUOTED)})*{_WS}*</edges{_WS}*>")
_ONE_EDGE = re.compile(_EDGE)
_TAIL = re.compile(rf"{_WS}*(?:(<rt_info{_WS}*/>|<rt_info[\s\S]*</rt_info{_WS}*>){_WS}*)?</net{_WS}*>{_WS}*")


# libxml2's longest text or attribute value without its huge-tree option (read_ir's parser): a
# layer, the edges section or the <net> tag this long is left to read_ir.
MAX_TEXT = 10_000_000
# Every byte but the control characters XML forbids: deleting them leaves those (bytes.translate
# runs at ~1 GB/s; U+FFFE and U+FFFF are sought as their UTF-8 bytes, a strict decoding refuses
# surrogates).
_NOT_FORBIDDEN = bytes(byte for byte in range(256) if byte >= 0x20 or byte in (0x09, 0x0A, 0x0D))


class NotPlain(Exception):
    """The document is outside the layout ``read_plain`` reads (``read_ir`` reads it)."""


def read_plain(data: bytes, label: str, lines: SourceLines) -> IRDocument | None:
    """The IR in ``data`` (named ``label`` in messages, its line numbers from ``lines``) when it is
    written plainly and well formed (see the module docstring), else None."""
    if b"\r" in data or b"]" in data and b"]]>" in data:
        return None  # line ends lxml rewrites, text XML forbids (a byte is sought ~30x sooner than three)
    if data.translate(None, _NOT_FORBIDDEN) or not data.isascii() and (b"\xef\xbf\xbe" in data or b"\xef\xbf\xbf" in data):
        return None  # a character XML forbids
    try:
        reading = _Reading(data.decode("utf-8"), label, lines)
    except (UnicodeDecodeError, NotPlain):
        return None
    if b"&" in data and not well_formed(data):
        return None  # a reference: lxml says whether each one is one
    return reading.document()


def well_formed(data: bytes) -> bool:
    """Whether lxml, with ``read_ir``'s options, parses ``data`` without an error or a DOCTYPE;
    no element is handed to Python. ``b"<net><layers/></net>"`` is well formed,
    ``b"<net><layers></net>"`` is not."""
    from lxml import etree

    target = _Silent()
    try:
        etree.fromstring(data, etree.XMLParser(target=target, **PARSER_OPTIONS))
    except etree.XMLSyntaxError:
        return False
    return not target.doctype_seen


class _Silent:
    """An lxml parser target that takes no element and notes a DOCTYPE."""

    doctype_seen = False

    def doctype(self, *_: object) -> None:
        self.doctype_seen = True

    def close(self) -> None:
        return None


class _Reading:
    """One pass over a plain IR's text, ``NotPlain`` as soon as it leaves the layout."""

    def __init__(self, text: str, label: str, lines: SourceLines) -> None:
        head = _HEAD.match(text)
        if head is None or head.end() >= MAX_TEXT:
            raise NotPlain
        self.label = label
        self.root = _attributes(head.group(1))
        self.ports: dict[str | None, tuple[Port, ...]] = {None: ()}
        self.data: dict[str | None, Mapping[str, str]] = {None: _NO_DATA}
        self.dims: dict[str | None, tuple[str, ...]] = {None: ()}
        self.layers: dict[str, Layer] = {}
        layers = self.layers
        references = "&" in text
        position = head.end()
        match = _LAYER.match
        known_data, known_ports, known_dims = self.data.get, self.ports.get, self.dims.get
        while (found := match(text, position)) is not None:
            end = found.end()
            if end - position >= MAX_TEXT:
                raise NotPlain
            groups = found.groups()
            if references and text.find("&", position, end) >= 0:
                groups = tuple(_resolved(group) if index in _VALUE_GROUPS else group for index, group in enumerate(groups))
            (
                layer_id,
                name,
                kind,
                version,
                extra,
                data,
                inputs,
                id1,
                precision1,
                names1,
                dims1,
                id2,
                precision2,
                names2,
                dims2,
                more,
            ) = groups
            if extra:
                if _ATTRIBUTES_FULL.fullmatch(extra) is None:
                    raise NotPlain
                _attributes(f' id="" name="" type="" version=""{extra}')  # NotPlain for a name written twice
            if id1 is None:
                outputs: tuple[Port, ...] = ()
            elif id2 is None:
                outputs = (Port(id1, precision1, known_dims(dims1) or self._dims(dims1), names1 or ""),)
            else:
                outputs = (
                    Port(id1, precision1, known_dims(dims1) or self._dims(dims1), names1 or ""),
                    Port(id2, precision2, known_dims(dims2) or self._dims(dims2), names2 or ""),
                )
            if more and not more.isspace():
                outputs += self._ports(more)
            if layer_id in layers:
                raise NotPlain  # read_ir names the layer and its line
            layers[layer_id] = Layer(
                layer_id,
                name,
                kind,
                version,
                known_data(data) or self._data(data),
                known_ports(inputs) or self._ports(inputs),
                outputs,
                len(layers),
                lines,
            )
            position = end
        section = _LAYERS_END.match(text, position)
        if section is None:
            raise NotPlain
        edges = _EDGES.match(text, section.end())
        if edges is None or edges.end() - section.end() >= MAX_TEXT:
            raise NotPlain
        found_edges: list[tuple[str, str, str, str]] = _ONE_EDGE.findall(text, section.end(), edges.end())
        if references and text.find("&", section.end(), edges.end()) >= 0:
            found_edges = [(_text(a), _text(b), _text(c), _text(d)) for a, b, c, d in found_edges]
        self.edges: tuple[Edge, ...] = tuple(Edge(a, b, c, d, index, lines) for index, (a, b, c, d) in enumerate(found_edges))
        tail = _TAIL.fullmatch(text, edges.end())
        if tail is None or "<layer" in text[edges.end() :] or "<edge" in text[edges.end() :]:
            raise NotPlain  # something after the edges but <rt_info>, or a second <layers> or <edges>
        if tail.group(1) is not None and not well_formed(f"<net>{tail.group(1)}</net>".encode()):
            raise NotPlain

    def document(self) -> IRDocument:
        version_text = self.root.get("version", "")
        version = int(version_text) if version_text.isascii() and version_text.isdigit() else None
        return IRDocument(self.label, self.root.get("name", ""), version, self.layers, self.edges)

    def _data(self, text: str | None) -> Mapping[str, str]:
        """A ``<data>`` element's attributes (read-only, one mapping per distinct text)."""
        known = self.data.get(text)
        if known is None:
            if _ATTRIBUTES_FULL.fullmatch(text or "") is None:
                raise NotPlain
            known = self.data[text] = MappingProxyType(_attributes(text or ""))
        return known

    def _ports(self, text: str | None) -> tuple[Port, ...]:
        """The ports of an ``<input>`` or ``<output>`` section (read once per distinct text)."""
        known = self.ports.get(text)
        if known is None:
            if _PORTS.fullmatch(text or "") is None:
                raise NotPlain
            ports = []
            for found in _PORT.finditer(text or ""):
                get = _attributes(found.group(1)).get
                ports.append(Port(get("id", ""), get("precision", ""), self._dims(found.group(2)), get("names", "")))
            known = self.ports[text] = tuple(ports)
        return known

    def _dims(self, text: str | None) -> tuple[str, ...]:
        """The dims of what a port holds, as written (``<dim>1</dim><dim>8</dim>`` -> ("1", "8")),
        one tuple per distinct text."""
        known = self.dims.get(text)
        if known is None:
            if _PORT_INNER_FULL.fullmatch(text or "") is None:
                raise NotPlain
            known = self.dims[text] = tuple(_resolved(dim, attribute=False) or "" for dim in _DIM.findall(text or ""))
        return known


# The groups of ``_LAYER`` that are values (the others are texts read further: attributes, ports, dims).
_VALUE_GROUPS = frozenset({0, 1, 2, 3, 7, 8, 9, 11, 12, 13})
_REFERENCE = re.compile(r"&(?:#x([0-9A-Fa-f]+)|#([0-9]+)|(lt|gt|amp|quot|apos));")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def _resolved(value: str | None, attribute: bool = True) -> str | None:
    """A value with its references replaced as ``read_ir``'s parser replaces them (the document is
    well formed: every ``&`` starts one): ``"a&gt;b&#65;"`` -> ``"a>bA"``. In an attribute value a
    reference to ``&`` stays ``&#38;`` (libxml2 without entity substitution keeps it so), in a
    dim's text it is ``&``."""
    if value is None or "&" not in value:
        return value
    ampersand = "&#38;" if attribute else "&"

    def replace(ref: re.Match[str]) -> str:
        char = chr(int(ref[1], 16)) if ref[1] else chr(int(ref[2])) if ref[2] else _ENTITIES[ref[3]]
        return ampersand if char == "&" else char

    return _REFERENCE.sub(replace, value)


def _text(value: str) -> str:
    """An attribute value with its references replaced (``_resolved``)."""
    return _resolved(value) or ""


def _attributes(text: str) -> dict[str, str]:
    """The attributes of a tag's attribute text: ``' id="1" name='a'`` -> {"id": "1", "name": "a"}
    (a name written twice is not well formed, an ``xmlns`` puts names in a namespace: ``NotPlain``)."""
    found = _ATTRIBUTE.findall(text)
    attributes = {name: _resolved(double or single) or "" for name, double, single in found}
    if len(attributes) != len(found) or any(name.startswith("xmlns") for name in attributes):
        raise NotPlain  # a name twice, or a namespace, in which lxml reads other names
    return attributes


_NO_DATA: Mapping[str, str] = MappingProxyType({})
