"""Reading OpenVINO IR XML (v10/v11) safely into plain values, without OpenVINO.

The parser never expands entities, loads a DTD or touches the network, and an IR has no DOCTYPE:
any document with one is refused before its entities are looked at (billion laughs, external
entities). Malformed XML is an ``InputFileError`` (exit 2) with its line and column; so is a
document that is not an IR (root not ``<net>``, no ``<layers>``). Dims keep their text: ``6``,
``-1``, ``?`` and ranges ``1..10``, ``..10``, ``4..`` (``dim_bounds`` reads them).
"""

from __future__ import annotations

import os
import re
from functools import cached_property
from typing import NamedTuple
from pathlib import Path

from lxml import etree

from ovpool.errors import InputFileError

# IR port precisions -> numpy dtype names (OpenVINO writes FP32 on ports, f32 on Parameter data).
PRECISIONS = {
    "FP64": "float64", "FP32": "float32", "FP16": "float16", "BF16": "bfloat16",
    "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8",
    "U64": "uint64", "U32": "uint32", "U16": "uint16", "U8": "uint8", "BOOL": "bool",
}
ELEMENT_TYPES = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
    "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8",
    "u64": "uint64", "u32": "uint32", "u16": "uint16", "u8": "uint8", "boolean": "bool",
}

Bound = tuple[int, int | None]


class Port(NamedTuple):
    """One ``<port>``: its id, precision (e.g. "FP32", "" when absent) and dims as written.
    (Port and Layer are NamedTuples: immutable, and cheap to make by the ten thousand.)"""

    id: str
    precision: str
    dims: tuple[str, ...]
    names: str = ""

    @property
    def dtype(self) -> str | None:
        return PRECISIONS.get(self.precision.upper())


class Layer(NamedTuple):
    """One ``<layer>`` with its ``<data>`` attributes and ports; ``line`` is its line in the file."""

    id: str
    name: str
    type: str
    version: str
    data: dict[str, str]
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    line: int

    def output(self, port_id: str) -> Port | None:
        return next((p for p in self.outputs if p.id == port_id), None)

    def input(self, port_id: str) -> Port | None:
        return next((p for p in self.inputs if p.id == port_id), None)


class Edge(NamedTuple):
    from_layer: str
    from_port: str
    to_layer: str
    to_port: str
    line: int


class IRDocument:
    """A parsed IR: ``version`` of ``<net>`` (10, 11), its layers by id in file order, its edges.

    Layers are read from the tree when first asked for (``layer(id)``, ``layers``): a validator
    that looks only at pooling layers and their neighbours never builds the other thousands.
    """

    def __init__(self, path: str, name: str, version: int | None, elements: dict[str, etree._Element], edges: tuple[Edge, ...]) -> None:
        self.path, self.name, self.version, self.edges = path, name, version, edges
        self._elements = elements
        self._read: dict[str, Layer] = {}

    def layer(self, layer_id: str) -> Layer | None:
        """The layer with this id, or None."""
        found = self._read.get(layer_id)
        if found is None and layer_id in self._elements:
            found = self._read[layer_id] = _layer(self._elements[layer_id])
        return found

    def ids_of_type(self, types: set[str]) -> list[str]:
        """Ids of the layers whose ``type`` is in ``types``, in file order (without reading them)."""
        return [lid for lid, node in self._elements.items() if node.get("type") in types]

    @cached_property
    def layers(self) -> dict[str, Layer]:
        """Every layer by id, in file order."""
        return {lid: self.layer(lid) for lid in self._elements}  # type: ignore[misc]

    def producers(self) -> dict[tuple[str, str], Edge]:
        """(to layer, to port) -> the edge feeding it."""
        return {(e.to_layer, e.to_port): e for e in self.edges}


def parser() -> etree.XMLParser:
    """The only way ovpool parses untrusted XML: no entities, no DTD, no network, no huge trees."""
    return etree.XMLParser(resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False, remove_comments=True)


