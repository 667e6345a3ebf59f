"""RNN, GRU and LSTM (versions 7 and 14; 22 only adds bfloat16): one time loop, batch and hidden
units vectorised, both directions of a bidirectional node advanced together.

Every gate is ``activation(clip(X_t W^T + H_{t-1} R^T + Wb + Rb))`` (LSTM adds peepholes ``P * C``
to the input, forget and output gates); weights are laid out once (``W^T``, ``R^T``, ``Wb + Rb``)
and the input projection of all time steps is one matrix product before the loop.

``sequence_lens`` gives each batch entry its own length: with lengths ``[3, 1]`` over 3 steps, entry
1 stops after step 0, so ``Y[1:, :, 1]`` is 0 and ``Y_h[:, 1]`` is its state after step 0; a
reverse direction starts at each entry's own last valid step (entry 1 reads only ``X[0, 1]``, entry
0 reads ``X[2, 0], X[1, 0], X[0, 0]``). An entry of length 0 has ``Y`` and ``Y_h`` (and ``Y_c``) 0,
as onnxruntime gives. ``layout=1`` (version 14) makes ``X``, ``Y``, ``initial_h/c`` and ``Y_h/c``
batch-first: ``X`` is ``[batch, seq, input]`` and ``Y`` ``[batch, seq, directions, hidden]``.

``activations`` lists one function per gate role and direction (LSTM ``f, g, h``; GRU ``f, g``; RNN
``f``; forward roles first), default Sigmoid/Tanh/Tanh (RNN: Tanh). ``activation_alpha`` and
``activation_beta`` are consumed in that order by the functions that take them: with
``[HardSigmoid, Tanh, LeakyRelu]`` and alphas ``[0.3, 0.05]``, HardSigmoid gets alpha 0.3 and
LeakyRelu 0.05; a function left without a value takes its ONNX operator's default (LeakyRelu 0.01,
ThresholdedRelu 1, Elu 1, HardSigmoid 0.2 and 0.5, Affine 1 and 0; ScaledTanh has none, so it must be
given). onnxruntime takes 0 for Affine's and ThresholdedRelu's missing alpha; ovpool follows the
schema. Names are matched without case (``tanh`` is Tanh), as onnxruntime's LSTM and GRU do. Float16
and bfloat16 are computed in float32 and cast back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, Rule, Traits, register

Fn = Callable[[np.ndarray], np.ndarray]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))``; exp overflows to inf below -88 (float32), giving the exact 0: the time
    loop runs under ``np.errstate(over="ignore")`` (entered once, not per call)."""
    return 1 / (1 + np.exp(-x))


# name: (function of (x, alpha, beta), defaults of the parameters it takes: (), (alpha,) or
# (alpha, beta); None where the operator has no default)
_FUNCTIONS: dict[str, tuple[Callable[[np.ndarray, float, float], np.ndarray], tuple[float | None, ...]]] = {
    "Relu": (lambda x, a, b: np.maximum(x, 0), ()),
    "Tanh": (lambda x, a, b: np.tanh(x), ()),
    "Sigmoid": (lambda x, a, b: _sigmoid(x), ()),
    "Softsign": (lambda x, a, b: x / (1 + np.abs(x)), ()),
    "Softplus": (lambda x, a, b: np.logaddexp(0, x), ()),
    "LeakyRelu": (lambda x, a, b: np.where(x >= 0, x, a * x), (0.01,)),
    "ThresholdedRelu": (lambda x, a, b: np.where(x > a, x, 0), (1.0,)),
    "Elu": (lambda x, a, b: np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0))), (1.0,)),
    "HardSigmoid": (lambda x, a, b: np.clip(a * x + b, 0, 1), (0.2, 0.5)),
    "Affine": (lambda x, a, b: a * x + b, (1.0, 0.0)),
    "ScaledTanh": (lambda x, a, b: a * np.tanh(b * x), (None, None)),
}


@functools.cache
def _bound(name: str, alpha: float, beta: float) -> Fn:
    """The activation with its parameters fixed (Python floats keep the array's type); one object
    per distinct argument set, so directions with equal functions share one call."""
    fn = _FUNCTIONS[name][0]
    return lambda x: fn(x, alpha, beta)


def _stacked(fns: Sequence[Fn]) -> Fn:
    """One role's functions of all directions, applied to ``[directions, ...]``."""
    if all(f is fns[0] for f in fns):
        return fns[0]
    return lambda x: np.stack([f(x[d]) for d, f in enumerate(fns)])


