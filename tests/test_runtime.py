"""Runtime: OpenVINO CPU at f32 against the numpy executor, the fallback policy, the compiled-model cache.

The numpy executor is checked against independent oracles elsewhere; here it is the reference the
OpenVINO path must agree with (at f32, to a few ulps: OpenVINO sums windows in another order).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from runtime_support import EXAMPLE, fake_gpu, invoke, ir_numpy_cannot_run, ir_pools, ir_with_relu, pool_model, random_input

import ovpool
from ovpool import runtime
from ovpool.errors import UnsupportedError, UsageError

pytestmark = pytest.mark.openvino


def _both(model, inputs):
    cpu = ovpool.run(model, inputs, device="CPU", fallback=False, cache=False)
    exact = ovpool.run(model, inputs, device="numpy")
    assert list(cpu) == list(exact)
    return cpu, exact


def _assert_close(cpu, exact):
    for name in exact:
        assert cpu[name].dtype == exact[name].dtype and cpu[name].shape == exact[name].shape, name
        np.testing.assert_allclose(cpu[name], exact[name], rtol=1e-6, atol=1e-6, err_msg=name)


def test_bundled_example_cpu_f32_matches_numpy():
    cpu, exact = _both(EXAMPLE, {"input": random_input((1, 3, 14, 14))})
    _assert_close(cpu, exact)
    assert np.array_equal(cpu["pool1_indices"], exact["pool1_indices"])


@pytest.mark.parametrize(
    ("op_type", "attrs"),
    [
        ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
        ("MaxPool", dict(kernel_shape=[2, 2], strides=[3, 3], ceil_mode=1)),
        ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)),
        ("AveragePool", dict(kernel_shape=[2, 3], strides=[1, 2], pads=[0, 1, 1, 0], count_include_pad=0)),
        ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
        ("GlobalMaxPool", {}),
    ],
)
def test_small_onnx_pools_cpu_f32_match_numpy(op_type, attrs):
    model = pool_model(op_type, [1, 2, 7, 6], **attrs)
    _assert_close(*_both(model, {"x": random_input((1, 2, 7, 6), seed=3)}))


def test_ir_pools_cpu_match_numpy_with_ir_meaning(tmp_path):
    """IR ``ceil`` and ``exclude-pad="false"`` are OpenVINO's rules; the numpy IR path follows them."""
    xml = ir_pools(tmp_path / "pools.xml")
    cpu, exact = _both(xml, {"x": random_input((1, 2, 7, 7))})
    _assert_close(cpu, exact)
    assert [v.shape for v in exact.values()] == [(1, 2, 2, 2), (1, 2, 4, 4)]


def test_ir_layers_numpy_does_not_run_are_refused_listing_them(tmp_path):
    relu = ir_with_relu(tmp_path / "relu.xml")
    x = {"x": random_input((1, 2, 6, 6))}
    [on_numpy] = ovpool.run(relu, x, device="numpy").values()
    [on_cpu] = ovpool.run(relu, x, device="CPU", fallback=False).values()
    np.testing.assert_allclose(on_numpy, on_cpu, rtol=1e-6)
    patches = ir_numpy_cannot_run(tmp_path / "patches.xml")
    with pytest.raises(UnsupportedError, match=r"does not run these IR layers: ExtractImagePatches-opset3 '.*' \(line \d+\)"):
        ovpool.run(patches, x, device="numpy")


def test_absent_device_falls_back_to_cpu_with_a_warning_or_fails_without_fallback():
    x = {"input": random_input((1, 3, 14, 14))}
    cpu = ovpool.run(EXAMPLE, x, device="CPU", fallback=False, cache=False)
    for device in ("NPU", "GPU"):
        with pytest.warns(runtime.FallbackWarning) as caught:
            out = ovpool.run(EXAMPLE, x, device=device, cache=False)
        assert [str(w.message) for w in caught] == [
            f"device '{device}' is not present; running on CPU instead (devices available: CPU, numpy)"
        ]
        assert caught[0].message.device == "CPU"
        assert np.array_equal(out["output"], cpu["output"])
    for no in (False, "none"):
        with pytest.raises(runtime.DeviceError, match=r"'NPU' is not present; not falling back.*Devices available: CPU, numpy"):
            ovpool.run(EXAMPLE, x, device="NPU", fallback=no)


