"""The memory budget bounds the whole run (``ovpool.engine.budget``, ``limits.check_ov_run``).

The oracles: the resident peak of a subprocess (``os.wait4``'s ``ru_maxrss``, KiB on Linux), what
tracemalloc sees numpy allocate inside each kernel, and the documented rule computed by hand."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from onnx import ModelProto, TensorProto, helper, numpy_helper
from runtime_support import invoke, save

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
# The interpreter's fixed cost as docs/cli.md states it: python, numpy, onnx, ovpool and its command
# line, resident at the end of a tiny run (measured 74 MiB on numpy, 128 MiB with OpenVINO CPU).
FIXED = {"numpy": 96 * MIB, "CPU": 160 * MIB}
F = TensorProto.FLOAT


def one_node(
    op: str, x_shape: list, inits: tuple = (), extra: tuple = (), dtype: int = F, outputs: int = 1, opset: int = 17, **attrs
) -> ModelProto:
    """``x -> op -> y`` (and ``outputs - 1`` more), ``extra`` inputs after ``x`` (initializers ``inits``)."""
    names = ["y", "indices"][:outputs]
    node = helper.make_node(op, ["x", *extra], names, name="n", **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", dtype, x_shape)],
        [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in names],
        list(inits),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _c(name: str, value: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(value, name)


def pool_chain(dims: list, count: int = 3) -> ModelProto:
    """``count`` MaxPool k3 s1 pads 1 in a row: every tensor the size of the input."""
    nodes, prev = [], "x"
    for i in range(count):
        nodes.append(helper.make_node("MaxPool", [prev], [f"t{i}"], name=f"p{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F, dims)], [helper.make_tensor_value_info(prev, F, None)]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _w(name: str, shape: tuple) -> TensorProto:
    return numpy_helper.from_array(np.random.default_rng(0).standard_normal(shape).astype(np.float32), name)


X = [1, 8, 64, 64]
FAMILY_CASES = {
    "MaxPool k3 s2 pads 1": one_node("MaxPool", X, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "MaxPool k3 s1 dilated ceil": one_node("MaxPool", X, kernel_shape=[3, 3], dilations=[2, 2], ceil_mode=1),
    "MaxPool SPPF k5 s1 pads 2": one_node("MaxPool", [1, 128, 10, 10], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
    "MaxPool SPP k13 s1 pads 6": one_node("MaxPool", [1, 192, 13, 13], kernel_shape=[13, 13], pads=[6, 6, 6, 6]),
    "AveragePool k3 include pads": one_node("AveragePool", X, kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
    "AveragePool float16": one_node("AveragePool", X, dtype=TensorProto.FLOAT16, kernel_shape=[2, 2]),
    "LpPool": one_node("LpPool", [1, 2, 32, 32], kernel_shape=[3, 3]),
    "GlobalAveragePool": one_node("GlobalAveragePool", X),
    "Conv 3x3 pads 1": one_node("Conv", X, (_w("w", (8, 8, 3, 3)),), ("w",), pads=[1, 1, 1, 1]),
    "Conv 5x5 s2": one_node("Conv", X, (_w("w", (16, 8, 5, 5)),), ("w",), strides=[2, 2]),
    "Conv depthwise": one_node("Conv", X, (_w("w", (8, 1, 3, 3)),), ("w",), group=8, pads=[1, 1, 1, 1]),
    "ConvTranspose s2": one_node("ConvTranspose", X, (_w("w", (8, 4, 3, 3)),), ("w",), strides=[2, 2]),
    "LRN": one_node("LRN", X, size=5),
    "InstanceNormalization": one_node("InstanceNormalization", X, (_w("s", (8,)), _w("b", (8,))), ("s", "b")),
    "LayerNormalization": one_node("LayerNormalization", X, (_w("s", (64,)),), ("s",)),
    "MaxPool k3 s1 pads 1 with indices": one_node("MaxPool", X, outputs=2, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "MaxPool 3-D with indices": one_node("MaxPool", [1, 2, 8, 32, 32], outputs=2, kernel_shape=[3, 3, 3], pads=[1] * 6),
    "QuantizeLinear blocked": one_node(
        "QuantizeLinear",
        X,
        (_c("s", np.full((1, 8, 64, 16), 0.05, np.float32)), _c("z", np.zeros((1, 8, 64, 16), np.uint8))),
        ("s", "z"),
        opset=21,
        axis=3,
        block_size=4,
    ),
    "DequantizeLinear per axis": one_node(
        "DequantizeLinear",
        X,
        (_c("s", np.full(8, 0.05, np.float32)), _c("z", np.zeros(8, np.int8))),
        ("s", "z"),
        dtype=TensorProto.INT8,
        axis=1,
    ),
    "Pad reflect": one_node("Pad", X, (_c("p", np.array([0, 0, 2, 2, 0, 0, 2, 2], np.int64)),), ("p",), mode="reflect"),
    "Gelu": one_node("Gelu", X, opset=20),
    "LSTM": one_node("LSTM", [32, 8, 64], (_w("w", (1, 256, 64)), _w("r", (1, 256, 64))), ("w", "r"), outputs=2, hidden_size=64),
    "GridSample bicubic": one_node(
        "GridSample",
        [2, 3, 32, 32],
        (_c("g", np.linspace(-1.1, 1.1, 2 * 200 * 200 * 2, dtype=np.float32).reshape(2, 200, 200, 2)),),
        ("g",),
        opset=20,
        mode="cubic",
    ),
    "RoiAlign": one_node(
        "RoiAlign",
        [1, 16, 64, 64],
        (_c("r", np.array([[0, 0, 30, 30], [10, 10, 60, 60]] * 16, np.float32)), _c("b", np.zeros(32, np.int64))),
        ("r", "b"),
        output_height=7,
        output_width=7,
    ),
    "Relu": one_node("Relu", X),
    "Erf": one_node("Erf", X),
    "LogSoftmax": one_node("LogSoftmax", X, axis=1),
    "Add broadcast": one_node("Add", X, (_w("b", (64,)),), ("b",)),
    "MatMul": one_node("MatMul", X, (_w("m", (64, 96)),), ("m",)),
    "Transpose": one_node("Transpose", X, perm=[0, 2, 3, 1]),
    "ReduceSum": one_node("ReduceSum", X, keepdims=1),
    "SoftmaxCrossEntropyLoss": one_node(
        "SoftmaxCrossEntropyLoss", [1, 8, 256, 256], (_c("t", np.zeros((1, 256, 256), np.int64)),), ("t",), outputs=2
    ),
    "NegativeLogLikelihoodLoss weights": one_node(
        "NegativeLogLikelihoodLoss",
        [1, 8, 256, 256],
        (_c("t", np.ones((1, 256, 256), np.int64)), _c("w", np.ones(8, np.float32))),
        ("t", "w"),
    ),
    "Det": one_node("Det", [65536, 3, 3]),
    "MeanVarianceNormalization": one_node("MeanVarianceNormalization", [1, 8, 256, 256]),
    "Resize linear": one_node(
        "Resize", X, (numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s"),), ("", "s"), mode="linear"
    ),
}


@pytest.mark.parametrize("case", FAMILY_CASES)
def test_each_family_rule_bounds_what_its_kernel_allocates(case):
    """What numpy allocates while the node runs (tracemalloc), beyond its outputs, is within the
    family's ``work_bytes`` of its inputs (constants included, as the plan counts them) and
    outputs: the rule the plan's peak is summed with."""
    from ovpool.engine.budget import work_bytes
    from ovpool.engine.graph import GraphSession

    model = FAMILY_CASES[case]
    session = GraphSession(model)
    declared = model.graph.input[0].type.tensor_type
    dims = [d.dim_value for d in declared.shape.dim]
    x = (np.random.default_rng(1).standard_normal(dims) * 20).astype(helper.tensor_dtype_to_np_dtype(declared.elem_type))
    session.run({"x": x})  # caches (plans, weight layouts) are made before measuring
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        outputs = [v.nbytes for v in session.run({"x": x}).values()]
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    op = model.graph.node[0].op_type
    inputs = [x.nbytes] + [numpy_helper.to_array(t).nbytes for t in model.graph.initializer]
    assert peak - sum(outputs) <= work_bytes(op, inputs, outputs, x.itemsize), (peak, outputs, inputs)


