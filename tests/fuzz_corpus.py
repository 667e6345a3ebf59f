"""A corpus of hostile and broken inputs for every command, and a runner that holds each run to the
command line's promises (``tests/test_fuzz.py`` runs a sample; ``python tests/fuzz_corpus.py``
runs all of it and prints the counts).

The corpus is built from the bundled example (``tiny_pool.onnx``) and small pooling models made
here, their IR and DirectML JSON (``ovpool convert``): attribute mutations (huge,
zero, negative, float, string, wrong-length kernels, strides, dilations and pads), structural
damage (unknown ops and domains, dangling inputs, cycles, missing attributes, bad element types,
initializers whose data does not match their dims, external data that is short or points at the
model itself), truncations and bit flips, hostile XML (DOCTYPE, entities, deep nesting) and JSON
(deep nesting, 5000-digit integers), broken .npz/.npy inputs, hostile command-line arguments, and
paths that are not regular files (a folder, a FIFO, a socket, ``/dev/zero``, a 3 GiB sparse file,
a symbolic link loop), and outputs that are inputs, not folders or empty.

Each run is a subprocess (``python -m ovpool ...``) in a fresh folder holding the case's files,
with a time limit and an address-space limit (every command: convert to each target, validate,
run on numpy and CPU, bench, compare, transform and explain), and must end with exit code 0, 1 or 2, print no
"internal error" and no traceback, die of no signal, leave every input file as it was, leave no
temporary file, write no file at all when it fails, and stay within its memory: a 1 GiB budget
(``OVPOOL_MAX_MEMORY``) and a resident peak under ``PEAK_LIMIT`` (3 GiB), so that memory filled
step by step is caught before the address-space limit turns it into a quick MemoryError.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import quant_ir
from onnx import AttributeProto, ModelProto, TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]  # the checkout whose ovpool every run uses (PYTHONPATH)
EXAMPLE = ROOT / "ovpool" / "examples" / "tiny_pool.onnx"
HUGE = {"2**40": 2**40, "2**32": 2**32, "2**31": 2**31, "2**31-1": 2**31 - 1, "2**63-1": 2**63 - 1}
SMALL = {"0": 0, "-1": -1, "-2**40": -(2**40)}
IR_LAYER = {"tiny": "pool2", "pools": "mi"}  # a pooling layer of each base IR, for explain --layer
SPARSE_SIZE = 3 << 30  # a sparse file this long takes no disk space and is over every size limit
# Each run gets a 1 GiB memory budget (OVPOOL_MAX_MEMORY) in a 4 GiB address space; a run whose
# resident peak passes this allocated far past its budget (the address-space limit only turned a
# machine-filling allocation into a quick MemoryError).
BUDGET = 1 << 30
PEAK_LIMIT = 2 * BUDGET + (1 << 30)


@dataclass(frozen=True)
class Case:
    """One bad input: files written into a fresh folder (``setup`` then makes the special ones:
    ``("fifo", name)``, ``("dir", name)``, ``("socket", name)``, ``("zero", name)`` a symlink to
    /dev/zero, ``("sparse", name)``, ``("loop", name)`` a symbolic link loop through
    ``name.2``), and the command lines (after ``ovpool``) run on it."""

    name: str
    family: str
    files: dict[str, bytes]
    runs: tuple[tuple[str, ...], ...]
    setup: tuple[tuple[str, str], ...] = ()


@dataclass
class Outcome:
    """What one run did: its exit code (None after a timeout), time, and broken promises."""

    case: str
    family: str
    argv: tuple[str, ...]
    code: int | None
    seconds: float
    peak: int = 0  # resident bytes at the peak
    problems: list[str] = field(default_factory=list)
    stderr: str = ""


# ---------------------------------------------------------------- base models


def _pools_model() -> ModelProto:
    """x[1,2,9,9] -> MaxPool k3 s2 p1 ceil with indices -> AveragePool k2 s1 -> GlobalMaxPool:
    pooling layers only, so its IR runs on the numpy executor too."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 9, 9])
    nodes = [
        helper.make_node(
            "MaxPool", ["x"], ["m", "mi"], name="mp", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1
        ),
        helper.make_node("AveragePool", ["m"], ["a"], name="ap", kernel_shape=[2, 2], strides=[1, 1], dilations=[1, 1]),
        helper.make_node("GlobalMaxPool", ["a"], ["y"], name="gp"),
    ]
    outputs = [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
        helper.make_tensor_value_info("mi", TensorProto.INT64, None),
    ]
    graph = helper.make_graph(nodes, "pools", [x], outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


def _unpool_model() -> ModelProto:
    """x[1,1,6,6] -> MaxPool k2 s2 with indices -> MaxUnpool k2 s2."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])
    nodes = [
        helper.make_node("MaxPool", ["x"], ["m", "mi"], name="mp", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxUnpool", ["m", "mi"], ["y"], name="up", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    graph = helper.make_graph(nodes, "unpool", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)


def _dynamic_model() -> ModelProto:
    """x[N,2,H,W] -> MaxPool k2 s2: for ``--shape``."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", "W"])
    node = helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph([node], "dyn", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _quantized_model() -> ModelProto:
    """Quantized average pools for DirectML: x uint8[1,2,4,4] -> DequantizeLinear (per channel,
    zero points 128) -> AveragePool k3 s2 p1 ceil include-pad (a window past the end pad: PADDING
    with the zero point, then the quantized operator) -> QuantizeLinear; and z int8[1,4,4,3] ->
    com.microsoft QLinearAveragePool channels_last k2 (a strided view)."""
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 2, 4, 4]),
        helper.make_tensor_value_info("z", TensorProto.INT8, [1, 4, 4, 3]),
    ]
    inits = [
        numpy_helper.from_array(np.array([0.05, 0.1], np.float32), "xs"),
        numpy_helper.from_array(np.array([128, 128], np.uint8), "xz"),
        numpy_helper.from_array(np.array(0.04, np.float32), "ys"),
        numpy_helper.from_array(np.array(125, np.uint8), "yz"),
        numpy_helper.from_array(np.array(0.1, np.float32), "zs"),
        numpy_helper.from_array(np.array(-3, np.int8), "zz"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"], name="dq", axis=1),
        helper.make_node(
            "AveragePool",
            ["xf"],
            ["af"],
            name="ap",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            ceil_mode=1,
            count_include_pad=1,
        ),
        helper.make_node("QuantizeLinear", ["af", "ys", "yz"], ["y"], name="q"),
        helper.make_node(
            "QLinearAveragePool",
            ["z", "zs", "zz", "zs", "zz"],
            ["w"],
            name="qp",
            domain="com.microsoft",
            kernel_shape=[2, 2],
            channels_last=1,
        ),
    ]
    outputs = [
        helper.make_tensor_value_info("y", TensorProto.UINT8, None),
        helper.make_tensor_value_info("w", TensorProto.INT8, None),
    ]
    graph = helper.make_graph(nodes, "quantized", inputs, outputs, initializer=inits)
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


@dataclass(frozen=True)
class Bases:
    """The valid models every case starts from: ONNX protos, and IR and DirectML files."""

    onnx: dict[str, ModelProto]
    ir: dict[str, tuple[bytes, bytes]]
    dml: dict[str, bytes]


def build_bases(folder: Path) -> Bases:
    """Write the base models into ``folder`` and convert them to IR and DirectML with the
    checkout's ovpool (in a subprocess: this process may import another installed ovpool)."""
    protos = {
        "tiny": onnx.load(str(EXAMPLE)),
        "pools": _pools_model(),
        "unpool": _unpool_model(),
        "dyn": _dynamic_model(),
        "quantized": _quantized_model(),
    }
    ir: dict[str, tuple[bytes, bytes]] = {}
    dml: dict[str, bytes] = {}
    for name in ("tiny", "pools", "quantized"):
        path = folder / f"{name}.onnx"
        onnx.save(protos[name], str(path))
        targets = (("dml", f"{name}.json"),) if name == "quantized" else (("ir", f"{name}.xml"), ("dml", f"{name}.json"))
        for target, out in targets:
            done = subprocess.run(
                [sys.executable, "-m", "ovpool", "convert", str(path), "--to", target, "-o", str(folder / out), "--force"],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT), "CI": "true"},
                check=False,
            )
            if done.returncode:
                raise RuntimeError(f"converting the base model {name} to {target} failed: {done.stderr}")
        if name != "quantized":
            ir[name] = ((folder / f"{name}.xml").read_bytes(), (folder / f"{name}.bin").read_bytes())
        dml[name] = (folder / f"{name}.json").read_bytes()
    return Bases(protos, ir, dml)


# ---------------------------------------------------------------- the commands run on each kind


def onnx_runs(model: str = "m.onnx", node: str = "pool1") -> tuple[tuple[str, ...], ...]:
    return (
        ("convert", model, "-o", "out/m.xml"),
        ("convert", model, "--to", "dml", "-o", "out/m.json"),
        ("convert", model, "-o", "out/m.xml", "--target-openvino", "2023.3"),
        ("validate", model),
        ("run", model, "--random-inputs", "--device", "numpy"),
        ("run", model, "--random-inputs", "--device", "CPU"),
        ("transform", model, "-o", "out/t.onnx", "--pass", "explicit-pads", "--pass", "no-ceil"),
        ("explain", "--onnx", model, "--node", node),
        ("bench", model, "--runs", "1", "--warmup", "0"),
        ("compare", model, "--device", "CPU", "--random-inputs", "--per-layer"),
    )


def ir_runs(model: str = "m.xml", layer: str = "pool2") -> tuple[tuple[str, ...], ...]:
    return (
        ("convert", model, "--to", "onnx", "-o", "out/m.onnx"),
        ("convert", model, "--to", "dml", "-o", "out/m.h"),
        ("validate", model),
        ("validate", "--strict", "--format", "json", model),
        ("validate", "--target-openvino", "2023.3", model),
        ("run", model, "--random-inputs", "--device", "numpy"),
        ("run", model, "--random-inputs", "--device", "CPU"),
        ("transform", model, "--pass", "no-ceil"),
        ("explain", "--ir", model, "--layer", layer),
        ("bench", model, "--runs", "1", "--warmup", "0"),
        ("compare", model, "--device", "CPU", "--random-inputs"),
    )


