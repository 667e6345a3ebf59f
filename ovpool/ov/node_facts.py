"""What a rewrite of an ONNX node before OpenVINO's frontend may know of the model (``Facts``),
the node helpers the conditions and lowerings of ``ovpool.ov.translate`` share, and
``NodeBuilder``, which names the nodes a lowering writes after the node it replaces
(``relu/scaled``, ``relu/scaled_1``...)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from onnx import NodeProto, helper, numpy_helper

from ovpool.names import FreshNames
from ovpool.onnx.facts import Arrays as Arrays  # where it was
from ovpool.onnx.facts import attribute

TensorTypes = Mapping[str, tuple[str | None, tuple[int | None, ...] | None]]
V = TypeVar("V")


class Deferred(Mapping[str, V]):
    """A mapping worked out when first read: ``Deferred(lambda: {"x": 1})["x"]`` calls the lambda
    then, and never again. ``Facts`` holds the tensor types (ONNX shape inference, ~30 ms on a
    5 MB model) and the constants this way, so a model whose conditions need neither pays for
    neither."""

    def __init__(self, compute: Callable[[], Mapping[str, V]]) -> None:
        self._compute: Callable[[], Mapping[str, V]] | None = compute
        self._mapping: Mapping[str, V] = {}

    def _worked_out(self) -> Mapping[str, V]:
        if self._compute is not None:
            self._mapping, self._compute = self._compute(), None
        return self._mapping

    def __getitem__(self, key: str) -> V:
        return self._worked_out()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._worked_out()

    def __iter__(self) -> Iterator[str]:
        return iter(self._worked_out())

    def __len__(self) -> int:
        return len(self._worked_out())


@dataclass(frozen=True)
class Facts:
    """What a condition or a lowering may know of the model: its default opset, the tensors'
    (dtype, dims) after shape inference with the given input shapes, the constant tensors, the
    names taken (lowerings take fresh ones), and the main graph's inputs (not initializers).
    ``types`` and ``constants`` may be ``Deferred``: read them only when the answer needs them."""

    opset: int
    types: TensorTypes
    constants: Mapping[str, np.ndarray]
    names: FreshNames
    inputs: frozenset[str] = frozenset()


def node_attr(node: NodeProto, name: str, default: Any) -> Any:
    """The attribute ``name`` of the node (text decoded), or ``default``: axis=1 gives 1
    (``ovpool.onnx.facts.attribute``, the one decoder)."""
    return attribute(node, name, default)


def input_rank(node: NodeProto, facts: Facts) -> int | None:
    """The rank of the node's first input by shape inference (None: unknown)."""
    dims = facts.types.get(node.input[0], (None, None))[1] if node.input else None
    return None if dims is None else len(dims)


def tensor_dtype(name: str, facts: Facts) -> np.dtype | None:
    """The tensor's dtype by shape inference (None: unknown)."""
    dtype = facts.types.get(name, (None, None))[0]
    return None if dtype is None else np.dtype(dtype)


def static_dims(name: str, facts: Facts) -> tuple[int, ...] | None:
    """The tensor's dims when every one is known: (0, 2) for indices [0, 2]; else None."""
    dims = facts.types.get(name, (None, None))[1]
    return None if dims is None or any(d is None for d in dims) else tuple(int(d) for d in dims if d is not None)


class NodeBuilder:
    """Nodes a lowering writes, each output and node named fresh after the replaced node."""

    def __init__(self, node: NodeProto, facts: Facts) -> None:
        self.base = node.name or node.output[0]
        self.facts = facts
        self.nodes: list[NodeProto] = []

    def add(self, op_type: str, inputs: Sequence[str], part: str, **attrs: Any) -> str:
        """Append a node ``op_type`` named ``<node>/<part>`` and give its output's name."""
        output = self.facts.names.fresh(f"{self.base}/{part}")
        name = self.facts.names.fresh(f"{self.base}/{part}")
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=name, **attrs))
        return output

    def constant(self, array: np.ndarray, part: str) -> str:
        """Append a Constant node holding ``array`` and give its output's name."""
        tensor = numpy_helper.from_array(array, self.facts.names.fresh(f"{self.base}/{part}"))
        return self.add("Constant", [], part, value=tensor)
