"""The package's shape: ovpool's modules read downhill, and ``python -m ovpool`` is the command.

Every import is read, the ones inside functions too (they run when the function does, and hide a
cycle as well as a module-level one does), ``importlib.import_module("ovpool...")`` with a constant
name included; ``if TYPE_CHECKING:`` blocks never run and are left out. The imports then form no
cycle, and every arrow points down ``LAYERS`` (or stays in its layer). A function-level import below
the command line is deliberate: ``LAZY`` names each with its reason.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# installed names of the top-level folders (pyproject.toml's package-dir)
FOLDERS = {"ovpool": "ovpool", "cli": "ovpool.cli", "transforms": "ovpool.transforms"}

# The house from the bottom up (docs/architecture.md): a module sits in the layer of the longest
# prefix naming it; it may import its own layer and the layers below. ``ovpool`` is the core
# (spec, shape, axis, dtypes, errors, files, names, memory, inputs, tensors, quant, kernels, resize,
# nodes, examples); the package ``ovpool`` itself is everyone's parent and is no arrow.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("ovpool", "ovpool.examples"),
    ("ovpool.onnx",),  # the worlds: readers, writers, adapters, version tables
    ("ovpool.ir",),
    ("ovpool.dml",),
    ("ovpool.ov",),  # OpenVINO: the frontend's fixes, lowering, backport
    ("ovpool.engine",),  # the numpy engine's kernels: ops, ir_layers, native, blas, memo, reference
    (  # the numpy engine's plans over those kernels
        "ovpool.engine.plan",
        "ovpool.engine.session",
        "ovpool.engine.quanta",
        "ovpool.engine.graph",
        "ovpool.engine.ir_executor",
        "ovpool.engine.budget",
        "ovpool.engine.fusion",
        "ovpool.engine.inplace",
        "ovpool.engine.chains",
        "ovpool.engine.shapevalues",
        "ovpool.engine.repeat",
    ),
    ("ovpool.execution",),  # devices, sessions, fallback, limits
    ("ovpool.check", "ovpool.dml.export", "ovpool.dml.sizes"),  # DirectML export sizes tensors by running the model
    ("ovpool.conversions",),  # ovpool.convert: every route, by format
    ("ovpool.conformance", "ovpool.explain", "ovpool.transforms", "ovpool.ov.ovms"),
    ("ovpool.cli", "ovpool.__main__"),
)
# The deprecation shim aliasing the old ``ovpool.runtime`` names points anywhere, by design.
EXEMPT = ("ovpool.runtime",)
# Imports inside functions below the command line, (importer, imported) by prefix, each on purpose.
# (``ovpool.cli`` and the package ``ovpool`` import inside their commands and functions: a command
# loads what it runs, ``import ovpool`` stays light.)
_VERIFY_ONLY = "the numpy executor and OpenVINO's runtime load only to verify the result"
LAZY: dict[tuple[str, str], str] = {
    ("ovpool.conversions", "ovpool.check.verify"): _VERIFY_ONLY + " (each route loads by name: ROUTES)",
    ("ovpool.conversions", "ovpool.execution"): _VERIFY_ONLY,
    ("ovpool.transforms.apply", "ovpool.check.verify"): _VERIFY_ONLY,
    ("ovpool.transforms.apply", "ovpool.execution"): _VERIFY_ONLY,
    ("ovpool.execution.sessions", "ovpool.ov.from_onnx"): "OpenVINO's conversion loads when an ONNX model first runs on OpenVINO",
    ("ovpool.ov.from_onnx", "ovpool.onnx.qoperator"): "a model without quantization loads no quantization reader",
    ("ovpool.ov.from_onnx", "ovpool.ov.quantized"): "a model without quantization loads no quantized lowering",
    ("ovpool.nodes", "ovpool.attributes"): "onnx is imported when a node is first decoded, not with the node type",
    ("ovpool.onnx.facts", "ovpool.onnx.qdq"): "the tensor kinds of quantization, worked out for a model that asks",
    ("ovpool.onnx.model", "ovpool.onnx.qdq"): "a model without quantization nodes loads no quantization reader",
    ("ovpool.onnx.model", "ovpool.onnx.qoperator"): "a model without quantization nodes loads no quantization reader",
    ("ovpool.dml.sizes", "ovpool.engine.graph"): "the numpy executor runs only for tensors no shape inference sizes",
    ("ovpool.dml.sizes", "ovpool.execution.limits"): "the numpy executor runs only for tensors no shape inference sizes",
    ("ovpool.conformance", "ovpool"): "a path loads what it runs (executor, OpenVINO, run budget) when a case first runs on it",
}
# Arrows that may point up: deprecated aliases of names that moved up.
ALIASES: dict[tuple[str, str], str] = {
    ("ovpool.onnx.static_shapes", "ovpool.dml.sizes"): "static_dims moved up to ovpool.dml.sizes in 0.2.0 (it runs the model)",
}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(name: str, path: Path, known: set[str]) -> dict[str, bool]:
    """ovpool modules ``path`` imports when it runs or any of its functions do: {module: whether
    only inside functions}. ``from ovpool import shape`` imports the module ovpool.shape; a name
    that is no module (``from ovpool.onnx.model import load``) its module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, bool] = {}

    def add(target: str, lazy: bool) -> None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found[target] = found.get(target, True) and lazy

    def visit(node: ast.AST, lazy: bool) -> None:
        if _type_checking(node):
            for child in node.orelse:  # type: ignore[attr-defined]
                visit(child, lazy)
            return
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in known else base, lazy)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, lazy)
        elif isinstance(node, ast.Call):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            if called == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                add(str(node.args[0].value), lazy)
        inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return found


