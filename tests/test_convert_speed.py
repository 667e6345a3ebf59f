"""What ``ovpool convert`` does to be as fast as ``ovc`` changes no result: shape inference on the
weightless copy gives onnx's own types, the external-data search finds a key across its reading
chunks, constants are read when looked up, the plain form gives the garbage collector back, the UTF-8
check still reads a TensorProto's text, and OpenVINO is imported without ovc's tools only where a
package's ``__init__`` can do without them."""

from __future__ import annotations

import gc

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_support import invoke, pool_model, undecodable

from ovpool.onnx.model import SHAPE_DATA_LIMIT, _holds, value_types, weightless
from ovpool.ov.node_facts import Arrays


def _model_with_weights() -> onnx.ModelProto:
    """x [N, 64] @ w (initializer, 64x64) -> Reshape by a small constant -> Add of a Constant-node
    weight (4096 values): the shape constant must survive, the weights need not."""
    w = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    shape = numpy_helper.from_array(np.array([-1, 8, 8], np.int64), "shape")
    bias = helper.make_node("Constant", [], ["bias"], value=numpy_helper.from_array(np.ones((8, 8), np.float32)))
    big = helper.make_node("Constant", [], ["big"], value=numpy_helper.from_array(np.ones((64, 64), np.float32)))
    nodes = [
        bias,
        big,
        helper.make_node("MatMul", ["x", "w"], ["y"]),
        helper.make_node("MatMul", ["y", "big"], ["y2"]),
        helper.make_node("Reshape", ["y2", "shape"], ["r"]),
        helper.make_node("Add", ["r", "bias"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [w, shape],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_weightless_inference_gives_onnx_types_of_the_whole_model():
    model = _model_with_weights()
    light = weightless(model)
    assert not light.graph.initializer[0].raw_data and list(light.graph.initializer[0].dims) == [64, 64]
    assert light.graph.initializer[1] == model.graph.initializer[1]  # 3 values: kept for inference
    assert not light.graph.node[1].attribute[0].t.raw_data  # the 4096-value Constant
    assert light.graph.node[0] == model.graph.node[0]  # 64 values <= SHAPE_DATA_LIMIT
    assert 64 <= SHAPE_DATA_LIMIT < 4096
    full = value_types(onnx.shape_inference.infer_shapes(model, strict_mode=False).graph)
    assert value_types(onnx.shape_inference.infer_shapes(light, strict_mode=False).graph) == full
    assert full["out"] == ("float32", (None, 8, 8))


@pytest.mark.parametrize("chunk", [1, 3, 7, 8, 9, 4096])
def test_the_external_data_key_is_found_across_chunks(tmp_path, chunk):
    path = tmp_path / "m.onnx"
    for at in range(0, 20):
        data = b"locatiolocatio" + b"x" * at + b"location" + b"y" * 5
        path.write_bytes(data)
        assert _holds(path, b"location", chunk)
        path.write_bytes(data.replace(b"location", b"locatioN"))
        assert not _holds(path, b"location", chunk)


def test_constants_are_read_when_looked_up():
    tensor = numpy_helper.from_array(np.arange(6, dtype=np.int64).reshape(2, 3), "c")
    broken = TensorProto(name="b", data_type=TensorProto.FLOAT, dims=[4], raw_data=b"\0")  # 1 byte for 4 floats
    arrays = Arrays({"c": tensor, "b": broken})
    assert "b" in arrays and len(arrays) == 2 and sorted(arrays) == ["b", "c"]  # nothing read yet
    assert arrays["c"].tolist() == [[0, 1, 2], [3, 4, 5]] and arrays["c"] is arrays["c"]
    with pytest.raises(ValueError):
        arrays["b"]


def test_plain_convert_gives_the_garbage_collector_back(tmp_path, capsys):
    model = pool_model("MaxPool", [1, 1, 4, 4], kernel_shape=[2, 2])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert gc.isenabled()
    code, _, err = invoke(capsys, "convert", path, "--output-dir", tmp_path / "ir")
    assert code == 0, err
    assert gc.isenabled()


def test_undecodable_text_in_an_initializer_is_named(tmp_path, capsys):
    model = pool_model("MaxPool", [1, 1, 4, 4], kernel_shape=[2, 2])
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(3, np.float32), "zzunused"))
    path = undecodable(model, b"zzunused", tmp_path / "m.onnx")
    code, _, err = invoke(capsys, "convert", path, "--to", "dml")
    assert code == 1
    assert "model.graph.initializer[0].name: is not UTF-8 text" in err


def test_external_data_is_looked_for_only_where_an_output_could_replace_it(tmp_path, monkeypatch, capsys):
    """A conversion into a folder outside the model's does not search the model for external data
    (no output can be such a file: the data must lie in the model's folder); into the model's
    folder, or through a link that leads there, it does, and refuses to replace ``w.bin``."""
    from ovpool import conversions

    models = tmp_path / "models"
    models.mkdir()
    model = models / "w.onnx"
    onnx.save_model(_model_with_weights(), str(model), save_as_external_data=True, location="w.bin", size_threshold=0)
    searched: list[str] = []
    search = conversions.external_data_files
    monkeypatch.setattr(conversions, "external_data_files", lambda path: (searched.append(path.name), search(path))[1])
    assert conversions.plan(model, output_dir=tmp_path / "ir", reading=True)[1] == [model]
    assert searched == []
    assert conversions.plan(model, output_dir=tmp_path / "ir")[1] == [model, models / "w.bin"]  # a batch's check
    assert conversions.plan(model, output_dir=models / "sub", reading=True)[1] == [model, models / "w.bin"]
    (tmp_path / "link").symlink_to(models)
    assert conversions.plan(model, out=tmp_path / "link" / "w.xml", reading=True)[1] == [model, models / "w.bin"]
    assert searched == ["w.onnx"] * 3
    code, _, err = invoke(capsys, "convert", model, "-o", tmp_path / "link" / "w.xml", "--force")
    assert code == 2 and "w.bin: refusing to overwrite an input file" in err


def test_value_types_read_when_looked_up_are_the_whole_ones():
    """``ValueTypes`` gives what ``value_types`` gives, in its order: a later declaration of a name
    replaces an earlier one, a non-tensor one does not, an initializer's dims win, a dim without a
    value is None and a tensor without a shape has no dims; an unknown element type is refused at
    once, as there."""
    from ovpool.errors import UnsupportedError
    from ovpool.onnx.model import ValueTypes

    graph = helper.make_graph(
        [],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [9]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.INT64, None),
            helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["M", 3]),
        ],
        [numpy_helper.from_array(np.zeros((2, 2), np.float32), "w")],
    )
    graph.value_info.append(helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, None))
    graph.value_info.append(helper.make_tensor_value_info("u", TensorProto.UNDEFINED, [1]))
    lazy = ValueTypes(graph)
    expected = {"x": ("float16", (None, 3)), "w": ("float32", (2, 2)), "u": (None, (1,)), "y": ("int64", None)}
    assert list(lazy) == ["x", "w", "u", "y"] and dict(lazy) == expected and value_types(graph) == expected
    graph.value_info.append(helper.make_tensor_value_info("s", TensorProto.STRING, [1]))
    with pytest.raises(UnsupportedError, match="tensor 's'"):
        ValueTypes(graph)
    with pytest.raises(UnsupportedError, match="tensor 's'"):
        value_types(graph)


