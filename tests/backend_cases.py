"""ONNX's own backend test cases for the pooling ops (``onnx.backend.test.case.node``), as
(name, model, inputs, expected outputs). Collected once per process (onnx builds all its node
cases, about 4 s). ``SKIP_ONNX_READING`` names the one case whose reading ovpool does not follow."""

from __future__ import annotations

import functools
import warnings

POOL_OPS = ("AveragePool", "MaxPool", "MaxUnpool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool")

# onnx.reference reads MaxUnpool indices in the inferred shape and pads afterwards; ovpool,
# PyTorch, onnxruntime and DirectML read them as positions in the output (SEMANTICS.md).
SKIP_ONNX_READING = {"test_maxunpool_export_with_output_shape"}


@functools.lru_cache(maxsize=1)
def pooling_cases() -> tuple:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    found = []
    for case in cases:
        if case.kind != "node" or not any(n.op_type in POOL_OPS for n in case.model.graph.node):
            continue
        for inputs, outputs in case.data_sets:
            names = [i.name for i in case.model.graph.input]
            found.append((case.name, case.model, dict(zip(names, inputs)), list(outputs)))
    return tuple(found)