@dataclass(frozen=True)
class _Spec:
    """What a node's attributes fix: the cell, its directions, activations per role, clip, layout."""

    op: str
    gates: int  # gate blocks in W: RNN 1, GRU 3, LSTM 4
    hidden: int | None
    reverse: tuple[bool, ...]  # one entry per direction
    roles: tuple[Fn, ...]  # LSTM (f, g, h), GRU (f, g), RNN (f), each over stacked directions
    clip: float | None
    layout: int
    input_forget: bool
    linear_before_reset: bool


_ROLES = {"RNN": ("Tanh",), "GRU": ("Sigmoid", "Tanh"), "LSTM": ("Sigmoid", "Tanh", "Tanh")}
_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_DIRECTIONS = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}


def _activations(node: OpNode, directions: int) -> tuple[Fn, ...]:
    roles = len(_ROLES[node.op_type])
    names = node.attr("activations")
    if names is None:
        names = list(_ROLES[node.op_type]) * directions
    elif node.op_type == "RNN" and directions == 1 and len(names) == 2:
        names = names[:1]  # RNN's schema default is [Tanh, Tanh]: the forward one serves one direction
    if len(names) != roles * directions:
        raise node.fail(f"{list(names)} has {len(names)} functions; {node.op_type} needs {roles} per direction", "activations")
    alphas = list(node.attr("activation_alpha", []))
    betas = list(node.attr("activation_beta", []))
    canonical = {name.lower(): name for name in _FUNCTIONS}
    bound = []
    for given in names:
        name = canonical.get(given.lower())
        if name is None:
            raise node.fail(f"'{given}' is not one of {', '.join(_FUNCTIONS)}", "activations")
        defaults = _FUNCTIONS[name][1]
        params = [0.0, 0.0]
        for k, (values, default) in enumerate(zip((alphas, betas), defaults)):
            if values:
                params[k] = float(values.pop(0))
            elif default is None:
                raise node.fail(f"{name} needs its {('alpha', 'beta')[k]} and none is left", f"activation_{('alpha', 'beta')[k]}")
            else:
                params[k] = default
        bound.append(_bound(name, params[0], params[1]))
    return tuple(_stacked(bound[role::roles]) for role in range(roles))


def _spec(node: OpNode) -> _Spec:
    direction = node.attr("direction", "forward")
    if direction not in _DIRECTIONS:
        raise node.fail(f"'{direction}' is not forward, reverse or bidirectional", "direction")
    reverse = _DIRECTIONS[direction]
    hidden = node.attr("hidden_size")
    if hidden is not None and int(hidden) < 1:
        raise node.fail(f"{hidden} must be >= 1", "hidden_size")
    clip = node.attr("clip")
    if clip is not None and not float(clip) > 0:
        raise node.fail(f"{clip} must be > 0", "clip")
    layout = int(node.attr("layout", 0))
    if node.since < 14 and "layout" in node.attrs:
        raise node.fail(f"{node.op_type}-{node.since} has no layout (it came with version 14)", "layout")
    if layout not in (0, 1):
        raise node.fail(f"{layout} is not 0 (sequence first) or 1 (batch first)", "layout")
    input_forget = int(node.attr("input_forget", 0))
    return _Spec(
        op=node.op_type,
        gates=_GATES[node.op_type],
        hidden=None if hidden is None else int(hidden),
        reverse=reverse,
        roles=_activations(node, len(reverse)),
        clip=None if clip is None else float(clip),
        layout=layout,
        input_forget=bool(input_forget),
        linear_before_reset=bool(int(node.attr("linear_before_reset", 0))),
    )


@dataclass(frozen=True)
class _Weights:
    """Weights laid out for the loop: ``w_t`` ``[dirs, input, gates*hidden]``, ``r_t`` ``[dirs,
    hidden, gates*hidden]``, ``bias`` ``[dirs, 1, gates*hidden]`` (``Wb + Rb``; for GRU with
    linear_before_reset the h gate's ``Rb`` is ``r_bias_h`` instead), ``peep`` ``[3, dirs, 1, hidden]``
    (input, output, forget) or None."""

    w_t: np.ndarray
    r_t: np.ndarray
    bias: np.ndarray
    r_bias_h: np.ndarray | None
    peep: np.ndarray | None
    hidden: int


def _work(dtype: np.dtype) -> type:
    """The computing type: float64 for float64, float32 for float32, float16 and bfloat16."""
    return np.float64 if dtype == np.float64 else np.float32