_IMPORTS = """
import sys
from ovpool.cli.common import import_without
sys.path.insert(0, sys.argv[1])
import_without(sys.argv[2], sys.argv[2] + ".extra")
package = sys.modules[sys.argv[2]]
print(package.extra, sys.argv[2] + ".extra" in sys.modules)
import importlib
print(importlib.import_module(sys.argv[2] + ".extra").value)
"""


@pytest.mark.parametrize(
    ("init", "printed"),
    [
        ("try:\n    from {p}.extra import value as extra\nexcept ImportError:\n    extra = None\n", "None False\n7\n"),
        ("from {p}.extra import value as extra\n", "7 True\n7\n"),
    ],
    ids=["optional", "unconditional"],
)
def test_a_package_is_imported_without_its_optional_part(tmp_path, init, printed):
    """``import_without``: a submodule imported inside ``try``/``except ImportError`` is left out
    (and can be imported afterwards); one the package cannot do without is imported as usual."""
    import subprocess
    import sys

    package = tmp_path / "pkg_under_test"
    package.mkdir()
    (package / "__init__.py").write_text(init.format(p=package.name))
    (package / "extra.py").write_text("value = 7\n")
    done = subprocess.run([sys.executable, "-c", _IMPORTS, str(tmp_path), package.name], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed


@pytest.mark.parametrize("command", ["convert", "run"])
def test_commands_import_openvino_without_ovc_and_its_telemetry(tmp_path, command):
    """A whole ``ovpool convert`` process of an ONNX model (``run`` of it on OpenVINO CPU) imports
    neither ``openvino.tools.ovc`` nor OpenVINO's telemetry client, and writes the IR (runs it)."""
    import subprocess
    import sys

    from ovpool.examples import path as example_path

    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith(('openvino.tools', 'openvino_telemetry'))), 'openvino.frontend' in sys.modules))\n"
        "from ovpool.cli.app import main\n"
        "sys.argv = ['ovpool'] + sys.argv[1:]\n"
        "main()\n"
    )
    example = str(example_path("tiny_pool.onnx"))
    options = ["--output-dir", str(tmp_path)] if command == "convert" else ["--random-inputs", "--device", "CPU"]
    done = subprocess.run([sys.executable, "-c", script, command, example, *options], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[] True"
    if command == "convert":
        assert (tmp_path / "tiny_pool.xml").is_file() and (tmp_path / "tiny_pool.bin").is_file()
    else:
        assert "ran" in done.stderr and "on CPU" in done.stderr


def _nested_if(reads: str) -> onnx.NodeProto:
    """An If whose then-branch holds an If whose then-branch reads ``reads`` from outside both."""
    bool_out = helper.make_tensor_value_info("o", TensorProto.FLOAT, [1])
    inner = helper.make_graph([helper.make_node("Identity", [reads], ["o"])], "inner", [], [bool_out])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "other", [], [bool_out])
    middle = helper.make_graph(
        [helper.make_node("If", ["c"], ["o"], then_branch=inner, else_branch=other)], "middle", [], [bool_out]
    )
    return helper.make_node("If", ["c"], ["y"], name="outer", then_branch=middle, else_branch=other)


@pytest.mark.parametrize("cyclic", [False, True])
def test_names_read_deep_in_subgraphs_order_their_node(cyclic):
    """A name read two bodies deep orders the outer If after its writer, listed after it (the
    answers kept per node read each body once): accepted; and when the writer reads the If's
    output, the two feed each other in a cycle."""
    from ovpool.errors import ModelError
    from ovpool.onnx.check import check_model

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    writer = helper.make_node("Neg", ["y" if cyclic else "x"], ["late"], name="writer")
    graph = helper.make_graph(
        [_nested_if("late"), writer], "g", [x, c], [helper.make_tensor_value_info("late", TensorProto.FLOAT, [1])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if not cyclic:
        check_model(model, "m.onnx")
        return
    with pytest.raises(ModelError, match=r"^m\.onnx: nodes 'outer', 'writer' feed each other in a cycle$"):
        check_model(model, "m.onnx")
