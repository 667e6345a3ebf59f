"""The numpy executor session: an ONNX model prepared once, then run many times on ovpool's operators.

Preparing (``GraphSession(model)``) does all the work that does not depend on the inputs:

* each node's schema since-version is resolved from the model's opset imports (Softmax in an
  opset-12 model is Softmax-11) and looked up in ovpool's operator table
  (:func:`ovpool.engine.ops.base.lookup`); a node no registered range covers is refused naming
  the node, its op and version (every operator of ONNX's backend node suite has a kernel; the
  ``ai.onnx.preview.training`` optimizers do not). Nothing runs on onnx.reference;
* the nodes are put in topological order (a model's node order need not be one); a cycle or an
  input nothing produces is a ``ModelError`` naming the node;
* every factory is called once, with the node's constant inputs (initializers, and the outputs of
  nodes folded before it); a node whose inputs are all constants (and which draws no random
  numbers) is run there and then and its outputs become constants: ``Shape -> Gather -> Unsqueeze
  -> Concat -> Reshape`` on a weight costs nothing per run;
* graph attributes (Loop ``body``, If ``then_branch``/``else_branch``, Scan ``body``) are compiled
  into :class:`CompiledGraph` objects handed to the factory in ``OpNode.subgraphs``. A body may
  read names of the graphs around it: constants there are constants in the body; the others are the
  body's ``outer_names``, passed at run time. The kernel of a node with subgraphs is called with the
  node's own inputs followed by, for each subgraph in ``node.subgraphs`` order, the values of that
  subgraph's ``outer_names``: an If whose then-branch reads ``a`` and else-branch ``a`` and ``b``
  is called ``kernel(cond, a, a, b)``;
* the rest becomes a flat plan of ``(kernel, input slots, output slots, slots to free)``
  (:mod:`ovpool.engine.plan`, the one plan the IR executor runs too): a run is one list of values
  indexed by slot, and each intermediate is dropped after its last use;
* the plan a run follows is rewritten where the meaning is kept: a Conv + BatchNormalization pair
  of constant weights is one Conv (:mod:`ovpool.engine.fusion`; rounding differs by about 1e-7
  of the values), an element-wise kernel writes into an input that dies at its node
  (:mod:`ovpool.engine.inplace`) and a chain of element-wise nodes runs tile by tile
  (:mod:`ovpool.engine.chains`), both with the same bits. An observed run
  (``run(..., observe=...)``) follows a second plan, built at its first use, of the nodes as the
  model states them, writing nothing in place: the observer sees every node's own output.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto

from ovpool.engine import budget
from ovpool.engine.fusion import fold_batch_norms
from ovpool.engine.ops.base import (
    Kernel,
    OpNode,
    attributes,
    deprecated_table,
    lookup,
    named_with,
    registered_since,
    traits,
    traits_named,
)
from ovpool.engine.ops.casts import dense_from_sparse, tensor_value
from ovpool.engine.plan import NONE, QUIET, Plan, Prepared, Step, build_plan, execute, execute_observed, filled, run_steps
from ovpool.engine.quanta import onnx_quanta, onnx_views
from ovpool.engine.repeat import hoisting, repeating
from ovpool.engine.session import StepObserver, onnx_step
from ovpool.errors import ModelError, OvpoolError
from ovpool.memory import fix_budget, kernel_failure, release_budget
from ovpool.onnx.model import load
from ovpool.tensors import TensorDecl, name_mismatch, onnx_inputs

Observer = Callable[[NodeProto, tuple[Any, ...]], None]  # plan.Observer, shown ONNX nodes
# runs a graph's plan on its slot values, checking the memory budget before each step (ovpool.engine.budget)
Guard = Callable[["CompiledGraph", list[Any]], None]


@dataclass
class _Model:
    """What every graph of one model shares while it is compiled."""

    label: str
    opsets: dict[str, int]


class CompiledGraph:
    """One graph ready to run: the top-level graph of a session, or a Loop/If/Scan body.

    ``input_names`` are the values the caller passes (a body's formal inputs; a model's inputs that
    are not initializers), ``outer_names`` the names of enclosing graphs it reads at run time
    (enclosing constants are folded in), ``output_names`` what it returns.
    ``graph(inputs, outer)`` runs it: ``inputs`` in ``input_names`` order, ``outer`` in
    ``outer_names`` order; it returns the outputs as a list.
    """

    def __init__(
        self,
        graph: GraphProto,
        model: _Model,
        outer_constants: Mapping[str, Any] | None = None,
        outer_names: frozenset[str] = frozenset(),
        top: bool = False,
    ) -> None:
        self.name = graph.name
        self._graph = graph
        outer_constants = outer_constants or {}
        constants: dict[str, Any] = {t.name: tensor_value(t) for t in graph.initializer}
        constants.update((sparse.values.name, dense_from_sparse(sparse)) for sparse in graph.sparse_initializer)
        if top:
            self.input_names = tuple(i.name for i in graph.input if i.name not in constants)
        else:
            self.input_names = tuple(i.name for i in graph.input)
            for name in self.input_names:
                constants.pop(name, None)
        self.output_names = tuple(o.name for o in graph.output)
        nodes = list(graph.node)
        defined = set(self.input_names) | set(constants)
        produced = {o for node in nodes for o in node.output if o}
        visible = frozenset(outer_names | defined | produced)
        frees = [_subgraph_free_names(node) for node in nodes]
        order = _topological_order(nodes, frees, defined, outer_names)

        outer_runtime: list[str] = []

        def resolve(name: str, node: NodeProto | None) -> None:
            """A name this graph reads: its own, an enclosing constant, or an enclosing run-time value."""
            if not name or name in defined or name in produced or name in constants:
                return
            if name in outer_constants:
                constants[name] = outer_constants[name]
            elif name in outer_names:
                if name not in outer_runtime:
                    outer_runtime.append(name)
            else:
                where = f"{_node_label(node)}: input" if node is not None else f"graph '{graph.name}': output"
                raise ModelError(f"{where} '{name}' is not produced by any node, nor a graph input or initializer")

        for index in order:
            for name in list(nodes[index].input) + sorted(frees[index]):
                resolve(name, nodes[index])
        for name in self.output_names:
            resolve(name, None)

        known = dict(constants)  # constants, then the outputs of folded nodes
        # enclosing constants a body of ours may read: those no name of this graph shadows
        unshadowed = {k: v for k, v in outer_constants.items() if k not in defined and k not in produced}
        prepared = [self._prepare(nodes[index], model, known, unshadowed, visible) for index in order]
        self.outer_names = tuple(outer_runtime)
        self.folded = tuple(_node_name(entry.node) for entry in prepared if entry.folded)
        taken = set(visible) | set(known)

        def fresh(hint: str) -> str:
            """A name no value of this graph has: ``conv1/W``, else ``conv1/W#2``..."""
            name, count = hint, 1
            while name in taken:
                count += 1
                name = f"{hint}#{count}"
            taken.add(name)
            return name

        fused, fused_constants = fold_batch_norms(prepared, known, frozenset(self.output_names), fresh)
        self._plan = build_plan(fused, {**known, **fused_constants}, self, donate=True)
        self._hoisting = None if top else hoisting(fused, {**known, **fused_constants}, self, _drawing)
        self.guard: Guard | None = None  # ovpool.engine.budget's run-time accounting, when set
        self._observed_plan: Plan | None = None
        chained = len(self._plan.steps) < sum(not entry.folded for entry in fused)  # a chain is one step of several nodes
        if fused_constants or self._plan.donating or self._plan.grouped or chained:
            # what observed runs need: the nodes as the model states them (initializers only folded nodes read not kept)
            wanted = {n for e in prepared for n in (e.outputs if e.folded else e.inputs)} | set(self.output_names)
            self._unfused: tuple[list[Prepared], dict[str, Any]] | None = (prepared, {n: known[n] for n in wanted if n in known})
        else:
            self._unfused = None
            self._observed_plan = self._plan

    def _prepare(
        self,
        node: NodeProto,
        model: _Model,
        known: dict[str, Any],
        outer_constants: Mapping[str, Any],
        visible: frozenset[str],
    ) -> Prepared:
        """The node's kernel and the names it is called with (own inputs, then its subgraphs' outer
        names); a node of constants is run now (``folded``) and its outputs added to ``known``."""
        label = _node_label(node)
        domain = "" if node.domain == "ai.onnx" else node.domain
        opset = model.opsets.get(domain)
        if opset is None:
            imported = ", ".join(f"'{d or 'ai.onnx'}'" for d in model.opsets) or "none"
            raise ModelError(f"{label}: domain '{domain or 'ai.onnx'}' is not imported by the model (imports: {imported})")
        try:
            since = onnx.defs.get_schema(node.op_type, opset, domain).since_version
        except onnx.defs.SchemaError:
            own = registered_since(node.op_type, opset, domain)
            if own is None:
                raise ModelError(
                    f"{label}: ONNX has no operator {node.op_type} in opset {opset} of domain '{domain or 'ai.onnx'}'"
                ) from None
            since = own
        inputs = _trimmed(node.input)
        attrs = attributes(node)
        subgraphs: dict[str, CompiledGraph] = {}
        inner_constants = {**outer_constants, **known}
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                subgraphs[attribute.name] = CompiledGraph(attribute.g, model, inner_constants, visible)
            elif attribute.type == AttributeProto.GRAPHS:
                raise ModelError(f"{label}: attribute '{attribute.name}' holds a list of graphs, which ovpool does not run")
        op = OpNode(
            name=_node_name(node),
            op_type=node.op_type,
            since=since,
            opset=opset,
            attrs=attrs,
            constants=tuple(known.get(name) if name else None for name in inputs),
            n_outputs=len(_trimmed(node.output)),
            domain=domain,
            subgraphs=subgraphs,
            compile_graph=compile_graph,
        )
        row = lookup(node.op_type, since, domain)
        if row is None:
            qualified = f"{domain}.{node.op_type}" if domain else node.op_type
            raise ModelError(f"{op.label}: ovpool's numpy executor has no {qualified}-{since}")
        kernel = row.factory(op)
        implicit = tuple(name for graph in subgraphs.values() for name in graph.outer_names)
        call_names = inputs + implicit
        random = row.traits.random or any(_draws_random(a.g) for a in node.attribute if a.type == AttributeProto.GRAPH)
        folded = not random and all(name in known for name in call_names if name)
        if folded:
            results = _call(kernel, [known[name] if name else None for name in call_names], label, op.n_outputs)
            for name, value in zip(node.output, results):
                if name:
                    known[name] = value
        return Prepared(node, op, kernel, call_names, tuple(node.output), folded, label, node.op_type)

    def __call__(self, inputs: Sequence[Any], outer: Sequence[Any] = (), observe: Observer | None = None) -> list[Any]:
        plan = self._plan if observe is None else self._observed()
        values = filled(plan, inputs, outer)
        if observe is None and self.guard is not None:
            self.guard(self, values)
        elif observe is None:
            execute(values, plan.steps, self.name, quiet=plan.quiet)
        else:
            execute_observed(plan, values, observe, self.name)
        return [values[s] for s in plan.output_slots]

    def repeated(self, outer: Sequence[Any]) -> Callable[[Sequence[Any]], list[Any]]:
        """The body called again and again with the same ``outer`` values (a Loop's or Scan's
        iterations): ``run(inputs)`` is ``self(inputs, outer)``, except that the nodes that read
        only ``outer`` values and constants (``repeat.hoisting``) run once, at the first call, and their
        outputs are read by every call after; and that a MatMul or Gemm given the operands of its
        call before, bit for bit, gives that call's product again (``repeat.Remembered``): SLANet's
        decoder Loop carries its image features through the loop state as x + 0 and multiplies
        them by the same (96, 256) weights in each of its 501 steps. Under a budget guard every
        call runs the whole body, checked step by step."""
        if self.guard is not None:
            return lambda inputs: self(inputs, outer)
        return repeating(self._plan, self._hoisting, outer, self.name)

    def branch(self) -> Callable[[Sequence[Any]], Sequence[Any]]:
        """``self((), outer)`` as a function of ``outer`` alone: what an If calls for a branch (a
        branch takes no inputs). A branch whose outputs are outer values or constants passed on
        through Identity nodes only (silero's ``else`` of ``Identity(state)``) gives them back
        without running its plan: 0.7 us an If instead of 2; a branch of one step calls its kernel
        (1.3 us instead of 2.8 for one Squeeze); another runs its plan's steps straight. Under a
        budget guard, or a quiet plan called from outside one, a call is ``self((), outer)``."""
        plan = self._plan
        passed = _passed_through(plan)
        if passed is not None:

            def passing(outer: Sequence[Any]) -> Sequence[Any]:
                if self.guard is not None:
                    return self((), outer)
                return [value if index < 0 else outer[index] for index, value in passed]

            return passing
        single = _single_step(plan)
        if single is not None:
            arguments, positions = single
            wanted, quiet = len(plan.steps[0].outputs), plan.quiet

            def one_step(outer: Sequence[Any]) -> Sequence[Any]:
                if self.guard is not None or (quiet and not QUIET.get()):
                    return self((), outer)
                kernel, _, _, _, label, _, _ = plan.steps[0]
                try:
                    results = kernel(*[value if index < 0 else outer[index] for index, value in arguments])
                except OvpoolError:
                    raise
                except Exception as exc:  # numpy on inputs the node cannot take: said of the node
                    raise kernel_failure(label, exc) from exc
                if len(results) < wanted:
                    raise ModelError(f"{label}: gave {len(results)} outputs, the node names {wanted}")
                return [results[k] for k in positions]

            return one_step
        initial, outer_slots, output_slots, quiet = plan.initial, plan.outer_slots, plan.output_slots, plan.quiet

        def run(outer: Sequence[Any]) -> Sequence[Any]:
            if self.guard is not None or (quiet and not QUIET.get()):
                return self((), outer)
            values = initial.copy()
            for s, value in zip(outer_slots, outer):
                values[s] = value
            run_steps(values, plan.steps, True, self.name)
            return [values[s] for s in output_slots]

        return run

    @property
    def plan(self) -> Plan:
        """The plan an unobserved run follows (``ovpool.engine.budget`` accounts it)."""
        return self._plan

    def execute_steps(self, values: list[Any], steps: Sequence[Step]) -> None:
        """Run these steps of the plan on the slot values, freeing what each was the last to read."""
        execute(values, steps, self.name)

    @property
    def constant_outputs(self) -> tuple[bool, ...]:
        """For each output, whether it is a constant of the plan (the caller copies it before handing it out)."""
        return self._plan.constant_outputs

    def _observed(self) -> Plan:
        """The plan observed runs follow: every node as the model states it, no buffer reused."""
        if self._observed_plan is None:
            assert self._unfused is not None
            prepared, known = self._unfused
            self._observed_plan = build_plan(prepared, known, self, donate=False)
            self._unfused = None
        return self._observed_plan

    def output_types(self) -> list[tuple[np.dtype | None, tuple[int | None, ...] | None]]:
        """Each output's declared element type and dims (``None`` where not declared), found in the
        graph's outputs or, failing that, its value_info: what a Loop with no iteration stacks."""
        declared = {v.name: v for v in list(self._graph.value_info) + list(self._graph.input) + list(self._graph.output)}
        types = []
        for name in self.output_names:
            info = declared.get(name)
            tensor = info.type.tensor_type if info is not None and info.type.HasField("tensor_type") else None
            dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type) if tensor is not None and tensor.elem_type else None
            dims = None
            if tensor is not None and tensor.HasField("shape"):
                dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in tensor.shape.dim)
            types.append((None if dtype is None else np.dtype(dtype), dims))
        return types