def dml_runs(model: str = "m.json") -> tuple[tuple[str, ...], ...]:
    return (
        ("convert", model, "--to", "onnx", "-o", "out/m.onnx"),
        ("convert", model, "--to", "ir", "-o", "out/m.xml"),
        ("validate", model),
        ("run", model, "--random-inputs", "--device", "numpy"),
    )


# ---------------------------------------------------------------- ONNX cases


def _pool_nodes(proto: ModelProto) -> list[onnx.NodeProto]:
    return [n for n in proto.graph.node if n.op_type in ("MaxPool", "AveragePool", "MaxUnpool")]


def _set_attr(node: onnx.NodeProto, attribute: AttributeProto) -> None:
    kept = [a for a in node.attribute if a.name != attribute.name]
    del node.attribute[:]
    node.attribute.extend([*kept, attribute])


def _raw_attr(name: str, kind: int, ints: Sequence[int] = (), floats: Sequence[float] = (), s: bytes = b"") -> AttributeProto:
    """An attribute built field by field (``helper.make_attribute`` refuses empty lists and
    out-of-range ints)."""
    attribute = AttributeProto(name=name, type=kind)
    if kind == AttributeProto.INTS:
        attribute.ints.extend(ints)
    elif kind == AttributeProto.INT:
        attribute.i = ints[0]
    elif kind == AttributeProto.FLOATS:
        attribute.floats.extend(floats)
    elif kind == AttributeProto.STRING:
        attribute.s = s
    return attribute


def _clamp64(value: int) -> int:
    return max(-(2**63), min(2**63 - 1, value))


def _attr_mutations(node: onnx.NodeProto) -> Iterable[tuple[str, AttributeProto | None]]:
    """(label, new attribute or None to remove kernel_shape) for one pooling node."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    rank = len(attrs.get("kernel_shape", [2, 2]))
    values = {**HUGE, **SMALL}
    for attr in ("kernel_shape", "strides", "dilations", "pads"):
        if node.op_type == "MaxUnpool" and attr == "dilations":
            continue
        count = 2 * rank if attr == "pads" else rank
        for index, (label, value) in enumerate(values.items()):
            every = index % 2 == 0  # alternately every axis and the first axis only
            ints = [_clamp64(value)] * count if every else [_clamp64(value)] + [1] * (count - 1)
            yield f"{attr}={'all' if every else 'first'} {label}", _raw_attr(attr, AttributeProto.INTS, ints)
        yield f"{attr}=floats", _raw_attr(attr, AttributeProto.FLOATS, floats=[2.5] + [2.0] * (count - 1))
        yield f"{attr}=string", _raw_attr(attr, AttributeProto.STRING, s=b"2,2")
        yield f"{attr}=too long", _raw_attr(attr, AttributeProto.INTS, [1] * (count + 1))
        yield f"{attr}=empty", _raw_attr(attr, AttributeProto.INTS, [])
    yield "kernel_shape removed", None
    for flag in ("ceil_mode", "count_include_pad", "storage_order"):
        for value in (2, -(2**40)):
            yield f"{flag}={value}", _raw_attr(flag, AttributeProto.INT, [value])
    for text in (b"BOGUS", b"same_upper", b"SAME_UPPER"):
        yield f"auto_pad={text.decode() or 'empty'}", _raw_attr("auto_pad", AttributeProto.STRING, s=text)
    yield "unknown attribute", _raw_attr("bogus", AttributeProto.INT, [1])


def onnx_attr_cases(bases: Bases) -> Iterable[Case]:
    for base, nodes in (("tiny", ("pool1", "pool2")), ("pools", ("mp",)), ("unpool", ("up",))):
        for index, node in enumerate(_pool_nodes(bases.onnx[base])):
            if node.name not in nodes:
                continue
            for label, attribute in _attr_mutations(node):
                proto = copy.deepcopy(bases.onnx[base])
                target = _pool_nodes(proto)[index]
                if attribute is None:
                    kept = [a for a in target.attribute if a.name != "kernel_shape"]
                    del target.attribute[:]
                    target.attribute.extend(kept)
                else:
                    _set_attr(target, attribute)
                yield Case(
                    f"onnx/{base}/{target.name}/{label}",
                    "onnx-attr",
                    {"m.onnx": proto.SerializeToString()},
                    onnx_runs(node=target.name),
                )


def _structural(bases: Bases) -> Iterable[tuple[str, str, Callable[[ModelProto], object]]]:
    """(label, base, mutation in place) of the structural damage a model can have."""

    def node(proto: ModelProto, name: str) -> onnx.NodeProto:
        return next(n for n in proto.graph.node if n.name == name)

    def setter(name: str, **fields: object) -> Callable[[ModelProto], None]:
        def apply(proto: ModelProto) -> None:
            for key, value in fields.items():
                setattr(node(proto, name), key, value)

        return apply

    def inputs(name: str, names: Sequence[str]) -> Callable[[ModelProto], None]:
        def apply(proto: ModelProto) -> None:
            del node(proto, name).input[:]
            node(proto, name).input.extend(names)

        return apply

    def outputs(name: str, names: Sequence[str]) -> Callable[[ModelProto], None]:
        def apply(proto: ModelProto) -> None:
            del node(proto, name).output[:]
            node(proto, name).output.extend(names)

        return apply

    def opsets(*imports: tuple[str, int]) -> Callable[[ModelProto], None]:
        def apply(proto: ModelProto) -> None:
            del proto.opset_import[:]
            proto.opset_import.extend(helper.make_opsetid(d, v) for d, v in imports)

        return apply

    def input_dims(dims: Sequence[int]) -> Callable[[ModelProto], None]:
        def apply(proto: ModelProto) -> None:
            shape = proto.graph.input[0].type.tensor_type.shape
            for dim, value in zip(shape.dim, dims):
                dim.Clear()
                dim.dim_value = value

        return apply

    def input_type(elem_type: int) -> Callable[[ModelProto], None]:
        def apply(proto: ModelProto) -> None:
            proto.graph.input[0].type.tensor_type.elem_type = elem_type

        return apply

    def weights(mutate: Callable[[TensorProto], None]) -> Callable[[ModelProto], None]:
        def apply(proto: ModelProto) -> None:
            mutate(proto.graph.initializer[0])

        return apply

    def raw(data: bytes) -> Callable[[TensorProto], None]:
        def apply(tensor: TensorProto) -> None:
            tensor.raw_data = data

        return apply

    def dims(values: Sequence[int]) -> Callable[[TensorProto], None]:
        def apply(tensor: TensorProto) -> None:
            del tensor.dims[:]
            tensor.dims.extend(values)

        return apply

    def data_type(value: int) -> Callable[[TensorProto], None]:
        def apply(tensor: TensorProto) -> None:
            tensor.data_type = value

        return apply

    def cycle(proto: ModelProto) -> None:
        node(proto, "relu1").input[0] = "pool2"

    def reverse(proto: ModelProto) -> None:
        reversed_nodes = list(reversed(proto.graph.node))
        del proto.graph.node[:]
        proto.graph.node.extend(reversed_nodes)

    def output_name(proto: ModelProto) -> None:
        proto.graph.output[0].name = "nothing"

    def duplicate_writer(proto: ModelProto) -> None:
        node(proto, "relu1").output[0] = "conv"

    def ir_version(value: int) -> Callable[[ModelProto], None]:
        def apply(proto: ModelProto) -> None:
            proto.ir_version = value

        return apply

    def long_name(proto: ModelProto) -> None:
        node(proto, "pool1").name = "p" * 10000

    def if_node(proto: ModelProto) -> None:
        """An If whose branches read an outer-scope name: valid, must still run."""
        then = helper.make_graph(
            [helper.make_node("Identity", ["output"], ["t"])],
            "then",
            [],
            [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
        )
        other = helper.make_graph(
            [helper.make_node("Neg", ["output"], ["e"])],
            "else",
            [],
            [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)],
        )
        cond = numpy_helper.from_array(np.array(True), "cond")
        proto.graph.initializer.append(cond)
        proto.graph.node.append(helper.make_node("If", ["cond"], ["branch"], then_branch=then, else_branch=other, name="if"))
        proto.graph.output.append(helper.make_tensor_value_info("branch", TensorProto.FLOAT, None))

    yield "op unknown", "tiny", setter("relu1", op_type="FooBar")
    yield "op empty", "tiny", setter("relu1", op_type="")
    yield "domain unknown", "tiny", setter("relu1", domain="com.evil")
    yield (
        "domain imported but unknown",
        "tiny",
        lambda p: (setter("relu1", domain="com.evil")(p), p.opset_import.append(helper.make_opsetid("com.evil", 1))),
    )
    yield "input dangling", "tiny", lambda p: node(p, "pool2").input.__setitem__(0, "nowhere")
    yield "pool input dangling", "pools", lambda p: node(p, "ap").input.__setitem__(0, "nowhere")
    yield "too few inputs conv", "tiny", inputs("conv1", ["input"])
    yield "no inputs pool", "tiny", inputs("pool1", [])
    yield "too few inputs unpool", "unpool", inputs("up", ["m"])
    yield "too many inputs relu", "tiny", inputs("relu1", ["conv", "conv", "conv"])
    yield "no outputs pool", "pools", outputs("gp", [])
    yield "too many outputs pool", "tiny", outputs("pool2", ["pool2", "extra"])
    yield "optional input empty", "unpool", inputs("up", ["m", "mi", ""])
    yield "cycle", "tiny", cycle
    yield "self loop", "tiny", lambda p: node(p, "relu1").input.__setitem__(0, "relu")
    yield "nodes reversed", "tiny", reverse
    yield "graph output unproduced", "tiny", output_name
    yield "tensor written twice", "tiny", duplicate_writer
    yield "kernel_shape missing avg", "tiny", lambda p: node(p, "pool2").ClearField("attribute")
    yield "input elem_type 999", "tiny", input_type(999)
    yield "input elem_type 0", "tiny", input_type(0)
    yield "input elem_type string", "tiny", input_type(TensorProto.STRING)
    yield "weights elem_type 999", "tiny", weights(data_type(999))
    yield "weights elem_type 0", "tiny", weights(data_type(0))
    yield "no opset_import", "tiny", opsets()
    yield "opset 999", "tiny", opsets(("", 999))
    yield "opset 0", "tiny", opsets(("", 0))
    yield "opset 1", "tiny", opsets(("", 1))
    yield "only ml opset", "tiny", opsets(("ai.onnx.ml", 3))
    yield "ir_version 0", "tiny", ir_version(0)
    yield "ir_version 999", "tiny", ir_version(999)
    for label, value in (("2**40", 2**40), ("2**31", 2**31), ("-5", -5), ("0", 0), ("2**62", 2**62)):
        yield f"input dims all {label}", "tiny", input_dims([value] * 4)
        yield f"input batch {label}", "pools", input_dims([value])
        yield f"input spatial {label}", "pools", input_dims([1, 2, value, 9])
    yield "input rank 2", "pools", lambda p: p.graph.input[0].type.tensor_type.shape.dim.__delitem__(slice(2, None))
    yield "input scalar", "pools", lambda p: p.graph.input[0].type.tensor_type.shape.ClearField("dim")
    yield "input untyped", "pools", lambda p: p.graph.input[0].ClearField("type")
    yield "weights raw short", "tiny", weights(raw(b"\0" * 100))
    yield "weights raw long", "tiny", weights(raw(b"\0" * 1000))
    yield "weights raw empty", "tiny", weights(raw(b""))
    yield "weights dims huge", "tiny", weights(dims([4, 3, 3, 2**40]))
    yield "weights dims 2**62", "tiny", weights(dims([2**31, 2**31, 1, 1]))
    yield "weights dims negative", "tiny", weights(dims([-4, 3, 3, 3]))
    yield "weights floats short", "tiny", weights(lambda t: (t.ClearField("raw_data"), t.float_data.extend([1.0] * 5)))
    yield "weights no data", "tiny", weights(lambda t: t.ClearField("raw_data"))
    yield (
        "weights string type",
        "tiny",
        weights(lambda t: (t.ClearField("raw_data"), setattr(t, "data_type", TensorProto.STRING))),
    )
    yield "long node name", "tiny", long_name
    yield "if with outer names", "tiny", if_node
    yield "duplicate graph input", "pools", lambda p: p.graph.input.append(copy.deepcopy(p.graph.input[0]))
    yield (
        "initializer shadows input",
        "pools",
        lambda p: p.graph.initializer.append(numpy_helper.from_array(np.zeros((1, 2, 9, 9), np.float32), "x")),
    )


def onnx_structural_cases(bases: Bases) -> Iterable[Case]:
    for label, base, mutate in _structural(bases):
        proto = copy.deepcopy(bases.onnx[base])
        mutate(proto)
        node = "pool1" if base == "tiny" else "mp"
        yield Case(f"onnx/{base}/{label}", "onnx-struct", {"m.onnx": proto.SerializeToString()}, onnx_runs(node=node))


def _external(proto: ModelProto, location: str, length: int | None = None, offset: int = 0) -> ModelProto:
    """``proto`` with its first initializer's data moved to ``location`` (without writing it)."""
    proto = copy.deepcopy(proto)
    tensor = proto.graph.initializer[0]
    size = len(tensor.raw_data)
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    entries = {"location": location, "offset": str(offset), "length": str(size if length is None else length)}
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    return proto


