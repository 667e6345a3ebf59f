"""Where OpenVINO CPU computes other values than ONNX on some data only: one table, ``DEVIATIONS``.

These depend on the values fed (a NaN, a tie, an overflow), so ovpool does not refuse the
operators: it writes them, ``docs/semantics.md`` lists them, and ``ovpool convert --verify`` (or
``ovpool compare``) catches them on the user's own data. None passes silently where the conversion
can see it: each row's ``condition`` (``detect``) finds the nodes that can meet its data (a NonMaxSuppression, an
integer Resize, a float64 input...) and the conversion warns once per node (``warn_deviations``:
``model.onnx: node 'nms' (NonMaxSuppression): OpenVINO CPU computes otherwise on equal scores,
IoU exactly at the threshold: ...``). Two rows have no detector, and say so in the table: NaN or
Inf values (any float op can meet one) and Softplus's 2e-6 below -20 (inside ``--verify``'s
default tolerance). Each row
names the operators, the data that shows it, what OpenVINO CPU 2026.4.1 gives at f32 and what
ONNX (and onnxruntime) gives, with the figure of a one-node repro (``tests/ops/openvino_known.py``
holds the repros, ``tests/ops/test_openvino_known.py`` checks they still differ so). The
conversion defects seen at convert time are ``ovpool.ov.translate.table.DEFECTS``, and so are the
departures on data that ovpool's conversion computes exactly (``ovpool.ov.value_fixes``: TopK and
Hardmax ties, TopK's K = 0 fed at run time, NaN in Greater and Cast to BOOL, 8-bit overflow...), which are not listed here.

``python -m ovpool.ov.cpu_deviations`` prints the README's table (``readme_table``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator

from onnx import GraphProto, ModelProto, NodeProto, TensorProto

from ovpool.defects import OPENVINO_CPU, Defect, VersionRange
from ovpool.onnx.facts import ModelFacts, attribute, attributes
from ovpool.onnx.graphs import graphs

INT32 = (-(2**31), 2**31 - 1)


class CpuDeviationWarning(UserWarning):
    """A node OpenVINO CPU may compute otherwise than ONNX on some data (``DEVIATIONS``)."""


class _Types:
    """A model's graphs (the main one and every body, walked once), its default-domain nodes by op
    type, and the element types (``TensorProto`` codes) of its tensors: those declared (inputs,
    outputs, value_info, initializers, Constant and Cast outputs), and, on the first name that none
    declares, ONNX shape inference's (``ModelFacts.inferred``: once for the whole conversion)."""

    def __init__(self, proto: ModelProto, facts: ModelFacts | None = None) -> None:
        self._facts = facts if facts is not None else ModelFacts(proto, proto.graph.name or "model")
        self._known: dict[str, int] = {}
        self._inferred = False
        self.graphs = self._facts.subgraphs
        self.by_type = self._facts.nodes_by_op
        for graph in self.graphs:
            self._declare(graph)

    def nodes(self, *op_types: str) -> Iterator[NodeProto]:
        """The default-domain nodes of these op types, in any graph."""
        for op_type in op_types:
            yield from self.by_type.get(op_type, ())

    def _declare(self, graph: GraphProto) -> None:
        for info in list(graph.input) + list(graph.output) + list(graph.value_info):
            if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type:
                self._known[info.name] = info.type.tensor_type.elem_type
        for tensor in graph.initializer:
            self._known[tensor.name] = tensor.data_type
        for node in graph.node:
            if node.op_type == "Cast" and node.output:
                self._known[node.output[0]] = attribute(node, "to", 0)
            elif node.op_type == "Constant" and node.output:
                value = attribute(node, "value")
                if value is not None:
                    self._known[node.output[0]] = value.data_type

    def of(self, name: str) -> int:
        """The element type of ``name`` (0 when not even inference knows it)."""
        if name not in self._known and not self._inferred:
            self._inferred = True
            inferred = self._facts.inferred
            if inferred is None:
                return 0
            for graph in graphs(inferred.graph):
                self._declare(graph)
        return self._known.get(name, 0)


