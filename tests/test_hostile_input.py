"""Hostile input, case by case (``test_fuzz.py`` runs the corpus): batches whose outputs collide,
IR graphs that connect nothing, protobuf text that is not UTF-8, attributes without a type,
zero-sized batches, sizes numpy cannot allocate, and ``--max-memory`` on every command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import fuzz_corpus
import numpy as np
import pytest
from onnx import AttributeProto, TensorProto, helper
from onnx.external_data_helper import convert_model_to_external_data
from runtime_support import EXAMPLE, invoke, ir_pools, pool_model, save, undecodable

# ---------------------------------------------------------------- batches


def test_two_sources_writing_one_output_are_refused_before_either_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(EXAMPLE, tmp_path / folder / "m.onnx")
    code, _, err = invoke(capsys, "convert", "a/m.onnx", "b/m.onnx", "--output-dir", "out", "--force")
    assert code == 2
    assert "out/m.xml: both a/m.onnx and b/m.onnx would write it" in err
    assert not (tmp_path / "out").exists()
    code, _, err = invoke(capsys, "transform", "a/m.onnx", "b/m.onnx", "--output-dir", "t", "--pass", "no-ceil")
    assert code == 2 and "t/m.onnx: both a/m.onnx and b/m.onnx would write it" in err


def test_a_source_given_twice_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, tmp_path / "m.onnx")
    code, _, err = invoke(capsys, "convert", "m.onnx", "m.onnx", "--to", "dml")
    assert code == 2 and "m.onnx: given twice; both would write" in err


def test_one_sources_output_may_not_be_anothers_input(tmp_path, capsys, monkeypatch):
    """``convert m.onnx m.xml --force``: m.onnx's IR would replace m.xml, the second source, and
    m.xml's ONNX would replace m.onnx, the first: refused, and both files kept."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, tmp_path / "m.onnx")
    ir_pools(tmp_path / "m.xml")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code, _, err = invoke(capsys, "convert", "m.onnx", "m.xml", "--force")
    assert code == 2 and "would be overwritten by" in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


# ---------------------------------------------------------------- IR structure


def _break(xml: str, what: str) -> str:
    edges = xml.index("<edges>")
    if what == "from port":
        return xml[:edges] + xml[edges:].replace('from-port="', 'from-port="9', 1)
    if what == "to port":
        return xml[:edges] + xml[edges:].replace('to-port="', 'to-port="9', 1)
    if what == "no edge":
        last = xml.rindex("<edge ")
        return xml[:last] + xml[xml.index("/>", last) + 2 :]
    raise AssertionError(what)


@pytest.mark.parametrize(
    ("what", "message"),
    [
        ("from port", "edge from layer 0 port 90 to layer 1 port 0: layer 'x' has no output port 90"),
        ("to port", "layer 1 port 90: layer"),
        ("no edge", "input port 0 is not connected"),
    ],
)
def test_an_ir_edge_to_nothing_is_one_line_at_its_line(tmp_path, capsys, what, message):
    path = ir_pools(tmp_path / "m.xml")
    path.write_text(_break(path.read_text(), what))
    for args in (("run", path, "--random-inputs", "--device", "numpy"), ("convert", path, "--to", "dml")):
        code, _, err = invoke(capsys, *args)
        assert code == 1, err
        assert message in err and f"{path}:" in err and "Error:" not in err


def test_validate_reports_the_graph_around_the_pooling_layers(tmp_path, capsys):
    path = ir_pools(tmp_path / "m.xml")
    path.write_text(_break(path.read_text(), "no edge"))
    from ovpool.ir.validation import validate

    findings = validate(path)
    assert [(f.code, f.type) for f in findings] == [("OVP304", "Result")]
    assert "input port 0 is not connected" in findings[0].message


# ---------------------------------------------------------------- ONNX structure


def test_undecodable_text_in_the_protobuf_is_named(tmp_path, capsys):
    path = undecodable(pool_model("MaxPool", [1, 1, 4, 4], kernel_shape=[2, 2]), b"MaxPool", tmp_path / "m.onnx")
    code, _, err = invoke(capsys, "convert", path, "--to", "dml")
    assert code == 1
    assert "model.graph.node[0].op_type: is not UTF-8 text" in err


