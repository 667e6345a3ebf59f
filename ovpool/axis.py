"""Per-axis integer arithmetic of sliding windows, knowing nothing of ``PoolSpec``.

One axis: input length ``L``, kernel ``k``, stride ``s``, dilation ``d``, begin pad ``pb``; output
``i`` reads input ``i*s - pb + t*d`` at tap ``t``. The shape engine (``ovpool.shape``) and the spec
build on these; nothing else repeats them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported by the one function that counts taps: size questions need none
    import numpy as np


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling of a/b for b > 0: ceil_div(7, 2) == 4, ceil_div(-1, 2) == 0."""
    return -(-a // b)


def window_extent(kernel: int, dilation: int) -> int:
    """Cells one window spans, ``kd = d*(k-1)+1``: kernel 3 with dilation 2 spans 5 cells."""
    return dilation * (kernel - 1) + 1


@dataclass(frozen=True)
class TapSpan:
    """For one kernel tap on one axis: outputs ``[first, stop)`` read input cells ``first_input``,
    ``first_input + s``, ...; all other outputs see padding (or the ceil overhang) at this tap."""

    first: int
    stop: int
    first_input: int

    def input_slice(self, stride: int) -> slice:
        """The input cells these outputs read: outputs [1, 3) from input 1 at stride 2 read 1 and 3."""
        return slice(self.first_input, self.first_input + (self.stop - self.first - 1) * stride + 1, stride)


def tap_span(length: int, out: int, stride: int, dilation: int, pad_begin: int, tap: int) -> TapSpan:
    """Outputs whose tap ``tap`` lands inside ``[0, L)``: output i reads input ``i*s - pb + tap*d``.

    L=4, out=2, s=2, pb=1, d=1: tap 0 reads -1 (pad) then 1, so outputs [1, 2) from input 1.
    """
    offset = tap * dilation - pad_begin
    first = max(0, ceil_div(-offset, stride))
    stop = min(out, (length - 1 - offset) // stride + 1)
    stop = max(stop, first)
    return TapSpan(first, stop, first * stride + offset)


def fewest_taps_inside(length: int, out: int, kernel: int, stride: int, pad_begin: int) -> int:
    """The fewest taps inside ``[0, L)`` of any of ``out`` undilated windows, without numpy: a
    window's count ``min(start + k, L) - max(start, 0)`` is concave in its start, so the first or
    the last window has it. L=6, k=3, s=1, pb=1, out=6: the first window covers -1..1, 2 taps.
    A window wholly in padding (OpenVINO ``ceil``) has 0."""

    def inside(start: int) -> int:
        return max(0, min(start + kernel, length) - max(start, 0))

    return min(inside(-pad_begin), inside((out - 1) * stride - pad_begin))


def tap_counts(length: int, out: int, kernel: int, stride: int, dilation: int, pad_begin: int, low: int, high: int) -> np.ndarray:
    """How many taps of each window fall inside ``[low, high)`` (as int64, one per output), counted
    without listing the taps (a window of 10**6 taps costs what one of 3 does).

    L=4, k=3, s=2, pb=pe=1, out=2: inside the input ``[0, 4)`` the counts are [2, 3]; inside
    input plus pads ``[-1, 5)`` they are [3, 3].
    """
    import numpy as np

    # window i reads start + t*d for t < k: the taps inside are t in [ceil((low-start)/d), floor((high-1-start)/d)]
    start = np.arange(out, dtype=np.int64) * stride - pad_begin
    first = np.maximum(0, -((start - low) // dilation))
    last = np.minimum(kernel - 1, (high - 1 - start) // dilation)
    return np.maximum(0, last - first + 1)


def unpool_window_for(length: int, out: int) -> tuple[int, int, int]:
    """A MaxUnpool (kernel, stride, end pad) whose inferred output is ``out`` for input ``length``,
    i.e. ``(length-1)*s + k - pe == out``. Growing: stride ``max(1, out // length)``, kernel
    ``out - (length-1)*stride``, no pad (2 -> 4 gives (2, 2, 0); 3 -> 7 gives (3, 2, 0)).
    Shrinking (a pool with pads can give more outputs than the unpool's size): kernel 1, stride 1,
    end pad ``length - out`` (2 -> 1 gives (1, 1, 1))."""
    if out < length:
        return 1, 1, length - out
    stride = max(1, out // length)
    return out - (length - 1) * stride, stride, 0


def window_taps(index: int, kernel: int, stride: int, dilation: int, pad_begin: int) -> tuple[int, ...]:
    """Input positions read by window ``index`` on one axis: ``index*s - pb + t*d`` for each tap
    ``t < k``; negative positions and positions ``>= L`` are padding or ceil overhang.
    index=2, k=3, s=2, d=1, pb=1: (3, 4, 5); with pb=0 the same window in padded coordinates
    starts at 4."""
    return tuple(index * stride - pad_begin + tap * dilation for tap in range(kernel))


def drop_threshold(length: int, pad_begin: int) -> int:
    """The padded position ``L + pb`` at or after which a ceil window starts only in the end
    padding and the drop rule removes it (L=4, pb=1: 5; a window starting at padded cell 4 stays)."""
    return length + pad_begin


def cell_region(position: int, length: int, pad_begin: int, pad_end: int) -> str:
    """What an input position on one axis is: ``"input"`` in ``[0, L)``, ``"pad"`` in the explicit
    pads ``[-pb, 0)`` and ``[L, L+pe)``, else ``"overhang"`` (only a ceil window reaches there).
    L=4, pads 1/1: -1 pad, 0..3 input, 4 pad, 5 overhang."""
    if 0 <= position < length:
        return "input"
    if -pad_begin <= position < length + pad_end:
        return "pad"
    return "overhang"


def padded_range(length: int, pad_begin: int, pad_end: int) -> tuple[int, int]:
    """Positions ``[-pb, L+pe)`` of the input plus its explicit pads (L=4, pads 1/2: (-1, 6))."""
    return -pad_begin, length + pad_end


def is_last_axis(axis: int, rank: int) -> bool:
    """Whether ``axis`` (negative counts from the end) is the last of ``rank`` axes: 3 and -1 of
    rank 4 are, 4, -5 and any axis of rank 0 are not. There, and only there, Softmax-1..12's 2-D
    coercion at ``axis`` normalises the rows Softmax-13 normalises along ``axis``."""
    return -rank <= axis < rank and axis % rank == rank - 1