def _passed_through(plan: Plan) -> list[tuple[int, Any]] | None:
    """For each output of a plan that takes no inputs and whose steps are all ``Identity``: the
    position of the outer value it is (-1 for a constant) and the constant (None for an outer
    value); None for any other plan. Outer values ``(a, b)`` with outputs ``Identity(b)`` and a
    constant ``k`` give ``[(1, None), (-1, k)]``."""
    if plan.input_slots:
        return None
    source: dict[int, tuple[int, Any]] = {s: (index, None) for index, s in enumerate(plan.outer_slots)}
    source.update((s, (-1, value)) for s, value in enumerate(plan.initial) if value is not None)
    for step in plan.steps:
        entry = plan.producers.get(step.outputs[0]) if len(step.outputs) == 1 else None
        if entry is None or entry.op.domain or entry.op.op_type != "Identity" or len(step.inputs) != 1:
            return None
        if step.inputs[0] not in source:
            return None
        source[step.outputs[0]] = source[step.inputs[0]]
    if any(s not in source for s in plan.output_slots):
        return None
    return [source[s] for s in plan.output_slots]


def _single_step(plan: Plan) -> tuple[list[tuple[int, Any]], list[int]] | None:
    """For a plan of one step that takes no inputs and whose outputs are all that step's: each
    argument of the step as (position of the outer value, -1 for a constant or an omitted input;
    the constant), and the step output each graph output is; None for any other plan. Outer
    values ``(x,)``, a step ``Squeeze(x, axes)`` giving the output: ``[(0, None), (-1, axes)]``, ``[0]``."""
    if plan.input_slots or len(plan.steps) != 1:
        return None
    (step,) = plan.steps
    where: dict[int, tuple[int, Any]] = {NONE: (-1, None)}
    where.update((s, (index, None)) for index, s in enumerate(plan.outer_slots))
    where.update((s, (-1, value)) for s, value in enumerate(plan.initial) if value is not None)
    if any(s not in where for s in step.inputs) or any(s not in step.outputs for s in plan.output_slots):
        return None
    return [where[s] for s in step.inputs], [step.outputs.index(s) for s in plan.output_slots]