def test_an_attribute_without_its_type_is_read_by_the_field_that_holds_it(tmp_path, capsys):
    """Old exporters left ``type`` unset: ``strides`` with ``ints: [2, 2]`` is INTS, as ONNX's
    checker and onnxruntime read it."""
    model = pool_model("MaxPool", [1, 1, 4, 4], kernel_shape=[2, 2])
    model.graph.node[0].attribute.append(AttributeProto(name="strides", ints=[2, 2]))
    path = save(model, tmp_path / "m.onnx")
    code, out, err = invoke(capsys, "run", path, "--random-inputs", "--device", "numpy")
    assert code == 0, err
    assert "y: shape [1, 1, 2, 2]" in out


# ---------------------------------------------------------------- sizes


def test_a_zero_batch_pools_to_an_empty_output_as_onnxruntime_does(tmp_path):
    import onnxruntime as ort

    import ovpool

    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 9, 9])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("i", TensorProto.INT64, None),
        ],
    )
    path = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), tmp_path / "m.onnx")
    x = np.zeros((0, 2, 9, 9), np.float32)
    want = ort.InferenceSession(str(path)).run(None, {"x": x})
    got = ovpool.run(path, {"x": x}, device="numpy")
    assert (
        [(a.shape, a.dtype) for a in got.values()]
        == [(w.shape, w.dtype) for w in want]
        == [
            ((0, 2, 5, 5), np.float32),
            ((0, 2, 5, 5), np.int64),
        ]
    )


@pytest.mark.parametrize(
    ("exc", "kind", "text"),
    [
        (MemoryError("Unable to allocate 408. GiB"), "MemoryBudgetError", "needs more memory than numpy can allocate"),
        (ValueError("Maximum allowed dimension exceeded"), "MemoryBudgetError", "needs more memory than numpy can allocate"),
        (OverflowError("Python int too large to convert to C long"), "ModelError", "a value is out of numpy's range"),
        (IndexError("index 0 is out of bounds"), "ModelError", "IndexError: index 0 is out of bounds"),
    ],
)
def test_a_kernel_failure_is_said_of_the_node(exc, kind, text):
    from ovpool.memory import kernel_failure

    error = kernel_failure("node 'c' (Conv-11)", exc)
    assert type(error).__name__ == kind
    assert str(error).startswith("node 'c' (Conv-11): ") and text in str(error)


@pytest.mark.parametrize("command", ["convert", "bench", "compare", "transform", "run"])
def test_every_command_that_allocates_takes_max_memory(capsys, command):
    code, out, _ = invoke(capsys, command, "--help")
    assert code == 0 and "--max-memory" in out


def test_max_memory_bounds_convert(tmp_path, capsys, monkeypatch):
    """IR -> ONNX reads the IR's .bin (432 bytes of Conv weights here) within the budget."""
    monkeypatch.chdir(tmp_path)
    assert invoke(capsys, "convert", EXAMPLE, "-o", "m.xml")[0] == 0
    code, _, err = invoke(capsys, "convert", "m.xml", "--to", "onnx", "--max-memory", "10")
    assert code == 1 and "memory budget" in err and "10 bytes" in err, err
    code, _, err = invoke(capsys, "convert", "m.xml", "--to", "onnx", "--max-memory", "lots")
    assert code == 2 and "--max-memory 'lots'" in err


def test_a_tiny_budget_names_the_bytes_once(tmp_path, capsys):
    path = save(pool_model("MaxPool", [1, 2, 9, 9], kernel_shape=[2, 2]), tmp_path / "m.onnx")
    code, _, err = invoke(capsys, "run", path, "--random-inputs", "--device", "numpy", "--max-memory", "100")
    assert code == 1
    assert "would need 648 bytes, over the memory budget of 100 bytes" in err


def test_onnx_given_to_validate_is_named_as_onnx(tmp_path, capsys):
    code, out, _ = invoke(capsys, "validate", EXAMPLE)
    assert code == 2
    assert "is an ONNX model; ovpool validate checks OpenVINO IR (.xml)" in out


