"""What a model may ask of an executor, checked before the executor allocates or compiles.

* The memory budget (``ovpool.memory``) on every tensor whose dims are known: at session start
  those shape inference makes static (ONNX) or OpenVINO's static outputs; at run time, for a model
  with dynamic inputs, those that the fed input shapes make static (a Tile of an input
  ``[N, 4096]`` fed ``[40000, 4096]`` and repeated 10 times along axis 0: 6.1 GiB, refused).
* OpenVINO's 32-bit window attributes (``WINDOW_ATTRIBUTES``), on every operation.
* What kills OpenVINO CPU's ``compile_model`` (a Gather of empty indices), on CPU devices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, TypeProto, ValueInfoProto
from onnx.checker import ValidationError
from onnx.external_data_helper import load_external_data_for_tensor

from ovpool import dtypes, shape
from ovpool.defects import OPENVINO_CPU, Defect, VersionRange
from ovpool.engine import budget
from ovpool.engine.budget import Guard
from ovpool.engine.graph import GraphSession
from ovpool.engine.session import Executor
from ovpool.errors import ModelError, OvpoolError
from ovpool.memory import check_bytes, check_tensor, format_bytes
from ovpool.onnx.model import inferred_types
from ovpool.spec import MAX_WINDOW
from ovpool.tensors import stand_in

# OpenVINO attributes that size a window (convolution, pooling, patches); each value must fit in
# 32 bits (``check_ov_windows``).
WINDOW_ATTRIBUTES = frozenset({"kernel", "strides", "dilations", "pads_begin", "pads_end", "output_padding", "sizes", "rates"})
# Initializers up to this many elements keep their values in the model that run-time shape
# inference reads (shape constants that data propagation follows); larger ones only their dims.
SMALL_INITIALIZER = 64


Types = dict[str, tuple[str | None, tuple[int | None, ...] | None]]


def check_onnx_budget(proto: ModelProto, label: str, data_prop: bool = False) -> Types:
    """Every tensor of the model whose dims shape inference makes static (initializers, inputs,
    intermediate values) within the memory budget, before the numpy executor allocates any; the
    types inference gave (``ovpool.onnx.model.inferred_types``, every element type the numpy
    executor holds: a string tensor counts ``dtypes.STRING_ITEMSIZE`` bytes an element)."""
    types = inferred_types(proto, data_prop=data_prop, every_type=True)
    for name, (dtype, dims) in types.items():
        if dtype is not None and dims is not None and shape.is_static(dims) and min(dims, default=0) >= 0:
            try:
                check_tensor(f"tensor '{name}'", dims, dtype)
            except OvpoolError as exc:
                raise exc.located(label) from None
    return types


def check_ov_budget(ov_model: Any, label: str) -> None:
    """Every static output of the converted or read model within the memory budget, before OpenVINO
    compiles it (its CPU plugin allocates static tensors when it compiles)."""
    for op in ov_model.get_ordered_ops():
        for index in range(op.get_output_size()):
            partial = op.get_output_partial_shape(index)
            dtype = dtypes.from_ov_type(op.get_output_element_type(index))
            if dtype is None or not partial.is_static:
                continue
            names = op.output(index).get_names()
            what = f"tensor '{min(names) if names else op.get_friendly_name()}'"
            try:
                check_tensor(what, [d.get_length() for d in partial], dtype)
            except OvpoolError as exc:
                raise exc.located(label) from None


# What an OpenVINO run holds, in copies of each kind of tensor (``check_ov_run``): an input as fed,
# the infer request's copy and the plugin's reordered one; an output in the plugin, the request and
# as returned; weights in the read model and the compiled one; and the intermediates live at once
# (each from the operation that writes it to the last that reads it, along OpenVINO's order: the
# plugin reuses the buffers of the others), three times over for the plugin's reorders and
# scratch. Measured with OpenVINO CPU beyond the interpreter's fixed cost, three MaxPools k3 s1
# over [1, 16, 1024, 384] float32 (24 MiB each) hold 221 MiB (counted: 288), twelve over [1, 16,
# 512, 256] (8 MiB each) 78 MiB (counted: 96), one over 24 MiB 166 MiB (counted: 216).
OV_COPIES = {"inputs": 3, "outputs": 3, "weights": 2, "intermediates": 3}
# The CPU plugin's blocked layouts (nChw16c) pad the channels of a tensor of rank 3 or more to a
# multiple of this: six channels take the room of 16 (the three MaxPools over 6 channels: 294 MiB;
# over [1, 2, 4096, 2048], 64 MiB each, 1294 MiB). A single channel stays planar (over [1, 1,
# 4096, 4096]: 397 MiB).
OV_CHANNEL_BLOCK = 16


def check_ov_run(ov_model: Any, label: str, fed: int | None = None) -> int:
    """The bytes an OpenVINO run of ``ov_model`` holds by ``OV_COPIES``, within the memory budget
    before it compiles (and again before a run of dynamic inputs, ``fed`` their bytes): a MaxPool
    k2 s2 reading [1, 16, 1024, 1024] float32 (64 MiB) and writing 16 MiB holds 3 * 64 + 3 * 16 + 3
    * 16 = 288 MiB, refused under ``--max-memory 256M``. Static sizes only: a dynamic input counts
    ``fed`` (0 before a run), a dynamic intermediate nothing. Returns the bytes counted."""
    parts = dict.fromkeys(OV_COPIES, 0)
    ops = list(ov_model.get_ordered_ops())
    written: dict[tuple[str, int], list[int]] = {}  # intermediate -> [bytes, step writing it, last step reading it]
    for index, op in enumerate(ops):
        for port in op.inputs():
            source = port.get_source_output()
            read = written.get((source.get_node().get_name(), source.get_index()))
            if read is not None:
                read[2] = index
        kind = {"Parameter": "inputs", "Constant": "weights", "Result": "outputs"}.get(op.get_type_name(), "intermediates")
        if kind == "outputs":
            parts[kind] += _ov_bytes(op.input(0), padded=False)
            continue
        for port in (op.output(i) for i in range(op.get_output_size())):
            size = _ov_bytes(port, padded=kind == "intermediates")
            if kind == "intermediates":
                written[(op.get_name(), port.get_index())] = [size, index, index]
            else:
                parts[kind] += size
    parts["intermediates"] = live_peak([(size, first, last) for size, first, last in written.values()], len(ops))
    if fed is not None:
        parts["inputs"] = max(parts["inputs"], fed)
    needed = sum(OV_COPIES[kind] * size for kind, size in parts.items())
    shown = ", ".join(f"{OV_COPIES[k]} x {format_bytes(v)} {k}" for k, v in parts.items() if v)
    try:
        return check_bytes(f"OpenVINO's copies of the run's tensors ({shown}) would need", needed)
    except OvpoolError as exc:
        raise exc.located(label) from None


def _ov_bytes(port: Any, padded: bool) -> int:
    """Bytes of an OpenVINO port's tensor (0 when its shape is dynamic); ``padded``: its channels,
    if more than one, in blocks of ``OV_CHANNEL_BLOCK`` ([1, 6, 8, 8] float32: 4096 bytes)."""
    partial = port.get_partial_shape()
    if not partial.is_static:
        return 0
    dtype = dtypes.from_ov_type(port.get_element_type())
    dims = [d.get_length() for d in partial]
    if padded and len(dims) >= 3 and dims[1] > 1:
        dims[1] = -(-dims[1] // OV_CHANNEL_BLOCK) * OV_CHANNEL_BLOCK
    return shape.tensor_bytes(dims, dtypes.itemsize(dtype) if dtype else 1)


def live_peak(tensors: Sequence[tuple[int, int, int]], steps: int) -> int:
    """The most bytes live at once of tensors given as (bytes, step writing it, last step reading
    it), over ``steps`` steps: 8 bytes live over steps 1-3 and 4 bytes over 2-2 peak at 12."""
    change = [0] * (steps + 1)
    for size, first, last in tensors:
        change[first] += size
        change[last + 1] -= size
    peak = live = 0
    for delta in change:
        live += delta
        peak = max(peak, live)
    return peak


def check_ov_windows(ov_model: Any, label: str, proto: ModelProto | None = None) -> None:
    """Every window attribute (``WINDOW_ATTRIBUTES``) of every operation, pooling or not, within
    ``MAX_WINDOW`` before OpenVINO compiles it: its CPU plugin holds them in 32 bits, and a stride of
    2**32 wraps to 0 and kills the process with SIGFPE (a GroupConvolution or MaxPool with strides
    4294967296 and SAME padding). An IR's pooling layers are checked by the spec too; this catches
    the rest: ``GroupConvolution 'conv': attribute 'strides' = [4294967296, 1]`` for an IR layer,
    ``node 'conv' (Conv, OpenVINO GroupConvolution): ...`` when ``proto``, the ONNX model OpenVINO
    converted, has the node that writes the operation's output."""
    writers = {out: node for node in proto.graph.node for out in node.output} if proto is not None else {}
    for op in ov_model.get_ordered_ops():
        if op.get_type_name() in ("Constant", "Parameter", "Result"):
            continue
        for name, value in op.get_attributes().items():
            if (
                name in WINDOW_ATTRIBUTES
                and isinstance(value, list)
                and any(isinstance(v, int) and abs(v) > MAX_WINDOW for v in value)
            ):
                raise ModelError.in_file(
                    label,
                    f"{_ov_op_where(op, writers)}: attribute '{name}' = {list(value)}: must be within "
                    "+-(2**31-1) (OpenVINO's plugins hold window sizes in 32-bit integers)",
                )