def compile_graph(graph: GraphProto, opsets: Mapping[str, int], label: str) -> CompiledGraph:
    """``graph`` compiled on its own as a top-level graph (its initializers constants, the rest of its
    inputs called in ``input_names`` order): a kernel that runs an expansion of its node
    (``ovpool.engine.ops.quantized``)."""
    return CompiledGraph(graph, _Model(label, dict(opsets)), top=True)


class GraphSession:
    """An ONNX model prepared once for repeated runs on ovpool's numpy operators.

    ``output_names``/``input_names`` as the graph declares them (initializers are not inputs);
    ``reference_ops`` is always empty (deprecated: no node runs on onnx.reference since 0.2.0);
    ``folded_nodes`` the top-level nodes computed once, when prepared; ``inputs`` the inputs as ``TensorDecl`` (a dim_value of -1 or 0, as paddle2onnx
    and old exporters write a dynamic dim, is dynamic).
    """

    def __init__(self, model: str | os.PathLike | ModelProto) -> None:
        proto = load(model)
        if proto.functions:
            from onnx.inliner import inline_local_functions

            proto = inline_local_functions(proto)
        self.proto = proto
        self._label = f"model '{proto.graph.name}'"
        opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in proto.opset_import}
        self._model = _Model(self._label, opsets)
        self._graph = CompiledGraph(proto.graph, self._model, top=True)
        self.compiled = self._graph  # the top-level graph, for ovpool.engine.budget
        self.input_names: tuple[str, ...] = self._graph.input_names
        self._input_set = frozenset(self.input_names)
        self.output_names: tuple[str, ...] = self._graph.output_names
        self.reference_ops: tuple[str, ...] = ()
        self.folded_nodes: tuple[str, ...] = self._graph.folded

    @property
    def inputs(self) -> tuple[TensorDecl, ...]:
        """The inputs as declared (``ovpool.tensors.onnx_inputs``: -1 and 0 dims are dynamic)."""
        return onnx_inputs(self.proto)

    def run(self, inputs: Mapping[str, Any], observe: Observer | None = None) -> dict[str, Any]:
        """``{output name: array}`` in graph output order, each the caller's own (a constant of the
        plan, or a read-only array such as the shape values a plan keeps, is copied).
        ``observe(node, outputs)``, if given, is called after each node of the top-level graph in
        plan order (folded nodes included)."""
        if inputs.keys() != self._input_set:  # the names checked in 0.2 us when they are the model's
            mismatch = name_mismatch(self.input_names, inputs)
            if mismatch:
                raise ModelError(f"{self._label}: {mismatch} (the model takes {', '.join(self.input_names)})")
        token = fix_budget()  # as ``with run_budget()``, in less time
        try:
            values = self._graph([_as_value(inputs[n]) for n in self.input_names], observe=observe)
        finally:
            release_budget(token)
        return {
            name: value.copy() if isinstance(value, np.ndarray) and (constant or not value.flags.writeable) else value
            for name, value, constant in zip(self.output_names, values, self._graph.constant_outputs)
        }

    # ``Executor`` (ovpool.engine.session): what callers ask of either front end

    def trace(self, inputs: Mapping[str, Any], observe: StepObserver) -> dict[str, Any]:
        """``run`` observed, each node as a ``Step`` (``onnx_step``)."""
        return self.run(inputs, observe=lambda node, outputs: observe(onnx_step(node), outputs))

    def peak(self, inputs: Mapping[str, Any], sizes: budget.Sizes | None = None) -> budget.Peak:
        """``budget.plan_peak`` of the top-level graph beside ``budget.session_bytes``, at the
        ``sizes`` inference gave (none: only the constants and ``inputs`` are sized) with the fed
        ``inputs``' own (``budget.with_inputs``)."""
        known = budget.Sizes({}, {}) if sizes is None else budget.Sizes(dict(sizes.bytes), dict(sizes.itemsize))
        known = budget.with_inputs(known, self.input_names, inputs)
        return budget.plan_peak(self.compiled, known, budget.session_bytes(self))

    @property
    def quanta(self) -> dict[str, np.ndarray]:
        """``quanta.onnx_quanta`` of the model."""
        return onnx_quanta(self.proto)

    def quantized_views(self) -> dict[str, str]:
        """``quanta.onnx_views`` of the model."""
        return onnx_views(self.proto)

    @property
    def step_count(self) -> int:
        """The top-level nodes, each a step of ``trace``."""
        return len(self.proto.graph.node)


