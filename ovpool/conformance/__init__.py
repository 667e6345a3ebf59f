"""ONNX's backend node suite (``onnx.backend.test.case.node``) run on ovpool's paths and its peers.

Every case of ``collect_testcases()`` (onnx 1.23.2: 1,884 cases, 29 with sequence or optional
values) runs each of its data sets on each path and is compared with the case's stored expected
outputs (:func:`differs`, the rule of ``onnx.backend.test.runner.Runner.assert_similar_outputs``).
The paths (``PATHS``):

* ``numpy``: ``ovpool.run(model, inputs, device="numpy")`` (the session kept to read which nodes ran
  on onnx.reference: ``GraphSession.reference_ops``);
* ``cpu``: ``ovpool.convert_model`` compiled on OpenVINO CPU at f32, as ``ovpool.run(model,
  device="CPU", fallback="none")`` runs it (its guards against models that kill OpenVINO CPU);
* ``ir-numpy``: that same IR saved and run by ``ovpool.run(xml, inputs, device="numpy")``;
* for the report only: ``stock-cpu`` (OpenVINO's own ONNX frontend, ``core.read_model`` of the
  ``.onnx``, CPU f32), ``onnxruntime`` (CPU, one thread, optimisations off) and ``reference``
  (onnx.reference, one more opinion).

Each (case, path) has one outcome (``OUTCOMES``): ``right``; ``disputed`` (not the case's data, on a
case whose data depart from the schema text, ``DISPUTED``); ``wrong`` (``warned`` when ovpool
warned of the node while converting or running, a ``CpuDeviationWarning`` or any warning class of
ovpool); ``refused`` (an ovpool error, ``OvpoolError``, or a peer's own exception); ``crashed`` (a
raw exception from an ovpool path, a bug; or a case that ran past the time limit). A path gives
no output of a name the graph declares: wrong. Of several data sets, the first not right decides. ``python -m ovpool.conformance`` prints the table.

Each case runs in this process under a time limit (``TIME_LIMIT`` s, SIGALRM in the main thread:
it stops a Python loop such as a runaway Loop body, not a call inside OpenVINO's C++); memory is held
by ovpool's own run budget (``ovpool.execution.limits``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import tempfile
import threading
import time
import traceback
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from onnx import ModelProto

OVPOOL_PATHS = ("numpy", "cpu", "ir-numpy")
PEER_PATHS = ("stock-cpu", "onnxruntime", "reference")
PATHS = OVPOOL_PATHS + PEER_PATHS
OUTCOMES = ("right", "disputed", "wrong", "refused", "crashed")
# Cases whose expected data depart from the schema text of their version (docs/semantics.md, "ONNX's
# own cases ovpool reads otherwise"): an answer other than the data there is "disputed", not wrong.
DISPUTED: tuple[tuple[str, str], ...] = (
    (r"^test_maxunpool_export_with_output_shape$", "the data read indices in the inferred shape; they are output positions"),
    (
        r"^test_resize_downsample_scales_(linear|cubic)_align_corners$",
        "the data divide by length * scale - 1; align_corners divides by the resized length - 1",
    ),
    (r"^test_roialign_mode_max$", "the data take the largest weighted corner; the schema the largest bilinear sample"),
    (
        r"^test_cast(like)?_(FLOAT|FLOAT16|BFLOAT16|DOUBLE)_to_U?INT[24](_expanded)?$",
        "a float outside the type's range is undefined by the schema; the data hold ml_dtypes' answer",
    ),
    (r"^test_cast(like)?_(FLOAT|FLOAT16)_to_FLOAT4E2M1(_expanded)?$", "NaN is 6 by ONNX's float 4 document; the data hold -0"),
    (r"^test_bernoulli", "the data are one random draw, which no runtime reproduces"),
    (
        r"^test_dft_inverse(_opset19)?$",
        "the data hold 1.9e-7 of float32 rounding where a float64 transform rounded once gives 0 (atol 1e-7)",
    ),
)
TIME_LIMIT = 60.0
REASON_LENGTH = 200
ORT_IR_VERSION = 13  # the newest IR version onnxruntime 1.31 reads
BFLOAT16_RTOL = 2.0**-6  # the runner's "two bfloat16 ULPs"


@dataclass(frozen=True)
class Case:
    """One node test case: its ``name``, ``model``, ``data_sets`` (pairs of input and expected output
    lists, in graph order) and the runner's tolerances (onnx's default rtol 1e-3, atol 1e-7)."""

    name: str
    model: ModelProto
    data_sets: tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...]
    rtol: float = 1e-3
    atol: float = 1e-7
    op: str = ""  # the op the case is about (``load_cases``)

    @property
    def unseeded(self) -> bool:
        """Whether a node draws random values with no ``seed`` (``test_bernoulli``): the expected
        outputs are one draw of onnx's generator, so a path is right by chance (10 Bernoulli draws
        at p ~ 0.5 match about once in 60 runs) and both right and wrong are its outcomes."""
        from ovpool.engine.ops.base import traits_named
        from ovpool.onnx.model import graphs

        nodes = (node for graph in graphs(self.model.graph) for node in graph.node)
        return any(traits_named(n.op_type).random and not any(a.name == "seed" for a in n.attribute) for n in nodes)

    @property
    def has_sequences(self) -> bool:
        """Whether a graph input or output is declared a sequence or an optional (its data then come
        as lists, None, or arrays for an optional holding a tensor)."""
        values = (*self.model.graph.input, *self.model.graph.output)
        return any(v.type.HasField("sequence_type") or v.type.HasField("optional_type") for v in values)


@dataclass(frozen=True)
class Outcome:
    """What one path did with one case: ``outcome`` of ``OUTCOMES``, ``detail`` (why not right, one
    line), ``max_error`` (the largest absolute difference of a wrong float output; inf for a wrong
    shape, dtype or integer; None otherwise), ``warned`` (ovpool warned while converting or running),
    ``reference_ops`` (``numpy`` path: op types that ran on onnx.reference) and ``seconds``."""

    case: str
    op: str
    path: str
    outcome: str
    detail: str = ""
    max_error: float | None = None
    warned: bool = False
    reference_ops: tuple[str, ...] = ()
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        row = {"case": self.case, "op": self.op, "path": self.path, "outcome": self.outcome, "seconds": round(self.seconds, 4)}
        if self.detail:
            row["detail"] = self.detail
        if self.max_error is not None:
            row["max_error"] = self.max_error if math.isfinite(self.max_error) else str(self.max_error)
        if self.warned:
            row["warned"] = True
        if self.reference_ops:
            row["reference_ops"] = list(self.reference_ops)
        return row


class CaseTimeout(Exception):
    """A case ran past ``TIME_LIMIT``."""


class MissingOutput(Exception):
    """A path gave no output of a name the graph declares: a wrong answer, not a crash."""


# ---------------------------------------------------------------- the cases


def load_cases(only: str | None = None) -> list[Case]:
    """Every case of ``collect_testcases()`` (all of onnx's node case modules, ~4 s), or those whose
    name ``re.search``-es ``only``, sorted by name (onnx's own order depends on which of its case
    modules the process imported first). Data in types numpy lacks (TensorProtos) are
    converted to ml_dtypes arrays (``tensor_value``), inside sequences too."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = collect_testcases()
    pattern = re.compile(only) if only else None
    ops = {t.name: t.model.graph.node[0].op_type for t in found if t.model is not None and t.model.graph.node}
    cases = []
    for test in found:
        if (pattern is not None and not pattern.search(test.name)) or test.model is None or test.data_sets is None:
            continue  # every node case has its model and data sets; the model-zoo kind has neither
        data = tuple((tuple(_value(v) for v in ins), tuple(_value(v) for v in outs)) for ins, outs in test.data_sets)
        cases.append(Case(test.name, test.model, data, float(test.rtol), float(test.atol), _op_of(test.name, ops)))
    return sorted(cases, key=lambda case: case.name)


def _op_of(name: str, ops: Mapping[str, str]) -> str:
    """The op a case is about: its first node's, or for an expanded case (its function body, whose
    first node is often a Shape or a Constant) the op of the case it expands:
    ``test_softmax_axis_0_expanded_ver18`` -> the op of ``test_softmax_axis_0``, ``Softmax``."""
    base = re.sub(r"_expanded(_ver\d+)?$", "", name)
    return ops.get(base, ops.get(name, ""))


def _value(value: Any) -> Any:
    """A node case's datum as ovpool takes it: arrays as they are, TensorProtos as numpy
    (bfloat16, float8, 4-bit types as ml_dtypes arrays), sequences element by element, None kept."""
    from onnx import TensorProto

    from ovpool.engine.ops.casts import tensor_value

    if isinstance(value, TensorProto):
        return tensor_value(value)
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    if value is None or isinstance(value, np.ndarray):
        return value
    return np.asarray(value)


def in_share(name: str, share: tuple[int, int] | None) -> bool:
    """Whether case ``name`` is in share ``(k, n)`` (k of 0..n-1): the crc32 of its name modulo n is
    k, so shares are disjoint, cover every case and stay put as cases are added. None: every case."""
    if share is None:
        return True
    k, n = share
    return zlib.crc32(name.encode()) % n == k


def parse_share(text: str) -> tuple[int, int] | None:
    """``"2/7"`` -> (2, 7); ``"all"`` -> None. A bad share is a ``ValueError`` saying the form."""
    if text == "all":
        return None
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or not 0 <= int(match[1]) < int(match[2]):
        raise ValueError(f"share '{text}': expected K/N with 0 <= K < N (2/7), or 'all'")
    return int(match[1]), int(match[2])


# ---------------------------------------------------------------- the comparison


def differs(got: Sequence[Any], want: Sequence[Any], rtol: float, atol: float) -> tuple[str, float | None]:
    """(why ``got`` is not ``want``, the largest absolute error) or ("", None) when every output agrees.

    The rule of ``onnx.backend.test.runner.Runner.assert_similar_outputs`` (onnx 1.23.2): as many
    outputs; a sequence element by element; then equal shapes; strings (object arrays) equal; else
    equal dtypes and ``np.testing.assert_allclose(got, want, rtol, atol)`` (NaN where NaN), bfloat16
    compared as float32 with rtol at least two bfloat16 ULPs (2**-6). Two departures, both stricter or
    needed: integers and bools are compared exactly (the runner's rtol 1e-3 would let 1000 pass for
    1001), and float8 types are compared as float32 (numpy cannot promote them with a Python float,
    the runner would raise). An empty optional (None) matches only None. ``got = 1.0005``, ``want =
    1.0``: within rtol 1e-3, right; ``got = 1.002``: wrong, error 0.002."""
    if len(got) != len(want):
        return f"{len(got)} outputs, the case expects {len(want)}", math.inf
    for i, (g, w) in enumerate(zip(got, want)):
        problem, error = _differs_one(g, w, rtol, atol, f"output {i}")
        if problem:
            return problem, error
    return "", None


def _differs_one(got: Any, want: Any, rtol: float, atol: float, where: str) -> tuple[str, float | None]:
    if want is None or got is None:
        return (
            ("", None) if want is None and got is None else (f"{where}: {_kind(got)}, the case expects {_kind(want)}", math.inf)
        )
    if isinstance(want, list) or isinstance(got, (list, tuple)):
        if not isinstance(want, list) or not isinstance(got, (list, tuple)):
            return f"{where}: {_kind(got)}, the case expects {_kind(want)}", math.inf
        if len(got) != len(want):
            return f"{where}: a sequence of {len(got)}, the case expects {len(want)}", math.inf
        for j, (g, w) in enumerate(zip(got, want)):
            problem, error = _differs_one(g, w, rtol, atol, f"{where}[{j}]")
            if problem:
                return problem, error
        return "", None
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return f"{where}: shape {list(g.shape)}, the case expects {list(w.shape)}", math.inf
    if w.dtype == object or w.dtype.kind in "US":
        if g.astype(object).tolist() != w.astype(object).tolist():
            return f"{where}: {g.tolist()!r:.120} where the case expects {w.tolist()!r:.120}", math.inf
        return "", None
    if g.dtype != w.dtype:
        return f"{where}: dtype {g.dtype}, the case expects {w.dtype}", math.inf
    if w.dtype.kind in "iub" or _is_narrow_int(w.dtype):
        g64, w64 = g.astype(np.int64), w.astype(np.int64)
        bad = g64 != w64
        if bad.any():
            at = tuple(int(k) for k in np.argwhere(bad)[0])
            return (
                f"{where}: {int(bad.sum())} of {w.size} values differ, first at {list(at)}: {g64[at]} where the case expects {w64[at]}",
                float(np.max(np.abs(g64[bad].astype(np.float64) - w64[bad]))),
            )
        return "", None
    r = max(rtol, BFLOAT16_RTOL) if w.dtype.name == "bfloat16" else rtol
    g64, w64 = _as_float64(g), _as_float64(w)
    bad = ~np.isclose(g64, w64, rtol=r, atol=atol, equal_nan=True)
    if bad.any():
        at = tuple(int(k) for k in np.argwhere(bad)[0])
        with np.errstate(invalid="ignore"):
            diff = np.abs(g64[bad] - w64[bad])
        return (
            f"{where}: {int(bad.sum())} of {w.size} values differ beyond rtol={r:g} atol={atol:g}, "
            f"first at {list(at)}: {g64[at]!r} where the case expects {w64[at]!r}",
            math.inf if np.isnan(diff).any() else float(diff.max()),  # a NaN where a number is expected, or the reverse
        )
    return "", None


def _kind(value: Any) -> str:
    if value is None:
        return "None (an empty optional)"
    if isinstance(value, (list, tuple)):
        return f"a sequence of {len(value)}"
    return f"a tensor {np.asarray(value).dtype}{list(np.shape(value))}"


def _is_narrow_int(dtype: np.dtype) -> bool:
    """ml_dtypes' int4/uint4/int2/uint2 (numpy kind "V"), compared as integers."""
    return dtype.name in ("int4", "uint4", "int2", "uint2")


def _as_float64(array: np.ndarray) -> np.ndarray:
    """float64 (complex128) values of a float array; ml_dtypes' bfloat16 and float8 through float32,
    which holds each exactly."""
    if array.dtype.kind == "c":
        return array.astype(np.complex128)
    return array.astype(np.float64) if array.dtype.kind == "f" else array.astype(np.float32).astype(np.float64)


# ---------------------------------------------------------------- running a case


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``CaseTimeout`` in the block after ``seconds`` (SIGALRM: main thread, POSIX; elsewhere no limit)."""
    if seconds <= 0 or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"ran past the time limit of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class _Attempt:
    """One path's run of one case: ``run`` gives the outputs of one data set in graph output order,
    or ``outcome`` says why nothing runs (a peer's model that would kill OpenVINO CPU's process)."""

    run: Callable[[Sequence[Any]], list[Any]] | None = None
    outcome: str = ""
    detail: str = ""
    warned: bool = False
    reference_ops: tuple[str, ...] = ()


def run_case(case: Case, paths: Iterable[str] = OVPOOL_PATHS, limit: float = TIME_LIMIT) -> list[Outcome]:
    """One ``Outcome`` per path of ``paths`` (in ``PATHS`` order). ``cpu`` and ``ir-numpy`` share one
    ``ovpool.convert_model`` of the case; every exception is caught and classified."""
    wanted = [p for p in PATHS if p in set(paths)]
    unknown = set(paths) - set(PATHS)
    if unknown:
        raise ValueError(f"unknown path(s) {sorted(unknown)}: the paths are {', '.join(PATHS)}")
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="ovpool-conformance-") as folder:
        converted: dict[str, Any] = {}
        for path in wanted:
            start = time.perf_counter()
            outcomes.append(_one(case, path, Path(folder), converted, limit, start))
    return outcomes


def _one(case: Case, path: str, folder: Path, converted: dict[str, Any], limit: float, start: float) -> Outcome:
    """``case`` on ``path``: prepare (convert, compile) then every data set, under the time limit."""
    from ovpool.errors import OvpoolError

    ovpool_path = path in OVPOOL_PATHS
    attempt = _Attempt()
    problem, error = "", None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with time_limit(limit):
                attempt = _PREPARE[path](case, folder, converted)
                run = attempt.run if not attempt.outcome else None
                if run is not None:
                    problem, error = _first_difference(case, run)
        except MissingOutput as exc:
            problem, error = str(exc), math.inf
        except CaseTimeout as exc:
            attempt.outcome, attempt.detail = "crashed", str(exc)
        except OvpoolError as exc:
            attempt.outcome, attempt.detail = "refused", _line(exc)
        except Exception as exc:  # the peers' own exception types, and ovpool's crashes
            attempt.outcome = "crashed" if ovpool_path else "refused"
            attempt.detail = f"{type(exc).__name__}: {_line(exc)}{_where(exc) if ovpool_path else ''}"
        warned = ovpool_path and any(_is_ovpool_warning(w.category) for w in caught)
    outcome = attempt.outcome or ("wrong" if problem else "right")
    disputed = next((why for pattern, why in DISPUTED if re.search(pattern, case.name)), None)
    if outcome == "wrong" and disputed is not None:
        outcome, problem = "disputed", f"{disputed}: {problem}"
    return Outcome(
        case=case.name,
        op=case.op,
        path=path,
        outcome=outcome,
        detail=(attempt.detail or problem).replace(f"{folder}/", ""),  # "model.xml: layer ...", the same every run
        max_error=error if outcome in ("wrong", "disputed") else None,
        warned=warned or attempt.warned,
        reference_ops=attempt.reference_ops,
        seconds=time.perf_counter() - start,
    )


def _first_difference(case: Case, run: Callable[[Sequence[Any]], list[Any]]) -> tuple[str, float | None]:
    """:func:`differs` of the first data set whose outputs ``run`` gives otherwise, or ("", None)."""
    for inputs, expected in case.data_sets:
        problem, error = differs(run(inputs), list(expected), case.rtol, case.atol)
        if problem:
            return problem, error
    return "", None


def _is_ovpool_warning(category: type[Warning]) -> bool:
    return category.__module__.split(".")[0] == "ovpool"


def _where(exc: BaseException) -> str:
    """`` (at ovpool/ov/from_onnx.py:120 in onnx_to_ov_model)``: the deepest frame of ovpool's own
    code (not this module's) the exception passed through, or "" when none did."""
    own = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if "/ovpool/" in frame.filename and not frame.filename.endswith("conformance/__init__.py")
    ]
    if not own:
        return ""
    frame = own[-1]
    return f" (at ovpool/{frame.filename.rsplit('/ovpool/', 1)[1]}:{frame.lineno} in {frame.name})"


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:400] + ("..." if len(text) > 400 else "")