def _empty_indices(op: Any) -> str | None:
    """A Gather whose indices have a static shape with a zero dim (``[0, 2]``): their shape's text."""
    if op.get_type_name() != "Gather" or op.get_input_size() < 2:
        return None
    indices = op.input(1).get_partial_shape()
    if indices.rank.is_static and any(d.is_static and d.get_length() == 0 for d in indices):
        return f"indices of shape {indices}"
    return None


CPU_CRASHES: tuple[Defect, ...] = (
    Defect(
        OPENVINO_CPU,
        ("Gather",),
        VersionRange(1),
        "empty indices of a static shape (from a Parameter; ovpool's conversion rewrites constant ones)",
        "compile_model dies of SIGFPE (Floating point exception) on empty indices",
        "an empty result",
        condition=_empty_indices,
        repro="tests/test_hostile_input.py::test_an_ir_gather_of_empty_indices_never_reaches_the_cpu_plugin",
    ),
)
"""OpenVINO CPU's rows that kill the process: ``condition`` takes an OpenVINO operation and gives
its text where it crashes (None: it compiles); ``check_ov_cpu_crashes`` refuses them. The rows of
the data it computes otherwise on are ``ovpool.ov.cpu_deviations.DEVIATIONS``."""


def check_ov_cpu_crashes(ov_model: Any, label: str, proto: ModelProto | None = None) -> None:
    """Refuse, before OpenVINO CPU compiles it, a model its ``compile_model`` dies on (a row of
    ``CPU_CRASHES``): a Gather whose indices have a static shape with a zero dim (indices ``[0, 2]``
    from a Parameter): ``Gather 'g': indices of shape [0, 2]: ...``, or the ONNX node when ``proto``
    has it. (ovpool's own conversion rewrites such a Gather, ``ovpool.ov.translate``.)"""
    writers = {out: node for node in proto.graph.node for out in node.output} if proto is not None else {}
    for op in ov_model.get_ordered_ops():
        for row in CPU_CRASHES:
            if op.get_type_name() not in row.ops or row.condition is None:
                continue
            found = row.condition(op)
            if found is not None:
                raise ModelError.in_file(label, f"{_ov_op_where(op, writers)}: {found}: OpenVINO CPU's {row.does}")


