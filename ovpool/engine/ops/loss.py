"""Losses: NegativeLogLikelihoodLoss-12/13/22 and SoftmaxCrossEntropyLoss-12/13.

NegativeLogLikelihoodLoss takes log-probabilities ``input`` (N, C, d1, ..., dk), class labels
``target`` (N, d1, ..., dk) and optional class weights (C,); each sample's loss is
``-input[n, target[n, d], d] * weight[target[n, d]]`` (weight 1 without the input), and 0 where
the target equals ``ignore_index`` (an optional attribute, any integer: -1, or 10 beyond C).
``reduction`` "none" keeps the (N, d1, ..., dk) losses, "sum" adds them, "mean" (the default)
divides their sum by the sum of the weights taken (each sample not ignored counts its class
weight, or 1 without weights): input [[-1, -2], [-3, -4]], target [0, 1], weight [0.5, 2] give
losses [0.5, 8] and mean (0.5 + 8) / (0.5 + 2) = 3.4. Every sample ignored makes that 0 / 0, NaN.
A target outside [0, C) that is not ``ignore_index`` is the node's error.

SoftmaxCrossEntropyLoss is the same loss of ``log(softmax(scores, axis=1))``, which its optional
second output returns (shape of scores): scores [[0, ln 3]] give log-probabilities
[[-ln 4, ln 3/4]] = [[-1.386, -0.288]], and target [1] a loss of 0.288.

Float16 and bfloat16 are computed in float32 and rounded once (onnxruntime accumulates float16
in float32 too); the versions differ only in types (SoftmaxCrossEntropyLoss-13 and
NegativeLogLikelihoodLoss-22 add bfloat16).
"""

from __future__ import annotations

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, Rule, Traits, outputs, register
from ovpool.engine.ops.checks import str_attr, type_guard
from ovpool.engine.ops.precision import wide

REDUCTIONS = ("none", "sum", "mean")


def _loss(node: OpNode, log_softmax: bool) -> Kernel:
    """The kernel of either loss: ``log_softmax`` first applies log-softmax along axis 1 to the
    scores (and returns it as the second output when the node has one)."""
    reduction = str_attr(node, "reduction", "mean", REDUCTIONS)
    ignore = node.attr("ignore_index")
    if ignore is not None and (isinstance(ignore, bool) or not isinstance(ignore, int)):
        raise node.fail(f"{ignore!r} is not an integer", "ignore_index")
    if node.n_outputs > (2 if log_softmax else 1):
        raise node.fail(f"has {node.n_outputs} outputs; {node.op_type} has at most {2 if log_softmax else 1}")
    check = type_guard(node)

    def kernel(x: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        check(x, target, weight)
        if x.ndim < 2:
            raise node.fail(f"input of shape {x.shape}: it must be (N, C) or (N, C, d1, ..., dk)")
        expected = (x.shape[0], *x.shape[2:])
        if target.shape != expected:
            raise node.fail(f"target of shape {target.shape} for an input of shape {x.shape}: it must be {expected}")
        classes = x.shape[1]
        if weight is not None and weight.shape != (classes,):
            raise node.fail(f"weight of shape {weight.shape}: it must be ({classes},), one per class")
        work = wide(x)
        log_prob = None
        if log_softmax:  # in one buffer of its own: x - max - log(sum(exp(x - max)))
            log_prob = work.copy() if work is x else work
            with np.errstate(all="ignore"):
                log_prob -= log_prob.max(axis=1, keepdims=True)
                log_prob -= np.log(np.exp(log_prob).sum(axis=1, keepdims=True))
            work = log_prob
        labels = target.astype(np.int64)
        kept = labels != ignore if ignore is not None else np.ones(labels.shape, bool)
        bad = kept & ((labels < 0) | (labels >= classes))
        if bad.any():
            value = int(labels[bad].reshape(-1)[0])
            raise node.fail(f"target holds {value}, outside [0, {classes}) and not the ignore_index {ignore}")
        picked = np.where(kept, labels, 0)
        chosen = np.take_along_axis(work, np.expand_dims(picked, 1), axis=1)[:, 0]
        taken = kept.astype(work.dtype) if weight is None else np.where(kept, wide(weight)[picked], 0).astype(work.dtype)
        loss = -chosen * taken
        if reduction == "sum":
            loss = loss.sum(dtype=work.dtype)
        elif reduction == "mean":
            with np.errstate(all="ignore"):
                loss = loss.sum(dtype=work.dtype) / taken.sum(dtype=work.dtype)
        results = [np.asarray(loss).astype(x.dtype)]
        if log_prob is not None and node.n_outputs == 2:
            results.append(log_prob.astype(x.dtype, copy=False))
        return outputs(*results)

    return kernel


# NegativeLogLikelihoodLoss holds its picked values and weights; SoftmaxCrossEntropyLoss its
# log-softmax and exponentials (2.1 x a float32 input).


@register("NegativeLogLikelihoodLoss", 12, traits=Traits(work=Rule(2.0, 1.0)))
def negative_log_likelihood_loss(node: OpNode) -> Kernel:
    """NegativeLogLikelihoodLoss-12/13/22: input [[-1, -2], [-3, -4]], target [0, 1] give losses
    [1, 4]; "mean" 2.5, "sum" 5; with ``ignore_index=1`` the second is 0 and the mean 1 / 1 = 1."""
    return _loss(node, log_softmax=False)


@register("SoftmaxCrossEntropyLoss", 12, traits=Traits(work=Rule(3.0, 1.0)))
def softmax_cross_entropy_loss(node: OpNode) -> Kernel:
    """SoftmaxCrossEntropyLoss-12/13: the negative log-likelihood of log-softmax(scores) along the
    class axis: scores [[0, 0]] and target [0] give ln 2 = 0.693; the optional second output is
    the log-softmax, [[-0.693, -0.693]]."""
    return _loss(node, log_softmax=True)