def test_compile_failure_falls_back_to_cpu(monkeypatch):
    fake_gpu(monkeypatch)
    model = runtime.open_model(EXAMPLE)
    opened = runtime.open_session(model, "GPU", cache=False)
    assert opened.session.device == "CPU"
    (notice,) = opened.notices
    assert notice.startswith(f"device 'GPU' cannot compile {EXAMPLE}: fake GPU plugin: out of device memory; ")
    assert notice.endswith("; running on CPU instead (devices available: CPU, GPU.0, numpy)")
    with pytest.raises(runtime.DeviceError, match="cannot compile.*Devices available: CPU, GPU.0, numpy"):
        runtime.open_session(model, "GPU", fallback=False, cache=False)


def test_cpu_compile_failure_falls_back_to_numpy_one_line_per_step(monkeypatch):
    fake_gpu(monkeypatch, cpu_fails=True)
    model = runtime.open_model(EXAMPLE)
    opened = runtime.open_session(model, "GPU", cache=False)
    assert opened.session.device == "numpy"
    assert [n.split(": ", 1)[0] for n in opened.notices] == [f"device 'GPU' cannot compile {EXAMPLE}"] + [
        f"device 'CPU' cannot compile {EXAMPLE}"
    ]
    assert opened.notices[0].endswith("out of device memory; trying CPU instead")
    assert opened.notices[1].endswith("no kernel; running on numpy instead (devices available: CPU, GPU.0, numpy)")
    assert runtime.open_session(model, "CPU", cache=False).notices == (
        f"device 'CPU' cannot compile {EXAMPLE}: fake CPU plugin: no kernel; running on numpy instead "
        "(devices available: CPU, GPU.0, numpy)",
    )
    with pytest.raises(runtime.DeviceError, match=r"no kernel; not falling back to numpy \(--fallback cpu\)"):
        runtime.open_session(model, "GPU", fallback="cpu", cache=False)
    x = {"input": random_input((1, 3, 14, 14))}
    with pytest.warns(runtime.FallbackWarning) as caught:
        out = ovpool.run(EXAMPLE, x, device="GPU", cache=False)
    assert [w.message.device for w in caught] == ["numpy", "numpy"]
    assert np.array_equal(out["output"], ovpool.run(EXAMPLE, x, device="numpy")["output"])


def test_fallback_chain_and_levels():
    assert runtime.fallback_chain("GPU") == ("GPU", "CPU", "numpy")
    assert runtime.fallback_chain("GPU.1", "cpu") == ("GPU.1", "CPU")
    assert runtime.fallback_chain("NPU", True) == ("NPU", "CPU", "numpy")
    assert runtime.fallback_chain("NPU", False) == runtime.fallback_chain("NPU", "none") == ("NPU",)
    assert runtime.fallback_chain("CPU") == ("CPU", "numpy")
    assert runtime.fallback_chain("cpu.0", "cpu") == ("cpu.0",)
    assert runtime.fallback_chain("numpy") == ("numpy",)
    with pytest.raises(UsageError, match="fallback 'gpu': expected one of none, cpu, numpy"):
        runtime.fallback_chain("NPU", "gpu")


def test_precision_hint_and_numpy_precision():
    model = runtime.open_model(EXAMPLE)
    assert runtime.compile_config("f32", cache=False) == {"INFERENCE_PRECISION_HINT": "f32"}
    assert runtime.compile_config("default", cache=False) == {}
    assert runtime.open_session(model, "CPU", fallback=False, cache=False).session.precision == "f32"
    assert runtime.open_session(model, "CPU", precision="default", fallback=False, cache=False).session.precision
    with pytest.raises(UsageError, match="precision 'bf16' applies to OpenVINO devices"):
        runtime.open_session(model, "numpy", precision="bf16")
    with pytest.raises(UsageError, match="precision 'f64'"):
        runtime.open_session(model, "CPU", precision="f64")


def test_second_compile_loads_from_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(runtime.CACHE_ENV, str(tmp_path / "cache"))
    model = runtime.open_model(EXAMPLE)
    first = runtime.open_session(model, "CPU", fallback=False).session
    second = runtime.open_session(model, "CPU", fallback=False).session
    assert (first.loaded_from_cache, second.loaded_from_cache) == (False, True)
    assert list((tmp_path / "cache").glob("*.blob"))
    uncached = runtime.open_session(model, "CPU", fallback=False, cache=False).session
    assert not uncached.loaded_from_cache