def _feeds(case: Case, inputs: Sequence[Any]) -> dict[str, Any]:
    """The data set's inputs by graph input name (an omitted trailing input is left out)."""
    return {info.name: value for info, value in zip(case.model.graph.input, inputs)}


def _in_order(case: Case, results: Mapping[str, Any]) -> list[Any]:
    """Outputs in graph output order; a name missing is ``MissingOutput`` (a wrong answer)."""
    names = [o.name for o in case.model.graph.output]
    missing = [n for n in names if n not in results]
    if missing:
        raise MissingOutput(f"no output named {missing[0]!r} (the outputs: {', '.join(map(repr, results))})")
    return [results[n] for n in names]


def _numpy(case: Case, folder: Path, converted: dict[str, Any]) -> _Attempt:
    """``ovpool.run(model, inputs, device="numpy")``'s steps (``execution.fallback.run``), the session kept for its
    ``reference_ops``."""
    from ovpool.execution.fallback import open_session
    from ovpool.execution.model import open_model
    from ovpool.tensors import check_inputs

    model = open_model(case.model)
    session = open_session(model, "numpy", fallback="none", cache=False).session
    reference_ops = tuple(getattr(session, "reference_ops", ()))

    def run(inputs: Sequence[Any]) -> list[Any]:
        feeds = _feeds(case, inputs)
        check_inputs(model.label, session.inputs, feeds)
        return _in_order(case, session.infer(feeds))

    return _Attempt(run=run, reference_ops=reference_ops)


