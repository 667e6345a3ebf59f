"""Runtime: OpenVINO CPU at f32 against the numpy executor, the fallback policy, the compiled-model cache.

The numpy executor is checked against independent oracles elsewhere; here it is the reference the
OpenVINO path must agree with (at f32, to a few ulps: OpenVINO sums windows in another order).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from runtime_support import EXAMPLE, fake_gpu, ir_numpy_cannot_run, ir_pools, ir_with_relu, pool_model, random_input

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

    from ovpool.runtime.bench import OnnxRuntimeSession

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