Detector = Callable[[ModelProto, _Types], Iterator[str]]


def _where(node: NodeProto) -> str:
    return f"node '{node.name or node.output[0]}' ({node.op_type})"


def _constants(types: _Types) -> dict[str, TensorProto]:
    """Every constant tensor by name: initializers, and Constant nodes' ``value``, or their
    ``value_int`` / ``value_ints`` as the int64 tensor they stand for (Constant-12+)."""
    from onnx import helper

    found: dict[str, TensorProto] = {}
    for graph in types.graphs:
        found.update((t.name, t) for t in graph.initializer)
    for node in types.nodes("Constant"):
        if not node.output:
            continue
        for name, value in attributes(node).items():
            if name == "value":
                found[node.output[0]] = value
            elif name == "value_int":
                found[node.output[0]] = helper.make_tensor("", TensorProto.INT64, [], [value])
            elif name == "value_ints":
                found[node.output[0]] = helper.make_tensor("", TensorProto.INT64, [len(value)], list(value))
    return found


def _gemm_beta_zero(_proto: ModelProto, types: _Types) -> Iterator[str]:
    """A Gemm with beta = 0 and a C: OpenVINO computes 0 * C, NaN where C holds NaN or Inf."""
    for node in types.nodes("Gemm"):
        beta = attribute(node, "beta", 1.0)
        if beta == 0 and len(node.input) > 2 and node.input[2]:
            yield _where(node)


def _typed(op_types: tuple[str, ...], codes: frozenset[int]) -> Detector:
    """Nodes of ``op_types`` whose first input has one of the element types ``codes``."""

    def detect(proto: ModelProto, types: _Types) -> Iterator[str]:
        for node in types.nodes(*op_types):
            if node.input and types.of(node.input[0]) in codes:
                yield _where(node)

    return detect


def _wide_int64(proto: ModelProto, types: _Types) -> Iterator[str]:
    """int64 constants beyond int32 read by a node (Slice's starts and ends excepted: OpenVINO reads
    constant sentinels right), and Slice starts/ends fed by a graph input."""
    from onnx import numpy_helper

    constants = _constants(types)
    wide = set()
    for name, tensor in constants.items():
        if tensor.data_type == TensorProto.INT64 and tensor.data_location != TensorProto.EXTERNAL:
            values = numpy_helper.to_array(tensor)
            if values.size and (values.min() < INT32[0] or values.max() > INT32[1]):
                wide.add(name)
    fed = {i.name for i in proto.graph.input} - {t.name for t in proto.graph.initializer}
    readers = (node for graph in types.graphs for node in graph.node) if wide else types.nodes("Slice")
    for node in readers:
        bounds = node.input[1:3] if node.op_type == "Slice" else []
        if any(name in fed for name in bounds) or any(name in wide and name not in bounds for name in node.input):
            yield _where(node)


def _float64(proto: ModelProto, types: _Types) -> Iterator[str]:
    """One line for a model holding float64 tensors: its first float64 input, initializer or Cast."""
    for info in proto.graph.input:
        if types.of(info.name) == TensorProto.DOUBLE:
            yield f"input '{info.name}' (float64)"
            return
    for node in types.nodes("Cast", "Constant"):
        if types.of(node.output[0]) == TensorProto.DOUBLE:
            yield _where(node)
            return
    for tensor in proto.graph.initializer:
        if tensor.data_type == TensorProto.DOUBLE:
            yield f"initializer '{tensor.name}' (float64)"
            return


def _integer_resize(proto: ModelProto, types: _Types) -> Iterator[str]:
    """Resize and Upsample of integer data in linear or cubic mode."""
    integers = frozenset({2, 3, 4, 5, 6, 7, 12, 13})
    for node in types.nodes("Resize", "Upsample"):
        mode = attribute(node, "mode", "nearest")
        if mode != "nearest" and node.input and types.of(node.input[0]) in integers:
            yield _where(node)