def _ov_op_where(op: Any, writers: Mapping[str, NodeProto]) -> str:
    """An OpenVINO operation as an error names it: the ONNX node that writes one of its outputs
    when there is one, else the operation's type and name."""
    names = sorted(n for i in range(op.get_output_size()) for n in op.output(i).get_names())
    node = next((writers[n] for n in names if n in writers), None)
    if node is not None:
        return f"node '{node.name or node.output[0]}' ({node.op_type}, OpenVINO {op.get_type_name()})"
    return f"{op.get_type_name()} '{op.get_friendly_name()}'"


def dynamic_inputs(proto: ModelProto) -> bool:
    """Whether a graph input (not an initializer) has a dim that shape inference cannot know."""
    initializers = {t.name for t in proto.graph.initializer}
    for info in proto.graph.input:
        if info.name in initializers or not info.type.HasField("tensor_type"):
            continue
        tensor_type = info.type.tensor_type
        if not tensor_type.HasField("shape") or any(not d.HasField("dim_value") for d in tensor_type.shape.dim):
            return True
    return False


class RunBudget:
    """``check_run_budget`` for every session that runs an ONNX model (numpy, OpenVINO,
    onnxruntime), once per set of input shapes fed; nothing to do when no input is dynamic.
    With ``session`` (the numpy executor's), the whole run too (``ovpool.engine.budget``): its
    plan's peak at the declared shapes when the session opens (``types``, what inference gave
    then), before any input is drawn or read, and at each other set of shapes fed."""

    def __init__(
        self,
        proto: ModelProto | None,
        label: str,
        folder: Path | None = None,
        session: GraphSession | None = None,
        types: Types | None = None,
    ) -> None:
        self._proto = proto if proto is not None and (session is not None or dynamic_inputs(proto)) else None
        self._label = label
        self._folder = folder
        self._session = session
        self._checked: dict[tuple[tuple[str, Any], ...], Guard | None] = {}
        if session is not None and types is not None and self._proto is not None and not dynamic_inputs(self._proto):
            sizes = budget.tensor_sizes(types)
            key = tuple(sorted((d.name, tuple(int(v or 0) for v in d.shape or ())) for d in session.inputs))
            self._checked[key] = budget.check_plan(session, sizes, label)
            budget.guard_bodies(session)

    def check(self, inputs: Mapping[str, Any]) -> None:
        """The tensors the shapes of ``inputs`` make static within the budget, before a run (and
        the numpy session's whole run, its run-time ``Guard`` set for those shapes)."""
        if self._proto is None:
            return
        key = tuple(sorted((name, fed_shape(value)) for name, value in inputs.items()))
        if key not in self._checked:
            shapes = {name: dims for name, dims in key if not _is_sequence(inputs[name])}
            types = check_run_budget(self._proto, shapes, self._label, self._folder)
            guard = None
            if self._session is not None:
                sizes = budget.with_inputs(budget.tensor_sizes(types), self._session.input_names, inputs)
                guard = budget.check_plan(self._session, sizes, self._label)
                budget.guard_bodies(self._session)
            self._checked[key] = guard
        if self._session is not None:
            self._session.compiled.guard = self._checked[key]