def _converted(case: Case, folder: Path, converted: dict[str, Any]) -> Any:
    """``ovpool.convert_model(case.model)``, once for ``cpu`` and ``ir-numpy``; its error again for the
    second path that asks, and its warnings counted for both."""
    if "model" not in converted:
        import ovpool

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                converted["model"] = ovpool.convert_model(case.model)
            except Exception as exc:
                converted["model"] = exc
        converted["warned"] = any(_is_ovpool_warning(w.category) for w in caught)
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if isinstance(converted["model"], Exception):
        raise converted["model"]
    return converted["model"]


def _cpu(case: Case, folder: Path, converted: dict[str, Any]) -> _Attempt:
    """The converted model on OpenVINO CPU at f32 through ``OpenVINOSession`` (as ``ovpool.run(...,
    device="CPU")``: its budget and crash guards, bfloat16 crossing as raw bits)."""
    from ovpool.execution.fallback import openvino_session
    from ovpool.execution.model import open_model
    from ovpool.execution.sessions import OpenVINOSession
    from ovpool.tensors import check_inputs

    ov_model = _converted(case, folder, converted)
    model = open_model(case.model)

    class Converted(OpenVINOSession):
        def _read_model(self, model: Any, core: Any) -> tuple[Any, set[str]]:
            names = {o.name for o in case.model.graph.output} | {i.name for i in case.model.graph.input}
            return ov_model.clone(), names

    session = openvino_session(model, "CPU", "f32", cache=False, kind=Converted)  # a compile failure is its DeviceError

    def run(inputs: Sequence[Any]) -> list[Any]:
        feeds = _feeds(case, inputs)
        check_inputs(model.label, session.inputs, feeds)
        return _in_order(case, session.infer(feeds))

    return _Attempt(run=run, warned=converted.get("warned", False))


