"""Deprecated: ``ovpool.runtime`` was split into rooms of its own in 0.2.0.

- ``ovpool.execution``: running on devices (``policy``, ``devices``, ``limits``); the names below;
- ``ovpool.engine``: the numpy executor (``graph``, ``ir_executor``, ``ops``, ``ir_layers``, ...);
- ``ovpool.check``: ``compare``, ``plot`` (was ``compare_plot``), ``verify``, ``bench``;
- ``ovpool.tensors``: declared inputs, tensor files and outputs (was ``runtime.tensors``).

``ovpool.runtime.open_model`` and the other names of ``__all__`` still work, and so does importing
an old submodule (``import ovpool.runtime.graph`` is ``ovpool.engine.graph``), each with a
``DeprecationWarning``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

from ovpool.execution import __all__ as _EXECUTION_NAMES

__all__ = list(_EXECUTION_NAMES)

# old submodule -> where it lives now; a package's submodules follow it (runtime.ops.conv)
MOVED = {
    "ovpool.runtime.policy": "ovpool.execution.policy",
    "ovpool.runtime.devices": "ovpool.execution.devices",
    "ovpool.runtime.limits": "ovpool.execution.limits",
    "ovpool.runtime.tensors": "ovpool.tensors",
    "ovpool.runtime.compare": "ovpool.check.compare",
    "ovpool.runtime.compare_plot": "ovpool.check.plot",
    "ovpool.runtime.verify": "ovpool.check.verify",
    "ovpool.runtime.bench": "ovpool.check.bench",
    "ovpool.runtime.graph": "ovpool.engine.graph",
    "ovpool.runtime.ir_executor": "ovpool.engine.ir_executor",
    "ovpool.runtime.budget": "ovpool.engine.budget",
    "ovpool.runtime.chains": "ovpool.engine.chains",
    "ovpool.runtime.fusion": "ovpool.engine.fusion",
    "ovpool.runtime.inplace": "ovpool.engine.inplace",
    "ovpool.runtime.shapevalues": "ovpool.engine.shapevalues",
    "ovpool.runtime.reference": "ovpool.engine.reference",
    "ovpool.runtime.ops.blas": "ovpool.engine.blas",
    "ovpool.runtime.ops.memo": "ovpool.engine.memo",
    "ovpool.runtime.ops.compiled": "ovpool.engine.native.compiled",
    "ovpool.runtime.ops.basic": "ovpool.engine.ops.casts",
    "ovpool.runtime.ops": "ovpool.engine.ops",
    "ovpool.runtime.ir_layers": "ovpool.engine.ir_layers",
}


def new_name(old: str) -> str | None:
    """Where an old module lives now: ``ovpool.runtime.ops.conv`` is ``ovpool.engine.ops.conv``
    (its package moved); None for a name that never was a module here."""
    if old in MOVED:
        return MOVED[old]
    package, _, last = old.rpartition(".")
    if package in MOVED:
        return f"{MOVED[package]}.{last}"
    return None


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module now holding it (one module object, two names)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} is deprecated: use {self.target}", DeprecationWarning, stacklevel=2)
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        return None


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("ovpool.runtime."):
            return None
        moved = new_name(fullname)
        return None if moved is None else importlib.machinery.ModuleSpec(fullname, _Alias(moved))


if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Finder())


def __getattr__(name: str) -> Any:
    """``ovpool.execution``'s public names, with a ``DeprecationWarning``: ``ovpool.runtime.open_model``
    is ``ovpool.execution.open_model``."""
    if name in __all__:
        warnings.warn(f"ovpool.runtime.{name} is deprecated: use ovpool.execution.{name}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module("ovpool.execution"), name)
    moved = new_name(f"ovpool.runtime.{name}")
    if moved is not None:
        return importlib.import_module(f"ovpool.runtime.{name}")
    raise AttributeError(f"module 'ovpool.runtime' has no attribute {name!r}")