def test_the_peak_is_summed_along_the_plan_by_the_rule():
    """Two MaxPools k3 s1 pads 1 over a 64 KiB input: at the second, x (held by the caller), t0 and
    t1 are live, 3 * 64 KiB, and its work is 1.5 * 64 + 2 * 64 KiB; nothing else (no constants)."""
    from ovpool.engine.budget import Sizes, plan_peak, session_bytes
    from ovpool.engine.graph import GraphSession

    session = GraphSession(pool_chain([1, 1, 128, 128], count=2))
    kib = 64 << 10
    sizes = Sizes(dict.fromkeys(["x", "t0", "t1"], kib), dict.fromkeys(["x", "t0", "t1"], 4))
    peak = plan_peak(session.compiled, sizes, session_bytes(session))
    assert peak.where == "node 'p1' (MaxPool)" and peak.exact
    assert peak.bytes == session.proto.ByteSize() + 3 * kib + int(1.5 * kib) + 2 * kib


# Runs the command given in argv and prints its exit code and resident peak (KiB). A process's
# ru_maxrss keeps the peak of the process it was forked from (Linux carries it over exec), so the
# command is forked from this small launcher, not from the test process with OpenVINO loaded.
LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def _peak(*args: object) -> tuple[int, int, str]:
    """``ovpool ARGS`` in a subprocess from the checkout: (exit code, resident peak in bytes, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "true"}
    env.pop("OVPOOL_MAX_MEMORY", None)
    command = [sys.executable, "-c", LAUNCHER, sys.executable, "-m", "ovpool", *map(str, args)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    code, kib = map(int, done.stdout.split())
    return code, kib * 1024, done.stderr


@pytest.mark.parametrize(
    ("device", "dims"), [("numpy", [1, 16, 512, 768]), pytest.param("CPU", [1, 16, 512, 512], marks=pytest.mark.openvino)]
)
def test_a_run_within_the_budget_stays_within_it(tmp_path, device, dims):
    """Three MaxPools k3 s1 under 256 MiB: on numpy over 24 MiB tensors, 3 * 24 MiB live at the
    second and 3.5 * 24 MiB of work, 61% of the budget; on OpenVINO over 16 MiB tensors, 3 copies
    of the input and of the output and 3 of the two intermediates live at once, 75%. The
    process's resident peak is within the budget plus the fixed cost."""
    path = save(pool_chain(dims), tmp_path / "m.onnx")
    code, peak, err = _peak("run", path, "--random-inputs", "--device", device, "--fallback", "none", "--max-memory", "256M")
    assert code == 0, err
    assert peak <= 256 * MIB + FIXED[device], peak / MIB


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize(
    ("device", "where"),
    [
        ("numpy", "node 'p1' (MaxPool): the run's live tensors and working memory would need 208.0 MiB"),
        pytest.param("CPU", "OpenVINO's copies of the run's tensors (3 x 32.0 MiB inputs", marks=pytest.mark.openvino),
    ],
)
def test_a_run_over_the_budget_is_refused_before_it_allocates(tmp_path, device, where, dynamic):
    """The same chain over a 32 MiB input under 128 MiB: one line naming the budget, where the
    peak is and the bytes; exit 1; nothing written; the resident peak near the fixed cost (the
    input is never drawn). With dynamic dims and ``--shape`` the same, found at the shapes given."""
    dims = [1, 8, "H", "W"] if dynamic else [1, 8, 1024, 1024]
    path = save(pool_chain(dims), tmp_path / "m.onnx")
    out = tmp_path / "out.npz"
    args = ["run", path, "--random-inputs", "--device", device, "--fallback", "none", "--max-memory", "128M", "--output", out]
    code, peak, err = _peak(*args, *(["--shape", "x=1,8,1024,1024"] if dynamic else []))
    assert code == 1 and err.count("\n") == 1 and "over the memory budget of 128.0 MiB" in err, err
    assert where in err, err
    assert not out.exists()
    assert peak <= FIXED[device], peak / MIB