def _weights(
    node: OpNode, spec: _Spec, work: type, w: np.ndarray, r: np.ndarray, b: np.ndarray | None, p: np.ndarray | None
) -> _Weights:
    dirs, g = len(spec.reverse), spec.gates
    if r.ndim != 3 or r.shape[0] != dirs or r.shape[1] != g * r.shape[2]:
        raise node.fail(f"R has shape {list(r.shape)}; expected [{dirs}, {g}*hidden, hidden]")
    hidden = r.shape[2]
    if spec.hidden is not None and spec.hidden != hidden:
        raise node.fail(f"{spec.hidden} does not match R of shape {list(r.shape)}", "hidden_size")
    if w.ndim != 3 or w.shape[:2] != (dirs, g * hidden):
        raise node.fail(f"W has shape {list(w.shape)}; expected [{dirs}, {g * hidden}, input_size]")
    w_t: np.ndarray = np.ascontiguousarray(w.astype(work).transpose(0, 2, 1))
    r_t: np.ndarray = np.ascontiguousarray(r.astype(work).transpose(0, 2, 1))
    if b is None:
        b = np.zeros((dirs, 2 * g * hidden), work)
    elif b.shape != (dirs, 2 * g * hidden):
        raise node.fail(f"B has shape {list(b.shape)}; expected [{dirs}, {2 * g * hidden}]")
    bias: np.ndarray = b.astype(work)
    wb, rb = bias[:, : g * hidden], bias[:, g * hidden :]
    r_bias_h = None
    if spec.op == "GRU" and spec.linear_before_reset:
        r_bias_h = rb[:, None, 2 * hidden :].copy()
        rb = np.concatenate([rb[:, : 2 * hidden], np.zeros((dirs, hidden), work)], axis=1)
    peep: np.ndarray | None = None
    if p is not None:
        if p.shape != (dirs, 3 * hidden):
            raise node.fail(f"P has shape {list(p.shape)}; expected [{dirs}, {3 * hidden}]")
        peep = np.ascontiguousarray(p.astype(work).reshape(dirs, 3, 1, hidden).transpose(1, 0, 2, 3))
    return _Weights(w_t, r_t, (wb + rb)[:, None, :], r_bias_h, peep, hidden)


def _clip(spec: _Spec, x: np.ndarray) -> np.ndarray:
    return x if spec.clip is None else np.clip(x, -spec.clip, spec.clip, out=x)


Step = Callable[[np.ndarray, np.ndarray, np.ndarray | None], tuple[np.ndarray, np.ndarray | None]]