def read_ir(source: str | os.PathLike | bytes, name: str | None = None) -> IRDocument:
    """Parse an IR ``.xml`` (a path, or its bytes with ``name`` for messages)."""
    if isinstance(source, bytes):
        data, label = source, name or "<bytes>"
    else:
        path = Path(source)
        label = name or str(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise InputFileError(f"{label}: no such file") from None
        except OSError as exc:
            raise InputFileError(f"{label}: cannot read ({exc.strerror})") from None
    _refuse_doctype(data, label)
    try:
        root = etree.fromstring(data, parser())
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno, 0)
        message = re.sub(r", line \d+, column \d+$", "", exc.msg)
        raise InputFileError(f"{label}:{line}:{column}: malformed XML: {message}") from None
    if root.getroottree().docinfo.doctype:
        raise InputFileError(f"{label}: refusing XML with a DOCTYPE (an IR has none)")
    if root.tag != "net":
        raise InputFileError(f"{label}: not an OpenVINO IR (root element <{root.tag}>, expected <net>)")
    layers_node = root.find("layers")
    if layers_node is None:
        raise InputFileError(f"{label}: not an OpenVINO IR (no <layers>)")
    version_text = root.get("version", "")
    elements: dict[str, etree._Element] = {}
    for node in layers_node.iterchildren("layer"):
        layer_id = node.get("id", "")
        if layer_id in elements:
            raise InputFileError(f"{label}:{node.sourceline}: layer id {layer_id} appears twice")
        elements[layer_id] = node
    edges = tuple(
        Edge(e.get("from-layer", ""), e.get("from-port", ""), e.get("to-layer", ""), e.get("to-port", ""), e.sourceline or 0)
        for e in root.iterfind("edges/edge")
    )
    return IRDocument(label, root.get("name", ""), int(version_text) if version_text.isdigit() else None, elements, edges)


def dim_bounds(text: str) -> Bound | None:
    """(lower, upper) of a dim's text; upper None is unbounded. ``6`` -> (6, 6), ``-1``/``?`` ->
    (0, None), ``1..10`` -> (1, 10), ``..10`` -> (0, 10), ``4..`` -> (4, None); None if unreadable."""
    text = text.strip()
    if text in ("-1", "?"):
        return 0, None
    try:
        if ".." in text:
            low, high = text.split("..", 1)
            bound = (int(low) if low else 0, int(high) if high and high != "-1" else None)
            return bound if bound[0] >= 0 and (bound[1] is None or bound[1] >= bound[0]) else None
        value = int(text)
    except ValueError:
        return None
    return (value, value) if value >= 0 else None


def format_bound(bound: Bound) -> str:
    """The IR spelling of a dim: (6, 6) -> "6", (0, None) -> "?", (1, 10) -> "1..10", (2, None) -> "2.."."""
    low, high = bound
    if low == high:
        return str(low)
    if high is None:
        return "?" if low == 0 else f"{low}.."
    return f"{low}..{high}" if low else f"..{high}"


def _refuse_doctype(data: bytes, label: str) -> None:
    """An IR never has a DOCTYPE; one is how entity bombs and external entities get in."""
    root_at = data.find(b"<net")
    head = data[: root_at if root_at >= 0 else len(data)]
    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
        raise InputFileError(f"{label}: refusing XML with a DOCTYPE or entity declarations (an IR has none)")


def _layer(node: etree._Element) -> Layer:
    """One pass over the layer's children (the hot loop of reading a 20,000-layer IR)."""
    data: dict[str, str] = {}
    inputs: tuple[Port, ...] = ()
    outputs: tuple[Port, ...] = ()
    for child in node:
        tag = child.tag
        if tag == "data":
            data = dict(child.attrib)
        elif tag == "input":
            inputs = _ports(child)
        elif tag == "output":
            outputs = _ports(child)
    get = node.get
    return Layer(get("id", ""), get("name", ""), get("type", ""), get("version", ""), data, inputs, outputs, node.sourceline or 0)


def _ports(node: etree._Element) -> tuple[Port, ...]:
    return tuple(
        [Port(p.get("id", ""), p.get("precision", ""), tuple([d.text or "" for d in p.iterchildren("dim")]), p.get("names", "")) for p in node.iterchildren("port")]
    )