def test_a_size_known_only_as_it_runs_counts_what_is_live(tmp_path, capsys):
    """``c = ConstantOfShape(s)``: inference cannot size c until s's values are read, so the run
    is checked as it goes. Under a 6 MiB budget, with an input x of 4 MB held, s = [1000, 1000]
    (4 MB more) is refused at the node, beside what the run holds, though each tensor alone fits."""
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["s"], ["c"], name="fill")],
        "g",
        [helper.make_tensor_value_info("s", TensorProto.INT64, [2]), helper.make_tensor_value_info("x", F, [1000, 1000])],
        [helper.make_tensor_value_info("c", F, None)],
    )
    path = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    np.save(tmp_path / "s.npy", np.array([1000, 1000], np.int64))
    np.save(tmp_path / "x.npy", np.ones((1000, 1000), np.float32))
    args = ("run", path, "--device", "numpy", "-i", f"s={tmp_path / 's.npy'}", "-i", f"x={tmp_path / 'x.npy'}")
    code, _, err = invoke(capsys, *args, "--max-memory", "6M")
    assert code == 1 and err.count("\n") == 1, err
    assert "node 'fill' (ConstantOfShape-9): output [1000, 1000] float32 would need 3.8 MiB (4000000 bytes) beside 3.8 MiB" in err
    assert "the run holds, over the memory budget of 6.0 MiB" in err, err
    code, out, err = invoke(capsys, *args, "--max-memory", "12M")
    assert code == 0 and "c: shape [1000, 1000]" in out, err


