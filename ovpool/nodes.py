"""An operator node as kernels and the rules behind them read it (``OpNode``), below every engine.

The numpy executor's factories get one per node (``ovpool.engine.ops.base``); the rules that give
an operator its meaning (``ovpool.resize``) read it too, and so can OpenVINO's lowering, which
builds one from a NodeProto (``attributes``) without the executor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ovpool.errors import ModelError


@dataclass(frozen=True)
class OpNode:
    """What a factory knows of one node when the session is prepared.

    ``since`` is the since-version of the schema in force (Softmax in an opset-12 model: 11);
    ``opset`` the model's opset for the node's domain. ``attrs`` holds the attributes present on the
    node as Python values (int, float, str, lists of them, numpy arrays for tensors); defaults are
    the factory's to apply, as the schema of ``since`` states them. ``constants[i]`` is the value of
    input ``i`` when it is known before any run (initializers, Constant outputs, folded
    subgraphs), else ``None``; ``len(constants)`` is the number of inputs the node names (trailing
    omitted ones not counted). ``subgraphs`` maps graph attributes (Loop ``body``, If
    ``then_branch``) to callables built by the session. ``compile_graph``, given by the session
    (``ovpool.engine.graph.compile_graph``), compiles a graph a kernel builds as it runs (a
    QOperator node's expansion, ``ovpool.engine.ops.quantized``): the kernels sit below the
    session that runs them and are handed what they call back.
    """

    name: str
    op_type: str
    since: int
    opset: int
    attrs: Mapping[str, Any] = field(default_factory=dict)
    constants: tuple[np.ndarray | None, ...] = ()
    n_outputs: int = 1
    domain: str = ""
    subgraphs: Mapping[str, Any] = field(default_factory=dict)
    compile_graph: Callable[[Any, Mapping[str, int], str], Any] | None = None

    @property
    def label(self) -> str:
        """``node 'conv1' (Conv-11)``: how errors name the node."""
        return f"node '{self.name}' ({self.op_type}-{self.since})"

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def fail(self, message: str, attribute: str | None = None) -> ModelError:
        """The error for a node the schema does not allow: ``node 'c' (Conv-11): attribute 'group' ...``."""
        what = f": attribute '{attribute}'" if attribute else ""
        return ModelError(f"{self.label}{what}: {message}")


def normalize_axis(node: OpNode, axis: int, rank: int, attribute: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` as a non-negative index: -1 of rank 4 is 3; out of range is the
    node's error."""
    if not -rank <= axis < rank:
        raise node.fail(f"{axis} is outside [-{rank}, {rank}) for a rank-{rank} input", attribute)
    return axis + rank if axis < 0 else axis


def normalize_axes(node: OpNode, axes: Sequence[int], rank: int, attribute: str = "axes") -> tuple[int, ...]:
    """Each of ``axes`` normalised; a repeated axis is the node's error."""
    result = tuple(normalize_axis(node, int(a), rank, attribute) for a in axes)
    if len(set(result)) != len(result):
        raise node.fail(f"{list(axes)} names an axis twice", attribute)
    return result


def attributes(node: Any) -> dict[str, Any]:
    """A NodeProto's attributes as Python values: ints, floats, ``str`` (not bytes), lists, numpy
    arrays for tensors; graph attributes stay ``GraphProto`` (the session compiles them). The one
    decoder is ``ovpool.attributes``; this is its engine form (``arrays=True``)."""
    from ovpool.attributes import attributes as decoded

    return decoded(node, arrays=True)
