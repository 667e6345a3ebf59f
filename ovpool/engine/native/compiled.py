"""ovpool's compiled kernels (``_compiled.c``): the library loaded with ctypes (its ABI and switches),
the kernels called through the extension module's functions (a fifth of a ctypes call's cost).

The extension is built with the package where a C compiler is found (``setup.py``; it is
optional). Each loader gives its kernel for float32 or float64, or None where it was not built,
for another dtype, or with ``OVPOOL_COMPILED=0``; the caller then runs the same operations in
numpy, with the same results bit for bit.

``taps_for(dtype)``: ``taps(x, weights, bias, out, geometry)`` takes addresses (``bias`` 0 for
none) and returns 0, or 1 where its buffer could not be allocated: for each row (image x group) of
the C-contiguous input x (N, C, *L), it copies the group's input planes into a zero-bordered
buffer of one row, then sums each output's taps from it into the output (N, M, *out); weights
(groups, M/groups, taps), bias (M,), ``geometry`` the int64 that ``conv._compiled_geometry``
builds (the layout is in ``_compiled.c``). A 3x3 kernel over one 4x4 plane padded to 6x6
(stride 1): offsets 0, 1, 2, 6, 7, 8, 12, 13, 14, 4 x 6 = 24 cells, runs (4, 6, 1, 0, 4):
columns 4 and 5 of each row are dropped.

``chain_for(dtype)``: ``chain(out, plane, ops, *arguments)``, a function of the extension's
module (no ctypes: it reads the arrays through the buffer protocol, about 1 us a call), runs the
rows of ``ops`` (C-contiguous int64, four per row: code, a, b, c) over ``out``'s positions:
each argument of ``out``'s dtype, C-contiguous, of ``out``'s length, of one value, or of one
value per plane of ``plane`` positions (``plane`` 0 when none is); each operand -1 for the
previous row's result, -2 for the value a "save" row kept, or an argument's index; codes in
``CHAIN_CODES`` (``ovpool.engine.native.chain_ops``, the C ``enum chain_op``; HardSwish as paddle writes it, x of 5 values: (1, 0, 1, 0) x + 3, (5, -1, 2, 3)
clip to [0, 6], (3, 0, -1, 0) times x, (4, -1, 4, 0) over 6, with arguments x, 3, 0, 6, 6; an
operand a code does not read is 0). A row that reads no value or an argument it cannot read is a
ValueError.

``address(a)``: the address of an array's first element, ``a.ctypes.data``, from the extension in
0.1 us (``.ctypes.data`` takes about 1.2 us, and a compiled call passes 5 to 8 addresses).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ovpool.engine.blas import compiled_allowed
from ovpool.engine.native.chain_ops import CHAIN_CODES as CHAIN_CODES  # its old place: read chain_ops

Taps = Callable[[int, int, int, int, int], int]
Bias = Callable[[int, int, int, int, int], None]
Chain = Callable[..., None]

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


ABI = 5  # ovpool_compiled_abi() of the _compiled.c this module calls


@functools.cache
def _library() -> ctypes.CDLL | None:
    """The extension loaded, or None where it was not built, cannot be loaded, was built from
    another version of ``_compiled.c`` (a stale build in a checkout), or ``OVPOOL_COMPILED=0``."""
    if not compiled_allowed():
        return None
    try:
        from ovpool.engine.native import _compiled  # type: ignore[attr-defined]

        library = ctypes.CDLL(_compiled.__file__)
    except (ImportError, OSError):
        return None
    abi = getattr(library, "ovpool_compiled_abi", None)
    if abi is None:
        return None
    abi.restype = ctypes.c_int
    return library if abi() == ABI else None


@functools.cache
def _addresser() -> Callable[[Any], int]:
    library = _library()
    if library is None:
        return _ctypes_address
    from ovpool.engine.native import _compiled  # type: ignore[attr-defined]

    found: Callable[[Any], int] = _compiled.address
    return found


def _ctypes_address(a: np.ndarray) -> int:
    return int(a.ctypes.data)


def address(a: np.ndarray) -> int:
    """The address of ``a``'s first element, as ``a.ctypes.data`` gives it."""
    return _addresser()(a)


def plain_only(on: bool) -> None:
    """Make the extension take its plain loops even where the processor has AVX2 (for tests: both
    forms must give numpy's bits), or its choice again."""
    library = _library()
    if library is not None:
        library.ovpool_plain_only(ctypes.c_int(int(on)))


def taps_avx2_only(on: bool) -> None:
    """Make the taps' loops stop at AVX2 even where the processor has AVX-512 (for tests: every
    form must give numpy's bits), or their choice again."""
    library = _library()
    if library is not None:
        library.ovpool_taps_avx2_only(ctypes.c_int(int(on)))


@functools.cache
def taps_avx512() -> bool:
    """Whether the compiled tap loop runs its AVX-512 form here (the processor has AVX-512F)."""
    library = _library()
    return library is not None and bool(library.ovpool_taps_avx512())


@functools.cache
def taps_for(dtype: np.dtype) -> Taps | None:
    """The compiled depthwise tap loop for ``dtype``, or None."""
    suffix = _SUFFIX.get(np.dtype(dtype))
    if _library() is None or suffix is None:
        return None
    from ovpool.engine.native import _compiled  # type: ignore[attr-defined]

    loop: Taps = getattr(_compiled, f"taps_{suffix}")  # the module's function, as bias_for's
    return loop


@functools.cache
def bias_for(dtype: np.dtype) -> Bias | None:
    """The compiled bias add for ``dtype``, or None: ``bias(out, bias, rows, channels, plane)``
    adds ``bias[r % channels]`` to each plane r of the ``rows`` planes of ``plane`` values at
    ``out`` (2 images of 3 channels: rows 6, plane 4 is image 1's channel 1 and gets bias[1])."""
    suffix = _SUFFIX.get(np.dtype(dtype))
    if _library() is None or suffix is None:
        return None
    from ovpool.engine.native import _compiled  # type: ignore[attr-defined]

    add: Bias = getattr(_compiled, f"bias_{suffix}")  # the module's function: 0.2 us a call, ctypes' 1.5
    return add


@functools.cache
def chain_for(dtype: np.dtype) -> Chain | None:
    """The compiled element-wise chain for ``dtype``, or None."""
    if _library() is None or np.dtype(dtype) not in _SUFFIX:
        return None
    from ovpool.engine.native import _compiled  # type: ignore[attr-defined]

    chain: Chain = _compiled.chain
    return chain