def test_random_inputs_are_held_to_the_budget_together(capsys, tmp_path):
    """Two inputs of 600 KiB each under a 1 MiB budget: each fits, both do not; refused before drawing."""
    from ovpool.errors import OvpoolError
    from ovpool.tensors import TensorDecl, random_inputs

    decls = [TensorDecl("a", "float32", (600, 256)), TensorDecl("b", "float32", (600, 256))]
    os.environ["OVPOOL_MAX_MEMORY"] = "1M"
    try:
        with pytest.raises(OvpoolError, match=r"m.onnx: input 'b' \[600, 256\] float32 would need 600.0 KiB .* beside 600.0 KiB"):
            random_inputs("m.onnx", decls, {})
    finally:
        del os.environ["OVPOOL_MAX_MEMORY"]


def growing_loop() -> ModelProto:
    """``Loop`` of ``n`` iterations whose body appends ``x`` to the carried ``acc`` (Concat): the
    carried tensor grows by x each iteration, a size inference cannot give."""
    body = helper.make_graph(
        [
            helper.make_node("Concat", ["acc_in", "x"], ["acc_out"], name="grow", axis=0),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", F, None),
        ],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("acc_out", F, None)],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "x"], ["acc"], name="loop", body=body)],
        "g",
        [helper.make_tensor_value_info("n", TensorProto.INT64, []), helper.make_tensor_value_info("x", F, [1000])],
        [helper.make_tensor_value_info("acc", F, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_a_loop_body_is_held_to_the_budget_as_it_runs(monkeypatch):
    """The body of ``growing_loop`` runs under its own guard, beside what the outer graph holds:
    20 iterations (84 KB) run and agree with onnxruntime under 1 MiB; 1000 (4 MB) are refused at
    the body's Concat, naming it."""
    import onnxruntime as ort

    import ovpool
    from ovpool.memory import MemoryBudgetError

    model = growing_loop()
    x = np.arange(1000, dtype=np.float32)
    monkeypatch.setenv("OVPOOL_MAX_MEMORY", "1M")
    feed = {"n": np.array(20, np.int64), "x": x}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    got = ovpool.run(model, feed, device="numpy")["acc"]
    assert got.shape == (21000,) and np.array_equal(got, want)
    with pytest.raises(
        MemoryBudgetError, match=r"node 'grow' \(Concat\): the run's live tensors .* over the memory budget of 1.0 MiB"
    ):
        ovpool.run(model, {"n": np.array(1000, np.int64), "x": x}, device="numpy")


@pytest.mark.openvino
def test_an_ir_run_on_numpy_is_held_to_the_budget(tmp_path, capsys):
    """The chain as IR on numpy: the same peak from the dims its ports declare, refused before
    its input is drawn, naming the layer and its line; a smaller one runs."""
    for dims, name in (([1, 8, 1024, 1024], "big"), ([1, 8, 64, 64], "small")):
        save(pool_chain(dims), tmp_path / f"{name}.onnx")
        assert invoke(capsys, "convert", tmp_path / f"{name}.onnx", "-o", tmp_path / f"{name}.xml")[0] == 0
    args = ("run", "--random-inputs", "--device", "numpy", "--max-memory", "128M")
    code, _, err = invoke(capsys, args[0], tmp_path / "big.xml", *args[1:])
    assert code == 1 and err.count("\n") == 1, err
    assert "big.xml: layer 'p1' (MaxPool-opset1, line " in err and "would need 208.0 MiB (218103808 bytes)" in err, err
    code, out, err = invoke(capsys, args[0], tmp_path / "small.xml", *args[1:])
    assert code == 0 and "shape [1, 8, 64, 64]" in out, err


@pytest.mark.openvino
def test_both_front_ends_are_one_executor(tmp_path, capsys, monkeypatch):
    """The chain as ONNX (``GraphSession``) and as IR (``IrGraph``) answer the ``Executor``'s
    questions alike: each traces its three MaxPools as steps, and ``check_peak`` holds either to
    the budget (the ONNX one at the sizes inference gives, the IR one at its ports' dims): at 8 x 1024 x 1024 float32 (32 MiB a tensor) both peak at a MaxPool, over 128 MiB. The old ``check_ir_plan`` refuses the same, with a DeprecationWarning."""
    from ovpool.engine import budget
    from ovpool.engine.graph import GraphSession
    from ovpool.engine.ir_executor import IrGraph
    from ovpool.engine.session import Executor, Step
    from ovpool.memory import MemoryBudgetError
    from ovpool.onnx.model import inferred_types
    from ovpool.tensors import stand_in

    save(pool_chain([1, 8, 1024, 1024]), tmp_path / "big.onnx")
    assert invoke(capsys, "convert", tmp_path / "big.onnx", "-o", tmp_path / "big.xml")[0] == 0
    executors: list[Executor] = [GraphSession(str(tmp_path / "big.onnx")), IrGraph.read(tmp_path / "big.xml")]
    feeds = {"x": stand_in("float32", (1, 8, 1024, 1024))}
    sizes = budget.tensor_sizes(inferred_types(pool_chain([1, 8, 1024, 1024]), every_type=True))  # the IR reads its ports
    small = {"x": np.ones((1, 8, 4, 4), np.float32)}
    for executor in executors:
        steps: list[Step] = []
        outputs = executor.trace(small, lambda step, values, kept=steps: kept.append(step))
        assert [s.outputs for s in steps if s.type == "MaxPool"] == [("t0",), ("t1",), ("t2",)]
        assert list(outputs) == list(executor.output_names)
        peak = executor.peak(feeds, sizes)
        assert "MaxPool" in peak.where and peak.exact and peak.bytes > 128 << 20, peak
    monkeypatch.setenv("OVPOOL_MAX_MEMORY", "128M")
    for executor in executors:
        with pytest.raises(MemoryBudgetError, match="the run's live tensors and working memory would need"):
            budget.check_peak(executor, feeds, "m", sizes)
    with pytest.warns(DeprecationWarning, match="check_peak"), pytest.raises(MemoryBudgetError, match="big.xml"):
        budget.check_ir_plan(executors[1], feeds, str(tmp_path / "big.xml"))


# Python's own objects (frames, lists, dicts of a run), which tracemalloc counts beside numpy's arrays
PYTHON_OBJECTS = 256 << 10


@pytest.mark.parametrize("name", ["ppocr-cls", "orientation", "silero-vad-16k", "silero-vad-ifless"])
def test_a_real_models_planned_peak_bounds_what_its_run_allocates(name):
    """Third-party models (``tests/fetch_real_models.py``; skipped without them): the peak the plan
    counts (the session, the inputs, intermediates and working memory; a lower bound where a size is
    known only at run time, then checked by the guard) is at least what the run holds, as
    tracemalloc sees it (``orientation``: 30.7 MiB counted, 16.9 MiB held)."""
    from ops.real_models import MODELS

    from ovpool.engine import budget
    from ovpool.engine.graph import GraphSession
    from ovpool.execution import limits
    from ovpool.execution.policy import NumpySession, open_model

    model = next(m for m in MODELS if m.name == name)
    if not model.path.exists():
        pytest.skip(f"{model.file} not fetched (python tests/fetch_real_models.py)")
    session = NumpySession(open_model(model.path))
    feeds = model.feeds()
    graph = session.graph
    assert isinstance(graph, GraphSession)
    types = limits.check_run_budget(graph.proto, {k: v.shape for k, v in feeds.items()}, name)
    held = budget.session_bytes(graph)
    peak = budget.plan_peak(graph.compiled, budget.with_inputs(budget.tensor_sizes(types), graph.input_names, feeds), held)
    session.infer(feeds)  # caches made before measuring
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        session.infer(feeds)
        run = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert held + sum(v.nbytes for v in feeds.values()) + run <= peak.bytes + PYTHON_OBJECTS, (peak, run)


def test_openvino_intermediates_count_while_they_are_live():
    """Tensors of 8, 4 and 2 bytes, written at steps 1, 2 and 4 and read last at 3, 2 and 5: at
    most 12 bytes live at once (steps 2), computed here step by step."""
    from ovpool.execution.limits import live_peak

    tensors = [(8, 1, 3), (4, 2, 2), (2, 4, 5)]
    by_step = [sum(size for size, first, last in tensors if first <= step <= last) for step in range(6)]
    assert live_peak(tensors, 6) == max(by_step) == 12


def test_a_run_reads_the_budget_once(monkeypatch):
    """``memory.run_budget`` (around every GraphSession run) reads $OVPOOL_MAX_MEMORY on entry:
    1M inside the block whatever the environment says meanwhile, the environment again after."""
    from ovpool import memory

    monkeypatch.setenv("OVPOOL_MAX_MEMORY", "1M")
    with memory.run_budget():
        monkeypatch.setenv("OVPOOL_MAX_MEMORY", "2M")
        assert memory.budget() == 1 << 20
    assert memory.budget() == 2 << 20


def _identity_of(value_type) -> ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="same")],
        "identity",
        [helper.make_value_info("x", value_type)],
        [helper.make_value_info("y", value_type)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def test_a_string_tensor_counts_its_utf8_bytes_or_64_an_element():
    """A string tensor fed counts its 8-byte pointers and its texts' UTF-8 bytes (``dtypes.string_bytes``:
    ["ab", "cé"] 21 bytes); one sized only by its declared shape counts ``dtypes.STRING_ITEMSIZE`` (64)
    an element: [20000] strings declared are 1.2 MiB, refused under 1 MiB before anything runs;
    2000 texts of 1000 "é" (2 bytes each in UTF-8) fed are 3.8 MiB, refused, 2000 of "é" run."""
    import ovpool
    from ovpool import dtypes
    from ovpool.memory import MemoryBudgetError

    assert dtypes.string_bytes(np.array(["ab", "cé"], dtype=object)) == 2 * 8 + 2 + 3
    declared = _identity_of(helper.make_tensor_type_proto(TensorProto.STRING, [20000]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OVPOOL_MAX_MEMORY", "1M")
        with pytest.raises(MemoryBudgetError, match=r"tensor '[xy]' \[20000\] string would need 1.2 MiB"):
            ovpool.run(declared, {"x": np.full(20000, "a", dtype=object)}, device="numpy")
        dynamic = _identity_of(helper.make_tensor_type_proto(TensorProto.STRING, ["n"]))
        short = np.full(2000, "é", dtype=object)
        assert ovpool.run(dynamic, {"x": short}, device="numpy")["y"].tolist() == short.tolist()
        with pytest.raises(MemoryBudgetError, match=r"the run's live tensors and working memory would need 3.8 MiB"):
            ovpool.run(dynamic, {"x": np.full(2000, "é" * 1000, dtype=object)}, device="numpy")


def test_a_sequence_counts_its_tensors_summed():
    """A sequence fed counts the bytes of its tensors together: 3 float32 tensors of 128 KiB run
    under 1 MiB, 8 (1 MiB) are refused before the Identity runs."""
    import ovpool
    from ovpool.memory import MemoryBudgetError

    model = _identity_of(helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    piece = np.zeros(32768, np.float32)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OVPOOL_MAX_MEMORY", "1M")
        assert len(ovpool.run(model, {"x": [piece] * 3}, device="numpy")["y"]) == 3
        with pytest.raises(MemoryBudgetError, match=r"the run's live tensors and working memory would need"):
            ovpool.run(model, {"x": [piece] * 8}, device="numpy")
