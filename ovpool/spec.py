"""PoolSpec: the one canonical description of a pooling operation.

Every adapter (ONNX, OpenVINO IR, DirectML) parses into a PoolSpec and emits from one; the shape
engine, the executors and the transforms read nothing else. A PoolSpec is validated when it is made,
so holding one means its attributes are consistent: kernel, strides and dilations >= 1, pads >= 0,
one value per spatial axis, no pad so wide that a window could lie wholly in padding
(``pad < dilation*(kernel-1)+1``: kernel 3, pad 3 is refused, pad 2 is fine), and every kernel,
stride, dilation, pad and window extent at most ``MAX_WINDOW`` (2**31-1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TypedDict, Unpack

from ovpool.axis import window_extent
from ovpool.errors import SpecError

# The largest kernel, stride, dilation, pad or window extent a spec may hold: what every world can
# say. OpenVINO's CPU plugin pools in 32-bit integers (a stride of 2**32 wraps to 0 and the
# compiled model dies of SIGFPE), and DirectML's window fields are UINT32; 2**31-1 fits both.
MAX_WINDOW = 2**31 - 1


class PoolKind(str, Enum):
    """What the operation computes. Global kinds take their kernel from the input's spatial dims."""

    AVERAGE = "average"
    MAX = "max"
    UNPOOL = "unpool"
    LP = "lp"
    GLOBAL_AVERAGE = "global_average"
    GLOBAL_MAX = "global_max"
    GLOBAL_LP = "global_lp"


GLOBAL_KINDS = {PoolKind.GLOBAL_AVERAGE: PoolKind.AVERAGE, PoolKind.GLOBAL_MAX: PoolKind.MAX, PoolKind.GLOBAL_LP: PoolKind.LP}
"""Each global kind and the windowed kind it equals with the input's spatial dims as kernel."""


class Padding(str, Enum):
    """How pads are chosen: given explicitly, or derived from the input size (ONNX auto_pad)."""

    EXPLICIT = "explicit"
    SAME_UPPER = "same_upper"
    SAME_LOWER = "same_lower"
    VALID = "valid"


class Rounding(str, Enum):
    """How a fractional window count rounds.

    FLOOR: whole windows only. CEIL: round up, then drop a last window that would start in the end
    padding (ONNX ceil_mode=1, PyTorch, OpenVINO ``ceil_torch``). CEIL_NO_DROP: round up and keep it
    (OpenVINO ``ceil``), so a window may lie wholly in padding.
    """

    FLOOR = "floor"
    CEIL = "ceil"
    CEIL_NO_DROP = "ceil_no_drop"


class Divisor(str, Enum):
    """Which taps an average divides by.

    EXCLUDE_PAD: taps inside the input. INCLUDE_PAD: taps inside the input plus the explicit pads,
    never the ceil overhang (ONNX count_include_pad=1, PyTorch). FULL_KERNEL_IF_PADDED: OpenVINO's
    ``exclude-pad="false"``: the whole kernel whenever any pad is non-zero, overhang included.
    """

    EXCLUDE_PAD = "exclude_pad"
    INCLUDE_PAD = "include_pad"
    FULL_KERNEL_IF_PADDED = "full_kernel_if_padded"


class IndexOrder(str, Enum):
    """Order of the spatial part of a max index: ROW_MAJOR (2-D: ``h*W + w``) or COLUMN_MAJOR
    (ONNX storage_order=1, 2-D: ``h + w*H``)."""

    ROW_MAJOR = "row_major"
    COLUMN_MAJOR = "column_major"


@dataclass(frozen=True)
class Indices:
    """The second output of a max pool.

    ``axis`` is where flattening starts (OpenVINO MaxPool-8): 0 counts over the whole tensor
    ``N*C*spatial`` (ONNX), 1 over ``C*spatial`` per batch item, 2 over each channel's plane. For a
    1x2x4x4 input, the cell (n=0, c=1, h=2, w=3) is 16+11=27 at axis 0 and 11 at axis 2.
    """

    order: IndexOrder = IndexOrder.ROW_MAJOR
    axis: int = 0
    dtype: str = "int64"