def test_empty_attribute_lists_are_refused_by_name_on_numpy(tmp_path, capsys):
    model = pool_model("MaxPool", [1, 1, 4, 4], kernel_shape=[2, 2])
    del model.graph.node[0].attribute[:]
    model.graph.node[0].attribute.append(AttributeProto(name="kernel_shape", type=AttributeProto.INTS))
    path = save(model, tmp_path / "m.onnx")
    code, _, err = invoke(capsys, "run", path, "--random-inputs", "--device", "numpy")
    assert code == 1
    assert "attribute 'kernel_shape' = []: is required" in err


def test_sizes_past_a_pebibyte_read_in_powers_of_ten():
    from ovpool.memory import format_bytes

    assert [format_bytes(n) for n in (12, 1536, 16 << 40, 2**70)] == ["12 bytes", "1.5 KiB", "16.0 TiB", "1.2e+21 bytes"]


def test_a_graph_input_declared_twice_is_refused(tmp_path, capsys):
    model = pool_model("MaxPool", [1, 1, 4, 4], kernel_shape=[2, 2])
    model.graph.input.append(model.graph.input[0])
    path = save(model, tmp_path / "m.onnx")
    code, _, err = invoke(capsys, "run", path, "--random-inputs", "--device", "numpy")
    assert code == 1 and "input 'x' is declared twice" in err


def test_an_attribute_openvino_would_hide_is_refused_on_the_way_to_ir(tmp_path, capsys):
    """OpenVINO's frontend hands a conversion extension only the attributes its schema has: a
    MaxPool-12 with ``count_include_pad`` (an AveragePool attribute) is refused, not converted."""
    model = pool_model("MaxPool", [1, 1, 4, 4], opset=12, kernel_shape=[2, 2], count_include_pad=1)
    path = save(model, tmp_path / "m.onnx")
    code, _, err = invoke(capsys, "convert", path, "-o", tmp_path / "m.xml")
    assert code == 1
    assert "node 'pool': attribute 'count_include_pad' = 1: is not an attribute of MaxPool-12" in err
    assert not (tmp_path / "m.xml").exists()


_LONGEST = "is over 2147483647 (2**31-1), the longest dim ovpool takes"


@pytest.mark.parametrize("dim", [2**31, 2**32, 2**63 - 1])
@pytest.mark.parametrize("command", [("convert", "--to", "dml"), ("convert", "--to", "ir"), ("run", "--random-inputs")])
def test_onnx_dims_past_the_bound_are_one_line_everywhere(tmp_path, capsys, dim, command):
    path = save(pool_model("MaxPool", [1, 1, dim, 4], kernel_shape=[2, 2]), tmp_path / "m.onnx")
    code, _, err = invoke(capsys, command[0], path, *command[1:])
    assert code == 1 and err.count("\n") == 1, err
    assert f"input 'x': dim {dim} on axis 2 {_LONGEST}" in err


@pytest.mark.parametrize("dim", ["2147483648", "9223372036854775808", "1..99999999999999999999"])
@pytest.mark.parametrize(
    "command", [("convert", "--to", "onnx"), ("convert", "--to", "dml"), ("run", "--random-inputs", "--device", "numpy")]
)
def test_ir_dims_past_the_bound_are_one_line_everywhere(tmp_path, capsys, dim, command):
    """An IR dim of 2**63 is no int64: IR -> ONNX said "internal error" (Value out of range)."""
    xml = ir_pools(tmp_path / "m.xml")
    text = xml.read_text()
    xml.write_text(text.replace("<dim>7</dim>", f"<dim>{dim}</dim>").replace('shape="1,2,7,7"', f'shape="1,2,{dim},7"'))
    code, _, err = invoke(capsys, command[0], xml, *command[1:])
    assert code == 1 and err.count("\n") == 1, err
    assert _LONGEST in err and "axis 2" in err and "internal error" not in err