def _ir_numpy(case: Case, folder: Path, converted: dict[str, Any]) -> _Attempt:
    """The converted model saved as IR (``ir_files``) and run by ``ovpool.run(xml, device="numpy")``."""
    import ovpool
    from ovpool.ov.from_onnx import ir_files

    ov_model = _converted(case, folder, converted)
    xml = folder / "model.xml"
    if not xml.exists():
        files = ir_files(ov_model)
        xml.write_bytes(files[".xml"])
        xml.with_suffix(".bin").write_bytes(files[".bin"])

    def run(inputs: Sequence[Any]) -> list[Any]:
        return _in_order(case, ovpool.run(xml, _feeds(case, inputs), device="numpy", fallback="none", cache=False))

    return _Attempt(run=run, warned=converted.get("warned", False))


def _stock_cpu(case: Case, folder: Path, converted: dict[str, Any]) -> _Attempt:
    """OpenVINO's own ONNX frontend (``core.read_model`` of the .onnx) on CPU at f32, fed only the
    inputs the compiled model kept (its frontend drops an input no output depends on, CastLike's
    ``like``), bfloat16 and the narrow types as raw bits (``execution.ov_tensors.raw_tensor``); a model that ovpool's guards say
    kills OpenVINO CPU's process is not compiled (``crashed``)."""
    import onnx

    from ovpool.errors import ModelError
    from ovpool.execution import limits
    from ovpool.execution.ov_tensors import raw_tensor
    from ovpool.execution.sessions import compile_config

    source = folder / "stock.onnx"
    onnx.save_model(case.model, str(source))
    core = _core()
    ov_model = core.read_model(str(source))
    try:
        limits.check_ov_cpu_crashes(ov_model, case.name, case.model)
    except ModelError as exc:
        return _Attempt(outcome="crashed", detail=f"not compiled, OpenVINO CPU's process would die: {_line(exc)}")
    compiled = core.compile_model(ov_model, "CPU", compile_config("f32", cache=False))
    names = [o.name for o in case.model.graph.output]
    declared = {name for port in compiled.inputs for name in port.get_names()}

    def run(inputs: Sequence[Any]) -> list[Any]:
        feeds = {k: raw_tensor(v) if _is_raw(v) else v for k, v in _feeds(case, inputs).items() if k in declared}
        request = compiled.create_infer_request()
        request.infer(feeds)
        ports = list(compiled.outputs)
        by_name = {n: _ov_output(request, port) for port in ports for n in port.get_names()}
        return [by_name[n] if n in by_name else _ov_output(request, ports[i]) for i, n in enumerate(names)]

    return _Attempt(run=run)


