"""A newcomer's first hour: the README runs as written (twice, from a folder outside the checkout,
and its Python from the repository root too), the documents link only files that exist, the
bundled examples are found from anywhere, the reference lists every option, and the pre-commit
hook checks IR files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

import ovpool
from ovpool.cli.app import app
from ovpool.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _environment(tmp_path: Path) -> dict[str, str]:
    """``ovpool`` on PATH is this checkout's command (a shim over ``python -m ovpool``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "ovpool"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ovpool "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}


@pytest.mark.openvino
@pytest.mark.slow  # ~15 s: some twenty ovpool processes, twice
def test_readme_commands_run_as_written_twice_outside_the_checkout(tmp_path):
    """Every ```bash block, in order, in one shell (```sh blocks are the ones that install or need
    Docker). The second run in the same folder must succeed too: outputs named apart from the
    sources and the globs, --force where a file is replaced."""
    script = "set -eu\n" + "\n".join(re.findall(r"```bash\n(.*?)```", README, re.S))
    env = _environment(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    for attempt in ("first", "second"):
        done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{attempt} run: {done.stderr}"
    tour = work / "ovpool-tour"
    # the findings table the README shows is what validate prints
    shown = re.search(r"```\n(LOCATION .*?)```", README, re.S).group(1)
    assert shown in done.stdout
    assert "1 file(s), 3 pooling layer(s), 0 finding(s)" in done.stdout
    assert {p.name for p in tour.iterdir()} >= {"tiny_pool.xml", "portable.onnx", "tiny_pool.from-dml.onnx", "static", "models"}
    assert (tour / "models" / "config.json").is_file()


PYTHON_BLOCK = re.search(r"```python\n(.*?)```", README, re.S).group(1)


@pytest.mark.parametrize("where", ["root", "elsewhere"])
def test_readme_python_runs_from_the_repository_root_and_elsewhere(tmp_path, where):
    """From the root, ``import ovpool`` finds the checkout's ``ovpool/`` first (the issue's
    ``No module named 'ovpool.ir_templates'``); elsewhere, the package on the path."""
    cwd = ROOT if where == "root" else tmp_path
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if where == "elsewhere":
        env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", PYTHON_BLOCK], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    expected = [line.split("# ")[-1] for line in PYTHON_BLOCK.splitlines() if line.startswith("print(")]
    assert done.stdout.splitlines() == expected


def test_a_checkout_imports_as_the_installed_package():
    """Run from the repository root, ``ovpool.cli``, ``ovpool.transforms`` and ``ovpool.ir_templates``
    are the checkout's top-level folders (``__path__`` in ``ovpool/__init__.py``), as pyproject.toml's
    package-dir installs them."""
    code = "import ovpool.cli.app, ovpool.transforms.apply, ovpool.ir_templates as t, ovpool\nprint(ovpool.cli.__file__, ovpool.transforms.__file__, t.__file__, ovpool.__file__)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    files = [Path(p) for p in done.stdout.split()]
    assert files == [
        ROOT / "cli" / "__init__.py",
        ROOT / "transforms" / "__init__.py",
        ROOT / "ir_templates" / "__init__.py",
        ROOT / "ovpool" / "__init__.py",
    ]
    package_dir = _pyproject()["tool"]["setuptools"]["package-dir"]
    assert package_dir == {
        "ovpool": "ovpool",
        "ovpool.transforms": "transforms",
        "ovpool.cli": "cli",
        "ovpool.ir_templates": "ir_templates",
    }


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_documents_link_only_files_in_the_repository(document):
    text = document.read_text()
    assert "../shared" not in text
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        assert (document.parent / target).exists(), f"{document.name} links {target}"


def test_bundled_examples_are_found_from_anywhere_and_ship_as_package_data(tmp_path, capsys):
    from runtime_support import invoke

    folder = Path(ovpool.examples.__file__).parent
    assert sorted(ovpool.examples.NAMES) == sorted(p.name for p in folder.iterdir() if p.suffix in (".onnx", ".xml"))
    assert all(ovpool.examples.path(name).is_file() for name in ovpool.examples.NAMES)
    with pytest.raises(UsageError, match="no example 'nope.onnx'"):
        ovpool.examples.path("nope.onnx")
    globs = _pyproject()["tool"]["setuptools"]["package-data"]["ovpool.examples"]
    assert all(any(Path(name).match(glob) for glob in globs) for name in ovpool.examples.NAMES)
    code, out, _ = invoke(capsys, "examples")
    assert code == 0 and out.split() == [str(ovpool.examples.path(name)) for name in ovpool.examples.NAMES]
    code, out, err = invoke(capsys, "examples", "trap.xml", "nope.xml")
    assert (code, out) == (2, "") and "no example 'nope.xml'" in err
    findings = ovpool.validate([ovpool.examples.path("spec_example1.xml"), ovpool.examples.path("trap.xml")])
    assert [(f.code, f.declared, f.expected) for f in findings] == [
        ("OVP201", [1, 3, 32, 32], [1, 3, 16, 16]),
        ("OVP102", None, None),
    ]


def test_the_cli_reference_lists_every_command_and_option():
    reference = (ROOT / "docs" / "cli.md").read_text()
    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        assert f"## `ovpool {name}" in reference, name
        section = reference.split(f"## `ovpool {name}", 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            if param.param_type_name == "option":
                assert any(opt in section for opt in param.opts), f"ovpool {name} {param.opts}"


def test_pre_commit_hook_validates_ir_files(tmp_path):
    yaml = pytest.importorskip("yaml")
    hook = _hook(yaml, "ovpool-validate")
    assert hook["language"] == "python"
    pattern = re.compile(hook["files"])
    assert pattern.search("models/det.xml") and not pattern.search("models/det.onnx")
    assert hook["entry"].split()[0] == "ovpool"  # the console script pyproject.toml installs
    assert "ovpool" in _pyproject()["project"]["scripts"]
    entry = [sys.executable, "-m", "ovpool", *hook["entry"].split()[1:]]
    traps = [str(ovpool.examples.path("spec_example1.xml")), str(ovpool.examples.path("trap.xml"))]
    done = subprocess.run([*entry, *traps], env=_environment(tmp_path), capture_output=True, text=True)
    assert done.returncode == 1 and "OVP201" in done.stdout and "OVP102" in done.stdout


def _hook(yaml, name: str) -> dict:
    return next(hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()) if hook["id"] == name)


def test_pre_commit_verify_hook_converts_onnx_files_and_writes_nothing(tmp_path):
    yaml = pytest.importorskip("yaml")
    hook = _hook(yaml, "ovpool-convert-verify")
    pattern = re.compile(hook["files"])
    assert pattern.search("models/det.onnx") and not pattern.search("models/det.xml")
    entry = [sys.executable, "-m", "ovpool", *hook["entry"].split()[1:]]
    done = subprocess.run(
        [*entry, str(ovpool.examples.path("tiny_pool.onnx"))],
        env=_environment(tmp_path),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and "verified: 2 outputs" in done.stderr, done.stderr
    assert list(tmp_path.glob("*.xml")) == []


def test_tests_cache_compiled_models_in_a_temporary_folder(tmp_path_factory):
    from ovpool.execution import cache_dir

    assert cache_dir().is_relative_to(tmp_path_factory.getbasetemp())
    assert not cache_dir().is_relative_to(Path.home() / ".cache")


def test_no_file_holds_merge_conflict_markers():
    """A merge left ``<<<<<<< HEAD`` in docs/semantics.md once; every tracked text file is clean."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    marked = []
    for name in tracked.stdout.splitlines():
        path = ROOT / name
        if path.suffix not in (".py", ".md", ".json", ".yaml", ".toml", ".txt", ".sh", ".xml") or not path.is_file():
            continue
        lines = path.read_text(errors="replace").splitlines()
        if any(line.startswith(("<<<<<<< ", ">>>>>>> ")) for line in lines):
            marked.append(name)
    assert marked == []