def test_random_inputs_are_one_standard_normal_draw_cast_to_the_input_type():
    """Drawn a chunk at a time, the values are numpy's ``standard_normal(shape)`` (``integers(0,
    10)``, ``integers(0, 2)`` for bool) of one generator, cast: the same for every --seed as one
    float64 draw, at the cost of the input alone."""
    from ovpool import tensors
    from ovpool.tensors import TensorDecl, random_inputs

    decls = [TensorDecl("a", "float16", (3, 700_001)), TensorDecl("b", "int32", (5,)), TensorDecl("c", "bool", (2, 3))]
    got = random_inputs("m.onnx", decls, {}, seed=7)
    rng = np.random.default_rng(7)
    want = {
        "a": rng.standard_normal((3, 700_001)).astype(np.float16),
        "b": rng.integers(0, 10, size=(5,)).astype(np.int32),
        "c": rng.integers(0, 2, size=(2, 3)).astype(np.bool_),
    }
    assert tensors._DRAW_CHUNK < 3 * 700_001
    for name, array in want.items():
        assert got[name].dtype == array.dtype and np.array_equal(got[name], array), name


def test_an_input_within_max_memory_but_beyond_the_machine_is_a_memory_error_of_the_input(tmp_path, capsys):
    """``--max-memory 8000T`` admits a run of a 1 PiB input (5.5 PiB with its output and the
    MaxPool's work) that no machine maps (x86-64 user space is 128 TiB): numpy's MemoryError is one
    line naming the model and the input, exit 1."""
    path = save(pool_model("MaxPool", [1, 1, 2**24, 2**24], kernel_shape=[2, 2]), tmp_path / "m.onnx")
    code, _, err = invoke(capsys, "run", path, "--random-inputs", "--device", "numpy", "--max-memory", "8000T")
    assert code == 1, err
    assert err.startswith(
        f"error: {path}: input 'x' [1, 1, 16777216, 16777216] float32: needs more memory than numpy can allocate"
    )
    assert "internal error" not in err


def test_a_memory_error_anywhere_is_one_line_not_an_internal_error(capsys, monkeypatch):
    import typer

    from ovpool.cli.guard import guarded

    app = typer.Typer()

    @app.command()
    def boom() -> None:
        raise MemoryError("Unable to allocate 1.00 TiB")

    monkeypatch.setattr("sys.argv", ["ovpool"])
    with pytest.raises(SystemExit) as exited:
        guarded(app)
    assert exited.value.code == 1
    assert (
        capsys.readouterr().err == "error: out of memory: Unable to allocate 1.00 TiB; a lower --max-memory refuses it up front\n"
    )


# ---------------------------------------------------------------- standard streams

TRAP = EXAMPLE.with_name("trap.xml")
# buffered standard output (with PYTHONUNBUFFERED, Python drops what a short write to a pipe left)
CHECKOUT = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, "PYTHONPATH": str(EXAMPLE.parents[2])}


def test_standard_output_that_takes_nothing_is_one_line_on_stderr():
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "ovpool", "validate", TRAP], stdout=full, stderr=subprocess.PIPE, text=True, env=CHECKOUT
        )
    assert done.returncode == 1
    assert done.stderr == "error: cannot write to standard output (No space left on device)\n"