def _ov_output(request: Any, port: Any) -> np.ndarray:
    """An output of OpenVINO's infer request as an array of its own; bf16 and the narrow types as
    ml_dtypes' types (``execution.ov_tensors.raw_value``: OpenVINO's Python layer shows a bf16 tensor as float16,
    1.25 would come back 1.906, and a u4 tensor as its packed bytes)."""
    from ovpool import dtypes
    from ovpool.execution.ov_tensors import raw_value

    tensor = request.get_tensor(port)
    dtype = dtypes.any_from_ov_type(port.get_element_type())
    if dtype is not None and (dtype == "bfloat16" or any(row.name == dtype for row in dtypes.NARROW)):
        return raw_value(tensor, dtype)
    return np.array(tensor.data)


def _is_raw(value: Any) -> bool:
    """A bfloat16 or narrow-type array, which crosses to OpenVINO as raw bits."""
    from ovpool import dtypes

    return isinstance(value, np.ndarray) and (
        value.dtype.name == "bfloat16" or any(row.name == value.dtype.name for row in dtypes.NARROW)
    )


_CORE: Any = None


def _core() -> Any:
    global _CORE
    if _CORE is None:
        from ovpool.execution.devices import new_core

        _CORE = new_core()
    return _CORE


def _onnxruntime(case: Case, folder: Path, converted: dict[str, Any]) -> _Attempt:
    """onnxruntime's CPU provider, one thread, graph optimisations off; a model of an IR version
    newer than onnxruntime 1.31 reads (onnx 1.23 writes IR 14 for opset 26) is given IR 13, and
    opsets onnx has not released are allowed (``ALLOW_RELEASED_ONNX_OPSET_ONLY=0``), so that the
    comparison is of kernels, not of version gates."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    os.environ["ALLOW_RELEASED_ONNX_OPSET_ONLY"] = "0"  # opsets 27 and 28 tried, not refused outright
    model = case.model
    if model.ir_version > ORT_IR_VERSION:
        model = type(model)()
        model.CopyFrom(case.model)
        model.ir_version = ORT_IR_VERSION
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def run(inputs: Sequence[Any]) -> list[Any]:
        return list(session.run(None, _feeds(case, inputs)))

    return _Attempt(run=run)


def _reference(case: Case, folder: Path, converted: dict[str, Any]) -> _Attempt:
    """onnx.reference's ``ReferenceEvaluator``."""
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(case.model)

    def run(inputs: Sequence[Any]) -> list[Any]:
        return list(evaluator.run(None, _feeds(case, inputs)))

    return _Attempt(run=run)