def _graph() -> dict[str, dict[str, bool]]:
    modules = _modules()
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        if name.startswith(EXEMPT):
            continue
        imports = _imports(name, path, known)
        # a package runs before its modules and imports its own submodules: no arrow either way
        graph[name] = {t: lazy for t, lazy in imports.items() if not t.startswith(name + ".") and not name.startswith(t + ".")}
    return graph


def _place(module: str) -> tuple[int, str]:
    """(layer, prefix) of the longest prefix of ``LAYERS`` naming ``module``."""
    best = (-1, "")
    for layer, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best[1]):
                best = (layer, prefix)
    return best


def _listed(table: dict[tuple[str, str], str], source: str, target: str) -> bool:
    return any((source == a or source.startswith(a + ".")) and (target == b or target.startswith(b + ".")) for a, b in table)


def _cycles(graph: dict[str, dict[str, bool]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for target in sorted(graph.get(name, {})):
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == name:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def test_no_import_cycles() -> None:
    graph = _graph()
    shown = []
    for component in _cycles(graph):
        inside = set(component)
        arrows = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in inside]
        shown.append("import cycle: " + "; ".join(arrows))
    assert not shown, "\n".join(shown)


def test_every_package_has_a_layer() -> None:
    """A new package is placed in ``LAYERS`` (else it would sit in the core, ``ovpool``)."""
    named = {prefix for prefixes in LAYERS for prefix in prefixes}
    packages = {name for name, path in _modules().items() if path.name == "__init__.py" and name.count(".") == 1}
    assert sorted(packages - named - set(EXEMPT)) == []


def test_imports_point_down() -> None:
    upward = []
    for source, imports in sorted(_graph().items()):
        for target in sorted(imports):
            if _place(target)[0] > _place(source)[0] and not _listed(ALIASES, source, target):
                upward.append(f"{source} -> {target} ({_place(source)[1]} is below {_place(target)[1]})")
    assert not upward, "imports pointing up:\n" + "\n".join(upward)


def test_lazy_imports_are_deliberate() -> None:
    """A function-level import below the command line is on ``LAZY`` with its reason, and ``LAZY``
    lists only arrows that exist and point down."""
    graph = _graph()
    unlisted = [
        f"{source} -> {target}"
        for source, imports in sorted(graph.items())
        for target, lazy in sorted(imports.items())
        if lazy and source != "ovpool" and not source.startswith("ovpool.cli")
        if not _listed(LAZY, source, target) and not _listed(ALIASES, source, target)
    ]
    assert not unlisted, "imports inside functions not on LAZY:\n" + "\n".join(unlisted)
    for source, target in LAZY:
        assert _place(target)[0] <= _place(source)[0], f"LAZY {source} -> {target} points up"
        assert any(
            (s == source or s.startswith(source + ".")) and (t == target or t.startswith(target + "."))
            for s, imports in graph.items()
            for t, lazy in imports.items()
            if lazy
        ), f"LAZY {source} -> {target}: no such import inside a function"


def test_moved_names_stay_importable() -> None:
    """What moved down to read downhill is still where it was (the same object), and
    ``static_dims``, moved up, is a deprecated alias."""
    import warnings

    import ovpool.errors
    import ovpool.ir.document
    import ovpool.nodes
    import ovpool.onnx.graphs
    import ovpool.resize
    import ovpool.shape
    from ovpool.dml import sizes
    from ovpool.engine.ops import base
    from ovpool.engine.ops import resize as resize_op
    from ovpool.execution import devices
    from ovpool.ir import reader, releases
    from ovpool.onnx import model, static_shapes
    from ovpool.ov import backport
    from ovpool.ov import releases as ov_releases

    assert reader.Bound is ovpool.shape.Bound and reader.format_bound is ovpool.shape.format_bound
    assert reader.IRDocument is ovpool.ir.document.IRDocument and reader.Layer is ovpool.ir.document.Layer
    assert devices.openvino_reason is ovpool.errors.openvino_reason
    assert base.OpNode is ovpool.nodes.OpNode and base.attributes is ovpool.nodes.attributes
    assert resize_op.axis_matrices is ovpool.resize.axis_matrices
    assert model.graphs is ovpool.onnx.graphs.graphs and model.default_opset is ovpool.onnx.graphs.default_opset
    assert model.constant_tensors is ovpool.onnx.graphs.constant_tensors
    assert ov_releases is releases
    assert set(backport.OLDER_FORMS) == set(releases.OLDER_FORM_NEEDS)
    assert backport.OLDER_FORM_NEEDS == {("Pad", 12): "constant pads of at least 0"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert static_shapes.static_dims is sizes.static_dims
    assert [w.category for w in caught] == [DeprecationWarning]


def test_python_m_ovpool_is_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "ovpool", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("ovpool ")


def test_the_old_runtime_names_still_import_with_a_deprecation_warning() -> None:
    """0.1's ``ovpool.runtime`` modules are the rooms' modules under their old names (one module
    object each), and its public names are ``ovpool.execution``'s, each with a DeprecationWarning."""
    import importlib
    import warnings

    import pytest

    from ovpool.runtime import MOVED

    for old, new in MOVED.items():
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: use {new}"):
            sys.modules.pop(old, None)
            module = importlib.import_module(old)
        assert module is importlib.import_module(new)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ovpool.runtime.ops import conv as old_conv
    assert old_conv is importlib.import_module("ovpool.engine.ops.conv")
    import ovpool.execution
    import ovpool.runtime

    with pytest.warns(DeprecationWarning, match="ovpool.runtime.open_model is deprecated"):
        assert ovpool.runtime.open_model is ovpool.execution.open_model


def test_every_package_is_installed() -> None:
    """pyproject.toml lists its packages by name: a folder of modules it leaves out works in a
    checkout and an editable install, and is missing from ``pip install .`` (a user's install)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {name for name, path in _modules().items() if path.name == "__init__.py"}
    assert found - {"ovpool.ir_templates"} <= listed, sorted(found - listed)