def test_a_closed_standard_output_reads_as_dev_null():
    command = f"{sys.executable} -m ovpool explain --kernel 3 --input-shape 1,1,7 >&-"
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=CHECKOUT)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_pipe_closed_by_its_reader_ends_the_command_quietly():
    """``ovpool explain ... | head -1``: about 2 MB of cells into a pipe nobody reads."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ovpool", "explain", "--kernel", "3", "--input-shape", "1,1,1000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=CHECKOUT,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)
    process.stdout.close()
    assert process.wait(timeout=120) == 1
    assert process.stderr.read() == b""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('strides="2, 2"', 'strides="1099511627776, 1099511627776"', "attribute 'strides' = [1099511627776, 1099511627776]"),
        ('kernel="3, 3"', 'kernel="300, 3"', "axis 0: input length 7 plus pads is smaller than the window extent 300"),
    ],
)
def test_an_ir_layer_numpy_refuses_is_named_as_a_layer(tmp_path, capsys, old, new, message):
    path = ir_pools(tmp_path / "m.xml")
    path.write_text(path.read_text().replace(old, new, 1))
    code, _, err = invoke(capsys, "run", path, "--random-inputs", "--device", "numpy")
    assert code == 1
    assert err.startswith(f"error: {path}: layer '") and "(MaxPool-opset14, line " in err and message in err, err


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("run",), "error: Missing argument 'MODEL' (see 'ovpool run --help')"),
        (
            ("convert", "--frob"),
            "error: No such option: --frob (Possible options: --force, --jobs, --rtol) (see 'ovpool convert --help')",
        ),
        (("bogus",), "error: No such command 'bogus' (see 'ovpool --help')"),
    ],
)
def test_a_usage_error_typer_finds_is_one_line_too(capsys, args, line):
    code, out, err = invoke(capsys, *args)
    assert (code, out, err) == (2, "", line + "\n")


def test_explain_of_a_node_without_a_static_input_shape_names_the_model_and_node(tmp_path, capsys):
    path = save(pool_model("MaxPool", ["N", 2, "H", 9], kernel_shape=[2, 2]), tmp_path / "m.onnx")
    code, _, err = invoke(capsys, "explain", "--onnx", path, "--node", "pool")
    assert (code, err) == (
        2,
        f"error: {path}: node 'pool': the model gives its input no static shape; give --input-shape N,C,D1,...\n",
    )
    code, out, err = invoke(capsys, "explain", "--onnx", path, "--node", "pool", "--input-shape", "1,2,4,9")
    assert code == 0 and "input [1, 2, 4, 9] -> output [1, 2, 3, 8]" in out, err


def test_a_graph_input_without_a_type_or_with_complex_elements_is_named(tmp_path, capsys):
    untyped = pool_model("MaxPool", [1, 1, 5, 5], kernel_shape=[3, 3])
    untyped.graph.input[0].ClearField("type")
    complex_input = pool_model("MaxPool", [1, 1, 5, 5], kernel_shape=[3, 3])
    complex_input.graph.input[0].type.tensor_type.elem_type = TensorProto.COMPLEX64
    for model, message in ((untyped, "input 'x' has no type"), (complex_input, "tensor 'x': ONNX element type 14 (COMPLEX64)")):
        path = save(model, tmp_path / "m.onnx")
        for args in (
            ("transform", path, "-p", "no-ceil", "-o", tmp_path / "t.onnx"),
            ("run", path, "--random-inputs", "--device", "numpy"),
        ):
            code, _, err = invoke(capsys, *args)
            assert code in (1, 2) and err.startswith(f"error: {path}: ") and message in err, err


# ---------------------------------------------------------------- values OpenVINO holds in 32 bits


@pytest.mark.openvino
@pytest.mark.parametrize("command", [("run", "--random-inputs", "--fallback", "none"), ("bench", "--runs", "1", "--warmup", "0")])
def test_an_ir_stride_past_32_bits_never_reaches_the_cpu_plugin(tmp_path, command):
    """AvgPool SAME_UPPER with strides 2**32: OpenVINO's CPU plugin holds it as 0 and dies of
    SIGFPE. In a subprocess, so that a regression fails this test instead of killing pytest."""
    path = tmp_path / "m.xml"
    path.write_text(EXAMPLE.with_name("spec_example1.xml").read_text().replace('strides="2,2"', 'strides="4294967296,2"'))
    done = subprocess.run(
        [sys.executable, "-m", "ovpool", command[0], str(path), *command[1:]],
        capture_output=True,
        text=True,
        env=CHECKOUT,
        timeout=300,
    )
    assert done.returncode == 1, done
    assert f"{path}: AvgPool 'pool': attribute 'strides' = [4294967296, 2]: must be within +-(2**31-1)" in done.stderr


@pytest.mark.openvino
def test_a_grouped_conv_stride_past_32_bits_runs_on_numpy_instead(tmp_path):
    """Not pooling, the same crash (a GroupConvolution with SAME padding): OpenVINO is given up for
    the numpy executor, which takes the one window at cell 0 that ONNX's SAME padding gives."""
    (case,) = [c for c in fuzz_corpus.window_wrap_cases() if c.name.startswith("onnx/grouped conv")]
    path = tmp_path / "g.onnx"
    path.write_bytes(case.files["m.onnx"])  # Conv group 2, W of ones (2, 1, 3, 3), strides 2**32, SAME_UPPER
    x = np.arange(128, dtype=np.float32).reshape(1, 2, 8, 8)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npz"
    done = subprocess.run(
        [sys.executable, "-m", "ovpool", "run", str(path), "-i", f"x={tmp_path / 'x.npy'}", "--output", str(out)],
        capture_output=True,
        text=True,
        env=CHECKOUT,
        timeout=300,
    )
    assert done.returncode == 0, done
    assert "OpenVINO cannot take" in done.stderr and "running on numpy instead" in done.stderr
    assert "node 'conv' (Conv, OpenVINO GroupConvolution): attribute 'strides' = [4294967296, 4294967296]" in done.stderr
    expected = x[0, :, :3, :3].sum(axis=(1, 2)).reshape(1, 2, 1, 1)
    np.testing.assert_array_equal(np.load(out)["y"], expected)