def _rnn_step(spec: _Spec, wt: _Weights) -> Step:
    """RNN: ``H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb)``."""
    (f,) = spec.roles

    def step(xw: np.ndarray, h: np.ndarray, c: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        return f(_clip(spec, xw + np.matmul(h, wt.r_t))), None

    return step


def _gru_step(spec: _Spec, wt: _Weights) -> Step:
    """GRU, gate blocks z, r, h: ``z = f(..z)``, ``r = f(..r)``; the candidate is ``g(X_t Wh^T +
    (r * H_{t-1}) Rh^T + Rbh + Wbh)``, or with linear_before_reset ``g(X_t Wh^T + r * (H_{t-1} Rh^T
    + Rbh) + Wbh)``; ``H_t = (1 - z) * candidate + z * H_{t-1}``."""
    f, g = spec.roles
    n = wt.hidden
    r_zr, r_h = np.ascontiguousarray(wt.r_t[:, :, : 2 * n]), np.ascontiguousarray(wt.r_t[:, :, 2 * n :])

    def step(xw: np.ndarray, h: np.ndarray, c: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        if spec.linear_before_reset:
            hr = np.matmul(h, wt.r_t)
            zr = f(_clip(spec, xw[..., : 2 * n] + hr[..., : 2 * n]))
            z, r = zr[..., :n], zr[..., n:]
            candidate = g(_clip(spec, xw[..., 2 * n :] + r * (hr[..., 2 * n :] + wt.r_bias_h)))
        else:
            zr = f(_clip(spec, xw[..., : 2 * n] + np.matmul(h, r_zr)))
            z, r = zr[..., :n], zr[..., n:]
            candidate = g(_clip(spec, xw[..., 2 * n :] + np.matmul(r * h, r_h)))
        return candidate + z * (h - candidate), None

    return step


def _lstm_step(spec: _Spec, wt: _Weights) -> Step:
    """LSTM, gate blocks i, o, f, c: ``i = f(..i + Pi * C_{t-1})``, ``f = f(..f + Pf * C_{t-1})``
    (``1 - i`` with input_forget), ``C_t = f * C_{t-1} + i * g(..c)``, ``o = f(..o + Po * C_t)``,
    ``H_t = o * h(C_t)``; clip bounds each activation's input."""
    f, g, h_fn = spec.roles
    n = wt.hidden
    peep = wt.peep
    plain = peep is None and not spec.input_forget and spec.clip is None and (f, g, h_fn) == _DEFAULT_LSTM

    def step(xw: np.ndarray, h: np.ndarray, c: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        assert c is not None
        gates = xw + np.matmul(h, wt.r_t)  # blocks i, o, f, c
        if plain:
            return _plain_lstm_cell(gates, c, n)
        if peep is None and not spec.input_forget:
            gates = _clip(spec, gates)
            iof = f(gates[..., : 3 * n])
            i, o, forget = iof[..., :n], iof[..., n : 2 * n], iof[..., 2 * n :]
            c_new = forget * c + i * g(gates[..., 3 * n :])
        else:
            pre_i, pre_f = gates[..., :n], gates[..., 2 * n : 3 * n]
            if peep is not None:
                pre_i, pre_f = pre_i + peep[0] * c, pre_f + peep[2] * c
            i = f(_clip(spec, pre_i))
            forget = 1 - i if spec.input_forget else f(_clip(spec, pre_f))
            c_new = forget * c + i * g(_clip(spec, gates[..., 3 * n :]))
            pre_o = gates[..., n : 2 * n]
            o = f(_clip(spec, pre_o if peep is None else pre_o + peep[1] * c_new))
        return o * h_fn(c_new), c_new

    return step


_ONES = {np.dtype(t): np.ones((), t) for t in (np.float32, np.float64)}  # the computing types (``_work``)
_DEFAULT_LSTM = (_bound("Sigmoid", 0.0, 0.0), _bound("Tanh", 0.0, 0.0), _bound("Tanh", 0.0, 0.0))


def _plain_lstm_cell(gates: np.ndarray, c: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The LSTM cell with the default activations (Sigmoid, Tanh, Tanh), no peepholes, clip or
    input_forget, computed in the buffer of ``gates`` (blocks i, o, f, c; written): the operations
    of ``_sigmoid`` and of the general step, in their order, so the same bits with fewer arrays.
    Hidden 1, gates [0, 0, 0, 0], C 1: i = o = f = 0.5, C' = 0.5 * 1 + 0.5 * tanh(0) = 0.5,
    H' = 0.5 * tanh(0.5) = 0.2311."""
    one = _ONES[gates.dtype]  # numpy converts a Python 1 at each call (0.4 us); 1 of the array's type is the same number
    sig = gates[..., : 3 * n]
    np.negative(sig, out=sig)
    np.exp(sig, out=sig)
    np.add(sig, one, out=sig)
    np.divide(one, sig, out=sig)
    candidate = gates[..., 3 * n :]
    np.tanh(candidate, out=candidate)
    c_new = sig[..., 2 * n :] * c  # forget * C
    candidate *= sig[..., :n]  # i * g(..c)
    c_new += candidate
    h_new = np.tanh(c_new)
    h_new *= sig[..., n : 2 * n]  # o * h(C')
    return h_new, c_new


_STEPS = {"RNN": _rnn_step, "GRU": _gru_step, "LSTM": _lstm_step}


def _state(node: OpNode, value: np.ndarray | None, name: str, shape: tuple[int, ...], layout: int, work: type) -> np.ndarray:
    """An initial state ``[dirs, batch, hidden]`` (``[batch, dirs, hidden]`` in layout 1), zeros when omitted."""
    if value is None:
        return np.zeros(shape, work)
    expected = shape if layout == 0 else (shape[1], shape[0], shape[2])
    if value.shape != expected:
        raise node.fail(f"{name} has shape {list(value.shape)}; expected {list(expected)}")
    return (value if layout == 0 else value.transpose(1, 0, 2)).astype(work)


def _recurrent(node: OpNode) -> Kernel:
    """The factory of every RNN, GRU and LSTM version: attributes parsed, weights laid out when constant."""
    spec = _spec(node)
    known = tuple(node.constants) + (None,) * (8 - len(node.constants))
    w0, r0, b0, p0 = known[1], known[2], known[3], known[7] if node.op_type == "LSTM" else None
    prepared = None if w0 is None or r0 is None else _weights(node, spec, _work(w0.dtype), w0, r0, b0, p0)
    prepared_step = None if prepared is None else _STEPS[spec.op](spec, prepared)
    n_outputs = node.n_outputs
    reversing = any(spec.reverse)

    def kernel(
        x: np.ndarray,
        w: np.ndarray,
        r: np.ndarray,
        b: np.ndarray | None = None,
        sequence_lens: np.ndarray | None = None,
        initial_h: np.ndarray | None = None,
        initial_c: np.ndarray | None = None,
        p: np.ndarray | None = None,
    ) -> tuple[np.ndarray, ...]:
        work = _work(x.dtype)
        p = p if spec.op == "LSTM" else None
        wt, step = prepared, prepared_step
        if wt is None or wt.w_t.dtype != work or (b is None) != (b0 is None) or (p is None) != (p0 is None):
            wt = _weights(node, spec, work, w, r, b, p)  # not constant (or B, P given at run time only)
            step = _STEPS[spec.op](spec, wt)
        assert step is not None
        if x.ndim != 3:
            raise node.fail(f"X has shape {list(x.shape)}; expected rank 3")
        xs: np.ndarray = (x if spec.layout == 0 else x.transpose(1, 0, 2)).astype(work, copy=False)  # only read
        steps, batch, inputs = xs.shape
        if inputs != wt.w_t.shape[1]:
            raise node.fail(f"X has input size {inputs}; W expects {wt.w_t.shape[1]}")
        dirs, n = len(spec.reverse), wt.hidden
        h = _state(node, initial_h, "initial_h", (dirs, batch, n), spec.layout, work)
        c = _state(node, initial_c, "initial_c", (dirs, batch, n), spec.layout, work) if spec.op == "LSTM" else None

        lengths = None
        if sequence_lens is not None:
            lengths = np.asarray(sequence_lens).astype(np.int64).reshape(-1)
            if lengths.shape != (batch,):
                raise node.fail(f"sequence_lens has shape {list(np.shape(sequence_lens))}; expected [{batch}]")
            if lengths.size and (lengths.min() < 0 or lengths.max() > steps):
                raise node.fail(f"sequence_lens {lengths.tolist()} must lie in [0, {steps}]")
            if (lengths == steps).all():
                lengths = None

        xw = np.matmul(xs.reshape(1, steps * batch, inputs), wt.w_t)
        xw += wt.bias
        xw = xw.reshape(dirs, steps, batch, -1)
        order = None  # order[k, b]: the time step a reverse direction reads at its step k
        if lengths is not None:
            k = np.arange(steps)[:, None]
            order = np.where(k < lengths, lengths - 1 - k, k)
        if reversing:
            for d, rev in enumerate(spec.reverse):
                if rev:
                    xw[d] = xw[d, ::-1] if order is None else xw[d][order, np.arange(batch)]

        y: np.ndarray = np.empty((steps, dirs, batch, n), work)
        with np.errstate(over="ignore"):
            for t in range(steps):
                h_new, c_new = step(xw[:, t], h, c)
                if lengths is None:
                    h, c = h_new, c_new
                    y[t] = h_new
                else:
                    valid = (t < lengths)[:, None]
                    h = np.where(valid, h_new, h)
                    if c is not None and c_new is not None:
                        c = np.where(valid, c_new, c)
                    y[t] = np.where(valid, h_new, 0)
        if reversing:
            for d, rev in enumerate(spec.reverse):
                if rev:
                    y[:, d] = y[::-1, d] if order is None else y[order, d, np.arange(batch)]
        if lengths is not None:
            empty = (lengths == 0)[:, None]
            h = np.where(empty, 0, h)
            c = None if c is None else np.where(empty, 0, c)

        results = [y, h] + ([c] if c is not None else [])
        if spec.layout == 1:
            results = [y.transpose(2, 0, 1, 3)] + [state.transpose(1, 0, 2) for state in results[1:]]
        results = [np.ascontiguousarray(v) for v in results]
        if x.dtype != work:
            results = [v.astype(x.dtype) for v in results]
        return tuple(results[:n_outputs])

    return kernel


# A recurrent op holds its gates for every step (LSTM: 8 x its outputs).
RECURRING = Traits(work=Rule(2.0, 10.0))
for _op in ("RNN", "GRU", "LSTM"):
    register(_op, 7, 13, traits=RECURRING)(_recurrent)
    register(_op, 14, traits=RECURRING)(_recurrent)
