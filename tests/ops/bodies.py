"""Schema function bodies for the operator tests: a node replaced by its schema's body
(``expanded``), to run on onnxruntime as the schema's own computation where onnxruntime's kernel
departs from it, and ONNX's ``_expanded`` node cases (``expanded_case_params``), which run the body's
ops through ovpool.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import onnx
import pytest
from harness import node_case_params
from onnx import helper


def expanded(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its one node replaced by the body of the node's schema at the model's opset
    (what ONNX's ``_expanded`` node cases hold), the attribute defaults filled in."""
    from onnx.backend.test.case.node import function_testcase_helper

    node = onnx.NodeProto.FromString(model.graph.node[0].SerializeToString())
    bodies, _ = function_testcase_helper(node, [i.type for i in model.graph.input], "x", model.opset_import)
    graph = helper.make_graph(bodies[0][0], "g", model.graph.input, model.graph.output, initializer=model.graph.initializer)
    body = helper.make_model(graph, opset_imports=model.opset_import)
    body.ir_version = model.ir_version
    return body


def expanded_case_params(ops: Iterable[str]) -> list[Any]:
    """ONNX's ``_expanded`` node cases of ``ops``: the cases named after one of their node cases
    followed by ``_expanded`` (an op without a function body has none)."""
    from onnx.backend.test.case import node

    names = {param.values[0].name + "_expanded" for param in node_case_params(ops)}
    return [pytest.param(case, id=case.name) for case in node._NodeTestCases if case.name in names]
