"""numpy's own OpenBLAS ``gemm``, called directly, for the products numpy's ``matmul`` cannot
express: ``C = A @ B + beta * C`` with B a strided view of any row pitch, accumulated in place.

numpy's wheels bundle OpenBLAS as ``scipy-openblas`` (``numpy.libs/libscipy_openblas64_-*.so``
on Linux, ``.dll`` on Windows, ``numpy/.dylibs`` on macOS x86-64), with 64-bit integers where
the symbol ends in ``64_`` (``scipy_cblas_sgemm64_``). Loading that same file gives the library
numpy already runs, with its thread setting (``OPENBLAS_NUM_THREADS``). Where numpy is built on
another BLAS (Accelerate on Apple silicon, MKL in conda), or ``OVPOOL_COMPILED=0`` is set (no
compiled kernel called but through numpy), ``gemm_for`` gives None and callers keep their
numpy-only path. A 2x2 product checks the binding once
before it is used: [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] + 1 x [[1, 1], [1, 1]] is
[[20, 23], [44, 51]].
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROW_MAJOR, NO_TRANS = 101, 111

# gemm(m, n, k, a, lda, b, ldb, beta, c, ldc): C (m x n, row pitch ldc elements) = A (m x k) @
# B (k x n) + beta * C, row-major, every operand addressed by its first element's address.
Gemm = Callable[[int, int, int, int, int, int, int, float, int, int], None]

_SYMBOLS = {np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm"}


def _library_files() -> list[Path]:
    """Where numpy's wheels put their OpenBLAS: beside the package (Linux, Windows) or inside it
    (macOS)."""
    package = Path(np.__file__).resolve().parent
    found: list[Path] = []
    for folder in (package.parent / "numpy.libs", package / ".dylibs"):
        if folder.is_dir():
            found += sorted(p for p in folder.iterdir() if "openblas" in p.name.lower())
    return found


def _bind(library: ctypes.CDLL, routine: str) -> Gemm | None:
    """The cblas routine of ``library`` as a ``Gemm``, its integer width read from the symbol."""
    candidates = ((f"scipy_cblas_{routine}64_", ctypes.c_int64), (f"scipy_cblas_{routine}", ctypes.c_int32))
    found = [(getattr(library, name), integer) for name, integer in candidates if hasattr(library, name)]
    if not found:
        return None
    function, integer = found[0]
    real = ctypes.c_float if routine == "sgemm" else ctypes.c_double
    pointer = ctypes.c_void_p
    function.argtypes = [integer] * 6 + [real, pointer, integer, pointer, integer, real, pointer, integer]
    function.restype = None

    def gemm(m: int, n: int, k: int, a: int, lda: int, b: int, ldb: int, beta: float, c: int, ldc: int) -> None:
        function(ROW_MAJOR, NO_TRANS, NO_TRANS, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc)

    return gemm


def _works(gemm: Gemm, dtype: np.dtype) -> bool:
    """The module text's 2x2 product, computed through ``gemm``."""
    a = np.array([[1, 2], [3, 4]], dtype=dtype)
    b = np.array([[5, 6], [7, 8]], dtype=dtype)
    c = np.ones((2, 2), dtype=dtype)
    gemm(2, 2, 2, a.ctypes.data, 2, b.ctypes.data, 2, 1.0, c.ctypes.data, 2)
    return bool(np.array_equal(c, np.array([[20, 23], [44, 51]], dtype=dtype)))


def compiled_allowed() -> bool:
    """False with ``OVPOOL_COMPILED=0``: the executor then calls no compiled code but through
    numpy's own functions (this module's gemm and ``compiled``'s kernels are left alone)."""
    return os.environ.get("OVPOOL_COMPILED", "1") != "0"


@functools.cache
def gemm_for(dtype: np.dtype) -> Gemm | None:
    """numpy's OpenBLAS gemm for float32 or float64, or None (another BLAS, another dtype, or
    ``OVPOOL_COMPILED=0``)."""
    routine = _SYMBOLS.get(np.dtype(dtype))
    if routine is None or not compiled_allowed():
        return None
    for file in _library_files():
        try:
            library = ctypes.CDLL(str(file))
        except OSError:
            continue
        gemm = _bind(library, routine)
        if gemm is not None and _works(gemm, np.dtype(dtype)):
            return gemm
    return None