def _every(*op_types: str) -> Detector:
    def detect(_proto: ModelProto, types: _Types) -> Iterator[str]:
        yield from (_where(node) for node in types.nodes(*op_types))

    return detect


def _runtime_scale(_proto: ModelProto, types: _Types) -> Iterator[str]:
    """DynamicQuantizeLinear, and QuantizeLinear whose scale or zero point is not a constant:
    ``ovpool.ov.value_fixes.quantize_by_formula`` divides by OpenVINO CPU's Divide there (with
    constant ones the exact forms of ``ovpool.ov.quantized`` or OpenVINO's FakeQuantize apply,
    docs/semantics.md's quantization section)."""
    constants = _constants(types)
    yield from (_where(node) for node in types.nodes("DynamicQuantizeLinear"))
    for node in types.nodes("QuantizeLinear"):
        if any(name and name not in constants for name in node.input[1:3]):
            yield _where(node)


Deviation = Defect  # the row type's name before ``ovpool.defects`` held every table's


def _deviation(
    ops: str, when: str, cpu: str, onnx: str, detect: Detector | None = None, unwarned: str = "", named: str = ""
) -> Defect:
    """OpenVINO CPU gives ``cpu`` where ONNX gives ``onnx``, for ``ops`` (comma-separated; ``*``:
    any op, ``named`` says how the table names them) on the data ``when``, at every version;
    ``detect`` finds the nodes that can meet ``when``, ``unwarned`` says why a row without one warns
    of no node."""
    return Defect(
        OPENVINO_CPU,
        tuple(ops.split(", ")),
        VersionRange(1),
        when,
        cpu,
        onnx,
        condition=detect,
        named=named,
        unwarned=unwarned,
    )


DEVIATIONS: tuple[Defect, ...] = (
    _deviation(
        "Relu, Celu, HardSigmoid, Exp, Gelu, Shrink, ThresholdedRelu",
        "NaN or +-Inf values",
        "Relu/Celu/HardSigmoid(NaN) 0/0/1, Exp(NaN) inf, Gelu(inf) NaN, Shrink/ThresholdedRelu(NaN) NaN",
        "NaN stays NaN, Gelu(inf) is inf (onnxruntime: 0 for Shrink and ThresholdedRelu of NaN)",
        unwarned="any float node can meet a NaN",
    ),
    _deviation(
        "Gemm",
        "beta = 0 with NaN or Inf in C",
        "0 * NaN = NaN (the schema's formula)",
        "onnxruntime leaves C unread (BLAS)",
        _gemm_beta_zero,
    ),
    _deviation(
        "BitShift", "uint64 values beyond 32 bits", "(2**40 + 3) >> 1 = 1", "2**39 + 1", _typed(("BitShift",), frozenset({13}))
    ),
    _deviation(
        "*",
        "int64 values beyond int32 (Slice starts/ends from a graph input, constants)",
        "computed in int32: Slice [0:INT64_MAX] of 5 values gives 4; a Constant 2**40 is 2147483647",
        "5 values; 2**40",
        _wide_int64,
        named="any op",
    ),
    _deviation(
        "*", "float64 data", "computed in float32: 1e300 is inf, precision is float32's", "float64", _float64, named="any op"
    ),
    _deviation(
        "NonMaxSuppression",
        "equal scores, IoU exactly at the threshold",
        "other boxes or order (-0.0 and 0.0 scores: 1 box)",
        "3 boxes (onnxruntime)",
        _every("NonMaxSuppression"),
    ),
    _deviation(
        "ReduceMax, ReduceMin",
        "an axis of length 0 in int64 or uint32, or in dims not static when converting",
        "-FLT_MAX / INT32_MIN (and the max ones)",
        "-inf / INT64_MIN",
        _typed(("ReduceMax", "ReduceMin"), frozenset({TensorProto.INT64, TensorProto.UINT32})),
    ),
    _deviation(
        "Flatten",
        "a zero dim in dims not static when converting",
        "Flatten(axis=2) of [4, 1, 2, 0] is [4, 1]",
        "[4, 0]",
        unwarned="every Flatten of dynamic dims could; static zero dims are lowered exactly",
    ),
    _deviation(
        "BitShift, Expand",
        "a rank-0 result",
        "shape [1]",
        "shape []",
        unwarned="a BitShift of uint64 is warned of by the row above; an Expand's shape of unknown length is rare",
        named="BitShift of uint64, Expand by a shape of unknown length",
    ),
    _deviation(
        "Resize, Upsample", "integer data, linear or cubic", "rounds otherwise: -7499", "-7498 (onnxruntime)", _integer_resize
    ),
    _deviation(
        "Softplus",
        "inputs far below 0 (-23.3)",
        "-1.9e-6 (about 2e-6 off)",
        "7.8e-11",
        unwarned="2e-6 off is inside `--verify`'s default tolerance where the output also holds values near 1",
    ),
    _deviation(
        "DFT",
        "bins that are 0 in exact arithmetic (a signal of few distinct frequencies)",
        "float32 rounding noise there: 2.4e-4 where the largest bin is 540 (4.4e-7 of it; test_dft)",
        "0 (a float64 transform rounded once)",
        _every("DFT"),
    ),
    _deviation(
        "DynamicQuantizeLinear, QuantizeLinear",
        "x / scale within one float32 step of a half-integer",
        "one step off: its Divide is 1 ulp off on 26 % of float32 quotients (-2.5 / (5 / 255) is -127.5: 25)",
        "26 (the quotient -127.49999 rounds to -127)",
        _runtime_scale,
        named="DynamicQuantizeLinear, QuantizeLinear of a scale or zero point computed at run time",
    ),
)