_PREPARE: dict[str, Callable[[Case, Path, dict[str, Any]], _Attempt]] = {
    "numpy": _numpy,
    "cpu": _cpu,
    "ir-numpy": _ir_numpy,
    "stock-cpu": _stock_cpu,
    "onnxruntime": _onnxruntime,
    "reference": _reference,
}


# ---------------------------------------------------------------- the report


def table(outcomes: Iterable[Outcome], paths: Sequence[str] = PATHS) -> str:
    """The Markdown table ``| path | cases | right | disputed | wrong (of which warned) | refused | crashed |``,
    one row per path of ``paths`` that has outcomes; the ``numpy`` row says how many right answers
    used onnx.reference: ``| numpy | 1884 | 1634 (356 on onnx.reference) | 11 (0) | 210 | 0 |``."""
    by_path: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_path.setdefault(o.path, []).append(o)
    lines = [
        "| path | cases | right | disputed | wrong (of which warned) | refused | crashed |",
        "|---|---|---|---|---|---|---|",
    ]
    for path in paths:
        rows = by_path.get(path)
        if not rows:
            continue
        count = {k: sum(o.outcome == k for o in rows) for k in OUTCOMES}
        warned = sum(o.outcome == "wrong" and o.warned for o in rows)
        on_reference = sum(o.outcome == "right" and bool(o.reference_ops) for o in rows)
        right = f"{count['right']}" + (f" ({on_reference} on onnx.reference)" if on_reference else "")
        lines.append(
            f"| {path} | {len(rows)} | {right} | {count['disputed']} | {count['wrong']} ({warned}) | {count['refused']} "
            f"| {count['crashed']} |"
        )
    return "\n".join(lines)


