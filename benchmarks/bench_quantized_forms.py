"""Speed of the two forms of a quantized model on OpenVINO CPU: ``ovpool convert`` (FakeQuantize,
OpenVINO's INT8 execution kept) against ``ovpool convert --exact-quantization`` (QuantizeLinear,
DequantizeLinear and quantized pools computed exactly, ``ovpool.ov.quantized``).

    python tests/fetch_real_models.py      # once
    python benchmarks/bench_quantized_forms.py [--runs 20] [--warmup 3] [--threads 1] [--only NAME ...] [--cache DIR] [--json]

The models: the suite's real CNNs quantized by onnxruntime's ``quantize_static``
(``tests/real_quantized.py``, QDQ with uint8 activations and int8 weights per tensor unless the name
says otherwise; made in a temporary folder, or once in ``--cache DIR``) at the tests' input sizes,
and one-node QDQ pooling models (DequantizeLinear -> pool -> QuantizeLinear, uint8 at zero point
128, 1x64x112x112). Each model is converted in both forms (``onnx_to_ir`` with the input shapes;
the median of ``--converts`` conversions), compiled on CPU with ``INFERENCE_PRECISION_HINT=f32``,
``INFERENCE_NUM_THREADS=--threads``, one stream, the latency hint, no model cache (the compile time
is one compilation), and timed with the two forms taking turns run by run (``median_ms`` of
``bench_numpy_layers.py``: load from other processes falls on both): the median ms of ``--runs``
runs after ``--warmup``, the ratio exact/default and its geometric mean. Before timing, each form's
outputs are compared with onnxruntime's (one thread, graph optimisations off) in quantization
steps (``real_quantized.steps``: the largest difference over the outputs).

The last columns say what the compiled model runs in: the ``runtimePrecision`` of the runtime
graph's (``get_runtime_model()``) Convolution, FullyConnected/MatMul and Pooling nodes, counted
per precision (``conv u8 53`` is 53 convolutions on uint8 activations; ``f32`` is float).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "ops")]

from bench_numpy_layers import geomean, median_ms
from ops.real_models import onnxruntime_runner
from real_quantized import QuantVariant, output_scales, steps, variant

from ovpool.ov.from_onnx import onnx_to_ir

# the real models timed: QDQ, uint8 activations, int8 weights per tensor; one QOperator and one
# per-channel variant
VARIANTS: tuple[QuantVariant, ...] = (
    variant("ppocr-cls", "QDQ", "uint8", "int8", False),
    variant("orientation", "QDQ", "uint8", "int8", False),
    variant("ppocrv4-rec", "QDQ", "uint8", "int8", False),
    variant("ppocrv4-det", "QDQ", "uint8", "int8", False),
    variant("ppocrv3-det-en", "QDQ", "uint8", "int8", False),
    variant("yolov8n-nudenet", "QDQ", "uint8", "int8", False),
    variant("yolov8n-nudenet", "QDQ", "uint8", "int8", True),
    variant("yolov8n-nudenet", "QOperator", "uint8", "int8", False),
    variant("yolox-ddddocr-det", "QDQ", "uint8", "int8", False),
    variant("picodet-layout", "QDQ", "uint8", "int8", False),
)
# layer types of the runtime graph whose precision is reported, and their column names
LAYERS = {"Convolution": "conv", "FullyConnected": "fc", "MatMul": "matmul", "Pooling": "pool"}
FORMS = ("default", "exact")


def pooling_model(op_type: str, attrs: Mapping[str, Any], shape: Sequence[int] = (1, 64, 112, 112)) -> onnx.ModelProto:
    """One QDQ pool: uint8 ``q`` at scale 0.05, zero point 128 -> DequantizeLinear -> ``op_type``
    -> QuantizeLinear (same scale) -> DequantizeLinear -> float ``y`` (so that the pool is
    quantized on both sides, as a quantizer writes it)."""
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(128, np.uint8), "z")]
    nodes = [
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"], name="dequantize"),
        helper.make_node(op_type, ["x"], ["p"], name="pool", **attrs),
        helper.make_node("QuantizeLinear", ["p", "s", "z"], ["pq"], name="quantize"),
        helper.make_node("DequantizeLinear", ["pq", "s", "z"], ["y"], name="output"),
    ]
    graph = helper.make_graph(
        nodes,
        op_type,
        [helper.make_tensor_value_info("q", TensorProto.UINT8, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape[:2]) + [None] * (len(shape) - 2))],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


POOLS = {
    "QDQ AveragePool 3x3 s1 p1 include-pad": ("AveragePool", {"kernel_shape": [3, 3], "pads": [1] * 4, "count_include_pad": 1}),
    "QDQ MaxPool 3x3 s2 p1": ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1] * 4}),
    "QDQ GlobalAveragePool": ("GlobalAveragePool", {}),
}


def config(threads: int) -> dict[str, Any]:
    return {
        "INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": threads,
        "NUM_STREAMS": 1,
        "PERFORMANCE_HINT": "LATENCY",
    }


def precisions(compiled: Any) -> dict[str, dict[str, int]]:
    """``{"conv": {"u8": 53}, "pool": {"u8": 1, "f32": 1}}``: the runtime graph's nodes of
    ``LAYERS`` counted by ``runtimePrecision``."""
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        layer = info["layerType"].astype(str) if "layerType" in info else ""
        if layer in LAYERS:
            counts[LAYERS[layer]][info["runtimePrecision"].astype(str) if "runtimePrecision" in info else "?"] += 1
    return {layer: dict(counter) for layer, counter in counts.items()}


def time_forms(
    source: Path | onnx.ModelProto, feeds: Mapping[str, np.ndarray], args: argparse.Namespace, folder: Path
) -> dict[str, Any]:
    """Both forms of one model: convert ms, compile ms, infer ms (paired), steps against
    onnxruntime and runtime precisions per form."""
    import openvino as ov

    proto = source if isinstance(source, onnx.ModelProto) else onnx.load(str(source))
    path = source if isinstance(source, Path) else folder / f"{proto.graph.name}.onnx"
    if not isinstance(source, Path):
        onnx.save(proto, str(path))
    shapes = {name: list(value.shape) for name, value in feeds.items()}
    expected = onnxruntime_runner(proto)(feeds)
    scales = output_scales(proto)
    core = ov.Core()
    row: dict[str, Any] = {}
    requests = {}
    for form in FORMS:
        exact = form == "exact"
        spent = []
        for _ in range(args.converts):
            start = time.perf_counter()
            files = onnx_to_ir(path, inputs=shapes, exact_quantization=exact)
            spent.append((time.perf_counter() - start) * 1000)
        xml = folder / f"{path.stem}-{form}.xml"
        xml.write_bytes(files[".xml"])
        xml.with_suffix(".bin").write_bytes(files[".bin"])
        start = time.perf_counter()
        compiled = core.compile_model(core.read_model(str(xml)), "CPU", config(args.threads))
        compile_ms = (time.perf_counter() - start) * 1000
        request = compiled.create_infer_request()
        request.infer(dict(feeds))
        got = {name: request.get_tensor(name).data.copy() for name in scales}
        row[form] = {
            "convert_ms": statistics.median(spent),
            "compile_ms": compile_ms,
            "steps": max(steps(got[n], expected[n], scales[n]) for n in scales),
            "precisions": precisions(compiled),
            "threads": compiled.get_property("INFERENCE_NUM_THREADS"),
        }
        requests[form] = request
    default_ms, exact_ms = median_ms(args.runs, args.warmup, *(lambda r=requests[f]: r.infer(dict(feeds)) for f in FORMS))
    row["default"]["infer_ms"], row["exact"]["infer_ms"] = default_ms, exact_ms
    row["ratio"] = exact_ms / default_ms
    return row


def environment(threads: int) -> str:
    """``OpenVINO 2026.4.1 CPU (Intel(R) Xeon(R) ...), f32 hint, 1 inference thread, 1 stream, latency hint; onnx 1.23.2, onnxruntime 1.31.1``."""
    import onnxruntime
    import openvino as ov

    cpu = ov.Core().get_property("CPU", "FULL_DEVICE_NAME")
    return (
        f"OpenVINO {ov.get_version().split('-')[0]} CPU ({cpu}; {os.cpu_count()} logical cores), "
        f"INFERENCE_PRECISION_HINT=f32, INFERENCE_NUM_THREADS={threads}, NUM_STREAMS=1, PERFORMANCE_HINT=LATENCY; "
        f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__} (the quantizer and the step oracle)"
    )


def _precision(found: Mapping[str, Mapping[str, int]]) -> str:
    return (
        ", ".join(f"{layer} " + "/".join(f"{p} {n}" for p, n in sorted(c.items())) for layer, c in sorted(found.items())) or "-"
    )


def markdown(rows: Sequence[Mapping[str, Any]], threads: int) -> str:
    lines = [
        f"Quantized forms: {environment(threads)}",
        "",
        "| model | convert ms default / exact | compile ms default / exact | infer ms default | infer ms exact "
        "| exact/default | steps vs onnxruntime default / exact | runtime precision default | runtime precision exact |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        d, e = row["default"], row["exact"]
        lines.append(
            f"| {row['model']} | {d['convert_ms']:.0f} / {e['convert_ms']:.0f} | {d['compile_ms']:.0f} / {e['compile_ms']:.0f} "
            f"| {d['infer_ms']:.2f} | {e['infer_ms']:.2f} | {row['ratio']:.2f} | {d['steps']} / {e['steps']} "
            f"| {_precision(d['precisions'])} | {_precision(e['precisions'])} |"
        )
    mean = geomean([r["ratio"] for r in rows])
    lines.append(f"| geometric mean | | | | | {mean:.2f} | | | |" if mean else "| geometric mean | | | | | - | | | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--converts", type=int, default=3, help="conversions per form (the median is reported)")
    parser.add_argument("--threads", type=int, default=1, help="INFERENCE_NUM_THREADS")
    parser.add_argument("--only", nargs="*", default=None, help="model names (as the table shows them) to time")
    parser.add_argument("--cache", type=Path, default=None, help="folder for the quantized models (made once)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows, absent = [], []
    with tempfile.TemporaryDirectory(prefix="ovpool-bench-") as scratch:
        folder = Path(scratch)
        models = args.cache or folder
        models.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(0)
        for label, (op_type, attrs) in POOLS.items():
            if args.only and label not in args.only:
                continue
            q = rng.integers(0, 256, (1, 64, 112, 112)).astype(np.uint8)
            rows.append({"model": label, **time_forms(pooling_model(op_type, attrs), {"q": q}, args, folder)})
        for v in VARIANTS:
            if args.only and v.name not in args.only:
                continue
            if not v.model.path.is_file():
                absent.append(v.model.file)
                continue
            rows.append(
                {"model": f"{v.name} ({v.model.describe()})", **time_forms(v.make(models), v.model.feeds(), args, folder)}
            )
    if args.json:
        ratios = [r["ratio"] for r in rows]
        print(json.dumps({"environment": environment(args.threads), "models": rows, "geomean": geomean(ratios)}, indent=2))
    else:
        print(markdown(rows, args.threads))
    if absent:
        print(f"absent (run python tests/fetch_real_models.py): {', '.join(sorted(set(absent)))}", file=sys.stderr)


if __name__ == "__main__":
    main()