def onnx_external_cases(bases: Bases) -> Iterable[Case]:
    tiny = bases.onnx["tiny"]
    weights = tiny.graph.initializer[0].raw_data
    runs = onnx_runs()
    yield Case(
        "onnx/external/ok", "onnx-external", {"m.onnx": _external(tiny, "w.bin").SerializeToString(), "w.bin": weights}, runs
    )
    short = _external(tiny, "w.bin").SerializeToString()
    yield Case("onnx/external/short", "onnx-external", {"m.onnx": short, "w.bin": weights[:50]}, runs)
    yield Case("onnx/external/empty file", "onnx-external", {"m.onnx": short, "w.bin": b""}, runs)
    yield Case("onnx/external/missing", "onnx-external", {"m.onnx": short}, runs)
    yield Case(
        "onnx/external/length lies",
        "onnx-external",
        {"m.onnx": _external(tiny, "w.bin", length=40).SerializeToString(), "w.bin": weights},
        runs,
    )
    yield Case(
        "onnx/external/offset past end",
        "onnx-external",
        {"m.onnx": _external(tiny, "w.bin", offset=10**6).SerializeToString(), "w.bin": weights},
        runs,
    )
    yield Case(
        "onnx/external/length huge",
        "onnx-external",
        {"m.onnx": _external(tiny, "w.bin", length=2**40).SerializeToString(), "w.bin": weights},
        runs,
    )
    yield Case("onnx/external/the model itself", "onnx-external", {"m.onnx": _external(tiny, "m.onnx").SerializeToString()}, runs)
    yield Case(
        "onnx/external/nul in path",
        "onnx-external",
        {"m.onnx": _external(tiny, "w\0.bin").SerializeToString(), "w": weights},
        runs,
    )
    yield Case("onnx/external/absolute", "onnx-external", {"m.onnx": _external(tiny, "/etc/hostname").SerializeToString()}, runs)
    yield Case("onnx/external/parent", "onnx-external", {"m.onnx": _external(tiny, "../w.bin").SerializeToString()}, runs)
    yield Case(
        "onnx/external/folder", "onnx-external", {"m.onnx": _external(tiny, "d").SerializeToString()}, runs, (("dir", "d"),)
    )
    yield Case(
        "onnx/external/fifo",
        "onnx-external",
        {"m.onnx": _external(tiny, "f.bin").SerializeToString()},
        runs,
        (("fifo", "f.bin"),),
    )
    yield Case(
        "onnx/external/dev zero",
        "onnx-external",
        {"m.onnx": _external(tiny, "z.bin").SerializeToString()},
        runs,
        (("zero", "z.bin"),),
    )