WARNED = "written, with a warning naming each node that can meet it; `--verify` checks the user's data"
UNWARNED = "written, documented, no warning ({}); `--verify` checks the user's data"


def readme_table() -> str:
    """The README's table of the deviations, one row per ``DEVIATIONS`` row."""
    rows = ["| ONNX node | data | OpenVINO CPU 2026.4 (f32) | ONNX | ovpool |", "|---|---|---|---|---|"]
    rows += [
        f"| {d.ops_text} | {d.when} | {d.cpu} | {d.onnx} | {UNWARNED.format(d.unwarned) if d.detect is None else WARNED} |"
        for d in DEVIATIONS
    ]
    return "\n".join(rows)


def deviation_notes(proto: ModelProto, facts: ModelFacts | None = None) -> list[str]:
    """One line per node (or model, for float64) that can meet a row's data: ``node 'nms'
    (NonMaxSuppression): OpenVINO CPU computes otherwise on equal scores, IoU exactly at the
    threshold: other boxes or order (...) where ONNX gives 3 boxes (onnxruntime); `--verify`
    checks on your data``. Types come from the model's declarations, and from ONNX shape
    inference only when a node's input is not declared (``facts``: the conversion's, inferred
    once for every stage)."""
    types = _Types(proto, facts)
    notes = []
    for row in DEVIATIONS:
        if row.detect is None:
            continue
        for where in dict.fromkeys(row.detect(proto, types)):
            notes.append(
                f"{where}: OpenVINO CPU computes otherwise on {row.when}: {row.cpu} where ONNX gives {row.onnx}; "
                "`--verify` checks on your data"
            )
    return notes


def warn_deviations(proto: ModelProto, label: str, facts: ModelFacts | None = None) -> None:
    """``deviation_notes`` as ``CpuDeviationWarning`` warnings, each located in ``label``."""
    for note in deviation_notes(proto, facts):
        warnings.warn(f"{label}: {note}", CpuDeviationWarning, stacklevel=2)


if __name__ == "__main__":
    print(readme_table())
