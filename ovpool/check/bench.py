"""``ovpool bench``: latency of one model on several backends, with the same inputs.

Backends: ``openvino`` (one compiled model and one infer request on ``device``, reused by every run:
the ``OpenVINOSession`` of ``ovpool run``), ``numpy`` (the exact executor) and ``onnxruntime``
(CPUExecutionProvider, ONNX models only). Each backend runs ``warmup`` untimed inferences, then
``runs`` timed ones; a backend that cannot load the model is reported as an error and the others
still run. ``fallback="cpu"`` lets the openvino backend fall back from an absent or failing device
to OpenVINO CPU (a ``FallbackWarning``; the record names the device that ran); numpy is not a
fallback here, it is timed as its own backend. Latency is wall time around one ``infer`` call (``time.perf_counter_ns``); throughput is
``1000 / median_ms`` inferences per second (median 2.5 ms -> 400/s).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ovpool.errors import OvpoolError, UnsupportedError, UsageError
from ovpool.execution import devices, limits
from ovpool.execution.fallback import DEFAULT_DEVICE, DeviceError, fallback_level, open_session, openvino_session, warn_fallbacks
from ovpool.execution.model import Model
from ovpool.execution.sessions import DEFAULT_PRECISION, NumpySession, Session, budget_checks, check_precision
from ovpool.tensors import onnx_inputs, random_inputs

BACKENDS = ("openvino", "numpy", "onnxruntime")
# start(label, total) -> advance(): a progress display, told of each backend and each inference.
Progress = Callable[[str, int], Callable[[], None]]


@dataclass(frozen=True)
class Timing:
    """One backend's result; these fields are exactly the ``--json`` record."""

    backend: str
    device: str
    median_ms: float
    min_ms: float
    max_ms: float
    runs: int

    @property
    def throughput(self) -> float:
        """Inferences per second at the median latency."""
        return 1000.0 / self.median_ms if self.median_ms > 0 else float("inf")

    def record(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class BackendFailure:
    """A backend that could not load or run the model, and why."""

    backend: str
    device: str
    message: str


class OnnxRuntimeSession:
    """onnxruntime on CPU, for comparison only (its pooling is not ovpool's rule, see SEMANTICS.md)."""

    device = "CPU"

    def __init__(self, model: Model) -> None:
        if model.format != "onnx":
            raise UnsupportedError(f"onnxruntime runs ONNX models only, not {model.label}")
        assert model.proto is not None  # an ONNX Model always has its proto (open_model)
        import onnxruntime

        try:
            source = str(model.path) if model.path is not None else model.proto.SerializeToString()
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3  # errors only: its warnings are coloured log lines on stderr
            self._session = onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/... types
            raise UnsupportedError(f"onnxruntime cannot load {model.label}: {exc}") from exc
        self.inputs = onnx_inputs(model.proto)
        self._names = [o.name for o in self._session.get_outputs()]
        self._budget = limits.RunBudget(model.proto, model.label, model.folder)

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self._budget.check(inputs)
        return dict(zip(self._names, self._session.run(None, dict(inputs))))


def default_backends(model: Model) -> tuple[str, ...]:
    """Every backend for ONNX; openvino and numpy for IR (onnxruntime reads ONNX only)."""
    return BACKENDS if model.format == "onnx" else ("openvino", "numpy")


def check_fallback(fallback: str | bool) -> str:
    """The fallback of bench's openvino backend: ``"none"`` or ``"cpu"``; ``"numpy"`` is a
    ``UsageError`` (numpy is timed as its own backend, ``--backend numpy``)."""
    level = fallback_level(fallback)
    if level == "numpy":
        raise UsageError("--fallback numpy does not apply to bench: numpy is timed as its own backend (--backend numpy)")
    return level


def open_backend(
    backend: str,
    model: Model,
    device: str = DEFAULT_DEVICE,
    precision: str = DEFAULT_PRECISION,
    cache: bool = True,
    fallback: str | bool = "none",
) -> Session:
    """A session for ``backend``; OvpoolError when it cannot take the model. The openvino backend
    falls back to CPU with ``fallback="cpu"``, each device given up a ``FallbackWarning``."""
    if backend == "numpy":
        return NumpySession(model)
    if backend == "onnxruntime":
        return OnnxRuntimeSession(model)
    if backend != "openvino":
        raise UsageError(f"backend '{backend}': expected one of {', '.join(BACKENDS)}")
    level = check_fallback(fallback)
    if level == "none":
        try:
            return openvino_session(model, device, precision, cache)
        except DeviceError as exc:
            raise DeviceError(f"{exc} (devices available: {devices.describe_available()})") from exc
    opened = open_session(model, device, precision, level, cache)
    warn_fallbacks(opened)
    return opened.session


def time_session(
    session: Session,
    inputs: Mapping[str, np.ndarray],
    runs: int,
    warmup: int,
    advance: Callable[[], None] = lambda: None,
) -> list[float]:
    """Latencies in ms of ``runs`` timed inferences after ``warmup`` untimed ones; ``advance`` is
    called after each inference (progress display)."""
    for _ in range(warmup):
        session.infer(inputs)
        advance()
    latencies = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        session.infer(inputs)
        latencies.append((time.perf_counter_ns() - start) / 1e6)
        advance()
    return latencies


def summarize(backend: str, device: str, latencies: Sequence[float]) -> Timing:
    """Median, min and max of the latencies: [3.0, 1.0, 2.0] ms -> median 2.0, min 1.0, max 3.0."""
    return Timing(backend, device, statistics.median(latencies), min(latencies), max(latencies), len(latencies))


def check_backends(backends: Sequence[str]) -> None:
    """Refuse backend names ovpool does not have (``tensorrt``): a ``UsageError``, exit 2."""
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise UsageError(f"--backend {', '.join(unknown)}: expected one of {', '.join(BACKENDS)}")


def bench(
    model: Model,
    backends: Sequence[str] = (),
    device: str = DEFAULT_DEVICE,
    precision: str = DEFAULT_PRECISION,
    runs: int = 20,
    warmup: int = 3,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    seed: int = 0,
    cache: bool = True,
    progress: Progress = lambda label, total: lambda: None,
    fallback: str | bool = "none",
) -> tuple[list[Timing], list[BackendFailure]]:
    """Time ``model`` on each backend (default: every one that reads it) with the same random
    inputs; a backend that cannot load or run the model is a ``BackendFailure``, the others still
    run. ``fallback="cpu"``: the openvino backend may run on CPU instead (``open_backend``)."""
    check_backends(backends)
    check_precision(precision)
    check_fallback(fallback)
    sessions: dict[str, Session] = {}
    failures: list[BackendFailure] = []
    for backend in dict.fromkeys(backends or default_backends(model)):
        try:
            sessions[backend] = open_backend(backend, model, device, precision, cache, fallback)
        except OvpoolError as exc:
            failures.append(BackendFailure(backend, device if backend == "openvino" else "CPU", str(exc)))
    if not sessions:
        return [], failures
    arrays = random_inputs(
        model.label, next(iter(sessions.values())).inputs, shapes or {}, seed, budget_checks(*sessions.values())
    )
    timings = []
    for backend, session in sessions.items():
        advance = progress(f"{backend} on {session.device}", warmup + runs)
        try:
            latencies = time_session(session, arrays, runs, warmup, advance)
        except Exception as exc:  # a backend failing at run time must not stop the others
            failures.append(BackendFailure(backend, session.device, f"{type(exc).__name__}: {exc}"))
            continue
        timings.append(summarize(backend, session.device, latencies))
    return timings, failures