@pytest.mark.openvino
def test_an_ir_gather_of_empty_indices_never_reaches_the_cpu_plugin(tmp_path):
    """A Gather whose indices Parameter is [0, 2]: OpenVINO CPU's compile_model dies of SIGFPE.
    Refused by name before it compiles (and run on numpy with the default fallback)."""
    import openvino as ov
    from openvino import opset8

    data, indices = opset8.parameter([4], np.float32, name="x"), opset8.parameter([0, 2], np.int64, name="i")
    gather = opset8.gather(data, indices, opset8.constant(np.int64(0)))
    gather.set_friendly_name("g")
    path = tmp_path / "g.xml"
    ov.save_model(ov.Model([gather], [data, indices]), path)
    for fallback, code in (("none", 1), ("numpy", 0)):
        done = subprocess.run(
            [sys.executable, "-m", "ovpool", "run", str(path), "--random-inputs", "--fallback", fallback],
            capture_output=True,
            text=True,
            env=CHECKOUT,
            timeout=300,
        )
        assert done.returncode == code, done
        assert f"{path}: Gather 'g': indices of shape [0,2]: OpenVINO CPU's compile_model dies of SIGFPE" in done.stderr


# ---------------------------------------------------------------- dims known only at run time


@pytest.mark.parametrize("device", ["numpy", pytest.param("CPU", marks=pytest.mark.openvino)])
@pytest.mark.parametrize("external", [False, True])
def test_tensors_the_fed_shapes_make_static_are_held_to_the_budget(tmp_path, capsys, monkeypatch, device, external):
    """``y = Tile(x, [100, 1])`` with ``x: [N, 64]``: shape inference cannot size y until x is fed.
    Fed [100, 64], y is [10000, 64] float32, 2.4 MiB: over a 1 MiB budget, refused before the run;
    fed [2, 64] (y 50 KiB) it runs. The repeats may be external data (OpenVINO reads the model
    without it loaded; the check reads the small tensors it needs)."""
    monkeypatch.chdir(tmp_path)
    repeats = helper.make_tensor("r", TensorProto.INT64, [2], [100, 1])
    graph = helper.make_graph(
        [helper.make_node("Tile", ["x", "r"], ["y"], name="tile")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [repeats],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    if external:
        convert_model_to_external_data(model, location="w.bin", size_threshold=0)
    save(model, tmp_path / "m.onnx")
    for rows in (100, 2):
        np.save(tmp_path / f"x{rows}.npy", np.ones((rows, 64), np.float32))
    args = ("run", "m.onnx", "--device", device, "--fallback", "none", "--max-memory", "1M", "-i")
    code, _, err = invoke(capsys, *args, "x=x100.npy")
    assert code == 1
    assert "m.onnx: tensor 'y' [10000, 64] float32 would need 2.4 MiB" in err, err
    code, out, err = invoke(capsys, *args, "x=x2.npy")
    assert code == 0 and "y: shape [200, 64]" in out, err