class PlanBudget:
    """``budget.check_peak`` for an executor whose plan sizes its tensors itself (an IR graph: by
    the dims its ports declare), once per set of input shapes fed; at once, at stand-ins of the
    declared shapes, when every input is static."""

    def __init__(self, executor: Executor, label: str) -> None:
        self._executor = executor
        self._label = label
        self._checked: set[tuple[tuple[str, tuple[int, ...]], ...]] = set()
        if all(d.shape is not None and None not in d.shape for d in executor.inputs):
            self.check({d.name: stand_in(d.dtype, cast("tuple[int, ...]", d.shape)) for d in executor.inputs})

    def check(self, inputs: Mapping[str, Any]) -> None:
        """The run of ``inputs`` (their shapes and dtypes: stand-ins do) within the budget."""
        key = tuple(sorted((name, np.shape(value)) for name, value in inputs.items()))
        if key not in self._checked:
            budget.check_peak(self._executor, inputs, self._label)
            self._checked.add(key)


def fed_shape(value: Any) -> Any:
    """A fed value's shape as ``RunBudget`` tells one run from another: a tensor's dims, a
    sequence's tuple of its tensors' dims (``[zeros((2, 3)), zeros(4)]`` -> ``((2, 3), (4,))``),
    an empty optional's None ``()``."""
    if _is_sequence(value):
        return tuple(fed_shape(item) for item in value)
    return tuple(np.shape(value)) if value is not None else ()


