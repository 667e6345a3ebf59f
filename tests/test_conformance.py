"""ONNX's backend node suite on ovpool's three paths (``ovpool.conformance``): numpy executor,
``convert_model`` -> OpenVINO CPU at f32, and the same IR on numpy.

Every (path, case) is a test named after the case (``test_case_outcome[cpu-test_abs]``) whose outcome
(right, wrong, refused, crashed) must be the one ``conformance_expected.json`` lists (right when not
listed): a case that gets better or worse fails, and the table is regenerated with

    python -m ovpool.conformance --paths numpy,cpu,ir-numpy --write-expected tests/conformance_expected.json

The three paths take 201 s for the 1,884 cases on 2 otherwise idle cores (numpy 9 s, convert and
CPU 173 s, IR on numpy 19 s; twice that at a load of 10), so the default run takes one of ``SHARES``
shares (~40 s), which rotates with the git HEAD (``CONFORMANCE_SHARE=all`` runs every case,
``CONFORMANCE_SHARE=3/5`` one share; a case outside the share is addressed with
``CONFORMANCE_SHARE=all python -m pytest 'tests/test_conformance.py::test_case_outcome[cpu-test_tile]'``).
Unseeded random cases (``Case.unseeded``) may be right or wrong.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import os
import subprocess
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ovpool.conformance import (
    OUTCOMES,
    OVPOOL_PATHS,
    PATHS,
    Case,
    Outcome,
    differs,
    expected_outcome,
    expected_table,
    in_share,
    load_cases,
    parse_share,
    run_case,
    table,
    write_expected,
)

TABLE_FILE = Path(__file__).with_name("conformance_expected.json")
TABLE = json.loads(TABLE_FILE.read_text())
SHARES = 5
REGENERATE = "python -m ovpool.conformance --paths numpy,cpu,ir-numpy --write-expected tests/conformance_expected.json"


def _rotation() -> int:
    """A number that changes with each commit (the git HEAD's crc32), or with the day outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        return zlib.crc32(head.encode())
    except (OSError, subprocess.SubprocessError):
        return datetime.date.today().toordinal()


def _share() -> tuple[int, int] | None:
    text = os.environ.get("CONFORMANCE_SHARE")
    return parse_share(text) if text else (_rotation() % SHARES, SHARES)


SHARE = _share()
NAMES = [name for name in TABLE["cases"] if in_share(name, SHARE)]


@functools.cache
def _cases() -> dict[str, Case]:
    return {case.name: case for case in load_cases()}


@functools.cache
def _outcomes(name: str, paths: tuple[str, ...]) -> dict[str, Outcome]:
    """The case on ``paths`` once: ``cpu`` and ``ir-numpy`` share one conversion."""
    return {o.path: o for o in run_case(_cases()[name], paths)}


@pytest.mark.parametrize("path,name", [pytest.param(path, name, id=f"{path}-{name}") for path in OVPOOL_PATHS for name in NAMES])
def test_case_outcome(path: str, name: str) -> None:
    group = ("numpy",) if path == "numpy" else ("cpu", "ir-numpy")
    got = _outcomes(name, group)[path]
    want, reason = expected_outcome(TABLE, name, path)
    if _cases()[name].unseeded and {got.outcome, want} <= {"right", "disputed"}:
        return  # one draw of onnx's generator: right by chance, else disputed (Case.unseeded)
    assert got.outcome == want, (
        f"{name} on {path}: {got.outcome} ({got.detail}), conformance_expected.json lists {want}"
        + (f" ({reason})" if reason else "")
        + f"; if that is the change you meant: {REGENERATE}"
    )


def test_table_lists_every_case_of_onnx():
    """The table's case list is onnx's (1,884 in onnx 1.23.2): a new onnx means regenerating it."""
    assert list(_cases()) == TABLE["cases"], f"onnx's node cases changed: {REGENERATE}"
    assert len(TABLE["cases"]) >= 1884


def test_readme_table_counts_the_expected_outcomes():
    """The README's rows of ovpool's paths count what conformance_expected.json holds (right,
    disputed, wrong, refused, crashed), so the README says what the tests check."""
    readme = (TABLE_FILE.parents[1] / "README.md").read_text()
    rows = readme.split("<!-- conformance -->\n", 1)[1].split("<!-- /conformance -->", 1)[0]
    for path in OVPOOL_PATHS:
        counts = {outcome: 0 for outcome in OUTCOMES}
        for name in TABLE["cases"]:
            counts[expected_outcome(TABLE, name, path)[0]] += 1
        line = next(line for line in rows.splitlines() if line.startswith(f"| {path} |"))
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        wrong = int(cells[4].split()[0])
        assert [int(cells[1]), int(cells[2]), int(cells[3]), wrong, int(cells[5]), int(cells[6])] == [
            len(TABLE["cases"]),
            counts["right"],
            counts["disputed"],
            counts["wrong"],
            counts["refused"],
            counts["crashed"],
        ], f"README's {path} row is stale: {line}"


def test_table_rows_are_cases_paths_and_outcomes():
    for name, paths in TABLE["not_right"].items():
        assert name in TABLE["cases"], name
        for path, (outcome, reason) in paths.items():
            assert path in OVPOOL_PATHS and outcome in OUTCOMES[1:] and reason, (name, path)


# ---------------------------------------------------------------- the comparison and the report


def _case(name: str = "test_abs") -> Case:
    return _cases()[name]


def test_sequences_and_optionals_are_fed_not_skipped():
    """29 cases hold sequence or optional values; they run (and get an outcome) like the others."""
    with_sequences = [c for c in _cases().values() if c.has_sequences]
    assert len(with_sequences) == 29
    outcome = run_case(_case("test_sequence_insert_at_back"), ["reference"])[0]
    assert outcome.outcome == "right", outcome.detail


def test_unseeded_random_cases_are_known():
    assert sorted(c.name for c in _cases().values() if c.unseeded) == [
        "test_bernoulli",
        "test_bernoulli_double",
        "test_bernoulli_double_expanded",
        "test_bernoulli_expanded",
    ]


def test_bfloat16_and_float8_data_come_as_ml_dtypes_arrays():
    bf16 = _case("test_cast_FLOAT_to_BFLOAT16").data_sets[0][1][0]
    assert bf16.dtype.name == "bfloat16"
    (o,) = run_case(_case("test_cast_FLOAT_to_BFLOAT16"), ["numpy"])
    assert o.outcome == "right", o.detail


def test_differs_follows_the_runner_rule():
    """rtol 1e-3, atol 1e-7 for floats (NaN where NaN), integers exact, dtypes and shapes equal."""
    one = np.array([1.0, np.nan], np.float32)
    assert differs([np.array([1.0005, np.nan], np.float32)], [one], 1e-3, 1e-7) == ("", None)
    problem, error = differs([np.array([1.002, np.nan], np.float32)], [one], 1e-3, 1e-7)
    assert "1 of 2 values differ" in problem and error == pytest.approx(0.002, rel=1e-3)
    assert "NaN" not in differs([np.array([1.0, 0.0], np.float32)], [one], 1e-3, 1e-7)[0]
    assert differs([np.array([1.0, 0.0], np.float32)], [one], 1e-3, 1e-7)[1] == math.inf
    assert "values differ" in differs([np.array([1001])], [np.array([1000])], 1e-3, 1e-7)[0]
    assert "dtype float64" in differs([one.astype(np.float64)], [one], 1e-3, 1e-7)[0]
    assert "shape [1, 2]" in differs([one[None]], [one], 1e-3, 1e-7)[0]
    assert "2 outputs" in differs([one, one], [one], 1e-3, 1e-7)[0]


def test_differs_on_sequences_optionals_strings_and_bfloat16():
    import ml_dtypes

    seq = [np.zeros(2, np.float32), np.ones(1, np.float32)]
    assert differs([list(seq)], [seq], 1e-3, 1e-7) == ("", None)
    assert "a sequence of 1" in differs([seq[:1]], [seq], 1e-3, 1e-7)[0]
    assert differs([None], [None], 1e-3, 1e-7) == ("", None)
    assert "None" in differs([seq[0]], [None], 1e-3, 1e-7)[0]
    assert differs([np.array(["a"], dtype="<U1")], [np.array(["a"], dtype=object)], 1e-3, 1e-7) == ("", None)
    bf = np.array([1.0], ml_dtypes.bfloat16)
    assert differs([np.array([1.0078125], ml_dtypes.bfloat16)], [bf], 1e-3, 1e-7) == ("", None)  # one ULP
    assert differs([np.array([1.0625], ml_dtypes.bfloat16)], [bf], 1e-3, 1e-7)[0]


def test_outcomes_are_classified():
    """An ovpool error is a refusal, right and wrong come from the comparison; the table counts them."""
    outcomes = run_case(_case("test_abs"), PATHS)
    assert [o.path for o in outcomes] == list(PATHS)
    assert {o.outcome for o in outcomes} == {"right"}
    text = table(outcomes)
    assert "| numpy | 1 | 1 | 0 | 0 (0) | 0 | 0 |" in text
    refused = run_case(_case("test_image_decoder_decode_png_rgb"), ["numpy"])[0]
    assert refused.outcome == "refused" and "(ImageDecoder-20)" in refused.detail


def test_a_case_whose_data_depart_from_the_schema_is_disputed_not_wrong():
    """RoiAlign max: the data take the largest weighted corner, ovpool the schema's largest bilinear
    sample (docs/semantics.md): disputed, with the reason and the difference."""
    o = run_case(_case("test_roialign_mode_max"), ["numpy"])[0]
    assert o.outcome == "disputed" and o.detail.startswith("the data take the largest weighted corner") and o.max_error


@pytest.mark.parametrize("name", ["test_attention_4d_fp16", "test_attention_4d_causal_fp16"])
def test_float16_attention_agrees_on_cpu_and_ir_numpy(name: str) -> None:
    """OpenVINO's frontend writes ONNX's float16 Attention as ScaledDotProductAttention, which both
    the CPU plugin and IR-on-numpy compute in float32 and round once: the case's data to the step."""
    outcomes = run_case(_case(name), ["cpu", "ir-numpy"])
    assert [o.outcome for o in outcomes] == ["right", "right"], [o.detail for o in outcomes]


def test_raw_exceptions_crash_ovpool_paths_and_refuse_peers(monkeypatch: Any):
    """A raw exception is a crash on an ovpool path (with where in ovpool it came from), the peer's
    own refusal on a peer; an ovpool error is a refusal; a case past the time limit a crash."""
    import ovpool.conformance as conformance
    from ovpool.errors import ModelError

    def raising(exc: Exception) -> Any:
        def prepare(case: Case, folder: Path, converted: dict) -> Any:
            raise exc

        return prepare

    def spinning(case: Case, folder: Path, converted: dict) -> Any:
        while True:
            pass

    monkeypatch.setitem(conformance._PREPARE, "numpy", raising(ValueError("boom")))
    monkeypatch.setitem(conformance._PREPARE, "reference", raising(ValueError("boom")))
    crashed, refused = run_case(_case(), ["numpy", "reference"])
    assert (crashed.outcome, crashed.detail) == ("crashed", "ValueError: boom")
    assert (refused.outcome, refused.detail) == ("refused", "ValueError: boom")
    monkeypatch.setitem(conformance._PREPARE, "numpy", raising(ModelError("node 'n' (Abs-13): no")))
    assert run_case(_case(), ["numpy"])[0].outcome == "refused"
    monkeypatch.setitem(conformance._PREPARE, "numpy", spinning)
    (late,) = run_case(_case(), ["numpy"], limit=0.2)
    assert (late.outcome, late.detail) == ("crashed", "ran past the time limit of 0.2 s")


def test_wrong_after_an_ovpool_warning_is_warned(monkeypatch: Any):
    """A CpuDeviationWarning (any warning class of ovpool) while preparing marks a wrong answer warned."""
    import warnings

    import ovpool.conformance as conformance
    from ovpool.ov.cpu_deviations import CpuDeviationWarning

    def warning(case: Case, folder: Path, converted: dict) -> Any:
        warnings.warn("node 'abs': OpenVINO CPU computes otherwise", CpuDeviationWarning, stacklevel=1)
        return conformance._Attempt(run=lambda inputs: [np.abs(inputs[0]) + 1])

    monkeypatch.setitem(conformance._PREPARE, "numpy", warning)
    (o,) = run_case(_case(), ["numpy"])
    assert (o.outcome, o.warned, o.max_error) == ("wrong", True, pytest.approx(1.0))
    assert "| numpy | 1 | 0 | 0 | 1 (1) | 0 | 0 |" in table([o])


def test_expected_table_and_shares():
    rows = [Outcome("a", "Abs", "numpy", "wrong", "output 0: ..."), Outcome("a", "Abs", "stock-cpu", "wrong", "x")]
    assert expected_table(rows, ["a", "b"]) == {"cases": ["a", "b"], "not_right": {"a": {"numpy": ["wrong", "output 0: ..."]}}}
    assert expected_outcome({"not_right": {}}, "b", "cpu") == ("right", "")
    names = [f"test_{i}" for i in range(100)]
    shares = [[n for n in names if in_share(n, (k, 3))] for k in range(3)]
    assert sorted(sum(shares, [])) == sorted(names) and all(shares)
    assert parse_share("all") is None and parse_share("1/3") == (1, 3)
    with pytest.raises(ValueError, match="K/N"):
        parse_share("3/3")


def test_write_expected_merges_what_ran(tmp_path: Path):
    """A partial run (one share, one path) rewrites only the (case, path) pairs it ran."""
    file = tmp_path / "expected.json"
    write_expected(
        file, [Outcome("a", "Abs", "numpy", "wrong", "w"), Outcome("b", "Abs", "cpu", "refused", "r")], ["a", "b"], False
    )
    write_expected(file, [Outcome("a", "Abs", "numpy", "right"), Outcome("b", "Abs", "numpy", "crashed", "c")], ["a", "b"], True)
    assert json.loads(file.read_text())["not_right"] == {"b": {"numpy": ["crashed", "c"], "cpu": ["refused", "r"]}}
    assert list(json.loads(file.read_text())["not_right"]["b"]) == ["numpy", "cpu"]


def test_command_prints_the_table(capsys: Any, tmp_path: Path):
    from ovpool.conformance.__main__ import main

    out = tmp_path / "rows.json"
    assert main(["--only", "^test_abs$", "--paths", "numpy,reference", "--list", "right", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| numpy | 1 | 1 | 0 | 0 (0) | 0 | 0 |" in text and "| reference | 1 | 1 |" in text
    assert "numpy\tAbs\ttest_abs" in text
    assert [row["outcome"] for row in json.loads(out.read_text())] == ["right", "right"]