def _as_value(value: Any) -> Any:
    return value if isinstance(value, (np.ndarray, list)) or value is None else np.asarray(value)


def _call(kernel: Kernel, args: list[Any], label: str, n_outputs: int) -> tuple[Any, ...]:
    """A kernel run at prepare time (folding), its failures said of the node."""
    try:
        results = kernel(*args)
    except OvpoolError:
        raise
    except Exception as exc:
        raise kernel_failure(label, exc) from exc
    if len(results) < n_outputs:
        raise ModelError(f"{label}: gave {len(results)} outputs, the node names {n_outputs}")
    return tuple(results)


def _trimmed(names: Iterable[str]) -> tuple[str, ...]:
    """Names without the trailing omitted ones: ``("x", "", "")`` -> ``("x",)``."""
    names = tuple(names)
    end = len(names)
    while end and not names[end - 1]:
        end -= 1
    return names[:end]


def _node_name(node: NodeProto) -> str:
    return node.name or next((o for o in node.output if o), node.op_type)


def _node_label(node: NodeProto) -> str:
    return f"node '{_node_name(node)}' ({node.op_type})"


def _subgraph_free_names(node: NodeProto) -> frozenset[str]:
    """Names a node's subgraphs read from the graphs around them (they are inputs of the node too)."""
    names: set[str] = set()
    for attribute in node.attribute:
        if attribute.type == AttributeProto.GRAPH:
            names |= _graph_free_names(attribute.g)
        elif attribute.type == AttributeProto.GRAPHS:
            for graph in attribute.graphs:
                names |= _graph_free_names(graph)
    return frozenset(names)