def listing(outcomes: Iterable[Outcome], outcome: str) -> str:
    """The cases of ``outcome`` per path, grouped by op: ``numpy Abs test_abs: max error 0.5: output 0: ...``."""
    rows = sorted((o for o in outcomes if o.outcome == outcome), key=lambda o: (PATHS.index(o.path), o.op, o.case))
    lines = []
    for o in rows:
        error = f" max error {o.max_error:.3g};" if o.max_error is not None else ""
        warned = " (warned)" if o.warned else ""
        lines.append(f"{o.path}\t{o.op}\t{o.case}{warned}:{error} {o.detail}")
    return "\n".join(lines)


# ---------------------------------------------------------------- the expected outcomes


def expected_table(outcomes: Iterable[Outcome], cases: Iterable[str]) -> dict[str, Any]:
    """The expected-outcome table ``tests/conformance_expected.json`` holds: every case name of the
    suite (``cases``, so that a test collects its params without building onnx's cases) and, per
    case that is not right on some ovpool path, ``{path: [outcome, reason]}`` (the reason the detail
    of the run that wrote it)."""
    known: dict[str, dict[str, list[str]]] = {}
    for o in outcomes:
        if o.path in OVPOOL_PATHS and o.outcome != "right":
            known.setdefault(o.case, {})[o.path] = [o.outcome, reason_of(o.detail)]
    return {"cases": list(cases), "not_right": {name: _in_path_order(known[name]) for name in sorted(known)}}


