"""If-8: ``then_body`` or ``else_body`` run on the layer's inputs."""

from __future__ import annotations

import numpy as np

from ovpool.runtime.ir_layers.base import LayerNode, layer
from ovpool.runtime.ops.base import Kernel


@layer("If", 8)
def if_(node: LayerNode) -> Kernel:
    """If-8: ``then_body`` when the condition (input 0) is true, else ``else_body``, on the layer's
    other inputs; outputs in port order."""
    then_body, else_body = node.bodies["then_body"], node.bodies["else_body"]

    def kernel(cond: np.ndarray, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        if cond.size != 1:
            raise node.fail(f"the condition has {cond.size} values, not one")
        body = then_body if bool(cond.reshape(())) else else_body
        return tuple(body(list(inputs)))

    return kernel