def _truncations(data: bytes, rng: random.Random, count: int) -> list[int]:
    cuts = {0, 1, len(data) // 2, len(data) - 1}
    while len(cuts) < count:
        cuts.add(rng.randrange(len(data)))
    return sorted(cuts)


def _flips(data: bytes, rng: random.Random, count: int) -> Iterable[tuple[str, bytes]]:
    for _ in range(count):
        position, bit = rng.randrange(len(data)), rng.randrange(8)
        flipped = bytearray(data)
        flipped[position] ^= 1 << bit
        yield f"bit {position}.{bit}", bytes(flipped)
    for _ in range(count // 4):
        position = rng.randrange(len(data))
        stomped = bytearray(data)
        stomped[position : position + 4] = b"\xff\xff\xff\xff"
        yield f"ff at {position}", bytes(stomped)


def byte_cases(bases: Bases, seed: int = 13, per_file: int = 16) -> Iterable[Case]:
    """Truncations, bit flips and 0xff stomps of every base file."""
    rng = random.Random(seed)
    for base in ("tiny", "pools", "unpool"):
        data = bases.onnx[base].SerializeToString()
        node = "pool1" if base == "tiny" else "mp"
        for cut in _truncations(data, rng, per_file // 2):
            yield Case(f"onnx/{base}/cut {cut}", "onnx-bytes", {"m.onnx": data[:cut]}, onnx_runs(node=node))
        for label, flipped in _flips(data, rng, per_file):
            yield Case(f"onnx/{base}/{label}", "onnx-bytes", {"m.onnx": flipped}, onnx_runs(node=node))
    for base, (xml, weights) in bases.ir.items():
        layer = IR_LAYER[base]
        for cut in _truncations(xml, rng, per_file // 2):
            yield Case(f"ir/{base}/cut {cut}", "ir-bytes", {"m.xml": xml[:cut], "m.bin": weights}, ir_runs(layer=layer))
        for label, flipped in _flips(xml, rng, per_file):
            yield Case(f"ir/{base}/{label}", "ir-bytes", {"m.xml": flipped, "m.bin": weights}, ir_runs(layer=layer))
        if weights:
            for cut in (0, len(weights) // 2):
                yield Case(f"ir/{base}/bin cut {cut}", "ir-bytes", {"m.xml": xml, "m.bin": weights[:cut]}, ir_runs(layer=layer))
    for base, document in bases.dml.items():
        for cut in _truncations(document, rng, per_file // 2):
            yield Case(f"dml/{base}/cut {cut}", "dml-bytes", {"m.json": document[:cut]}, dml_runs())
        for label, flipped in _flips(document, rng, per_file):
            yield Case(f"dml/{base}/{label}", "dml-bytes", {"m.json": flipped}, dml_runs())


# ---------------------------------------------------------------- IR cases


def _ir_attribute_values() -> dict[str, str]:
    return {
        "2**40": "1099511627776, 1099511627776",
        "2**32": "4294967296, 3",
        "2**31": "2147483648, 2",
        "2**31-1": "2147483647, 2147483647",
        "99 digits": "9" * 99 + ", 3",
        "zero": "0, 0",
        "negative": "-1, -1",
        "floats": "2.5, 2",
        "underscore": "3_0, 3",
        "other digits": "\u0663, 3",
        "empty": "",
        "letters": "a, b",
        "one value": "3",
        "three values": "3, 3, 3",
    }


def ir_attr_cases(bases: Bases) -> Iterable[Case]:
    for base, (xml, weights) in bases.ir.items():
        text = xml.decode()
        layer = IR_LAYER[base]
        for attr in ("kernel", "strides", "pads_begin", "pads_end", "dilations"):
            marker = f' {attr}="'
            start = text.find(marker)
            if start < 0:
                continue
            start += len(marker)
            end = text.index('"', start)
            for label, value in _ir_attribute_values().items():
                mutated = text[:start] + value + text[end:]
                yield Case(
                    f"ir/{base}/{attr}={label}", "ir-attr", {"m.xml": mutated.encode(), "m.bin": weights}, ir_runs(layer=layer)
                )
        for attr, bad in (
            ("rounding_type", "bogus"),
            ("auto_pad", "notset"),
            ("exclude-pad", "maybe"),
            ("index_element_type", "i8"),
            ("axis", "9"),
            ("element_type", "x99"),
            ("element_type", "boolean"),
            ("precision", "FP99"),
            ("version", "opset999"),
            ("type", "FooPool"),
        ):
            marker = f' {attr}="'
            if marker not in text:
                continue
            start = text.rindex(marker) if attr in ("type", "version") else text.index(marker)
            start += len(marker)
            end = text.index('"', start)
            mutated = text[:start] + bad + text[end:]
            yield Case(f"ir/{base}/{attr}={bad}", "ir-attr", {"m.xml": mutated.encode(), "m.bin": weights}, ir_runs(layer=layer))


def window_wrap_cases() -> Iterable[Case]:
    """Window sizes past 32 bits where OpenVINO's CPU plugin divides by them: SAME padding with a
    stride of 2**32, which it holds as 0 and dies of SIGFPE on. In pooling (the bundled
    ``spec_example1.xml``, AvgPool SAME_UPPER) and outside it (a grouped ONNX Conv)."""
    example = (ROOT / "ovpool" / "examples" / "spec_example1.xml").read_text()
    for label, value in (
        ("2**32", "4294967296,4294967296"),
        ("2**40", "1099511627776,1099511627776"),
        ("2**32+1", "4294967297,2"),
    ):
        xml = example.replace('strides="2,2"', f'strides="{value}"')
        yield Case(f"ir/example/strides={label} same_upper", "ir-attr", {"m.xml": xml.encode()}, ir_runs(layer="pool"))
    for group, label in ((2, "grouped"), (1, "plain")):
        weights = numpy_helper.from_array(np.ones((2, 2 // group, 3, 3), np.float32), "w")
        conv = helper.make_node(
            "Conv",
            ["x", "w"],
            ["y"],
            name="conv",
            kernel_shape=[3, 3],
            group=group,
            strides=[2**32, 2**32],
            auto_pad="SAME_UPPER",
        )
        graph = helper.make_graph(
            [conv],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [weights],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        yield Case(
            f"onnx/{label} conv strides=2**32 same_upper",
            "onnx-attr",
            {"m.onnx": model.SerializeToString()},
            onnx_runs(node="conv"),
        )
    # Sizes the run alone knows: a dynamic 2x2 input, strides 2**20 (ConvTranspose: a 4 TiB output
    # and 2**40 phase planes, listed one by one until the memory was full) and Tile of fed rows.
    weights = numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")
    repeats = numpy_helper.from_array(np.array([1, 1, 2**20, 2**20], np.int64), "r")
    for label, node, initializer in (
        ("conv transpose strides=2**20", helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2**20, 2**20]), weights),
        ("tile repeats=2**20", helper.make_node("Tile", ["x", "r"], ["y"]), repeats),
    ):
        node.name = "n"
        graph = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "H", "W"])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [initializer],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        fed = ("-i", "x=x.npy")
        yield Case(
            f"onnx/dynamic {label}",
            "inputs",
            {"m.onnx": model.SerializeToString(), "x.npy": _npy(np.ones((1, 1, 2, 2), np.float32))},
            (
                ("run", "m.onnx", *fed, "--device", "numpy"),
                ("run", "m.onnx", *fed, "--device", "CPU"),
                ("compare", "m.onnx", *fed, "--device", "CPU"),
                ("bench", "m.onnx", "--shape", "x=1,1,2,2", "--runs", "1", "--warmup", "0"),
                ("compare", "m.onnx", "--shape", "x=1,1,2,2", "--random-inputs", "--device", "numpy", "--reference", "CPU"),
            ),
        )


def ir_structure_cases(bases: Bases) -> Iterable[Case]:
    for base, (xml, weights) in bases.ir.items():
        text = xml.decode()
        layer = IR_LAYER[base]

        def case(label: str, mutated: str, family: str = "ir-struct", base: str = base, weights: bytes = weights) -> Case:
            return Case(
                f"ir/{base}/{label}", family, {"m.xml": mutated.encode(), "m.bin": weights}, ir_runs(layer=IR_LAYER[base])
            )

        first_dim = text.index("<dim>") + len("<dim>")
        first_dim_end = text.index("</dim>", first_dim)
        for label, value in (
            ("2**40", "1099511627776"),
            ("2**63", str(2**63)),
            ("-5", "-5"),
            ("0", "0"),
            ("abc", "abc"),
            ("range", "1..99999999999999"),
        ):
            yield case(f"parameter dim {label}", text[:first_dim] + value + text[first_dim_end:])
            yield case(f"every dim {label}", text.replace("<dim>1</dim>", f"<dim>{value}</dim>"))
        shape_at = text.index(' shape="') + len(' shape="')
        shape_end = text.index('"', shape_at)
        yield case("parameter shape 2**40", text[:shape_at] + "1,3,1099511627776,1099511627776" + text[shape_end:])
        edges_at = text.index("<edge ")
        yield case("edge from missing port", text[:edges_at] + text[edges_at:].replace('from-port="', 'from-port="9', 1))
        yield case("edge to missing port", text[:edges_at] + text[edges_at:].replace('to-port="', 'to-port="9', 1))
        yield case("edge from missing layer", text[:edges_at] + text[edges_at:].replace('from-layer="', 'from-layer="9', 1))
        last_edge = text.rindex("<edge ")
        yield case("edge removed", text[:last_edge] + text[text.index("/>", last_edge) + 2 :])
        cycle = '<edge from-layer="{0}" from-port="0" to-layer="0" to-port="0" />'
        last_layer = text.rindex('<layer id="')
        last_id = text[last_layer + len('<layer id="') : text.index('"', last_layer + len('<layer id="'))]
        yield case("cycle edge", text.replace("</edges>", cycle.format(last_id) + "</edges>"))
        yield case("duplicate layer id", text.replace('<layer id="1"', '<layer id="0"', 1))
        yield case("no edges", text[: text.index("<edges>")] + "<edges></edges></net>")
        yield case("const offset past end", text.replace('offset="0"', 'offset="99999999"'))
        yield case("const size huge", text.replace('size="432"', 'size="1099511627776"'))
        yield case("const size negative", text.replace('size="432"', 'size="-4"'))
        head = '<?xml version="1.0"?>\n'
        body = text[text.index("<net") :]
        bomb = '<!DOCTYPE net [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>\n'
        yield case("entity bomb", head + bomb + body.replace('name="', 'name="&c;', 1), "ir-xml")
        external = '<!DOCTYPE net [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n'
        yield case("external entity", head + external + body.replace('name="', 'name="&e;', 1), "ir-xml")
        yield case(
            "doctype after comment", head + "<!-- x -->" + '<!DOCTYPE net SYSTEM "http://example.com/x.dtd">\n' + body, "ir-xml"
        )
        nested = "<a>" * 100000 + "</a>" * 100000
        yield case("deep nesting", text.replace("</layers>", nested + "</layers>"), "ir-xml")
        yield case(
            "deep nesting in data",
            text.replace("<data ", "<data><x>" + "<a>" * 5000 + "</a>" * 5000 + "</x></data><data ", 1),
            "ir-xml",
        )
        yield case("huge attribute", text.replace('name="', 'name="' + "n" * 5_000_000, 1), "ir-xml")
        yield case(
            "many layers",
            text.replace("<layers>", "<layers>" + '<layer id="x{}" name="x" type="Foo" version="opset1"/>' * 1, 1),
            "ir-xml",
        )
        yield case("not an IR", "<html><body/></html>", "ir-xml")
        yield case("empty", "", "ir-xml")
        yield case("nul byte", text.replace("<layers>", "<layers>\0", 1), "ir-xml")
        yield Case(f"ir/{base}/utf-16", "ir-xml", {"m.xml": text.encode("utf-16"), "m.bin": weights}, ir_runs(layer=layer))
        yield Case(
            f"ir/{base}/bad utf-8",
            "ir-xml",
            {"m.xml": xml.replace(b"<layers>", b"<layers>\xff\xfe", 1), "m.bin": weights},
            ir_runs(layer=layer),
        )
        yield Case(f"ir/{base}/no bin", "ir-struct", {"m.xml": xml}, ir_runs(layer=layer))


# ---------------------------------------------------------------- DirectML cases


def _dml_values() -> dict[str, object]:
    return {
        "2**40": [2**40, 2**40],
        "2**32": [2**32, 2],
        "2**31": [2**31, 2],
        "zero": [0, 0],
        "negative": [-1, -1],
        "floats": [2.5, 2.0],
        "strings": ["2", "2"],
        "null": None,
    }


def dml_cases(bases: Bases) -> Iterable[Case]:
    for base, data in bases.dml.items():
        document = json.loads(data)

        def case(label: str, mutated: object | bytes, family: str = "dml-json", base: str = base) -> Case:
            payload = mutated if isinstance(mutated, bytes) else json.dumps(mutated).encode()
            return Case(f"dml/{base}/{label}", family, {"m.json": payload}, dml_runs())

        for index, operator in enumerate(document["operators"][:1]):
            for member in ("WindowSize", "Strides", "StartPadding", "EndPadding", "Dilations", "DimensionCount"):
                if member not in operator["desc"]:
                    continue
                for label, value in _dml_values().items():
                    mutated = copy.deepcopy(document)
                    mutated["operators"][index]["desc"][member] = value
                    yield case(f"op {index} {member}={label}", mutated)
            for tensor in ("InputTensor", "OutputTensor"):
                for label, sizes in (
                    ("2**40", [1, 4, 2**40, 2**40]),
                    ("2**31", [1, 4, 2**31, 3]),
                    ("zero", [0, 4, 8, 8]),
                    ("negative", [1, -4, 8, 8]),
                    ("rank 9", [1] * 9),
                ):
                    mutated = copy.deepcopy(document)
                    mutated["operators"][index]["desc"][tensor]["Sizes"] = sizes
                    yield case(f"op {index} {tensor} Sizes={label}", mutated)
                mutated = copy.deepcopy(document)
                mutated["operators"][index]["desc"][tensor]["DataType"] = "DML_TENSOR_DATA_TYPE_BOGUS"
                yield case(f"op {index} {tensor} DataType bogus", mutated)
            for member, value in (
                ("type", "DML_OPERATOR_BOGUS"),
                ("min_feature_level", "DML_FEATURE_LEVEL_99_0"),
                ("inputs", ["nowhere"]),
                ("outputs", []),
                ("name", 5),
            ):
                mutated = copy.deepcopy(document)
                mutated["operators"][index][member] = value
                yield case(f"op {index} {member}={value}", mutated)
        digits = "9" * 5000
        yield case("5000-digit int version", data.replace(b'"version": 1', b'"version": ' + digits.encode(), 1))
        yield case("5000-digit int size", data.replace(b'"Sizes": [1', b'"Sizes": [' + digits.encode(), 1))
        yield case("deep nesting", b"[" * 100000 + b"]" * 100000)
        yield case(
            "deep nesting in desc", data.replace(b'"desc": {', b'"deep": ' + b"[" * 50000 + b"]" * 50000 + b', "desc": {', 1)
        )
        yield case("NaN window", data.replace(b'"WindowSize": [', b'"WindowSize": [NaN, ', 1))
        yield case("Infinity stride", data.replace(b'"Strides": [', b'"Strides": [Infinity, ', 1))
        yield case("top level list", [document])
        yield case("no format", {k: v for k, v in document.items() if k != "format"})
        yield case("operators empty", {**document, "operators": []})
        yield case("tensors list", {**document, "tensors": []})
        yield case("reversed operators", {**document, "operators": list(reversed(document["operators"]))})
        yield case("duplicate operators", {**document, "operators": document["operators"] * 2})
        yield case("huge string", {**document, "skipped": ["x" * 5_000_000]})
        yield case("utf-16", json.dumps(document).encode("utf-16"))
        yield case("bad utf-8", data.replace(b'"format"', b'"\xff\xfe"', 1))
        yield case("empty", b"")


# ---------------------------------------------------------------- inputs of ``ovpool run``


def dml_quantized_cases(bases: Bases) -> Iterable[Case]:
    """Hostile quantized average pooling: the DirectML document's constants, scale and zero point
    descs and channels-last Strides, and the ONNX model's Q/DQ and QLinear constants."""
    document = json.loads(bases.dml["quantized"])

    def case(label: str, mutated: object) -> Case:
        return Case(f"dml/quantized/{label}", "dml-quantized", {"m.json": json.dumps(mutated).encode()}, dml_runs())

    values: dict[str, object] = {
        "NaN": [float("nan")],
        "Infinity": [float("inf")],
        "1e39": [1e39],
        "2**64": [2**64],
        "negative": [-1],
        "zero": [0],
        "strings": ["0.05"],
        "empty": [],
        "null": None,
        "object": {"a": 1},
    }
    for constant in document["constants"]:
        for label, value in values.items():
            mutated = copy.deepcopy(document)
            mutated["constants"][constant]["Values"] = value
            yield case(f"{constant} Values={label}", mutated)
        mutated = copy.deepcopy(document)
        del mutated["constants"][constant]
        yield case(f"{constant} missing", mutated)
        for key, value in (("DataType", "DML_TENSOR_DATA_TYPE_BOGUS"), ("Sizes", [1, 2**40, 1, 1]), ("Sizes", [])):
            mutated = copy.deepcopy(document)
            mutated["constants"][constant][key] = value
            yield case(f"{constant} {key}={value}", mutated)
    yield case("constants list", {**document, "constants": [1]})
    quantized = [i for i, op in enumerate(document["operators"]) if "InputScaleTensor" in op["desc"]]
    for index in quantized:
        for member in ("InputScaleTensor", "InputZeroPointTensor", "OutputScaleTensor", "OutputZeroPointTensor"):
            for label, value in (("null", None), ("huge", [1, 2**32, 1, 1]), ("rank 9", [1] * 9), ("int", 5)):
                mutated = copy.deepcopy(document)
                if label == "null":
                    mutated["operators"][index]["desc"][member] = None
                else:
                    mutated["operators"][index]["desc"][member]["Sizes"] = value
                yield case(f"op {index} {member}={label}", mutated)
        for tensor in ("InputTensor", "OutputTensor"):
            for label, value in (
                ("2**40", [2**40, 1, 1, 1]),
                ("negative", [-1, 1, 1, 1]),
                ("short", [1]),
                ("strings", ["1"] * 4),
            ):
                mutated = copy.deepcopy(document)
                mutated["operators"][index]["desc"][tensor]["Strides"] = value
                yield case(f"op {index} {tensor} Strides={label}", mutated)
    model = bases.onnx["quantized"]
    for name, value in (
        ("xs", np.array([0.0, 0.1], np.float32)),
        ("xs", np.array([np.nan, 0.1], np.float32)),
        ("xs", np.array([0.05, 0.1, 0.2], np.float32)),
        ("ys", np.array(-1.0, np.float32)),
        ("zs", np.array(np.inf, np.float32)),
        ("zz", np.array([1, 2], np.int8)),
        ("xz", np.array([127], np.int8)),
    ):
        proto = copy.deepcopy(model)
        for init in proto.graph.initializer:
            if init.name == name:
                init.CopyFrom(numpy_helper.from_array(value, name))
        runs = (("convert", "m.onnx", "--to", "dml", "-o", "out/m.json"), ("convert", "m.onnx", "--to", "dml", "-o", "out/m.h"))
        yield Case(f"onnx/quantized/{name}={value.tolist()}", "dml-quantized", {"m.onnx": proto.SerializeToString()}, runs)


def _npy(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _npz(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)
    return buffer.getvalue()


def _npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """An .npy header claiming ``shape`` with a few bytes of data after it."""
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 64


def input_cases(bases: Bases) -> Iterable[Case]:
    model = bases.onnx["pools"].SerializeToString()
    good = np.zeros((1, 2, 9, 9), np.float32)
    npz_variants = {
        "truncated npz": _npz({"x.npy": _npy(good)})[:200],
        "garbage npz": b"PK\x03\x04" + b"\0" * 100,
        "text member": _npz({"x.npy": b"hello"}),
        "pickled member": _npz({"x.npy": _npy(np.array([{"a": 1}], dtype=object))}),
        "huge header member": _npz({"x.npy": _npy_header((2**40,))}),
        "huge 2-d header member": _npz({"x.npy": _npy_header((1, 2, 2**20, 2**20))}),
        "negative header member": _npz({"x.npy": _npy_header((-1, 2))}),
        "bad descr member": _npz({"x.npy": _npy_header((2,), descr="<Q99")}),
        "float64": _npz({"x.npy": _npy(good.astype(np.float64))}),
        "wrong shape": _npz({"x.npy": _npy(np.zeros((1, 2, 8, 9), np.float32))}),
        "zero batch": _npz({"x.npy": _npy(np.zeros((0, 2, 9, 9), np.float32))}),
        "scalar": _npz({"x.npy": _npy(np.float32(1))}),
        "extra name": _npz({"x.npy": _npy(good), "y.npy": _npy(good)}),
        "empty npz": _npz({}),
        "npy given as npz": _npy(good),
    }
    for label, payload in npz_variants.items():
        runs = tuple(("run", "m.onnx", "--inputs", "in.npz", "--device", device) for device in ("numpy", "CPU"))
        yield Case(f"inputs/--inputs {label}", "inputs", {"m.onnx": model, "in.npz": payload}, runs)
    npy_variants = {
        "truncated npy": _npy(good)[:100],
        "text": b"1 2 3",
        "pickled": _npy(np.array([{"a": 1}], dtype=object)),
        "huge header": _npy_header((2**40,)),
        "huge 4-d header": _npy_header((1, 2, 2**20, 2**20)),
        "npz given as npy": _npz({"x.npy": _npy(good)}),
        "big-endian": _npy(good.astype(">f4")),
        "fortran order": _npy(np.asfortranarray(good)),
        "empty file": b"",
    }
    for label, payload in npy_variants.items():
        runs = tuple(("run", "m.onnx", "-i", "x=x.npy", "--device", device) for device in ("numpy", "CPU"))
        yield Case(f"inputs/-i {label}", "inputs", {"m.onnx": model, "x.npy": payload}, runs)


# ---------------------------------------------------------------- command lines


def args_cases(bases: Bases) -> Iterable[Case]:
    tiny = bases.onnx["tiny"].SerializeToString()
    pools = bases.onnx["pools"].SerializeToString()
    dyn = bases.onnx["dyn"].SerializeToString()
    xml, weights = bases.ir["pools"]
    good = _npz({"x.npy": _npy(np.zeros((1, 2, 9, 9), np.float32))})

    def case(label: str, files: dict[str, bytes], *runs: tuple[str, ...]) -> Case:
        return Case(f"args/{label}", "args", files, tuple(runs))

    yield case("seed negative", {"m.onnx": pools}, ("run", "m.onnx", "--random-inputs", "--seed", "-1", "--device", "numpy"))
    yield case("seed huge", {"m.onnx": pools}, ("run", "m.onnx", "--random-inputs", "--seed", str(2**70), "--device", "numpy"))
    for label, shape in (
        ("2**40", "1099511627776,2,8,8"),
        ("2**20 squared", "1,2,1048576,1048576"),
        ("zero batch", "0,2,8,8"),
        ("zero spatial", "1,2,0,8"),
        ("negative", "1,2,-8,8"),
        ("letters", "a,b"),
        ("empty", ""),
        ("rank 2", "1,2"),
        ("2**63", f"1,2,{2**63},8"),
    ):
        for device in ("numpy", "CPU"):
            yield case(
                f"--shape {label} {device}",
                {"m.onnx": dyn},
                ("run", "m.onnx", "--random-inputs", "--shape", f"x={shape}", "--device", device),
            )
    yield case("--shape unknown name", {"m.onnx": dyn}, ("run", "m.onnx", "--random-inputs", "--shape", "nope=1,2,8,8"))
    yield case(
        "run output is the model",
        {"m.onnx": pools},
        ("run", "m.onnx", "--random-inputs", "--device", "numpy", "--output", "m.onnx", "--force"),
    )
    yield case(
        "run output is --inputs",
        {"m.onnx": pools, "in.npz": good},
        ("run", "m.onnx", "--inputs", "in.npz", "--device", "numpy", "--output", "in.npz", "--force"),
    )
    yield case(
        "run output is -i",
        {"m.onnx": pools, "x.npy": _npy(np.zeros((1, 2, 9, 9), np.float32))},
        ("run", "m.onnx", "-i", "x=x.npy", "--device", "numpy", "--output", "x.npy", "--force"),
    )
    yield case(
        "run output is the IR's bin",
        {"m.xml": xml, "m.bin": weights},
        ("run", "m.xml", "--random-inputs", "--output", "m.bin", "--force"),
    )
    yield case(
        "run output is the IR",
        {"m.xml": xml, "m.bin": weights},
        ("run", "m.xml", "--random-inputs", "--device", "numpy", "--output", "./m.xml", "--force"),
    )
    yield case(
        "explain svg is the model",
        {"m.onnx": tiny},
        ("explain", "--onnx", "m.onnx", "--node", "pool1", "--svg", "m.onnx", "--force"),
    )
    yield case(
        "explain svg is the IR",
        {"m.xml": xml, "m.bin": weights},
        ("explain", "--ir", "m.xml", "--layer", "mi", "--svg", "m.xml", "--force"),
    )
    yield case(
        "explain svg is the IR's bin",
        {"m.xml": xml, "m.bin": weights},
        ("explain", "--ir", "m.xml", "--layer", "mi", "--svg", "m.bin", "--force"),
    )
    yield case(
        "convert foreign extension over existing xml", {"m.onnx": tiny, "o.xml": b"keep me"}, ("convert", "m.onnx", "-o", "o.txt")
    )
    yield case(
        "convert foreign extension forced",
        {"m.onnx": tiny, "o.xml": b"keep me", "o.bin": b"keep me"},
        ("convert", "m.onnx", "-o", "o.txt", "--force"),
    )
    yield case("convert output is the source", {"m.onnx": tiny}, ("convert", "m.onnx", "-o", "m.onnx", "--to", "ir", "--force"))
    yield case(
        "convert IR output is its bin",
        {"m.xml": xml, "m.bin": weights},
        ("convert", "m.xml", "--to", "onnx", "-o", "m.bin", "--force"),
    )
    yield case(
        "convert IR to dml over its bin",
        {"m.xml": xml, "m.bin": weights},
        ("convert", "m.xml", "--to", "dml", "-o", "m.bin", "--force"),
    )
    yield case(
        "convert to IR over the source's stem",
        {"m.xml": xml, "m.bin": weights, "m.onnx": pools},
        ("convert", "m.onnx", "-o", "m.xml", "--force"),
    )
    yield case(
        "transform output is the source",
        {"m.onnx": tiny},
        ("transform", "m.onnx", "-o", "m.onnx", "--force", "--pass", "no-ceil"),
    )
    long_stem = "a" * 250
    yield case(
        "transform default name too long", {f"{long_stem}.onnx": tiny}, ("transform", f"{long_stem}.onnx", "--pass", "no-ceil")
    )
    yield case(
        "convert default name too long",
        {f"{'b' * 251}.xml": xml, f"{'b' * 251}.bin": weights},
        ("convert", f"{'b' * 251}.xml", "--to", "onnx"),
    )
    yield case("convert -o name too long", {"m.onnx": tiny}, ("convert", "m.onnx", "-o", "c" * 300 + ".xml"))
    yield case("convert --to bogus", {"m.onnx": tiny}, ("convert", "m.onnx", "--to", "bogus"))
    yield case(
        "convert feature level bogus",
        {"m.onnx": tiny},
        ("convert", "m.onnx", "--to", "dml", "--feature-level", "abc"),
        ("convert", "m.onnx", "--to", "dml", "--feature-level", "99.9"),
    )
    yield case("validate format bogus", {"m.xml": xml, "m.bin": weights}, ("validate", "--format", "bogus", "m.xml"))
    yield case("run precision bogus", {"m.onnx": pools}, ("run", "m.onnx", "--random-inputs", "--precision", "f64"))
    yield case("run device bogus", {"m.onnx": pools}, ("run", "m.onnx", "--random-inputs", "--device", "BOGUS", "--no-fallback"))
    yield case(
        "run -i malformed",
        {"m.onnx": pools},
        ("run", "m.onnx", "-i", "nonsense"),
        ("run", "m.onnx", "-i", "x="),
        ("run", "m.onnx", "-i", "x=missing.npy"),
    )
    yield case(
        "run max-memory bogus",
        {"m.onnx": pools},
        ("run", "m.onnx", "--random-inputs", "--max-memory", "lots"),
        ("run", "m.onnx", "--random-inputs", "--max-memory", "-5"),
    )
    yield case(
        "run max-memory tiny", {"m.onnx": pools}, ("run", "m.onnx", "--random-inputs", "--device", "numpy", "--max-memory", "100")
    )
    for label, flags in (
        ("kernel 2**40", ("--kernel", str(2**40), "--input-shape", "5")),
        ("kernel negative", ("--kernel", "-3", "--input-shape", "5")),
        ("strides zero", ("--kernel", "3", "--strides", "0", "--input-shape", "5")),
        ("strides 2**40", ("--kernel", "3", "--strides", str(2**40), "--input-shape", "5")),
        ("dilations 2**31", ("--kernel", "3", "--dilations", str(2**31), "--input-shape", "5")),
        ("pads huge", ("--kernel", "3", "--pads", f"{2**31},{2**31}", "--input-shape", "5")),
        ("kernel and pads wide", ("--kernel", "1000000", "--pads", "999999,999999", "--input-shape", "5")),
        ("input 2**40", ("--kernel", "3", "--input-shape", str(2**40))),
        ("input 10**6 by 10**6", ("--kernel", "3", "--input-shape", "1000000,1000000")),
        ("input zero", ("--kernel", "3", "--input-shape", "0")),
        ("input negative", ("--kernel", "3", "--input-shape", "-4")),
        ("input 9 axes", ("--kernel", "3", "--input-shape", "1,1,5,5,5,5,5,5,5")),
        ("auto_pad bogus", ("--kernel", "3", "--auto-pad", "BOGUS", "--input-shape", "5")),
        ("op bogus", ("--op", "min", "--kernel", "3", "--input-shape", "5")),
        ("rounding bogus", ("--kernel", "3", "--rounding", "sideways", "--input-shape", "5")),
    ):
        yield case(f"explain {label}", {}, ("explain", *flags))
    sup = "\u00b2"  # a superscript 2: str.isdigit() says yes, int() says no
    yield case(
        "seeds negative elsewhere",
        {"m.onnx": pools},
        ("bench", "m.onnx", "--seed", "-5", "--runs", "1", "--backend", "numpy"),
        ("compare", "m.onnx", "--device", "numpy", "--random-inputs", "--seed", "-1"),
    )
    yield case("bench runs huge", {"m.onnx": pools}, ("bench", "m.onnx", "--runs", "9" * 23, "--backend", "numpy"))
    yield case("bench warmup huge", {"m.onnx": pools}, ("bench", "m.onnx", "--warmup", str(2**70), "--backend", "numpy"))
    yield case(
        "compare tolerance not finite",
        {"m.onnx": pools},
        ("compare", "m.onnx", "--device", "numpy", "--random-inputs", "--rtol", "nan", "--json"),
        ("compare", "m.onnx", "--device", "numpy", "--random-inputs", "--atol", "inf"),
    )
    yield case(
        "digits that are not ASCII",
        {"m.onnx": pools, "m.xml": xml, "m.bin": weights},
        ("transform", "m.onnx", "-p", f"opset={sup}", "-o", "out/t.onnx"),
        ("validate", "m.xml", "-j", sup),
        ("convert", "m.onnx", "--to", "dml", "--feature-level", f"5.{sup}", "-o", "out/m.json"),
    )
    for label, text in (
        ("2**63", str(2**63)),
        ("2**63-1", str(2**63 - 1)),
        ("2**70", str(2**70)),
        ("range to 2**40", f"1..{2**40}"),
    ):
        yield case(
            f"convert --input dim {label}",
            {"m.onnx": dyn},
            ("convert", "m.onnx", "--input", f"x[1,2,{text},8]", "-o", "out/m.xml"),
            ("convert", "m.onnx", "--shape", f"x=1,2,{text},8", "-o", "out/m.xml"),
        )
    yield case(
        "an input given twice",
        {"m.onnx": dyn, "x.npy": _npy(np.zeros((1, 2, 8, 8), np.float32))},
        ("convert", "m.onnx", "--input", "x[1,2,8,8]", "--input", "x[1,2,4,4]", "-o", "out/m.xml"),
        ("run", "m.onnx", "-i", "x=x.npy", "-i", "x=x.npy", "--device", "numpy"),
    )
    yield case(
        "fallback contradicted", {"m.onnx": pools}, ("run", "m.onnx", "--random-inputs", "--fallback", "numpy", "--no-fallback")
    )
    yield case("format to itself", {"m.onnx": pools}, ("convert", "m.onnx", "--to", "onnx", "-o", "out/n.onnx"))
    yield case("max-memory past int64", {"m.onnx": pools}, ("run", "m.onnx", "--random-inputs", "--max-memory", "9" * 400))
    yield case("explain node missing", {"m.onnx": tiny}, ("explain", "--onnx", "m.onnx", "--node", "nope"))
    yield case("explain layer missing", {"m.xml": xml, "m.bin": weights}, ("explain", "--ir", "m.xml", "--layer", "nope"))
    yield case("explain node not a pool", {"m.onnx": tiny}, ("explain", "--onnx", "m.onnx", "--node", "conv1"))


# ---------------------------------------------------------------- paths that are not regular files


def path_cases(bases: Bases) -> Iterable[Case]:
    pools = bases.onnx["pools"].SerializeToString()
    xml, weights = bases.ir["pools"]
    targets = {
        "m.onnx": onnx_runs(node="mp"),
        "m.xml": ir_runs(layer="mi"),
        "m.json": dml_runs(),
    }
    for name, runs in targets.items():
        for kind in ("dir", "fifo", "socket", "zero", "sparse"):
            files = {"m.bin": weights} if name == "m.xml" else {}
            yield Case(f"path/{name} {kind}", "path", files, runs, ((kind, name),))
        yield Case(f"path/{name} missing", "path", {}, runs)
        yield Case(f"path/{name} empty", "path", {name: b"", **({"m.bin": weights} if name == "m.xml" else {})}, runs)
    for kind in ("dir", "fifo", "zero", "sparse"):
        yield Case(f"path/m.bin {kind}", "path", {"m.xml": xml}, ir_runs(layer="mi"), ((kind, "m.bin"),))
        runs = (
            ("run", "m.onnx", "--inputs", "in.npz", "--device", "numpy"),
            ("run", "m.onnx", "-i", "x=in.npz", "--device", "CPU"),
        )
        yield Case(f"path/in.npz {kind}", "path", {"m.onnx": pools}, runs, ((kind, "in.npz"),))
    yield Case(
        "path/output dir is a file", "path", {"m.onnx": pools, "o": b"file"}, (("convert", "m.onnx", "--output-dir", "o"),)
    )
    yield Case(
        "path/output is a folder",
        "path",
        {"m.onnx": pools},
        (("convert", "m.onnx", "-o", "out"), ("run", "m.onnx", "--random-inputs", "--output", "out")),
    )
    yield Case("path/output under a file", "path", {"m.onnx": pools, "f": b"file"}, (("convert", "m.onnx", "-o", "f/m.xml"),))
    yield Case(
        "path/output is a fifo",
        "path",
        {"m.onnx": pools},
        (("convert", "m.onnx", "-o", "p.xml", "--force"),),
        (("fifo", "p.xml"),),
    )
    yield Case(
        "path/outputs are symbolic link loops",
        "path",
        {"m.onnx": pools},
        (
            ("convert", "m.onnx", "-o", "l.xml", "--force"),
            ("transform", "m.onnx", "-o", "l.onnx", "--pass", "no-ceil", "--force"),
            ("run", "m.onnx", "--random-inputs", "--device", "numpy", "--output", "l.npz", "--force"),
            ("explain", "--kernel", "2", "--input-shape", "4", "--svg", "l.svg", "--force"),
            ("convert", "m.onnx", "--output-dir", "l"),
            ("convert", "m.onnx", "--ovms-repo", "l"),
        ),
        (("loop", "l.xml"), ("loop", "l.onnx"), ("loop", "l.npz"), ("loop", "l.svg"), ("loop", "l")),
    )
    yield Case(
        "path/inputs are symbolic link loops",
        "path",
        {"m.onnx": pools},
        (
            ("convert", "m.onnx", "l.onnx", "--output-dir", "out"),
            ("run", "m.onnx", "-i", "x=l.npy", "--output", "o.npz"),
            ("explain", "--ir", "l.xml", "--layer", "mi", "--svg", "o.svg"),
        ),
        (("loop", "l.onnx"), ("loop", "l.npy"), ("loop", "l.xml")),
    )
    for kind in ("dir", "fifo", "zero", "sparse", "loop"):
        yield Case(
            f"path/ovms config.json {kind}",
            "path",
            {"m.onnx": pools},
            (("convert", "m.onnx", "--ovms-repo", "."),),
            ((kind, "config.json"),),
        )
    yield Case(
        "path/ovms config.json too deep",
        "path",
        {"m.onnx": pools, "config.json": b"[" * 200_000},
        (("convert", "m.onnx", "--ovms-repo", "."),),
    )
    tiny = bases.onnx["tiny"]
    yield Case(
        "path/batch output is another source's external data",
        "path",
        {"a.onnx": _external(tiny, "p.bin").SerializeToString(), "p.bin": tiny.graph.initializer[0].raw_data, "p.onnx": pools},
        (("convert", "a.onnx", "p.onnx", "--force"),),
    )
    yield Case(
        "path/output dir is not a folder",
        "path",
        {"m.onnx": pools},
        (("convert", "m.onnx", "--output-dir", "f"), ("transform", "m.onnx", "--pass", "no-ceil", "--output-dir", "z")),
        (("fifo", "f"), ("zero", "z")),
    )
    yield Case(
        "path/empty output paths",
        "path",
        {"m.onnx": pools},
        (
            ("convert", "m.onnx", "-o", ""),
            ("convert", "m.onnx", "--output-dir", ""),
            ("transform", "m.onnx", "--pass", "no-ceil", "-o", ""),
            ("run", "m.onnx", "--random-inputs", "--output", ""),
            ("explain", "--kernel", "2", "--input-shape", "4", "--svg", ""),
            ("compare", "m.onnx", "--device", "numpy", "--random-inputs", "--plot", ""),
        ),
    )
    compare = ("compare", "--device", "numpy", "--random-inputs")
    yield Case(
        "path/compare plot over an input, a folder, a FIFO",
        "path",
        {"m.onnx": pools, "m.xml": xml, "m.bin": weights},
        (
            (compare[0], "m.onnx", *compare[1:], "--plot", "m.onnx", "--force"),
            (compare[0], "m.xml", *compare[1:], "--plot", "m.bin", "--force"),
            (compare[0], "m.onnx", *compare[1:], "--plot", "d"),
            (compare[0], "m.onnx", *compare[1:], "--plot", "f/plot.svg"),
            (compare[0], "m.onnx", *compare[1:], "--force"),
            (compare[0], "m.onnx", *compare[1:], "--reference-model", "missing.onnx"),
            (compare[0], "m.onnx", *compare[1:], "--reference-model", "m.xml", "--all-layers"),
        ),
        (("dir", "d"), ("fifo", "f")),
    )


def _fake_quantize_ir(levels: str, low_shape: str = "", element: str = "f32", size: int = 4) -> bytes:
    """An IR of one FakeQuantize over a 2x3 input, its four ranges from one Const (``low_shape``,
    ``element``, ``size`` bytes at offset 0)."""
    dims = "".join(f"<dim>{d}</dim>" for d in low_shape.split(",") if d)
    ports = "".join(f'<port id="{i}" precision="FP32">{dims}</port>' for i in range(1, 5))
    edges = "".join(f'<edge from-layer="1" from-port="0" to-layer="2" to-port="{i}"/>' for i in range(1, 5))
    return f"""<?xml version="1.0"?>
<net name="fq" version="11"><layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data shape="2,3" element_type="f32"/>
<output><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></output></layer>
<layer id="1" name="r" type="Const" version="opset1"><data element_type="{element}" shape="{low_shape}" offset="0" size="{size}"/>
<output><port id="0" precision="FP32">{dims}</port></output></layer>
<layer id="2" name="fq" type="FakeQuantize" version="opset1"><data levels="{levels}" auto_broadcast="numpy"/>
<input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port>{ports}</input>
<output><port id="5" precision="FP32"><dim>2</dim><dim>3</dim></port></output></layer>
<layer id="3" name="out" type="Result" version="opset1"><input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>{edges}
<edge from-layer="2" from-port="5" to-layer="3" to-port="0"/></edges></net>
""".encode()


def quantized_ir_cases() -> Iterable[Case]:
    """FakeQuantize layers numpy must refuse by name: levels 1, 2**70, not a number, ranges that do
    not broadcast to the data, 4-bit ranges of the wrong size, NaN ranges (which run)."""
    runs = (
        ("run", "m.xml", "--random-inputs", "--device", "numpy"),
        ("compare", "m.xml", "--device", "numpy", "--reference", "CPU", "--random-inputs", "--per-layer"),
        ("validate", "m.xml"),
    )
    nan = np.full(1, np.nan, np.float32).tobytes()
    for label, text, weights in (
        ("levels 1", _fake_quantize_ir("1"), np.ones(1, np.float32).tobytes()),
        ("levels 2**70", _fake_quantize_ir(str(2**70)), np.ones(1, np.float32).tobytes()),
        ("levels not a number", _fake_quantize_ir("many"), np.ones(1, np.float32).tobytes()),
        ("ranges of another shape", _fake_quantize_ir("256", "4", size=16), np.ones(4, np.float32).tobytes()),
        ("u4 ranges of the wrong size", _fake_quantize_ir("256", "3", "u4", 1), b"\x21"),
        ("NaN ranges", _fake_quantize_ir("256"), nan),
    ):
        yield Case(f"ir-quant/fake-quantize/{label}", "ir-quant", {"m.xml": text, "m.bin": weights}, runs)


def _quantized_irs() -> dict[str, tuple[str, bytes]]:
    """Quantized IRs whose pools validate's OVP501/OVP502 read back to their integers: the
    dequantization ONNX QDQ models become, a bare FakeQuantize, a zero Pad fused into the average,
    and a 3-D ReduceMean with per-channel zero points (``quant_ir``)."""
    made = {}
    with tempfile.TemporaryDirectory() as folder:
        g = quant_ir.Graph()
        y = quant_ir.quantize_dequantize(g, g.parameter((3, 2, 3)), zero_point=[128, 100])
        y = g.op("ReduceMean", [y, g.const([2], "i64")], {"keep_dims": "true"}, dims=(3, 2, 1))
        g.result(quant_ir.quantize_dequantize(g, y, name="q_out"))
        path = g.write(Path(folder), "reduce")
        made["reduce"] = (path.read_text(), path.with_suffix(".bin").read_bytes())
        pads = {"pad": 1, "pad-huge": 2**40, "pad-negative": -1}
        for name in ("qdq", "fq", *pads):
            g = quant_ir.Graph()
            x = g.parameter((1, 2, 6, 6))
            if name == "fq":
                y = quant_ir.fake_quantize(g, x, -1.0, 2.0, -1.0, 2.0)
            else:
                y = quant_ir.quantize_dequantize(g, x)
            if name in pads:
                p = pads[name]
                y = quant_ir.avg_pool(
                    g, quant_ir.pad(g, y, [0, 0, p, p], [0, 0, p, p]), [3, 3], exclude_pad=True, dims=(1, 2, 6, 6)
                )
            else:
                y = quant_ir.avg_pool(g, y, [3, 3], pads_begin=[1, 1], pads_end=[1, 1])
            g.result(y)
            path = g.write(Path(folder), name)
            made[name] = (path.read_text(), path.with_suffix(".bin").read_bytes())
    return made


def ir_quant_cases() -> Iterable[Case]:
    """OVP501's reads of a quantized IR's constants and layers, damaged: ranges, zero points and
    pads past the .bin, huge, negative, NaN or of the wrong type, odd levels, a missing .bin."""
    runs = (("validate", "m.xml"), ("validate", "--strict", "--format", "json", "m.xml"))
    for base, (text, weights) in _quantized_irs().items():

        def case(label: str, xml: str = text, data: bytes | None = weights, base: str = base) -> Case:
            files = {"m.xml": xml.encode()} if data is None else {"m.xml": xml.encode(), "m.bin": data}
            return Case(f"ir-quant/{base}/{label}", "ir-quant", files, runs)

        yield case("as made")
        yield case("no bin", data=None)
        yield case("bin truncated", data=weights[: len(weights) // 2])
        yield case("bin all NaN", data=b"\x00\x00\xc0\x7f" * (len(weights) // 4) + b"\x00" * (len(weights) % 4))
        yield case("bin all inf", data=b"\x00\x00\x80\x7f" * (len(weights) // 4) + b"\x00" * (len(weights) % 4))
        for label, old, new in (
            ("offsets past end", 'offset="', 'offset="9999999'),
            ("sizes huge", 'size="', 'size="1099511627776'),
            ("sizes negative", 'size="', 'size="-'),
            ("shapes huge", 'shape="', 'shape="1099511627776,'),
            ("shapes negative", 'shape="', 'shape="-1,'),
            ("element types bool", 'element_type="f32"', 'element_type="boolean"'),
            ("element types bf16", 'element_type="f32"', 'element_type="bf16"'),
            ("element types unknown", 'element_type="', 'element_type="x'),
            ("levels 2**40", 'levels="256"', 'levels="1099511627776"'),
            ("levels -1", 'levels="256"', 'levels="-1"'),
            ("levels text", 'levels="256"', 'levels="many"'),
            ("pad mode edge", 'pad_mode="constant"', 'pad_mode="edge"'),
            ("precision I8", 'precision="U8"', 'precision="I8"'),
            ("precision unknown", 'precision="U8"', 'precision="Q7"'),
        ):
            if old in text:
                yield case(label, text.replace(old, new))


def corpus(bases: Bases) -> list[Case]:
    """Every case, in a fixed order."""
    return [
        *onnx_attr_cases(bases),
        *onnx_structural_cases(bases),
        *onnx_external_cases(bases),
        *byte_cases(bases),
        *ir_attr_cases(bases),
        *window_wrap_cases(),
        *ir_structure_cases(bases),
        *quantized_ir_cases(),
        *ir_quant_cases(),
        *dml_cases(bases),
        *dml_quantized_cases(bases),
        *input_cases(bases),
        *args_cases(bases),
        *path_cases(bases),
    ]


# ---------------------------------------------------------------- running


def _prepare(case: Case, folder: Path) -> None:
    (folder / "out").mkdir()
    for name, payload in case.files.items():
        (folder / name).write_bytes(payload)
    for kind, name in case.setup:
        path = folder / name
        if kind == "dir":
            path.mkdir()
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "socket":
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(path))
            server.close()
        elif kind == "zero":
            path.symlink_to("/dev/zero")
        elif kind == "loop":
            (folder / f"{name}.2").symlink_to(name)
            path.symlink_to(f"{name}.2")
        elif kind == "sparse":
            with open(path, "wb") as handle:
                handle.truncate(SPARSE_SIZE)


def _snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: a regular file by its hash, anything else by its kind."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        key = str(path.relative_to(folder))
        if stat.S_ISREG(mode) and path.stat().st_size < SPARSE_SIZE:
            found[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[key] = f"{stat.S_IFMT(mode):o}:{path.lstat().st_size}"
    return found


def _limits() -> None:
    """In the child: 4 GiB of address space, 256 MiB per file written."""
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))


def run_one(case: Case, argv: Sequence[str], root: Path, timeout: float) -> Outcome:
    """Run ``ovpool argv`` on the case's files in a fresh folder under ``root`` and check it."""
    folder = Path(tempfile.mkdtemp(dir=root))
    try:
        _prepare(case, folder)
        before = _snapshot(folder)
        env = {k: v for k, v in os.environ.items() if k not in ("OVPOOL_DEBUG", "OVPOOL_MAX_MEMORY")}
        # a 1 GiB memory budget: every run fits the 4 GiB address space it is given
        env.update(
            PYTHONPATH=str(ROOT), OVPOOL_CACHE_DIR=str(root / "cache"), OVPOOL_MAX_MEMORY=str(BUDGET), CI="true", COLUMNS="200"
        )
        with tempfile.TemporaryFile(dir=root) as out, tempfile.TemporaryFile(dir=root) as err:
            start = time.monotonic()
            process = subprocess.Popen(
                [sys.executable, "-m", "ovpool", *argv],
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,
                preexec_fn=_limits,
            )
            code, peak = _wait(process, timeout)
            seconds = time.monotonic() - start
            out.seek(0)
            err.seek(0)
            stdout = out.read(1 << 20).decode(errors="replace")
            stderr = err.read(1 << 20).decode(errors="replace")
        outcome = Outcome(case.name, case.family, tuple(argv), code, seconds, peak, stderr=stderr[-2000:])
        outcome.problems.extend(_problems(code, stdout, stderr, before, _snapshot(folder), timeout))
        if peak > PEAK_LIMIT:
            outcome.problems.append(f"peak memory {peak / (1 << 30):.1f} GiB, over {PEAK_LIMIT / (1 << 30):.1f} GiB")
        return outcome
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _wait(process: subprocess.Popen, timeout: float) -> tuple[int | None, int]:
    """The exit code (negative: the signal; None: killed at ``timeout``) and peak resident bytes
    of ``process``, from ``wait4``'s resource usage of that child alone."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode, usage.ru_maxrss * 1024
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            _, _, usage = os.wait4(process.pid, 0)
            process.returncode = -signal.SIGKILL
            return None, usage.ru_maxrss * 1024
        time.sleep(0.01)


def _problems(
    code: int | None, stdout: str, stderr: str, before: dict[str, str], after: dict[str, str], timeout: float
) -> Iterable[str]:
    if code is None:
        yield f"no exit within {timeout:.0f} s"
    elif code < 0:
        yield f"killed by signal {-code} ({signal.Signals(-code).name})"
    elif code not in (0, 1, 2):
        yield f"exit code {code}"
    if "internal error" in stderr:
        yield "internal error: " + stderr.strip().splitlines()[-1][:300]
    if "Traceback" in stdout + stderr:
        yield "traceback"
    for key, value in before.items():
        if after.get(key) != value:
            yield f"input {key} changed"
    created = [key for key in after if key not in before]
    temporary = [key for key in created if Path(key).name.startswith(".") and key.endswith(".tmp")]
    if temporary:
        yield f"temporary file(s) left: {', '.join(temporary)}"
    if code not in (None, 0) and created:
        yield f"exit {code} but wrote {', '.join(created)}"
    if code not in (None, 0) and not (stderr.strip() or stdout.strip()):
        yield "failed without a message"


def pairs(cases: Sequence[Case]) -> list[tuple[Case, tuple[str, ...]]]:
    return [(case, argv) for case in cases for argv in case.runs]


def sample(cases: Sequence[Case], runs: int, seed: int) -> list[tuple[Case, tuple[str, ...]]]:
    """About ``runs`` (case, command) pairs, the same share from every family."""
    rng = random.Random(seed)
    families: dict[str, list[tuple[Case, tuple[str, ...]]]] = {}
    for pair in pairs(cases):
        families.setdefault(pair[0].family, []).append(pair)
    share = max(1, runs // len(families))
    chosen = []
    for family in sorted(families):
        members = families[family]
        chosen.extend(rng.sample(members, min(share, len(members))))
    return chosen


def run_all(
    chosen: Sequence[tuple[Case, tuple[str, ...]]],
    root: Path,
    timeout: float,
    workers: int = 2,
    log: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Every pair on ``workers`` threads; ``log`` sees each outcome as it comes."""

    def one(pair: tuple[Case, tuple[str, ...]]) -> Outcome:
        outcome = run_one(pair[0], pair[1], root, timeout)
        if log is not None:
            log(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, chosen))


def report(cases: Sequence[Case], outcomes: Sequence[Outcome]) -> str:
    """Counts: cases, runs, exits by code, runs per command, and every broken promise."""
    codes = Counter("timeout" if o.code is None else str(o.code) for o in outcomes)
    commands = Counter(o.argv[0] for o in outcomes)
    families = Counter(o.family for o in outcomes)
    bad = [o for o in outcomes if o.problems]
    lines = [
        f"{len({o.case for o in outcomes})} cases of {len(cases)}, {len(outcomes)} runs, "
        f"{sum(o.seconds for o in outcomes):.0f} s of runs",
        "exits: " + ", ".join(f"{code}: {n}" for code, n in sorted(codes.items())),
        "commands: " + ", ".join(f"{c}: {n}" for c, n in sorted(commands.items())),
        "families: " + ", ".join(f"{f}: {n}" for f, n in sorted(families.items())),
        f"slowest: {max((o.seconds for o in outcomes), default=0):.1f} s",
        f"largest peak memory: {max((o.peak for o in outcomes), default=0) / (1 << 20):.0f} MiB",
        f"runs breaking a promise: {len(bad)}",
    ]
    lines += [f"  {o.case} :: ovpool {' '.join(o.argv)} :: {'; '.join(o.problems)}" for o in bad]
    return "\n".join(lines)


def _log(outcome: Outcome) -> None:
    lines = outcome.stderr.strip().splitlines()
    status = "; ".join(outcome.problems) or "ok: " + (lines[-1][:200] if lines else "")
    print(
        f"{outcome.code} {outcome.seconds:5.1f}s {outcome.peak >> 20:5d}M {outcome.case} :: {' '.join(outcome.argv)} :: {status}",
        file=sys.stderr,
        flush=True,
    )


def main(argv: Sequence[str] = ()) -> int:
    """``python tests/fuzz_corpus.py [RUNS [FAMILY...]]``: every run of the corpus (or a sample of
    about RUNS; 0 for all), of every family or of those named (``inputs``, ``onnx-attr``, ...)."""
    limit = int(argv[0]) if argv else 0
    with tempfile.TemporaryDirectory(prefix="ovpool-fuzz-") as scratch:
        root = Path(scratch)
        (root / "bases").mkdir()
        cases = [c for c in corpus(build_bases(root / "bases")) if len(argv) < 2 or c.family in argv[1:]]
        chosen = sample(cases, limit, 13) if limit else pairs(cases)
        outcomes = run_all(chosen, root, float(os.environ.get("FUZZ_TIMEOUT", "120")), log=_log)
        print(report(cases, outcomes))
        return 1 if any(o.problems for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
