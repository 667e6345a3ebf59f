"""The optimizers of ``ai.onnx.preview.training``: Adagrad-1, Momentum-1 and Adam-1, one update step
each, as their schemas' pseudo code says.

Each takes the learning rate ``R`` (a float scalar), the update count ``T`` (an int64 scalar), then
its per-tensor inputs grouped by role for every optimized tensor (Adagrad: X1..Xn, G1..Gn,
H1..Hn), and returns the new values grouped by role (Adagrad: X1_new..Xn_new, H1_new..Hn_new).
The scalar factor of the step (Adagrad's ``R / (1 + T * decay_factor)``, Adam's
``R * sqrt(1 - beta**T) / (1 - alpha**T)``) is computed in float64, the element-wise update in the
tensors' own type, rounded once at the end. A worked step of Adagrad: R 0.1, T 0, X 1, G -1, H 2,
norm_coefficient 0.001, epsilon 1e-5: G_regularized = 0.001 * 1 - 1 = -0.999, H_new = 2 + 0.998 =
2.998, X_new = 1 - 0.1 * -0.999 / (sqrt(2.998) + 1e-5) = 1.0577.

``Gradient-1`` (automatic differentiation of a graph) has no kernel: it is refused by name.
"""

from __future__ import annotations

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, outputs, register
from ovpool.engine.ops.elementwise import float_attr, str_attr, type_guard

DOMAIN = "ai.onnx.preview.training"


def _groups(node: OpNode, roles_in: int, roles_out: int) -> int:
    """How many tensors the node optimizes: its inputs past R and T come in ``roles_in`` groups of
    n, its outputs in ``roles_out`` groups of n (Adagrad with 8 inputs and 4 outputs: n = 2)."""
    fed = len(node.constants) - 2
    if fed <= 0 or fed % roles_in:
        raise node.fail(f"has {fed + 2} inputs: R, T, then {roles_in} tensors per optimized tensor")
    count = fed // roles_in
    if node.n_outputs != roles_out * count:
        raise node.fail(f"has {node.n_outputs} outputs for {count} optimized tensor(s): it needs {roles_out * count}")
    return count


def _scalars(node: OpNode, r: np.ndarray, t: np.ndarray) -> tuple[float, int]:
    if r.size != 1 or t.size != 1:
        raise node.fail(f"R of shape {r.shape} and T of shape {t.shape}: both must be scalars")
    return float(r.reshape(())), int(t.reshape(()))


@register("Adagrad", 1, domain=DOMAIN)
def adagrad(node: OpNode) -> Kernel:
    """``r = R / (1 + T * decay_factor)``; ``G_regularized = norm_coefficient * X + G``;
    ``H_new = H + G_regularized**2``; ``X_new = X - r * G_regularized / (sqrt(H_new) + epsilon)``."""
    norm = float_attr(node, "norm_coefficient", 0.0)
    decay = float_attr(node, "decay_factor", 0.0)
    epsilon = float_attr(node, "epsilon", 1e-6)
    count = _groups(node, 3, 2)
    check = type_guard(node)

    def kernel(r: np.ndarray, t: np.ndarray, *tensors: np.ndarray) -> tuple[np.ndarray, ...]:
        check(r, t, *tensors)
        rate, step = _scalars(node, r, t)
        factor = rate / (1 + step * decay)
        xs, gs, hs = tensors[:count], tensors[count : 2 * count], tensors[2 * count :]
        new_x, new_h = [], []
        for x, g, h in zip(xs, gs, hs):
            regularized = x.dtype.type(norm) * x + g
            h_new = h + regularized * regularized
            new_x.append((x - x.dtype.type(factor) * regularized / (np.sqrt(h_new) + x.dtype.type(epsilon))).astype(x.dtype))
            new_h.append(h_new.astype(h.dtype))
        return outputs(*new_x, *new_h)

    return kernel


@register("Momentum", 1, domain=DOMAIN)
def momentum(node: OpNode) -> Kernel:
    """``G_regularized = norm_coefficient * X + G``; ``V_new = alpha * V + beta' * G_regularized``
    with ``beta'`` = beta where T > 0, else 1; ``X_new = X - R * V_new`` ("standard") or
    ``X - R * (G_regularized + alpha * V_new)`` ("nesterov")."""
    for name in ("alpha", "beta", "norm_coefficient", "mode"):
        if node.attr(name) is None:
            raise node.fail("is required", name)
    alpha = float_attr(node, "alpha", 0.0)
    beta = float_attr(node, "beta", 0.0)
    norm = float_attr(node, "norm_coefficient", 0.0)
    nesterov = str_attr(node, "mode", None, ("standard", "nesterov")) == "nesterov"
    count = _groups(node, 3, 2)
    check = type_guard(node)

    def kernel(r: np.ndarray, t: np.ndarray, *tensors: np.ndarray) -> tuple[np.ndarray, ...]:
        check(r, t, *tensors)
        rate, step = _scalars(node, r, t)
        xs, gs, vs = tensors[:count], tensors[count : 2 * count], tensors[2 * count :]
        new_x, new_v = [], []
        for x, g, v in zip(xs, gs, vs):
            kind = x.dtype.type
            regularized = kind(norm) * x + g
            v_new = kind(alpha) * v + kind(beta if step > 0 else 1.0) * regularized
            direction = regularized + kind(alpha) * v_new if nesterov else v_new
            new_x.append((x - kind(rate) * direction).astype(x.dtype))
            new_v.append(v_new.astype(v.dtype))
        return outputs(*new_x, *new_v)

    return kernel


@register("Adam", 1, domain=DOMAIN)
def adam(node: OpNode) -> Kernel:
    """``G_regularized = norm_coefficient * X + G``; ``V_new = alpha * V + (1 - alpha) *
    G_regularized``; ``H_new = beta * H + (1 - beta) * G_regularized**2``; the rate ``R * sqrt(1 -
    beta**T) / (1 - alpha**T)`` where T > 0, else R; ``X_new = X - rate * V_new / (sqrt(H_new) +
    epsilon)``, then ``(1 - norm_coefficient_post) * X_new``."""
    alpha = float_attr(node, "alpha", 0.9)
    beta = float_attr(node, "beta", 0.999)
    epsilon = float_attr(node, "epsilon", 1e-6)
    norm = float_attr(node, "norm_coefficient", 0.0)
    post = float_attr(node, "norm_coefficient_post", 0.0)
    count = _groups(node, 4, 3)
    check = type_guard(node)

    def kernel(r: np.ndarray, t: np.ndarray, *tensors: np.ndarray) -> tuple[np.ndarray, ...]:
        check(r, t, *tensors)
        rate, step = _scalars(node, r, t)
        if step > 0:
            rate = rate * np.sqrt(1 - beta**step) / (1 - alpha**step)
        groups = [tensors[i * count : (i + 1) * count] for i in range(4)]
        new_x, new_v, new_h = [], [], []
        for x, g, v, h in zip(*groups):
            kind = x.dtype.type
            regularized = kind(norm) * x + g
            v_new = kind(alpha) * v + kind(1 - alpha) * regularized
            h_new = kind(beta) * h + kind(1 - beta) * regularized * regularized
            x_new = x - kind(rate) * v_new / (np.sqrt(h_new) + kind(epsilon))
            new_x.append((kind(1 - post) * x_new).astype(x.dtype))
            new_v.append(v_new.astype(v.dtype))
            new_h.append(h_new.astype(h.dtype))
        return outputs(*new_x, *new_v, *new_h)

    return kernel
