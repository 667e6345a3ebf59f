"""Hostile command-line arguments, case by case: each is one ``error:`` line naming the option (or
file) and an exit code (2 for usage errors); never an internal error, a traceback, a hang or a
silent misreading. (``test_hostile_input.py`` does hostile files.)"""

from __future__ import annotations

import json
import math
import shutil
import zipfile

import numpy as np
import pytest
from runtime_support import EXAMPLE, invoke, pool_model, save

from ovpool.check.compare import Comparison, Difference
from ovpool.errors import UsageError
from ovpool.inputs import MAX_DIM, input_shapes, parse_input, parse_shape_pairs
from ovpool.tensors import parse_shapes

TRAP = EXAMPLE.parent / "trap.xml"


def one_error(capsys, *args: object) -> tuple[int, str]:
    """``ovpool ARGS`` that fails: (exit code, its one stderr line, which starts ``error:``)."""
    code, _, err = invoke(capsys, *args)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "internal error" not in err and "Traceback" not in err, err
    return code, lines[0]


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """``tiny.onnx`` (the bundled example: input 'input' [1, 3, 14, 14]) in a fresh working folder."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, tmp_path / "tiny.onnx")
    return tmp_path / "tiny.onnx"


# ---------------------------------------------------------------- 1. dims past 2**31-1


@pytest.mark.parametrize(
    "dims, dim",
    [
        ("1,3,9223372036854775808,14", "9223372036854775808"),  # 2**63: OpenVINO's Dimension raised TypeError
        ("1,3,9223372036854775807,14", "9223372036854775807"),  # 2**63-1: was silently written as '?'
        ("1,3,2147483648,14", "2147483648"),  # 2**31
        ("1,3,4294967296..,14", "4294967296.."),  # a range's lower bound
        ("1,3,1..4294967296,14", "1..4294967296"),  # and its upper bound
        ("1,3," + "9" * 5000 + ",14", "9" * 5000),  # past int()'s 4300 digits
    ],
)
def test_a_dim_past_2_31_is_refused_as_it_is_parsed(tiny, capsys, dims, dim):
    code, line = one_error(capsys, "convert", tiny, "--input", f"input[{dims}]", "-o", "m.xml")
    assert code == 2 and f"--input input[{dims}]: dim '{dim}' is over 2147483647 (2**31-1)" in line
    code, line = one_error(capsys, "convert", tiny, "--shape", f"input={dims}", "-o", "m.xml")
    assert code == 2 and f"--shape input={dims}: dim '{dim}' is over 2147483647" in line
    assert not (tiny.parent / "m.xml").exists()


def test_the_bound_is_one_rule_for_every_form():
    """2**31-1 itself is a dim, as a static dim and as either bound, in every form that takes dims."""
    assert MAX_DIM == 2**31 - 1
    big = str(MAX_DIM)
    assert parse_input(f"x[{big},0{big},1..{big},{big}..]")[0].dims == ((MAX_DIM, MAX_DIM),) * 2 + ((1, MAX_DIM), (MAX_DIM, None))
    assert input_shapes({"x": [MAX_DIM]})[0].dims == ((MAX_DIM, MAX_DIM),)
    assert parse_shapes([f"x=1,{big}"]) == {"x": (1, MAX_DIM)}
    for refused in (
        lambda: parse_input(f"x[{MAX_DIM + 1}]"),
        lambda: parse_input(f"x[..{MAX_DIM + 1}]"),
        lambda: input_shapes({"x": [2**63]}),
        lambda: parse_shape_pairs([f"x={MAX_DIM + 1}"]),
        lambda: parse_shapes([f"x={2**64}"]),
    ):
        with pytest.raises(UsageError, match="is over 2147483647"):
            refused()


def test_run_shape_takes_numbers_only_through_the_same_parser(tiny, capsys):
    code, line = one_error(capsys, "run", tiny, "--random-inputs", "--device", "numpy", "--shape", "input=1,3,2147483648,14")
    assert code == 2 and "--shape input=1,3,2147483648,14: dim '2147483648' is over 2147483647" in line
    code, line = one_error(capsys, "run", tiny, "--random-inputs", "--device", "numpy", "--shape", "input=1,3,?,14")
    assert code == 2 and "--shape input=1,3,?,14: dim '?' is not a number" in line
    code, line = one_error(capsys, "bench", tiny, "--backend", "numpy", "--runs", 1, "--shape", "input=1,3,a,14")
    assert code == 2 and "--shape input=1,3,a,14: dim 'a' is not a number" in line


# ---------------------------------------------------------------- 2. negative --seed


@pytest.mark.parametrize(
    "command",
    [
        ("run", "--random-inputs", "--device", "numpy"),
        ("compare", "--random-inputs", "--device", "numpy"),
        ("bench", "--backend", "numpy", "--runs", "1"),
    ],
)
def test_a_negative_seed_is_the_same_usage_error_everywhere(tiny, capsys, command):
    name, *rest = command
    code, line = one_error(capsys, name, tiny, *rest, "--seed", "-5")
    assert (code, line) == (2, "error: --seed -5: must be >= 0")


# ---------------------------------------------------------------- 3. digits that are not ASCII


@pytest.mark.parametrize("value", ["²", "¹", "٣", "３"])
def test_transform_opset_takes_ascii_digits_only(tiny, capsys, value):
    code, line = one_error(capsys, "transform", tiny, "-p", f"opset={value}", "-o", "out.onnx")
    assert code == 2 and f"pass 'opset={value}': N in opset=N must be a whole number" in line
    assert not (tiny.parent / "out.onnx").exists()


@pytest.mark.parametrize("args", [("-j", "²"), ("--jobs=¹",), ("--jobs", "٣"), ("--jobs=" + "9" * 5000,)])
def test_validate_jobs_that_are_not_ascii_digits_go_to_typer_not_a_traceback(capsys, args):
    code, _, err = invoke(capsys, "validate", TRAP, *args)
    assert code == 2 and "Traceback" not in err and "--jobs" in err


def test_validate_fast_path_runs_inside_the_guard(capsys, monkeypatch):
    """Whatever the fast path raises is reported as one line, not a traceback."""
    from ovpool.cli import validate

    def broken(argv):
        raise UsageError("from quick")

    monkeypatch.setattr(validate, "quick", broken)
    assert one_error(capsys, "validate", TRAP) == (2, "error: from quick")


def test_feature_level_and_ir_version_take_ascii_digits_only(tiny, capsys, tmp_path):
    code, line = one_error(capsys, "convert", tiny, "--to", "dml", "--feature-level", "²")
    assert code == 2 and "--feature-level ²: not a DirectML feature level" in line
    text = TRAP.read_text().replace('version="11"', 'version="¹¹"', 1)
    assert 'version="¹¹"' in text
    (tmp_path / "odd.xml").write_text(text)
    code, out, err = invoke(capsys, "validate", tmp_path / "odd.xml")  # was int("¹¹"): an internal error
    assert code == 1 and "1 file(s), 1 pooling layer(s), 1 finding(s)" in out and not err


# ---------------------------------------------------------------- 4. --runs and --warmup bounded


@pytest.mark.parametrize(
    "flag, value, allowed",
    [
        ("--runs", "99999999999999999999999", "from 1 to 1,000,000"),
        ("--runs", "1000001", "from 1 to 1,000,000"),
        ("--runs", "0", "from 1 to 1,000,000"),
        ("--warmup", "99999999999999999999999", "from 0 to 1,000,000"),
        ("--warmup", "-1", "from 0 to 1,000,000"),
    ],
)
def test_bench_runs_and_warmup_are_bounded(tiny, capsys, flag, value, allowed):
    code, line = one_error(capsys, "bench", tiny, "--backend", "numpy", flag, value)
    assert (code, line) == (2, f"error: {flag} {value}: must be {allowed}")


# ---------------------------------------------------------------- 5. tolerances and strict JSON


@pytest.mark.parametrize("flag, value", [("--rtol", "nan"), ("--rtol", "inf"), ("--atol", "nan"), ("--atol", "-inf")])
def test_non_finite_tolerances_are_usage_errors(tiny, capsys, flag, value):
    code, line = one_error(capsys, "compare", tiny, "--device", "numpy", "--random-inputs", flag, value, "--json")
    assert code == 2 and f"{flag} {value}: must be a finite number >= 0" in line


def _strict(text: str) -> dict:
    def refuse(token: str):
        raise AssertionError(f"{token} in --json output")

    return json.loads(text, parse_constant=refuse)


def test_compare_json_is_strict_json(tiny, capsys):
    code, out, _ = invoke(capsys, "compare", tiny, "--device", "numpy", "--random-inputs", "--json")
    assert code == 0 and _strict(out)["within"] is True


def test_nan_and_infinite_differences_are_strings_in_json():
    nan, inf = float("nan"), float("inf")
    outputs = (
        Difference("a", (1,), nan, nan, False),
        Difference("b", (1,), inf, inf, False),
        Difference("c", (1,), 0.5, 0.1, True),
    )
    record = Comparison("m.onnx", "numpy", "", "numpy", 1e-4, 1e-6, outputs).record()
    doc = _strict(json.dumps(record, allow_nan=False))
    assert [(d["max_abs"], d["max_rel"]) for d in doc["outputs"]] == [("nan", "nan"), ("inf", "inf"), (0.5, 0.1)]
    assert math.isclose(doc["rtol"], 1e-4)


# ---------------------------------------------------------------- 6, 7. convert's options and routes


@pytest.mark.parametrize(
    "args, named",
    [
        (("--to", "dml", "--exact-quantization"), "--exact-quantization (exact_quantization=): not an option of onnx -> dml"),
        (("--to", "dml", "--compress-to-fp16"), "--compress-to-fp16 (compress_to_fp16=): not an option of onnx -> dml"),
        (("--to", "ir", "--feature-level", "4.0"), "--feature-level (feature_level=): not an option of onnx -> ir"),
    ],
)
def test_an_option_of_another_route_is_named_by_its_flag(tiny, capsys, args, named):
    code, line = one_error(capsys, "convert", tiny, *args)
    assert code == 2 and named in line


def test_converting_a_format_to_itself_is_a_usage_error_naming_the_targets(tiny, capsys):
    code, line = one_error(capsys, "convert", tiny, "--to", "onnx")
    assert code == 2 and "converting onnx to onnx is not supported; onnx converts to dml or ir" in line
    code, _, _ = invoke(capsys, "convert", tiny, "-o", "m.xml")
    assert code == 0
    code, line = one_error(capsys, "convert", "m.xml", "-o", "y.xml")
    assert code == 2 and "converting ir to ir is not supported; ir converts to dml or onnx" in line
    assert not (tiny.parent / "y.xml").exists()


# ---------------------------------------------------------------- 8. $OVPOOL_MAX_MEMORY


@pytest.mark.parametrize(
    "args",
    [
        ("run", "tiny.onnx", "--random-inputs"),
        ("compare", "tiny.onnx", "--device", "numpy", "--random-inputs"),
        ("bench", "tiny.onnx", "--backend", "numpy", "--runs", "1"),
        ("convert", "tiny.onnx", "-o", "m.xml"),
        ("transform", "tiny.onnx", "-p", "no-ceil", "-o", "t.onnx"),
        ("explain", "--onnx", "tiny.onnx", "--node", "pool1"),
    ],
)
def test_a_bad_memory_variable_names_the_variable_not_the_model(tiny, capsys, monkeypatch, args):
    monkeypatch.setenv("OVPOOL_MAX_MEMORY", "junk")
    code, line = one_error(capsys, *args)
    assert code == 2 and line.startswith("error: OVPOOL_MAX_MEMORY 'junk': expected a size")


def test_a_huge_memory_size_is_a_usage_error(tiny, capsys, monkeypatch):
    """Read as a decimal, not a float that overflows: 400 nines is over the largest budget."""
    code, line = one_error(capsys, "run", tiny, "--random-inputs", "--device", "numpy", "--max-memory", "9" * 400)
    assert code == 2 and "--max-memory" in line and "at most 2**63-1" in line
    monkeypatch.setenv("OVPOOL_MAX_MEMORY", "9" * 5000)
    code, line = one_error(capsys, "run", tiny, "--random-inputs", "--device", "numpy")
    assert code == 2 and line.startswith("error: OVPOOL_MAX_MEMORY '999")


# ---------------------------------------------------------------- 9. explain's rank message


def test_explain_names_kernel_and_input_shape_when_their_ranks_differ(capsys):
    code, line = one_error(capsys, "explain", "--kernel", "1", "--input-shape", "1,1,3000,3000")
    assert code == 2
    assert line == "error: --kernel 1 on --input-shape 1,1,3000,3000: has 1 axis but the input has 2 spatial axes"
    code, line = one_error(capsys, "explain", "--kernel", "3,3", "--input-shape", "1,1,30")
    assert line == "error: --kernel 3,3 on --input-shape 1,1,30: has 2 axes but the input has 1 spatial axis"


# ---------------------------------------------------------------- 10. an input given twice, contradictory fallback


@pytest.mark.parametrize(
    "args, message",
    [
        (("--input", "input[1,3,14,14]", "--input", "input[1,3,15,15]"), "--input: input 'input' is given twice"),
        (("--input", "input[1,3,14,14],input[1,3,15,15]"), "--input: input 'input' is given twice"),
        (("--shape", "input=1,3,14,14", "--shape", "input=1,3,15,15"), "--shape: input 'input' is given twice"),
    ],
)
def test_convert_refuses_an_input_shape_given_twice(tiny, capsys, args, message):
    code, line = one_error(capsys, "convert", tiny, *args, "-o", "m.xml")
    assert code == 2 and message in line
    assert not (tiny.parent / "m.xml").exists()


def test_run_refuses_an_input_given_twice(tiny, capsys):
    x = np.ones((1, 3, 14, 14), np.float32)
    np.save("x.npy", x)
    np.savez("in.npz", input=x)
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile("twice.npz", "w") as archive:
        for _ in range(2):
            with archive.open("input.npy", "w") as member:
                np.lib.format.write_array(member, x)
    numpy = ("--device", "numpy")
    code, line = one_error(
        capsys, "run", tiny, *numpy, "--random-inputs", "--shape", "input=1,3,14,14", "--shape", "input=1,3,14,14"
    )
    assert code == 2 and "--shape: input 'input' is given twice" in line
    code, line = one_error(capsys, "run", tiny, *numpy, "-i", "input=x.npy", "-i", "input=x.npy")
    assert (code, line) == (2, "error: -i: input 'input' is given twice (input=x.npy and input=x.npy)")
    code, line = one_error(capsys, "run", tiny, *numpy, "--inputs", "in.npz", "-i", "input=x.npy")
    assert (code, line) == (2, "error: -i input=x.npy: input 'input' is also in --inputs in.npz")
    code, line = one_error(capsys, "compare", tiny, *numpy, "--inputs", "twice.npz")
    assert (code, line) == (2, "error: twice.npz: member 'input.npy' appears twice")


@pytest.mark.parametrize("command", [("run", "--random-inputs"), ("compare", "--random-inputs")])
@pytest.mark.parametrize("level", ["numpy", "cpu"])
def test_fallback_and_no_fallback_may_not_contradict(tiny, capsys, command, level):
    name, *rest = command
    code, line = one_error(capsys, name, tiny, *rest, "--device", "numpy", "--fallback", level, "--no-fallback")
    assert (code, line) == (2, f"error: --fallback {level} and --no-fallback contradict each other: give one")
    code, _, _ = invoke(capsys, name, tiny, *rest, "--device", "numpy", "--fallback", "none", "--no-fallback")
    assert code == 0


# ---------------------------------------------------------------- 11. validate's counts


def test_validate_counts_an_onnx_model_as_unreadable_in_every_format(tiny, capsys):
    code, out, _ = invoke(capsys, "validate", tiny)
    assert code == 2 and out.strip().splitlines()[-1] == "0 file(s), 0 pooling layer(s), 0 finding(s), 1 unreadable"
    code, out, _ = invoke(capsys, "validate", tiny, TRAP, "--format", "json")
    doc = json.loads(out)
    assert code == 2 and doc["summary"] == {"files": 1, "pooling_layers": 1, "findings": 1, "unreadable": 1}
    assert len(doc["files"]) == doc["summary"]["files"] and len(doc["unreadable"]) == doc["summary"]["unreadable"]
    code, out, _ = invoke(capsys, "validate", tiny, "--format", "junit")
    assert code == 2 and out.count("<testsuite ") == 1 and out.count("<error ") == 1 and "<testcase" in out


# ---------------------------------------------------------------- 12. input names and byte order


def test_an_npz_member_with_an_empty_name_is_quoted(tiny, capsys):
    with zipfile.ZipFile("blank.npz", "w") as archive, archive.open(".npy", "w") as member:
        np.lib.format.write_array(member, np.ones((1, 3, 14, 14), np.float32))
    code, line = one_error(capsys, "run", tiny, "--device", "numpy", "--inputs", "blank.npz")
    assert code == 1 and "missing input(s) 'input'; unknown input(s) '' (the model takes" in line


def test_a_big_endian_float32_array_is_float32(tiny, capsys):
    x = np.random.default_rng(0).standard_normal((1, 3, 14, 14)).astype(np.float32)
    np.save("native.npy", x)
    np.save("big.npy", x.astype(">f4"))
    np.savez("big.npz", input=x.astype(">f4"))
    runs = [
        invoke(capsys, "run", tiny, "--device", "numpy", *source, "--output", f"{name}.out.npz")
        for name, source in (
            ("native", ("-i", "input=native.npy")),
            ("big", ("-i", "input=big.npy")),
            ("bignpz", ("--inputs", "big.npz")),
        )
    ]
    assert [code for code, _, _ in runs] == [0, 0, 0], runs
    results = [np.load(f"{name}.out.npz") for name in ("native", "big", "bignpz")]
    for other in results[1:]:
        assert all(np.array_equal(results[0][key], other[key]) for key in results[0].files)


def test_a_big_endian_input_reaches_the_kernel_in_native_order(tmp_path, capsys):
    """MaxPool 2x2/2 over 0..31 as big-endian float32: the maxima 5..31, not byte-swapped values."""
    model = save(pool_model("MaxPool", ["n", 2, 4, 4], kernel_shape=[2, 2], strides=[2, 2]), tmp_path / "m.onnx")
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    np.save(tmp_path / "x.npy", x.astype(">f4"))
    code, out, err = invoke(capsys, "run", model, "--device", "numpy", "-i", f"x={tmp_path / 'x.npy'}")
    assert code == 0 and "y: shape [1, 2, 2, 2] float32 min 5.0 max 31.0" in out, err