def _in_path_order(rows: Mapping[str, Any]) -> dict[str, Any]:
    return {path: rows[path] for path in PATHS if path in rows}


def reason_of(detail: str) -> str:
    """A detail as the table keeps it: OpenVINO's ``Exception from src/...cpp:84:`` chain of source
    places and memory addresses dropped, at most ``REASON_LENGTH`` characters."""
    text = re.sub(r"(Exception from |Check '[^']*' failed at )?src/[\w/.]+:\d+:? ?", "", detail)
    text = re.sub(r"0x[0-9a-f]{8,}", "0x...", text)  # onnx's function-expansion node names hold an address
    return text if len(text) <= REASON_LENGTH else text[: REASON_LENGTH - 3] + "..."


def write_expected(file: str | os.PathLike[str], outcomes: Sequence[Outcome], cases: Iterable[str], merge: bool) -> None:
    """Write :func:`expected_table` to ``file``; with ``merge``, the rows of the (case, path) pairs not
    run now are kept from the file (a run of one share or one path updates only what it ran)."""
    table = expected_table(outcomes, cases)
    path = Path(file)
    if merge and path.exists():
        old = json.loads(path.read_text())
        ran = {(o.case, o.path) for o in outcomes}
        for name, paths in old.get("not_right", {}).items():
            for p, row in paths.items():
                if (name, p) not in ran:
                    table["not_right"].setdefault(name, {})[p] = row
        table["not_right"] = {name: _in_path_order(table["not_right"][name]) for name in sorted(table["not_right"])}
    path.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")


def expected_outcome(table: Mapping[str, Any], case: str, path: str) -> tuple[str, str]:
    """(outcome, reason) the table expects of ``case`` on ``path``: ("right", "") unless listed."""
    row = table.get("not_right", {}).get(case, {}).get(path)
    return (row[0], row[1]) if row else ("right", "")
