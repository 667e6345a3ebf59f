"""The numpy executor for OpenVINO IR v10/v11: a whole IR prepared once, then run many times.

Preparing (``IrGraph.read(path)``) reads the ``.xml`` with ovpool's safe reader and does all the
work that does not depend on the inputs:

* every layer type and version is looked up in :mod:`ovpool.engine.ir_layers`; the layers numpy
  does not run are refused together, each with its type, name and line, before anything runs;
* ``Const`` layers are read from the ``.bin`` beside the ``.xml`` (``offset``, ``size``,
  ``element_type``, ``shape``); a layer whose inputs are all known (f16 weights and the Convert
  that decompresses them, ``ShapeOf`` of a weight, ...) is run there and then and its outputs
  become constants;
* each other layer's kernel is built once, and the layers, in ``IRDocument.execution_order()``,
  become :class:`ovpool.engine.plan.Prepared` entries of the one plan the ONNX executor runs too
  (:mod:`ovpool.engine.plan`: slots keyed by ``(layer id, port id)``, each intermediate dropped
  after its last reader), with what each layer computes as an ONNX operator
  (``ir_layers.computes``: a Convolution is a Conv); the plan is rewritten as an ONNX graph's
  is: a BatchNormInference of constant statistics folds into the Convolution before it
  (:func:`ovpool.engine.fusion.fold_ir_batch_norms`, rounding differs by about 1e-7 of the
  values), shape values (the ShapeOf -> Subtract -> Broadcast -> Concat -> Reshape that reshapes
  a bias) are one step per group, element-wise kernels write into dying inputs and run in
  chains, with the same bits. An observed run follows the plan of every layer as the IR states
  it, built at its first use;
* If, Loop and TensorIterator bodies are read (``ovpool.ir.reader.read_bodies``) and prepared the
  same way, with the port maps and back edges of Loop and TensorIterator (``Iteration``).

Names follow OpenVINO's, so results line up with ``ovpool run --device CPU``: an input is its
Parameter's first tensor name (the port's ``names``, sorted) or else the layer name; an output is
the first tensor name of the port feeding the Result, or else the producing layer's name
(``IRDocument.tensor_name``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ovpool import dtypes
from ovpool.engine import budget
from ovpool.engine.fusion import IR_CONVOLUTIONS, fold_ir_batch_norms, fuse_ir_conv_biases
from ovpool.engine.ir_layers import ITERATING, STRUCTURAL, Body, LayerNode, builder_for
from ovpool.engine.ir_layers.base import Iteration, Slicing, computes
from ovpool.engine.ir_layers.conv import biased_convolution
from ovpool.engine.ops.base import Kernel, OpNode, traits
from ovpool.engine.plan import IR_DOMAIN, Names, Plan, Prepared, build_plan, execute, execute_observed, filled
from ovpool.engine.quanta import ir_views
from ovpool.engine.repeat import hoisting, repeating
from ovpool.engine.session import StepObserver, ir_step
from ovpool.errors import InputFileError, ModelError, OvpoolError, UnsupportedError
from ovpool.ir.reader import Body as IrBody
from ovpool.ir.reader import IRDocument, Layer, PortMapEntry, declared_bounds, dim_bounds, read_bodies, read_ir
from ovpool.memory import kernel_failure
from ovpool.tensors import TensorDecl, name_mismatch

Observer = Callable[[Layer, tuple[Any, ...]], None]
Port = tuple[str, str]  # (layer id, output port id)


class _Weights:
    """The ``.bin`` of an IR, opened (memory-mapped) when the first Const is read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: np.ndarray | None = None

    def read(self, file: str, layer: Layer) -> np.ndarray:
        """The value of a Const layer: ``element_type="f16" shape="64,3,3,3" offset="0" size="3456"``;
        one of no elements (``shape="0"``) is empty whatever its ``size`` (OpenVINO writes 1)."""
        where = f"Const '{layer.name}' (line {layer.line})"
        element = layer.data.get("element_type", "")
        if element == "string":
            return self._strings(file, where, layer)
        name, narrow = dtypes.from_ir_type(element), dtypes.narrow_from_ir_type(element)
        if name is not None:
            dtype = dtypes.np_dtype(name)
            bits = 8 * dtype.itemsize
        elif narrow is not None:
            dtype, bits = dtypes.narrow_np_dtype(narrow), narrow.bits
        else:
            raise UnsupportedError.in_file(file, f"{where}: element_type '{element}' does not run on numpy")
        shape, offset, size, count = _placement(file, where, layer)
        # OpenVINO saves a Const of no elements with size="1" (and reads any size for one).
        if min(shape, default=0) < 0 or offset < 0 or size < 0 or (count and size != -(-count * bits // 8)):
            raise ModelError.in_file(file, f"{where}: size {size} does not hold shape {list(shape)} of {element}")
        data = self._open()
        if offset + size > data.size:
            raise ModelError.in_file(
                file, f"{where}: bytes {offset}..{offset + size} lie beyond the end of {self.path} ({data.size} bytes)"
            )
        raw = data[offset : offset + size]
        if not count:
            return np.zeros(shape, dtype)
        # a plain ndarray, no np.memmap (a copy of a memmap's view is one): the plan's kernels and
        # chains take ndarrays only (``type(a) is np.ndarray``), and every ufunc on a memmap wraps its result
        if bits == 4:
            return np.array(dtypes.unpack_narrow(raw, count, dtype).reshape(shape))
        return np.array(raw.view(dtype).reshape(shape))

    def _strings(self, file: str, where: str, layer: Layer) -> np.ndarray:
        """A string Const as OpenVINO packs it: int32 count ``n``, ``n + 1`` int32 offsets into the
        UTF-8 bytes that follow (``["a", "bc", ""]``: 3, 0 1 3 3, ``abc``), as a numpy array of
        Python strings (what the ONNX executor and onnxruntime hold)."""
        shape, offset, size, count = _placement(file, where, layer)
        data = self._open()
        if min(shape, default=0) < 0 or offset < 0 or size < 4 * (count + 2) or offset + size > data.size:
            raise ModelError.in_file(file, f"{where}: size {size} at offset {offset} does not hold {count} strings")
        raw = bytes(data[offset : offset + size])
        header = np.frombuffer(raw, "<i4", count + 2)
        ends, text = header[1:], raw[4 * (count + 2) :]
        if int(header[0]) != count or ends[0] != 0 or np.any(np.diff(ends) < 0) or int(ends[-1]) > len(text):
            raise ModelError.in_file(file, f"{where}: its string offsets do not fit its {count} strings")
        try:
            values = [text[int(a) : int(b)].decode() for a, b in zip(ends[:-1], ends[1:])]
        except UnicodeDecodeError:
            raise ModelError.in_file(file, f"{where}: a string is not UTF-8") from None
        return np.array(values, dtype=object).reshape(shape)

    def close(self) -> None:
        """Let go of the file (every Const has been copied out of it)."""
        self._data = None

    def _open(self) -> np.ndarray:
        if self._data is None:
            try:
                self._data = np.memmap(self.path, dtype=np.uint8, mode="r") if self.path.stat().st_size else np.zeros(0, np.uint8)
            except FileNotFoundError:
                raise InputFileError.in_file(self.path, "no such file (the weights of the IR beside it)") from None
            except OSError as exc:
                raise InputFileError.in_file(self.path, f"cannot read ({exc.strerror})") from None
        return self._data


def _placement(file: str, where: str, layer: Layer) -> tuple[tuple[int, ...], int, int, int]:
    """A Const layer's ``shape``, ``offset`` and ``size`` (bytes in the .bin) and its element count
    (``shape="2,3" offset="0" size="24"``: ``((2, 3), 0, 24, 6)``); a value that is not an integer
    is one line naming the layer."""
    try:
        shape = tuple(int(d) for d in layer.data.get("shape", "").split(",") if d.strip())
        offset, size = int(layer.data["offset"]), int(layer.data["size"])
    except (KeyError, ValueError):
        raise ModelError.in_file(file, f"{where}: shape, offset and size must be given as integers") from None
    return shape, offset, size, int(np.prod(shape, dtype=np.int64))


class _Graph:
    """One IR graph prepared: the top level or an If body. ``parameters`` and ``results`` are its
    Parameter and Result layers in file order; calling it maps input arrays in Parameter order to
    output arrays in Result order."""

    def __init__(
        self, document: IRDocument, weights: _Weights, source: str | bytes, unchanged: frozenset[str] | None = None
    ) -> None:
        """``unchanged``: for a Loop or TensorIterator body, the ids of the Parameters fed the same
        value at every iteration (``_unchanged``): what ``repeated`` hoists."""
        self.file = document.path
        order = document.execution_order()
        _refuse_unsupported(document, order)
        producers = document.producers()
        read_ports = {(e.from_layer, e.from_port) for e in document.edges}
        self.parameters = tuple(l for l in document.layers.values() if l.type == "Parameter")
        self.results = tuple(l for l in document.layers.values() if l.type == "Result")
        known: dict[Port, Any] = {}
        prepared: list[Prepared] = []
        run: list[LayerNode] = []
        for layer in order:
            if layer.type in ("Parameter", "Result"):
                continue
            if layer.type == "Const":
                known[(layer.id, _first_port(layer))] = weights.read(self.file, layer)
                continue
            inputs = tuple(self._source(document, producers, layer, port.id) for port in layer.inputs)
            used = [i for i, port in enumerate(layer.outputs) if (layer.id, port.id) in read_ports]
            outputs = tuple((layer.id, port.id) for port in layer.outputs[: used[-1] + 1 if used else 1])
            bodies: Mapping[str, Body] = {}
            iteration = None
            if layer.type == "If":
                bodies = self._bodies(source, weights, layer)
            elif layer.type in ITERATING:
                bodies, iteration = self._iteration(source, weights, layer)
            node = LayerNode(layer, tuple(known.get(p) for p in inputs), len(outputs), bodies, iteration)
            builder = builder_for(layer.type, layer.version)
            assert builder is not None  # _refuse_unsupported checked every layer
            kernel = self._guarded(node, functools.partial(builder, node))
            folded = all(p in known for p in inputs)
            rank = None if folded else _convolution_rank(document, producers, layer, known)
            if folded or rank is not None:
                # a ShapeOf of a convolution's shape is its rank, whatever the data: that of a shape of `rank` values
                arguments = (np.zeros(rank, np.int64),) if rank is not None else tuple(known[p] for p in inputs)
                results = self._guarded(node, functools.partial(kernel, *arguments))
                for port, value in zip(outputs, results):
                    known[port] = value
                folded = True
            else:
                run.append(node)
            prepared.append(Prepared(layer, _computed(node), kernel, inputs, outputs, folded, node.label, layer.type))
        keys = Names(
            tuple((l.id, _first_port(l)) for l in self.parameters),
            (),
            tuple(
                self._source(document, producers, result, result.inputs[0].id if result.inputs else "0")
                for result in self.results
            ),
        )
        taken = set(known) | {key for entry in prepared for key in (*entry.inputs, *entry.outputs)}

        def fresh(near: Port, hint: str) -> Port:
            """A port key no value of this graph has: ``(id, "1/fused")``, else ``(id, "1/fused#2")``..."""
            key, count = (near[0], f"{near[1]}/{hint}"), 1
            while key in taken:
                count += 1
                key = (near[0], f"{near[1]}/{hint}#{count}")
            taken.add(key)
            return key

        results = frozenset(keys.output_names)
        live = _unread_shapes_left_out(prepared, results)
        fused, fused_constants = fold_ir_batch_norms(live, known, results, self._rebuild, fresh)
        fused, biases = fuse_ir_conv_biases(fused, {**known, **fused_constants}, results, self._biased, fresh)
        fused_constants.update(biases)
        self.plan = build_plan(fused, {**known, **fused_constants}, keys, donate=True)
        self.unchanged = tuple(i for i, l in enumerate(self.parameters) if unchanged is not None and l.id in unchanged)
        self.hoisted = (
            None if unchanged is None else hoisting(fused, {**known, **fused_constants}, keys, _drawing, self.unchanged)
        )
        self.nodes = tuple(run)  # the layers run (not folded), in order
        rewritten = fused_constants or self.plan.donating or self.plan.grouped or len(self.plan.steps) < len(run)
        # what observed runs follow, built at the first: every layer as the IR states it
        self._unrewritten: tuple[list[Prepared], dict[Port, Any], Names] | None = (prepared, known, keys) if rewritten else None
        self._observed_plan: Plan | None = None if rewritten else self.plan

    def _source(self, document: IRDocument, producers: Mapping[tuple[str, str], Any], layer: Layer, port: str) -> Port:
        edge = producers.get((layer.id, port))
        if edge is None or edge.from_layer not in document.layers:
            raise ModelError.in_file(self.file, f"layer '{layer.name}' (line {layer.line}) input port {port} is not connected")
        return edge.from_layer, edge.from_port

    def _bodies(
        self, source: str | bytes, weights: _Weights, layer: Layer
    ) -> dict[str, Callable[[list[np.ndarray]], list[np.ndarray]]]:
        """Each body of ``layer`` prepared, as a function of the layer's inputs (port order, the
        condition left out) giving the layer's outputs (port order)."""
        compiled = {}
        input_ports = [p.id for p in layer.inputs[1:]]
        output_ports = [p.id for p in layer.outputs]
        for tag, body in read_bodies(source, layer, self.file).items():
            graph = _Graph(body.document, weights, body.data)
            at = {l.id: i for i, l in enumerate(graph.parameters)}
            feeds = [(at[body.inputs[p]], k) for k, p in enumerate(input_ports) if body.inputs.get(p) in at]
            result_at = {l.id: i for i, l in enumerate(graph.results)}
            picks = []
            for port in output_ports:
                if body.outputs.get(port) not in result_at:
                    raise ModelError.in_file(
                        self.file, f"{layer.type} '{layer.name}' (line {layer.line}): {tag} gives no output for port {port}"
                    )
                picks.append(result_at[body.outputs[port]])
            compiled[tag] = _body_function(graph, feeds, picks)
        for tag in ("then_body", "else_body"):
            if tag not in compiled:
                raise ModelError.in_file(self.file, f"{layer.type} '{layer.name}' (line {layer.line}) has no {tag}")
        return compiled

    def _iteration(self, source: str | bytes, weights: _Weights, layer: Layer) -> tuple[dict[str, Body], Iteration]:
        """The ``body`` of a Loop or TensorIterator prepared, as a function of its Parameters (in
        order) giving its Results (in order), and its port map by position (``Iteration``)."""
        where = f"{layer.type} '{layer.name}' (line {layer.line})"
        body = read_bodies(source, layer, self.file).get("body")
        if body is None:
            raise ModelError.in_file(self.file, f"{where} has no body")
        graph = _Graph(body.document, weights, body.data, _unchanged(body))
        parameter_at = {l.id: i for i, l in enumerate(graph.parameters)}
        result_at = {l.id: i for i, l in enumerate(graph.results)}
        input_at = {p.id: i for i, p in enumerate(layer.inputs)}
        output_at = {p.id: i for i, p in enumerate(layer.outputs)}

        def find(table: Mapping[str, int], key: str, what: str) -> int:
            if key not in table:
                raise ModelError.in_file(self.file, f"{where}: port_map names {what} {key}, which does not exist")
            return table[key]

        inputs, outputs = [], []
        current = condition = None
        for entry in body.input_map:
            parameter = find(parameter_at, entry.internal, "body Parameter")
            if entry.purpose == "current_iteration":
                current = parameter
            else:
                inputs.append((find(input_at, entry.external, "input port"), parameter, _slicing(entry)))
        for entry in body.output_map:
            result = find(result_at, entry.internal, "body Result")
            if entry.purpose == "execution_condition":
                condition = result
            else:
                outputs.append((find(output_at, entry.external, "output port"), result, _slicing(entry)))
        fed = {parameter for _, parameter, _ in inputs} | ({current} if current is not None else set())
        for i, unfed in enumerate(graph.parameters):
            if i not in fed:
                raise ModelError.in_file(self.file, f"{where}: body Parameter '{unfed.name}' is fed by no port_map input")
        given = {index for index, _, _ in outputs}
        for i, port in enumerate(layer.outputs):
            if i not in given:
                raise ModelError.in_file(self.file, f"{where}: output port {port.id} is in no port_map output")
        back_edges = tuple(
            (find(result_at, source_id, "body Result"), find(parameter_at, target_id, "body Parameter"))
            for source_id, target_id in body.back_edges
        )
        element = graph.parameters[current].data.get("element_type", "i64") if current is not None else "i64"
        iteration_type = np.dtype(dtypes.np_dtype(dtypes.from_ir_type(element) or "int64"))
        iteration = Iteration(
            tuple(inputs),
            tuple(outputs),
            back_edges,
            current,
            condition,
            iteration_type,
            tuple(_static_dims(result) for result in graph.results),
            tuple(_result_type(result) for result in graph.results),
        )
        return {"body": graph}, iteration  # a Repeatable: its Loop runs graph.repeated()

    def _rebuild(self, entry: Prepared, constants: tuple[Any, ...]) -> Kernel:
        """The kernel of ``entry``'s layer made again for other constant inputs (a Convolution's
        weights with a BatchNormInference folded in)."""
        layer = entry.node
        builder = builder_for(layer.type, layer.version)
        assert builder is not None  # the layer was prepared from this builder
        node = LayerNode(layer, constants, len(entry.outputs))
        return self._guarded(node, functools.partial(builder, node))

    def _biased(self, entry: Prepared, weights: np.ndarray, bias: np.ndarray, separate: Kernel) -> Kernel:
        """The kernel of ``entry``'s convolution with the Add of its per-channel ``bias`` after it
        (``ir_layers.conv.biased_convolution``; ``separate`` runs the two as they were)."""
        node = LayerNode(entry.node, (None, weights), len(entry.outputs))
        return self._guarded(node, functools.partial(biased_convolution, node, weights, bias, separate))

    def _guarded(self, node: LayerNode, action: Callable[[], Any]) -> Any:
        """``action()``, its failures said of the layer and the file."""
        try:
            return action()
        except OvpoolError as exc:
            raise exc.located(self.file) from None
        except Exception as exc:  # numpy on inputs the layer cannot take
            raise kernel_failure(node.label, exc).located(self.file) from exc

    def __call__(self, inputs: Sequence[np.ndarray], observe: Observer | None = None) -> list[np.ndarray]:
        plan = self.plan if observe is None else self._observed()
        values = filled(plan, inputs, ())
        try:
            if observe is None:
                execute(values, plan.steps, self.file, quiet=plan.quiet)
            else:
                execute_observed(plan, values, observe, self.file)
        except OvpoolError as exc:
            raise exc.located(self.file) from None
        return _handed_out([values[s] for s in plan.output_slots], plan)

    def repeated(self) -> Callable[[Sequence[np.ndarray]], list[np.ndarray]]:
        """The body for the iterations of one run of its Loop or TensorIterator: ``run(inputs)``
        is ``self(inputs)``, except that the layers reading only unchanged Parameters and
        constants run once, at the first call, and that a MatMul given the operands of its call
        before, bit for bit, gives that call's product again (``ovpool.engine.repeat``)."""
        run = repeating(self.plan, self.hoisted, (), self.file, self.unchanged)
        plan = self.plan if self.hoisted is None else self.hoisted[1]

        def call(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
            try:
                return _handed_out(run(inputs), plan)
            except OvpoolError as exc:
                raise exc.located(self.file) from None

        return call

    def _observed(self) -> Plan:
        """The plan observed runs follow: every layer as the IR states it, no buffer reused."""
        if self._observed_plan is None:
            assert self._unrewritten is not None
            self._observed_plan = build_plan(*self._unrewritten, donate=False)
            self._unrewritten = None
        return self._observed_plan

    @property
    def order(self) -> list[tuple[Layer, tuple[Port, ...] | None, int]]:
        """Each layer in plan order: (layer, its outputs if folded when prepared else None, step index)."""
        return self.plan.order


def _convolution_rank(
    document: IRDocument, producers: Mapping[tuple[str, str], Any], layer: Layer, known: Mapping[Port, Any]
) -> int | None:
    """The rank of a convolution's output when ``layer`` is a ShapeOf of a ShapeOf of it (its value
    is then ``[rank]`` whatever the data), else None: the ONNX frontend reshapes a Conv's bias to
    ``(1, C, 1, ...)`` by ``Concat(1, C, Broadcast(1, ShapeOf(ShapeOf(y)) - 2))``. A Convolution's
    output has its weights' rank (a GroupConvolution's one less): weights (128, 129, 3) give 3, and
    the Reshape of the bias then folds when prepared."""

    def producer(of: Layer, index: int) -> Layer | None:
        edge = producers.get((of.id, of.inputs[index].id)) if index < len(of.inputs) else None
        return None if edge is None else document.layers.get(edge.from_layer)

    shape = producer(layer, 0) if layer.type == "ShapeOf" else None
    conv = producer(shape, 0) if shape is not None and shape.type == "ShapeOf" else None
    lead = IR_CONVOLUTIONS.get(conv.type) if conv is not None else None
    if conv is None or lead is None or len(conv.inputs) != 2:
        return None
    edge = producers.get((conv.id, conv.inputs[1].id))
    weights = known.get((edge.from_layer, edge.from_port)) if edge is not None else None
    if not isinstance(weights, np.ndarray) or weights.ndim < 3 + lead:
        return None
    return weights.ndim - lead


def _unread_shapes_left_out(prepared: Sequence[Prepared], results: frozenset[Port]) -> list[Prepared]:
    """``prepared`` without the ShapeOf steps whose value no step reads nor a Result (the one
    ShapeOf of a ShapeOf read it, folded by ``_convolution_rank``): a ShapeOf cannot fail."""
    read = {port for entry in prepared if not entry.folded for port in entry.inputs} | set(results)
    return [entry for entry in prepared if entry.folded or entry.kind != "ShapeOf" or any(port in read for port in entry.outputs)]


def _unchanged(body: IrBody) -> frozenset[str]:
    """The ids of a Loop's or TensorIterator's body Parameters fed the same value at every
    iteration: fed by a port-map input without a slice, and by no back edge, or by one from a
    Result of that Parameter itself (OpenVINO's ONNX frontend makes every value a body reads from
    outside a Parameter passed on so: SLANet's (96, 256) weights are Parameter 22 -> Result 256
    -> back to Parameter 22)."""
    producers = body.document.producers()
    layers = body.document.layers

    def passed_on(result: str, parameter: str) -> bool:
        layer = layers.get(result)
        edge = producers.get((result, layer.inputs[0].id)) if layer is not None and layer.inputs else None
        return edge is not None and edge.from_layer == parameter

    fixed = {e.internal for e in body.input_map if e.purpose != "current_iteration" and e.axis is None}
    return frozenset(fixed - {target for source, target in body.back_edges if not passed_on(source, target)})


def _handed_out(values: list[Any], plan: Plan) -> list[Any]:
    """A graph's outputs as its caller gets them: a constant of the plan, or a read-only array (a
    view of one), copied."""
    return [
        value.copy() if isinstance(value, np.ndarray) and (constant or not value.flags.writeable) else value
        for value, constant in zip(values, plan.constant_outputs)
    ]


def _drawing(entry: Prepared) -> bool:
    """Whether a layer may draw at random, so stays in its body (``repeat.hoisting``): a random
    operator's, or one with bodies of its own (not looked into)."""
    return traits(entry.op.op_type, entry.op.since, entry.op.domain).random or entry.node.type in ("If", *ITERATING)


def _body_function(
    graph: _Graph, feeds: list[tuple[int, int]], picks: list[int]
) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    """``graph`` as a function of its layer's inputs: ``feeds`` (Parameter index, layer input
    index), ``picks`` the Result index of each layer output."""

    def run(inputs: list[np.ndarray]) -> list[np.ndarray]:
        arguments: list[Any] = [None] * len(graph.parameters)
        for parameter, k in feeds:
            arguments[parameter] = inputs[k]
        outputs = graph(arguments)
        return [outputs[i] for i in picks]

    return run


def _computed(node: LayerNode) -> OpNode:
    """What a layer's step computes, as the plan's rewrites read it: the ONNX operator of its type
    (``ir_layers.computes``: a Convolution is a Conv), else the layer type in ``IR_DOMAIN``."""
    layer = node.layer
    op_type = computes(layer.type)
    return OpNode(
        name=layer.name,
        op_type=op_type or layer.type,
        since=1,
        opset=1,
        constants=node.constants,
        n_outputs=node.n_outputs,
        domain="" if op_type else IR_DOMAIN,
    )


def _slicing(entry: PortMapEntry) -> Slicing | None:
    if entry.axis is None:
        return None
    return Slicing(entry.axis, entry.start, entry.end, entry.stride, entry.part_size)


def _static_dims(result: Layer) -> tuple[int, ...] | None:
    """The dims of the port feeding a body Result when all are static: ``2, 3`` -> (2, 3); None for ``-1``/``?``."""
    if not result.inputs:
        return None
    bounds = [dim_bounds(text) for text in result.inputs[0].dims]
    if any(b is None or b[0] != b[1] for b in bounds):
        return None
    return tuple(b[0] for b in bounds if b is not None)


def _result_type(result: Layer) -> np.dtype | None:
    """The element type of the port feeding a body Result (``precision="FP32"`` -> float32), or None."""
    name = result.inputs[0].dtype if result.inputs else None
    return None if name is None else np.dtype(dtypes.np_dtype(name))


def _first_port(layer: Layer) -> str:
    return layer.outputs[0].id if layer.outputs else "0"


def _refuse_unsupported(document: IRDocument, order: Sequence[Layer]) -> None:
    """Every layer numpy does not run, listed in one ``UnsupportedError``."""
    others = [l for l in order if l.type not in STRUCTURAL and builder_for(l.type, l.version) is None]
    if others:
        listed = ", ".join(f"{l.type}-{l.version} '{l.name}' (line {l.line})" for l in others)
        raise UnsupportedError.in_file(document.path, f"the numpy backend does not run these IR layers: {listed}")


class IrGraph:
    """An IR document prepared once for repeated runs on numpy.

    ``inputs`` are the Parameters as declared (``TensorDecl``), ``output_names`` the outputs in
    Result order, ``folded_layers`` the names of the layers computed when prepared, ``quanta`` the
    quantization step of each quantized tensor computed at run time, by tensor name (``_quanta``)."""

    def __init__(self, document: IRDocument, weights: Path | None = None) -> None:
        self.document = document
        path = Path(document.path)
        bin_file = _Weights(weights or path.with_suffix(".bin"))
        self._graph = _Graph(document, bin_file, document.path)
        bin_file.close()
        self.inputs = tuple(_parameter_decl(document, l) for l in self._graph.parameters)
        self.output_names = tuple(_output_name(document, result) for result in self._graph.results)
        self.folded_layers = tuple(layer.name for layer, folded, _ in self._graph.order if folded is not None)
        self.quanta = _quanta(document, self._graph.nodes)

    @classmethod
    def read(cls, path: str | os.PathLike) -> IrGraph:
        """The IR at ``path`` (its weights in the ``.bin`` beside it), prepared."""
        doc = read_ir(Path(path))
        doc.check_structure()
        return cls(doc)

    def run(self, inputs: Mapping[str, np.ndarray], observe: Observer | None = None) -> dict[str, np.ndarray]:
        """Every output, ``{name: array}`` in Result order; ``inputs`` keyed by the names in
        ``self.inputs``. ``observe(layer, outputs)``, if given, is called after every layer of the
        top-level graph in execution order (layers folded when prepared included, with their values)."""
        names = [d.name for d in self.inputs]
        mismatch = name_mismatch(names, inputs)
        if mismatch:
            raise ModelError.in_file(self.document.path, f"{mismatch} (the model takes {', '.join(names)})")
        values = self._graph([np.asarray(inputs[n]) for n in names], observe)
        return dict(zip(self.output_names, values))

    # ``Executor`` (ovpool.engine.session): what callers ask of either front end

    def trace(self, inputs: Mapping[str, np.ndarray], observe: StepObserver) -> dict[str, np.ndarray]:
        """``run`` observed, each layer as a ``Step`` (``ir_step``)."""
        document, producers = self.document, self.document.producers()
        return self.run(inputs, observe=lambda layer, outputs: observe(ir_step(document, producers, layer), outputs))

    def peak(self, inputs: Mapping[str, Any], sizes: budget.Sizes | None = None) -> budget.Peak:
        """``budget.ir_peak``: the layers sized by the dims their ports declare (``sizes`` is not read)."""
        return budget.ir_peak(self, inputs)

    @property
    def plan(self) -> Plan:
        """The top-level graph's plan, as ``budget.plan_walk`` walks it."""
        return self._graph.plan

    def quantized_views(self) -> dict[str, str]:
        """``quanta.ir_views`` of the document."""
        return ir_views(self.document)

    @property
    def step_count(self) -> None:
        """Not known before the run (a traced run reports the layers the plan runs)."""
        return None


def _quanta(document: IRDocument, nodes: Sequence[LayerNode]) -> dict[str, np.ndarray]:
    """The quantization step of each quantized tensor among ``nodes``' outputs, by tensor name,
    per tensor or broadcasting per channel: a FakeQuantize with a constant output range, ``(output_high
    - output_low) / (levels - 1)`` ([-128, 127] over 256 levels: 1.0); the integers a Convert makes
    of a FakeQuantize's output, 1; and a dequantization as the ONNX frontend writes it, a Multiply by
    a constant scale of a Convert from integers (after a Subtract of the zero point, if any): the scale."""
    producers = document.producers()

    def source(layer: Layer, port: int) -> Layer | None:
        edge = producers.get((layer.id, layer.inputs[port].id)) if port < len(layer.inputs) else None
        return document.layers.get(edge.from_layer) if edge is not None else None

    def from_integers(layer: Layer | None) -> bool:
        if layer is not None and layer.type == "Subtract":
            layer = source(layer, 0)
        return layer is not None and layer.type == "Convert" and bool(layer.inputs) and layer.inputs[0].precision[:1] in "IU"

    quanta: dict[str, np.ndarray] = {}
    for node in nodes:
        layer, quantum = node.layer, None
        if layer.type == "FakeQuantize" and node.constant(3) is not None and node.constant(4) is not None:
            levels = layer.data.get("levels", "")
            if levels.isdigit() and int(levels) >= 2:
                low, high = (np.asarray(node.constant(i), np.float64) for i in (3, 4))
                quantum = np.abs(high - low) / (int(levels) - 1)
        elif layer.type == "Convert" and layer.outputs and layer.outputs[0].precision[:1] in "IU":
            producer = source(layer, 0)
            quantum = np.ones(()) if producer is not None and producer.type == "FakeQuantize" else None
        elif layer.type == "Multiply" and len(layer.inputs) == 2:
            for scale, other in ((1, 0), (0, 1)):
                value = node.constant(scale)
                producer = source(layer, other)
                if value is not None and node.constant(other) is None and producer is not None and from_integers(producer):
                    quantum = np.abs(np.asarray(value, np.float64))
        if quantum is not None and layer.outputs:
            quanta[document.tensor_name(layer, layer.outputs[0].id)] = quantum
    return quanta


def _output_name(document: IRDocument, result: Layer) -> str:
    edge = document.producers().get((result.id, result.inputs[0].id if result.inputs else "0"))
    assert edge is not None  # the graph checked every Result is connected
    return document.tensor_name(document.layers[edge.from_layer], edge.from_port)


def _parameter_decl(document: IRDocument, layer: Layer) -> TensorDecl:
    """``<data shape="1,3,?,14" element_type="f32"/>`` -> TensorDecl(name, "float32", (1, 3, None, 14))."""
    element = layer.data.get("element_type", "")
    dtype = dtypes.any_from_ir_type(element)
    if dtype is None:
        raise ModelError.in_file(
            document.path, f"Parameter '{layer.name}' (line {layer.line}): element_type '{element}' is not readable"
        )
    shape_text = layer.data.get("shape")
    shape: tuple[int | None, ...] | None = None
    if shape_text is not None and shape_text.strip() not in ("...", "?"):
        where = f"Parameter '{layer.name}' (line {layer.line})"
        try:
            bounds = declared_bounds([t for t in shape_text.split(",") if t.strip()], where)
        except ModelError as exc:
            raise exc.located(document.path) from None
        dims: list[int | None] = []
        for bound in bounds:
            if bound is None:
                raise ModelError.in_file(document.path, f"{where}: shape '{shape_text}' is not readable")
            dims.append(bound[0] if bound[0] == bound[1] else None)
        shape = tuple(dims)
    return TensorDecl(document.tensor_name(layer, _first_port(layer)), dtype, shape)
