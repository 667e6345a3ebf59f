"""Hostile and broken input through every command: each run ends with exit code 0, 1 or 2 and a
message, never an internal error, a traceback, a signal or a hang, and leaves every input file as it
was and no partial output (the promises ``fuzz_corpus.run_one`` checks).

Two sources of cases, each run as ``python -m ovpool ...`` in a fresh folder with a time limit and
an address-space limit:

- the corpus ``tests/fuzz_corpus.py`` builds (truncations, bit flips, attribute mutations,
  structural damage, hostile XML and JSON, broken .npz/.npy inputs, hostile arguments and paths
  that are not regular files): a sample of every family in CI (``FUZZ_RUNS`` runs per family,
  default 12), every run with ``FUZZ_RUNS=all`` (about 6,000 runs, an hour on 2 cores);
- hypothesis: pooling nodes drawn from the whole attribute space (huge, zero and negative values,
  wrong lengths, every auto_pad, every opset 7-22, huge and zero input dims) and byte edits of the
  valid models, each run by a drawn command (``FUZZ_EXAMPLES`` examples each, default 25).
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import fuzz_corpus
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import AttributeProto, TensorProto, helper

pytestmark = pytest.mark.openvino

RUNS = os.environ.get("FUZZ_RUNS", "12")
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
TIMEOUT = float(os.environ.get("FUZZ_TIMEOUT", "60"))
SEED = int(os.environ.get("FUZZ_SEED", "13"))
FAMILIES = (
    "args",
    "dml-bytes",
    "dml-json",
    "dml-quantized",
    "inputs",
    "ir-attr",
    "ir-bytes",
    "ir-quant",
    "ir-struct",
    "ir-xml",
    "onnx-attr",
    "onnx-bytes",
    "onnx-external",
    "onnx-struct",
    "path",
)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ovpool-fuzz-") as folder:
        root = Path(folder)
        (root / "bases").mkdir()
        yield root


@pytest.fixture(scope="module")
def bases(scratch: Path) -> fuzz_corpus.Bases:
    return fuzz_corpus.build_bases(scratch / "bases")


@pytest.fixture(scope="module")
def cases(bases: fuzz_corpus.Bases) -> list[fuzz_corpus.Case]:
    return fuzz_corpus.corpus(bases)


def test_every_family_and_command_is_in_the_corpus(cases: list[fuzz_corpus.Case]) -> None:
    assert {c.family for c in cases} == set(FAMILIES)
    commands = {argv[0] for _, argv in fuzz_corpus.pairs(cases)}
    assert commands == {"convert", "validate", "run", "bench", "compare", "transform", "explain"}
    assert len(cases) >= 500


@pytest.mark.parametrize("family", FAMILIES)
def test_corpus(family: str, cases: list[fuzz_corpus.Case], scratch: Path) -> None:
    members = [c for c in cases if c.family == family]
    pairs = fuzz_corpus.pairs(members)
    if RUNS != "all":
        pairs = random.Random(f"{SEED}:{family}").sample(pairs, min(int(RUNS), len(pairs)))
    outcomes = fuzz_corpus.run_all(pairs, scratch, TIMEOUT)
    broken = [o for o in outcomes if o.problems]
    assert not broken, fuzz_corpus.report(members, outcomes)


# ---------------------------------------------------------------- hypothesis

WILD = st.one_of(
    st.integers(-2, 12),
    st.sampled_from([0, -1, 2**31 - 1, 2**31, 2**32, 2**40, 2**63 - 1, -(2**40)]),
)


@st.composite
def pool_models(draw: st.DrawFn) -> bytes:
    """One MaxPool or AveragePool node: any rank 1-3, any opset 7-22, each attribute absent, of
    the right length, or of a wrong one, with values from ``WILD``; input dims from ``WILD`` too."""
    op = draw(st.sampled_from(["MaxPool", "AveragePool"]))
    rank = draw(st.integers(1, 3))
    opset = draw(st.integers(7, 22))

    def ints(count: int) -> list[int] | None:
        length = draw(st.sampled_from([count, count, count, 0, count + 1]))
        return draw(st.one_of(st.none(), st.lists(WILD, min_size=length, max_size=length)))

    attributes: list[AttributeProto] = []
    kernel = draw(st.lists(WILD, min_size=rank, max_size=rank)) if draw(st.booleans()) else ints(rank)
    for name, value in (("kernel_shape", kernel), ("strides", ints(rank)), ("dilations", ints(rank)), ("pads", ints(2 * rank))):
        if value is not None:
            attributes.append(AttributeProto(name=name, type=AttributeProto.INTS, ints=value))
    for name, choices in (("ceil_mode", [0, 1, 2]), ("count_include_pad", [0, 1, -1]), ("storage_order", [0, 1, 5])):
        value = draw(st.one_of(st.none(), st.sampled_from(choices)))
        if value is not None:
            attributes.append(AttributeProto(name=name, type=AttributeProto.INT, i=value))
    auto_pad = draw(st.sampled_from([None, "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER", "BOGUS"]))
    if auto_pad is not None:
        attributes.append(AttributeProto(name="auto_pad", type=AttributeProto.STRING, s=auto_pad.encode()))
    dims = [draw(st.integers(0, 2)), draw(st.integers(0, 3)), *draw(st.lists(WILD, min_size=rank, max_size=rank))]
    outputs = ["y", "i"] if op == "MaxPool" and opset >= 8 and draw(st.booleans()) else ["y"]
    node = helper.make_node(op, ["x"], outputs, name="pool")
    node.attribute.extend(attributes)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [max(-(2**63), min(d, 2**63 - 1)) for d in dims])
    types = {"y": TensorProto.FLOAT, "i": TensorProto.INT64}
    graph = helper.make_graph([node], "fuzz", [x], [helper.make_tensor_value_info(o, types[o], None) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7).SerializeToString()


@settings(max_examples=EXAMPLES)
@given(model=pool_models(), command=st.sampled_from(fuzz_corpus.onnx_runs(node="pool")))
def test_pooling_attribute_space(model: bytes, command: tuple[str, ...], scratch: Path) -> None:
    case = fuzz_corpus.Case("hypothesis/pool", "hypothesis", {"m.onnx": model}, (command,))
    outcome = fuzz_corpus.run_one(case, command, scratch, TIMEOUT)
    assert not outcome.problems, f"ovpool {' '.join(command)}: {outcome.problems}\n{outcome.stderr}"


@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_byte_edits(data: st.DataObject, bases: fuzz_corpus.Bases, scratch: Path) -> None:
    kind = data.draw(st.sampled_from(["onnx", "ir", "dml"]))
    base = data.draw(st.sampled_from(["tiny", "pools"]))
    if kind == "onnx":
        name, payload, runs, extra = "m.onnx", bases.onnx[base].SerializeToString(), fuzz_corpus.onnx_runs(), {}
    elif kind == "ir":
        name, payload, runs = "m.xml", bases.ir[base][0], fuzz_corpus.ir_runs()
        extra = {"m.bin": bases.ir[base][1]}
    else:
        name, payload, runs, extra = "m.json", bases.dml[base], fuzz_corpus.dml_runs(), {}
    edited = bytearray(payload)
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(payload) - 1), st.integers(0, 255)), min_size=1, max_size=8))
    for position, value in edits:
        edited[position] = value
    cut = data.draw(st.one_of(st.none(), st.integers(0, len(payload))))
    command = data.draw(st.sampled_from(runs))
    case = fuzz_corpus.Case(f"hypothesis/{kind}", "hypothesis", {name: bytes(edited[:cut]), **extra}, (command,))
    outcome = fuzz_corpus.run_one(case, command, scratch, TIMEOUT)
    assert not outcome.problems, f"ovpool {' '.join(command)} on {edits} cut {cut}: {outcome.problems}\n{outcome.stderr}"
