"""What a caller holds of the numpy engine: the ``Executor`` protocol both front ends of the one
plan implement, ``GraphSession`` (an ONNX model, ``ovpool.engine.graph``) and ``IrGraph`` (an
OpenVINO IR, ``ovpool.engine.ir_executor``), so a session, the memory budget and the per-layer
walk of ``ovpool compare`` ask the same questions of either: its inputs and outputs, a run, a
traced run (each node or layer as a ``Step``), the plan's peak for the inputs fed, and the
quantization its tensors carry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from onnx import NodeProto

from ovpool.ir.reader import IRDocument, Layer
from ovpool.tensors import TensorDecl

if TYPE_CHECKING:
    from ovpool.engine.budget import Peak, Sizes


@dataclass(frozen=True)
class Step:
    """One node or layer as a session executes it: ``name``, ``type`` (``Conv``, ``Convolution``),
    the tensors it reads and writes (ONNX tensor names; for IR ``ovpool.names.port_tensor_name``)."""

    name: str
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


# observe(step, outputs): called after each step of a traced run, its outputs in ``step.outputs`` order.
StepObserver = Callable[[Step, tuple[Any, ...]], None]


def onnx_step(node: NodeProto) -> Step:
    """An ONNX node as a step, named by its name or else its first output."""
    return Step(node.name or node.output[0], node.op_type, tuple(node.input), tuple(node.output))


def ir_step(document: IRDocument, producers: Mapping[tuple[str, str], Any], layer: Layer) -> Step:
    """An IR layer as a step: its inputs are the tensors of the ports feeding it."""
    sources = [producers.get((layer.id, port.id)) for port in layer.inputs]
    inputs = tuple(
        document.tensor_name(document.layers[e.from_layer], e.from_port)
        if e is not None and e.from_layer in document.layers
        else ""
        for e in sources
    )
    return Step(layer.name, layer.type, inputs, tuple(document.tensor_name(layer, port.id) for port in layer.outputs))


class Executor(Protocol):
    """A model prepared once on the numpy engine, run many times: ``GraphSession`` (ONNX) or
    ``IrGraph`` (IR). Callers hold this and never ask which."""

    @property
    def inputs(self) -> tuple[TensorDecl, ...]:
        """The inputs as the model declares them (a dynamic dim is None)."""
        ...

    @property
    def output_names(self) -> tuple[str, ...]:
        """The outputs, in the order ``run`` gives them."""
        ...

    def run(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """``{output name: array}`` for ``inputs`` by input name."""
        ...

    def trace(self, inputs: Mapping[str, Any], observe: StepObserver) -> dict[str, Any]:
        """As ``run``, calling ``observe(step, outputs)`` after each node or layer of the top-level
        graph in execution order (those folded when prepared included, with their values)."""
        ...

    def peak(self, inputs: Mapping[str, Any], sizes: Sizes | None = None) -> Peak:
        """The most the run of ``inputs`` holds at once beside what the executor holds for its
        life (``ovpool.engine.budget``); ``sizes`` what shape inference gave of the tensors by
        name, where the model's own declarations do not size them (ONNX)."""
        ...

    @property
    def quanta(self) -> Mapping[str, np.ndarray]:
        """The quantization step of each quantized tensor a run computes, by tensor name."""
        ...

    def quantized_views(self) -> dict[str, str]:
        """Each tensor the model quantizes, mapped to the tensor holding its quantized copy."""
        ...

    @property
    def step_count(self) -> int | None:
        """How many steps ``trace`` reports, None when it is not known before the run."""
        ...
