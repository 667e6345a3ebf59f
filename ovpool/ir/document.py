"""An IR document as ovpool reads it: its layers, their ports and its edges, as plain values.

``ovpool.ir.reader`` (lxml, any IR) and ``ovpool.ir.fast_reader`` (the layout OpenVINO writes)
both give an ``IRDocument``; the types live here, below both readers. Reading takes no line
numbers: a layer's ``line`` is found when first asked for (``SourceLines``).
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from ovpool import dtypes
from ovpool.errors import ModelError
from ovpool.names import port_tensor_name


class Port(NamedTuple):
    """One ``<port>``: its id, precision (e.g. "FP32", "" when absent) and dims as written.
    (Port and Layer are NamedTuples: immutable, and cheap to make by the ten thousand.)"""

    id: str
    precision: str
    dims: tuple[str, ...]
    names: str = ""

    @property
    def dtype(self) -> str | None:
        return dtypes.from_ir_precision(self.precision)


class Layer(NamedTuple):
    """One ``<layer>`` with its ``<data>`` attributes (read-only: layers with the same ``<data>``
    share one mapping) and ports; ``line`` is its line in the file (worked out when asked)."""

    id: str
    name: str
    type: str
    version: str
    data: Mapping[str, str]
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    position: int
    lines: SourceLines

    @property
    def line(self) -> int:
        """The line where the layer's start tag ends, as lxml numbers elements (the layer is the
        ``position``-th top-level layer of the file)."""
        return self.lines.layer_line(self.position)

    def output(self, port_id: str) -> Port | None:
        for port in self.outputs:
            if port.id == port_id:
                return port
        return None

    def input(self, port_id: str) -> Port | None:
        for port in self.inputs:
            if port.id == port_id:
                return port
        return None


class Edge(NamedTuple):
    from_layer: str
    from_port: str
    to_layer: str
    to_port: str
    position: int
    lines: SourceLines

    @property
    def line(self) -> int:
        """The line where the edge's tag ends (the ``position``-th edge of the file's ``<edges>``)."""
        return self.lines.edge_line(self.position)


class SourceLines:
    """Line numbers of a document's top-level layers and edges, found when first asked for.

    Reading takes no line numbers (lxml gives them only with a tree, and building the tree of a
    20,000-layer IR costs more than reading it); a finding or an error asks for a few, and the
    first question reads them all in one streaming pass over the same bytes with the same parser
    options: the 3rd top-level ``<layer>``, its start tag ending on line 40, gives ``layer_line(2) == 40``."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._lines: tuple[list[int], list[int]] | None = None

    def layer_line(self, position: int) -> int:
        return self._all()[0][position]

    def edge_line(self, position: int) -> int:
        return self._all()[1][position]

    def _all(self) -> tuple[list[int], list[int]]:
        if self._lines is None:
            from lxml import etree

            layers: list[int] = []
            edges: list[int] = []
            events = etree.iterparse(io.BytesIO(self._data), events=("end",), tag=("layer", "edge"), **PARSER_OPTIONS)
            try:
                for _, node in events:
                    parent = node.getparent()
                    grandparent = parent.getparent()
                    if grandparent is None or grandparent.getparent() is not None:
                        continue  # inside a layer's <body>, or not under <net>
                    if node.tag == "edge" and parent.tag == "edges":
                        edges.append(node.sourceline or 0)
                    elif node.tag == "layer" and parent.tag == "layers":
                        layers.append(node.sourceline or 0)
                    else:
                        continue
                    node.clear()
                    while node.getprevious() is not None:
                        del parent[0]
            except etree.XMLSyntaxError:
                pass  # an error found while reading: the lines before it are all there is to ask for
            self._lines = layers, edges
        return self._lines