def _is_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def check_run_budget(proto: ModelProto, shapes: Mapping[str, tuple[int, ...]], label: str, folder: Path | None = None) -> Types:
    """``check_onnx_budget`` again with the graph inputs' dims set to ``shapes`` (the arrays fed):
    the tensors those dims make static within the budget before the run allocates any; the types
    inference gave. Input ``x: [N, 4096]`` fed ``[40000, 4096]`` into ``Tile(x, [10, 1])``:
    ``tensor 'y' [400000, 4096] float32 would need 6.1 GiB``. Large initializers go in as typed
    inputs without data; small ones keep their values, read from ``folder`` when they are external data."""
    graph = GraphProto(name=proto.graph.name, node=proto.graph.node, output=proto.graph.output)
    initializers = {t.name for t in proto.graph.initializer}
    for info in proto.graph.input:
        if info.name not in initializers:
            graph.input.append(_pinned(info, shapes.get(info.name)))
    for tensor in proto.graph.initializer:
        small = _small(tensor, folder) if math.prod(tensor.dims) <= SMALL_INITIALIZER else None
        if small is not None:
            graph.initializer.append(small)
        else:
            graph.input.append(_typed(tensor))
    light = ModelProto(ir_version=proto.ir_version, opset_import=proto.opset_import, graph=graph, functions=proto.functions)
    return check_onnx_budget(light, label, data_prop=True)


def _small(tensor: TensorProto, folder: Path | None) -> TensorProto | None:
    """A small initializer with its values: itself, or a copy with its external data read from
    ``folder`` (None when that cannot be read; the structural check has named such data already)."""
    if tensor.data_location != TensorProto.EXTERNAL:
        return tensor
    if folder is None:
        return None
    loaded = TensorProto()
    loaded.CopyFrom(tensor)
    try:
        load_external_data_for_tensor(loaded, str(folder))
    except (OSError, ValueError, ValidationError):
        return None
    return loaded


def _pinned(info: ValueInfoProto, dims: tuple[int, ...] | None) -> ValueInfoProto:
    """``info`` with its dims set to ``dims`` (unchanged when the input is not fed or has no tensor type)."""
    pinned = ValueInfoProto()
    pinned.CopyFrom(info)
    if dims is not None and pinned.type.HasField("tensor_type"):
        tensor_shape = pinned.type.tensor_type.shape
        tensor_shape.ClearField("dim")
        for d in dims:
            tensor_shape.dim.add().dim_value = d
    return pinned


def _typed(tensor: TensorProto) -> ValueInfoProto:
    """An initializer as a graph input of its type and dims, without its data."""
    value_type = TypeProto()
    value_type.tensor_type.elem_type = tensor.data_type
    for d in tensor.dims:
        value_type.tensor_type.shape.dim.add().dim_value = d
    return ValueInfoProto(name=tensor.name, type=value_type)