class SpecChanges(TypedDict, total=False):
    """The fields of a ``PoolSpec``, any of them, for ``PoolSpec.with_``."""

    kind: PoolKind
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    padding: Padding
    rounding: Rounding
    divisor: Divisor
    indices: Indices | None
    dtype: str | None
    p: float | None
    name: str


@dataclass(frozen=True)
class PoolSpec:
    """One pooling operation, independent of any format.

    Empty ``strides``/``dilations``/``pads_*`` mean all ones / all zeros and are filled in. For the
    global kinds every window field stays empty: the kernel is the input's spatial shape
    (``resolve_global``). ``dtype`` is a numpy dtype name ("float32", "bfloat16", ...) or None when
    unknown. ``p`` is the exponent of an Lp pool (``LP``, ``GLOBAL_LP``) and None for every other
    kind: a window's result is ``(sum of |x|**p over its taps inside the input) ** (1/p)``, a tap in
    the padding adding 0 (p=2 over the taps 3 and -4 gives 5.0); it has no divisor. ``name`` is the
    source node or layer, used in every error.
    """

    kind: PoolKind
    kernel: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    dilations: tuple[int, ...] = ()
    pads_begin: tuple[int, ...] = ()
    pads_end: tuple[int, ...] = ()
    padding: Padding = Padding.EXPLICIT
    rounding: Rounding = Rounding.FLOOR
    divisor: Divisor = Divisor.EXCLUDE_PAD
    indices: Indices | None = None
    dtype: str | None = None
    name: str = field(default="", compare=False)
    p: float | None = None

    def __post_init__(self) -> None:
        # Made by the ten thousand when validating IR, so fields are set and checked directly.
        setattr_ = object.__setattr__
        kernel = tuple(map(int, self.kernel))
        setattr_(self, "kernel", kernel)
        setattr_(self, "strides", tuple(map(int, self.strides)))
        setattr_(self, "dilations", tuple(map(int, self.dilations)))
        setattr_(self, "pads_begin", tuple(map(int, self.pads_begin)))
        setattr_(self, "pads_end", tuple(map(int, self.pads_end)))
        self._check_p()
        if self.kind in GLOBAL_KINDS:
            self._check_global()
            return
        rank = len(kernel)
        if rank == 0:
            raise SpecError(self.name, "kernel_shape", [], "is required and must not be empty")
        if not self.strides:
            setattr_(self, "strides", (1,) * rank)
        if not self.dilations:
            setattr_(self, "dilations", (1,) * rank)
        if not self.pads_begin:
            setattr_(self, "pads_begin", (0,) * rank)
        if not self.pads_end:
            setattr_(self, "pads_end", (0,) * rank)
        self._check_values()

    @property
    def is_global(self) -> bool:
        return self.kind in GLOBAL_KINDS

    @property
    def is_lp(self) -> bool:
        """An Lp pool, windowed or global."""
        return self.kind in (PoolKind.LP, PoolKind.GLOBAL_LP)

    @property
    def rank(self) -> int | None:
        """Number of spatial axes, or None for a global pool (any rank)."""
        return None if self.is_global else len(self.kernel)

    @property
    def dilated_kernel(self) -> tuple[int, ...]:
        """Extent of each window: ``d*(k-1)+1`` (kernel 3, dilation 2 spans 5 cells)."""
        return tuple(window_extent(k, d) for k, d in zip(self.kernel, self.dilations))

    def resolve_global(self, spatial: tuple[int, ...]) -> PoolSpec:
        """The windowed pool a global pool equals on an input with these spatial dims."""
        if not self.is_global:
            return self
        return replace(self, kind=GLOBAL_KINDS[self.kind], kernel=tuple(spatial))

    def with_(self, **changes: Unpack[SpecChanges]) -> PoolSpec:
        """A copy with some fields changed, validated again."""
        return replace(self, **changes)

    def _check_p(self) -> None:
        """``p`` present exactly for the Lp kinds, finite and at least 1 (p=0.5 is no norm)."""
        if not self.is_lp:
            if self.p is not None:
                raise SpecError(self.name, "p", self.p, f"only Lp pooling has p, not {self.kind.value}")
            return
        if self.p is None:
            raise SpecError(self.name, "p", None, "is required for Lp pooling")
        p = float(self.p)
        if not math.isfinite(p) or p < 1:
            raise SpecError(self.name, "p", self.p, "must be a finite number >= 1")
        object.__setattr__(self, "p", p)

    def _check_global(self) -> None:
        windowed = ("kernel", "strides", "dilations", "pads_begin", "pads_end")
        for attr in windowed:
            if getattr(self, attr):
                raise SpecError(self.name, attr, getattr(self, attr), "a global pool has no window")
        if self.indices is not None:
            raise SpecError(self.name, "indices", "requested", "a global pool has no indices output")

    def _check_values(self) -> None:
        kernel, strides, dilations, pads_begin, pads_end = (
            self.kernel,
            self.strides,
            self.dilations,
            self.pads_begin,
            self.pads_end,
        )
        rank = len(kernel)
        for attr, values in (("strides", strides), ("dilations", dilations), ("pads", pads_begin), ("pads", pads_end)):
            if len(values) != rank:
                raise SpecError(
                    self.name,
                    attr,
                    values,
                    f"has {len(values)} values for {rank} spatial axes (kernel_shape {list(kernel)})",
                )
        for attr, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
            if min(values) < 1:
                raise SpecError(self.name, attr, values, "must be >= 1")
        pads = pads_begin + pads_end
        if min(pads) < 0:
            raise SpecError(self.name, "pads", pads, "must be >= 0")
        for attr, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations), ("pads", pads)):
            if max(values) > MAX_WINDOW:
                raise SpecError(self.name, attr, values, _TOO_LARGE)
        for axis, (k, d) in enumerate(zip(kernel, dilations)):
            if window_extent(k, d) > MAX_WINDOW:
                raise SpecError(
                    self.name, "dilations", dilations, f"axis {axis}: the window extent {window_extent(k, d)} {_TOO_LARGE}"
                )
        unpool = self.kind is PoolKind.UNPOOL
        if self.padding is not Padding.EXPLICIT and max(pads) > 0 and not unpool:
            raise SpecError(self.name, "pads", pads, f"must be zero when auto_pad is {self.padding.value.upper()}")
        if not unpool:
            for axis, (k, d, pb, pe) in enumerate(zip(kernel, dilations, pads_begin, pads_end)):
                extent = window_extent(k, d)
                if pb >= extent or pe >= extent:
                    raise SpecError(
                        self.name,
                        "pads",
                        pads,
                        f"axis {axis}: a pad of {max(pb, pe)} >= the window extent {extent} lets a "
                        "window lie wholly in padding (its result is undefined)",
                    )
        if self.indices is not None:
            if self.kind is not PoolKind.MAX:
                raise SpecError(self.name, "indices", "requested", f"only max pooling has indices, not {self.kind.value}")
            if self.indices.axis not in (0, 1, 2):
                raise SpecError(self.name, "axis", self.indices.axis, "must be 0, 1 or 2")
            if self.indices.dtype not in ("int64", "int32"):
                raise SpecError(self.name, "index_element_type", self.indices.dtype, "must be int64 or int32")
        if self.kind is PoolKind.UNPOOL and self.dilations != (1,) * rank:
            raise SpecError(self.name, "dilations", self.dilations, "MaxUnpool has no dilations")


_TOO_LARGE = "must be <= 2**31-1 (OpenVINO's CPU plugin pools in 32-bit integers, DirectML in UINT32)"