class IRDocument:
    """A parsed IR: ``version`` of ``<net>`` (10, 11), its layers by id in file order, its edges."""

    def __init__(self, path: str, name: str, version: int | None, layers: dict[str, Layer], edges: tuple[Edge, ...]) -> None:
        self.path, self.name, self.version, self.layers, self.edges = path, name, version, layers, edges
        self._input_names: frozenset[str] | None = None

    def layer(self, layer_id: str) -> Layer | None:
        """The layer with this id, or None."""
        return self.layers.get(layer_id)

    def producers(self) -> dict[tuple[str, str], Edge]:
        """(to layer, to port) -> the edge feeding it."""
        return {(e.to_layer, e.to_port): e for e in self.edges}

    def edge_problems(self) -> Iterator[tuple[int, str, str]]:
        """(line, layer id, why) of each edge that connects nothing: a layer or port that does not
        exist (an edge from port 9 of a layer with ports 0 and 1) or an input port fed by a second
        edge; then of each layer with an input port no edge feeds. The layer id is the edge's
        target where it exists, else its source, else ""."""
        fed: set[tuple[str, str]] = set()
        layers = self.layers
        for edge in self.edges:
            source, target = layers.get(edge.from_layer), layers.get(edge.to_layer)
            fed_here = (edge.to_layer, edge.to_port)
            if (
                source is None
                or target is None
                or source.output(edge.from_port) is None
                or target.input(edge.to_port) is None
                or fed_here in fed
            ):
                yield _edge_problem(edge, source, target)
            fed.add(fed_here)
        for layer in layers.values():
            for port in layer.inputs:
                if (layer.id, port.id) not in fed:
                    yield layer.line, layer.id, f"layer '{layer.name}' ({layer.type}): input port {port.id} is not connected"

    def check_structure(self) -> None:
        """A ``ModelError`` at the first edge that connects nothing (``edge_problems``) or the
        layers of a cycle: what every reader that runs or converts the graph needs first."""
        for line, _, problem in self.edge_problems():
            raise ModelError.in_file(f"{self.path}:{line}", problem)
        self.execution_order()

    def execution_order(self) -> tuple[Layer, ...]:
        """Every layer after the layers that feed it (Kahn's algorithm; ready layers in file order).
        An edge naming a layer that does not exist, or a cycle, is a ``ModelError``."""
        layers = self.layers
        waiting = dict.fromkeys(layers, 0)
        after: dict[str, list[str]] = {}
        for edge in self.edges:
            source, target = edge.from_layer, edge.to_layer
            if source not in layers or target not in layers:
                raise ModelError.in_file(f"{self.path}:{edge.line}", f"edge from layer {source} to {target}: no such layer")
            waiting[target] += 1
            followers = after.get(source)
            if followers is None:
                after[source] = [target]
            else:
                followers.append(target)
        ready = deque(lid for lid, n in waiting.items() if n == 0)
        order = []
        while ready:
            lid = ready.popleft()
            order.append(layers[lid])
            for nxt in after.get(lid, ()):
                left = waiting[nxt] = waiting[nxt] - 1
                if left == 0:
                    ready.append(nxt)
        if len(order) < len(self.layers):
            stuck = ", ".join(repr(self.layers[lid].name) for lid, n in waiting.items() if n)
            raise ModelError.in_file(self.path, f"layers {stuck} form a cycle")
        return tuple(order)

    def tensor_name(self, layer: Layer, port_id: str) -> str:
        """The tensor behind output port ``port_id`` of ``layer`` (``ovpool.names.port_tensor_name``,
        the Parameters' names as the model's inputs)."""
        port = layer.output(port_id)
        first = bool(layer.outputs) and layer.outputs[0].id == port_id
        if self._input_names is None:
            self._input_names = frozenset(
                name.strip()
                for parameter in self.layers.values()
                if parameter.type == "Parameter"
                for out in parameter.outputs
                for name in out.names.split(",")
            )
        return port_tensor_name(port.names if port else "", layer.name, port_id, first, self._input_names)


def _edge_problem(edge: Edge, source: Layer | None, target: Layer | None) -> tuple[int, str, str]:
    """(line, layer id, why) of an edge ``IRDocument.edge_problems`` found connecting nothing (the
    first of: a missing layer, a missing port, an input port fed twice)."""
    where = f"edge from layer {edge.from_layer} port {edge.from_port} to layer {edge.to_layer} port {edge.to_port}"
    at = edge.to_layer if target is not None else edge.from_layer if source is not None else ""
    if source is None or target is None:
        return edge.line, at, f"{where}: no layer {edge.from_layer if source is None else edge.to_layer}"
    if source.output(edge.from_port) is None:
        return edge.line, at, f"{where}: layer '{source.name}' has no output port {edge.from_port}"
    if target.input(edge.to_port) is None:
        return edge.line, at, f"{where}: layer '{target.name}' has no input port {edge.to_port}"
    return edge.line, at, f"{where}: input port {edge.to_port} of layer '{target.name}' is fed by another edge too"


PARSER_OPTIONS = {"resolve_entities": False, "load_dtd": False, "no_network": True, "huge_tree": False, "remove_comments": True}