def _graph_free_names(graph: GraphProto) -> set[str]:
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    defined |= {t.values.name for t in graph.sparse_initializer}
    defined |= {o for node in graph.node for o in node.output}
    read = {o.name for o in graph.output}
    for node in graph.node:
        read.update(node.input)
        read |= _subgraph_free_names(node)
    return read - defined - {""}


def _drawing(entry: Prepared) -> bool:
    """Whether a node draws at random, itself or in a subgraph (``repeat.hoisting`` leaves it in the body)."""
    return traits(entry.op.op_type, entry.op.since, entry.op.domain).random or any(
        _draws_random(a.g) for a in entry.node.attribute if a.type == AttributeProto.GRAPH
    )


def _draws_random(graph: GraphProto) -> bool:
    return any(
        traits_named(node.op_type).random or any(_draws_random(a.g) for a in node.attribute if a.type == AttributeProto.GRAPH)
        for node in graph.node
    )


def _topological_order(
    nodes: Sequence[NodeProto], frees: Sequence[frozenset[str]], defined: set[str], outer: frozenset[str]
) -> list[int]:
    """Node indices with every producer before its consumers, graph order kept where it is free.
    A name produced twice, an input nothing produces, or a cycle is the model's error."""
    producer: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            if not name:
                continue
            if name in producer:
                raise ModelError(f"{_node_label(node)}: output '{name}' is also produced by {_node_label(nodes[producer[name]])}")
            if name in defined:
                raise ModelError(f"{_node_label(node)}: output '{name}' is also a graph input or initializer")
            producer[name] = index
    consumers: list[list[int]] = [[] for _ in nodes]
    waiting = [0] * len(nodes)
    for index, node in enumerate(nodes):
        needed = {name for name in node.input if name} | frees[index]
        for name in sorted(needed):
            source = producer.get(name)
            if source is not None:
                consumers[source].append(index)
                waiting[index] += 1
            elif name not in defined and name not in outer:
                raise ModelError(
                    f"{_node_label(node)}: input '{name}' is not produced by any node, nor a graph input or initializer"
                )
    ready = [index for index, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for consumer in consumers[index]:
            waiting[consumer] -= 1
            if waiting[consumer] == 0:
                heapq.heappush(ready, consumer)
    if len(order) < len(nodes):
        stuck = min(index for index, count in enumerate(waiting) if count)
        raise ModelError(f"{_node_label(nodes[stuck])} is on a cycle: its inputs depend on its own outputs")
    return order


def __getattr__(name: str) -> Any:
    """``RANDOM_OPS`` and ``REMEMBERED_OPS``, the operators of the ``random`` and ``remembered``
    traits once typed here: derived from the registrations (deprecated; read ``Traits``)."""
    if name == "RANDOM_OPS":
        return deprecated_table(__name__, name, named_with(lambda t: t.random))
    if name == "REMEMBERED_OPS":
        return deprecated_table(__name__, name, named_with(lambda t: t.remembered))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