def test_cache_dir_default_is_per_user(monkeypatch, tmp_path):
    monkeypatch.delenv(runtime.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert runtime.cache_dir() == tmp_path / "ovpool" / "openvino"


def test_numpy_device_runs_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ovpool.run(EXAMPLE, {"input": random_input((1, 3, 14, 14))}, device="numpy")
    assert set(out) == {"output", "pool1_indices"}


def test_external_data_model_runs_on_every_backend(tmp_path):
    """The numpy executor loads the external data; OpenVINO and onnxruntime read the file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from ovpool.check.bench import OnnxRuntimeSession

    bias = numpy_helper.from_array(np.arange(2 * 4 * 4, dtype=np.float32).reshape(1, 2, 4, 4), "bias")
    nodes = [helper.make_node("Add", ["x", "bias"], ["s"]), helper.make_node("MaxPool", ["s"], ["y"], kernel_shape=[2, 2])]
    graph = helper.make_graph(
        nodes,
        "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [bias],
    )
    path = tmp_path / "ext.onnx"
    onnx.save_model(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8),
        str(path),
        save_as_external_data=True,
        location="ext.data",
        size_threshold=0,
    )
    x = {"x": random_input((1, 2, 4, 4))}
    cpu, exact = _both(path, x)
    _assert_close(cpu, exact)
    np.testing.assert_allclose(OnnxRuntimeSession(runtime.open_model(path)).infer(x)["y"], exact["y"], rtol=1e-6)


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
def test_bfloat16_crosses_openvino_as_bfloat16(op_type):
    """OpenVINO's Python layer shows bf16 as float16; ovpool passes and returns the raw bits."""
    import ml_dtypes
    from onnx import TensorProto, helper

    node = helper.make_node(op_type, ["x"], ["y"], name="p", kernel_shape=[2], pads=[1, 0])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [1, 2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    x = (np.arange(10).reshape(1, 2, 5) / 4 - 1).astype(ml_dtypes.bfloat16)
    got = ovpool.run(model, {"x": x}, device="CPU", fallback=False)["y"]
    want = ovpool.run(model, {"x": x}, device="numpy")["y"]
    assert got.dtype == want.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


# ---------------------------------------------------------------- every value ONNX feeds, on numpy


def _graph_model(nodes, inputs, outputs, opset: int = 18):
    from onnx import helper

    graph = helper.make_graph(nodes, "values", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def _sequence_model():
    """``s: seq(tensor(float))`` concatenated on axis 0 (``y``), its length (``n``), and ``x``
    split into a sequence of its rows (``parts``)."""
    from onnx import TensorProto, helper

    floats = helper.make_tensor_type_proto(TensorProto.FLOAT, None)
    return _graph_model(
        [
            helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
            helper.make_node("SequenceLength", ["s"], ["n"]),
            helper.make_node("SplitToSequence", ["x"], ["parts"], axis=0),
        ],
        [
            helper.make_value_info("s", helper.make_sequence_type_proto(floats)),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
            helper.make_value_info("parts", helper.make_sequence_type_proto(floats)),
        ],
    )


def test_numpy_run_takes_a_sequence_as_a_list_and_returns_one_as_a_list():
    """A list of arrays for a ``seq(tensor(float))`` input, a sequence output as a list: as
    onnxruntime (one thread, optimisations off) gives them, value for value."""
    import onnxruntime as ort

    model = _sequence_model()
    feed = {"s": [np.arange(4, dtype=np.float32).reshape(2, 2), np.full((1, 2), 7, np.float32)]}
    feed["x"] = np.arange(6, dtype=np.float32).reshape(3, 2)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feed)
    got = ovpool.run(model, feed, device="numpy")
    assert isinstance(got["parts"], list) and len(got["parts"]) == len(want[2]) == 3
    for ours, theirs in zip([got["y"], got["n"], *got["parts"]], [want[0], want[1], *want[2]]):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    tupled = ovpool.run(model, {**feed, "s": tuple(feed["s"])}, device="numpy")
    assert np.array_equal(tupled["y"], want[0])


def test_numpy_run_takes_an_empty_optional_as_none():
    """``optional(tensor(float))``: OptionalHasElement-18 is true when the optional holds a tensor
    (the schema), false for None; OptionalGetElement gives the tensor back; an optional output
    holding nothing comes back as None."""
    from onnx import TensorProto, helper

    optional = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    model = _graph_model(
        [
            helper.make_node("OptionalHasElement", ["o"], ["has"]),
            helper.make_node("Identity", ["o"], ["same"]),
        ],
        [helper.make_value_info("o", optional)],
        [helper.make_tensor_value_info("has", TensorProto.BOOL, []), helper.make_value_info("same", optional)],
    )
    empty = ovpool.run(model, {"o": None}, device="numpy")
    assert empty["has"].item() is False and empty["same"] is None
    held = ovpool.run(model, {"o": np.array([1.5, -2], np.float32)}, device="numpy")
    assert held["has"].item() is True and np.array_equal(held["same"], [1.5, -2])


def test_numpy_run_takes_strings_as_str_arrays():
    """A string tensor as an object array of ``str``, as numpy strings (``<U3``) or as a list of
    ``str``: Concat-13 and Equal-19 of strings, as onnxruntime gives them."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    model = _graph_model(
        [helper.make_node("Concat", ["x", "z"], ["y"], axis=0), helper.make_node("Equal", ["x", "z"], ["same"])],
        [
            helper.make_tensor_value_info("x", TensorProto.STRING, [3]),
            helper.make_tensor_value_info("z", TensorProto.STRING, [3]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.STRING, None),
            helper.make_tensor_value_info("same", TensorProto.BOOL, None),
        ],
        opset=19,
    )
    words, other = np.array(["ab", "Cé", "x y"], dtype=object), np.array(["ab", "cé", "x y"], dtype=object)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": words, "z": other})
    for fed in (words, words.astype(str), ["ab", "Cé", "x y"]):
        got = ovpool.run(model, {"x": fed, "z": other}, device="numpy")
        assert got["y"].dtype == object and got["y"].tolist() == want[0].tolist() == [*words, *other]
        assert got["same"].tolist() == want[1].tolist() == [True, False, True]


@pytest.mark.parametrize(
    ("elem_type", "values"),
    [
        ("FLOAT8E4M3FNUZ", [0.5, -1.25, 240.0, 0.0]),
        ("FLOAT8E5M2FNUZ", [0.5, -1.25, 57344.0, 0.0]),
        ("UINT2", [0, 1, 2, 3]),
        ("INT2", [-2, -1, 0, 1]),
    ],
)
def test_numpy_run_takes_the_types_only_numpy_holds(elem_type, values):
    """FNUZ float8 and 2-bit integer inputs, as ml_dtypes arrays (onnx's numpy helpers' form),
    cast to float32 by Cast-25: every value given is one the type holds exactly, so the schema's
    cast gives it back exactly."""
    from onnx import TensorProto, helper

    from ovpool import dtypes

    name = dtypes.numpy_from_onnx(getattr(TensorProto, elem_type))
    model = _graph_model(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("x", getattr(TensorProto, elem_type), [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        opset=25,
    )
    fed = np.array(values, np.float32).astype(dtypes.np_dtype(name))
    got = ovpool.run(model, {"x": fed}, device="numpy")["y"]
    assert got.dtype == np.float32 and got.tolist() == values


@pytest.mark.parametrize(
    ("feed", "message"),
    [
        ({"s": np.zeros((2, 2), np.float32)}, r"input 's' is a float32 array, the model declares s: sequence\(float32 \[\?\]\)"),
        ({"s": None}, r"input 's' is None, the model declares s: sequence"),
        ({"s": [np.zeros(2, np.float32), np.zeros(2, np.int64)]}, r"input 's' item 1 is int64, the model declares"),
        ({"s": [np.zeros(2, np.float32)], "x": None}, r"input 'x' is None, the model declares x: float32 \[3, 2\]"),
        ({"s": [np.zeros(2, np.float32)], "x": [np.zeros((3, 2), np.float32)]}, r"input 'x' has rank 3 \[1, 3, 2\]"),
    ],
)
def test_numpy_run_refuses_a_value_of_another_kind_naming_the_input(feed, message):
    """A tensor where a sequence is declared, None where the input is no optional, a sequence item
    of another dtype: one ``ModelError`` naming the input (and the item)."""
    from ovpool.errors import ModelError

    feed = {"x": np.zeros((3, 2), np.float32), **feed}
    with pytest.raises(ModelError, match=message):
        ovpool.run(_sequence_model(), feed, device="numpy")


def test_numpy_run_refuses_a_string_input_holding_other_objects():
    from onnx import TensorProto, helper

    from ovpool.errors import ModelError

    model = _graph_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
    )
    with pytest.raises(ModelError, match=r"input 'x' holds int 3, the model declares x: string \[2\] \(an array of str\)"):
        ovpool.run(model, {"x": np.array(["a", 3], dtype=object)}, device="numpy")
    with pytest.raises(ModelError, match=r"input 'x' is float64, the model declares x: string \[2\]"):
        ovpool.run(model, {"x": np.zeros(2)}, device="numpy")


@pytest.mark.openvino
def test_openvino_refuses_a_sequence_or_string_input_by_name():
    """OpenVINO's side holds no sequence and no string input: ``--device CPU`` without fallback is
    a ``DeviceError`` naming the input and pointing to numpy; with fallback numpy runs it."""
    from ovpool.execution.policy import DeviceError

    model = _sequence_model()
    feed = {"s": [np.ones((1, 2), np.float32)], "x": np.zeros((3, 2), np.float32)}
    with pytest.raises(DeviceError, match=r"input s: sequence\(float32 \[\?\]\): OpenVINO takes tensor inputs only"):
        ovpool.run(model, feed, device="CPU", fallback="none")
    with pytest.warns(runtime.FallbackWarning):
        assert ovpool.run(model, feed, device="CPU")["n"].item() == 1


def test_ovpool_run_reads_strings_from_npz_and_refuses_sequences_by_name(tmp_path, capsys):
    """``ovpool run --device numpy``: a string input from an .npz (numpy strings, no pickle) runs
    and its string output is written as numpy strings; a sequence input from an .npz, random
    inputs for it, and a sequence output to an .npz are each refused naming the input or output."""
    import onnx

    strings = _graph_model(
        [onnx.helper.make_node("Concat", ["x", "x"], ["y"], axis=0)],
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.STRING, [2])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.STRING, None)],
    )
    onnx.save(strings, tmp_path / "s.onnx")
    onnx.save(_sequence_model(), tmp_path / "q.onnx")
    np.savez(tmp_path / "s.npz", x=np.array(["a", "bé"]))
    np.savez(tmp_path / "q.npz", s=np.zeros((2, 2), np.float32), x=np.zeros((3, 2), np.float32))
    run = ("run", "--device", "numpy")
    assert invoke(capsys, *run, tmp_path / "s.onnx", "--inputs", tmp_path / "s.npz", "--output", tmp_path / "o.npz")[0] == 0
    assert np.load(tmp_path / "o.npz")["y"].tolist() == ["a", "bé", "a", "bé"]
    code, _, err = invoke(capsys, *run, tmp_path / "q.onnx", "--inputs", tmp_path / "q.npz")
    assert code != 0 and "input 's' is a float32 array, the model declares s: sequence(float32 [?])" in err
    code, _, err = invoke(capsys, *run, tmp_path / "q.onnx", "--random-inputs")
    assert code != 0 and "input s: sequence(float32 [?]): random inputs are tensors of numbers only" in err
    split = _graph_model(
        [onnx.helper.make_node("SplitToSequence", ["x"], ["parts"], axis=0)],
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 2])],
        [onnx.helper.make_value_info("parts", _sequence_model().graph.output[2].type)],
    )
    onnx.save(split, tmp_path / "split.onnx")
    code, out, _ = invoke(capsys, *run, tmp_path / "split.onnx", "--random-inputs")
    assert code == 0 and "parts: sequence of 2: shape [1, 2] float32" in out
    code, _, err = invoke(capsys, *run, tmp_path / "split.onnx", "--random-inputs", "--output", tmp_path / "p.npz")
    assert code != 0 and "output 'parts' is a sequence of 2: an .npz holds arrays only" in err
    assert not (tmp_path / "p.npz").exists()


def test_input_shapes_refuse_a_sequence_input_by_name():
    """``--input s[2]`` (``static_shapes.with_input_shapes``) for a sequence input is a
    ``ModelError`` naming it, not a tensor type written over its sequence type."""
    from ovpool.errors import ModelError
    from ovpool.inputs import input_shapes
    from ovpool.onnx.static_shapes import with_input_shapes

    with pytest.raises(ModelError, match=r"input shape s\[2\]: input s: sequence\(float32 \[\?\]\) is not a tensor"):
        with_input_shapes(_sequence_model(), input_shapes("s[2]"), "m.onnx")
    shaped = with_input_shapes(_sequence_model(), input_shapes("x[3,2]"), "m.onnx")
    assert shaped.graph.input[0].type.WhichOneof("value") == "sequence_type"
