"""Known defects of the tools ovpool stands beside: one row type, ``Defect``, and one version
range, ``VersionRange``, for every table of them.

Three tools compute something other than an ONNX model means, and each has its table of rows:

* ``onnx.reference`` (``ovpool.engine.reference.DEFECTS``): where the test oracle of last resort
  is wrong, so no test takes its word there;
* OpenVINO's ONNX frontend (``ovpool.ov.translate.table.DEFECTS``): nodes it converts wrong or
  refuses, each fixed by a rewrite before the frontend (``lower``) or refused at convert time;
* OpenVINO CPU (``ovpool.ov.cpu_deviations.DEVIATIONS``, warned, and
  ``ovpool.execution.limits.CPU_CRASHES``, refused before ``compile_model``).

A row names the tool, the operator (``domain``, ``ops``), the since-versions it holds for
(``versions``: ``VersionRange(11, 12)`` is Softmax-11 and Softmax-12, ``VersionRange(18)`` every
version from 18 on), the condition in words (``when``) and as a function of the node
(``condition``, None: every node), what the tool does (``does``) and what ONNX means (``onnx``),
and what ovpool does about it (``fix``: None when it refuses or only warns). The README's and
docs/semantics.md's tables are rendered from these rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

LATEST: Final = 10_000
"""``until`` of a range that covers every later since-version (the engine's registrations, and
every table here): ``VersionRange(18)`` is 18..LATEST, "18+"."""

ONNX_REFERENCE: Final = "onnx.reference"
OPENVINO_FRONTEND: Final = "OpenVINO frontend"
OPENVINO_CPU: Final = "OpenVINO CPU"
TOOLS: Final = (ONNX_REFERENCE, OPENVINO_FRONTEND, OPENVINO_CPU)


@dataclass(frozen=True)
class VersionRange:
    """Since-versions ``since``..``until`` inclusive (``until`` ``LATEST``: every later one)."""

    since: int
    until: int = LATEST

    def __post_init__(self) -> None:
        if not 1 <= self.since <= self.until <= LATEST:
            raise ValueError(f"versions {self.since}..{self.until}: want 1 <= since <= until <= {LATEST}")

    def covers(self, version: int) -> bool:
        """Whether since-version ``version`` is in the range: 11..12 covers 12, not 13."""
        return self.since <= version <= self.until

    def overlaps(self, other: VersionRange) -> bool:
        """Whether a since-version is in both: 11..12 and 12+ share 12; 1..10 and 11+ share none."""
        return self.since <= other.until and other.since <= self.until

    @property
    def open(self) -> bool:
        """Whether every later version is in it (``until`` is ``LATEST``)."""
        return self.until >= LATEST

    def text(self, to: str = "..") -> str:
        """``11..12`` (``to`` between the ends), ``18+`` for an open range, ``12`` for one version."""
        if self.until == self.since:
            return str(self.since)
        return f"{self.since}+" if self.open else f"{self.since}{to}{self.until}"


# What a condition gets and gives: (node, its since-version, what the conversion knows) -> the
# condition's text for the node, or None when the node is fine. OpenVINO CPU's detectors take
# (model, its types) and yield where; its crash checks take an OpenVINO operation.
Condition = Callable[..., Any]


@dataclass(frozen=True)
class Defect:
    """One known defect: ``tool`` computes ``does`` where ONNX means ``onnx``, for ``domain`` /
    ``ops`` at since-versions ``versions`` when ``when`` (in words; ``condition``, in code: None
    for every node). ``fix``: what ovpool does instead (None: refused, or for OpenVINO CPU
    warned); ``lower``: the rewrite that fixes the node (OpenVINO frontend rows). ``named``: how a
    table names the ops when their list says too little ("any op"); ``unwarned``: why a warned
    row has no ``condition``; ``repro``: where a one-node repro shows it."""

    tool: str
    ops: tuple[str, ...]
    versions: VersionRange
    when: str
    does: str
    onnx: str = ""
    fix: str | None = None
    condition: Condition | None = None
    lower: Condition | None = None
    domain: str = ""
    named: str = ""
    unwarned: str = ""
    repro: str = ""

    def __post_init__(self) -> None:
        if self.tool not in TOOLS:
            raise ValueError(f"tool {self.tool!r}: one of {', '.join(TOOLS)}")
        if not self.ops:
            raise ValueError("a defect names at least one op")

    def covers(self, op_type: str, since: int, domain: str = "") -> bool:
        """Whether the row is about ``domain`` / ``op_type`` at since-version ``since``."""
        return op_type in self.ops and domain == self.domain and self.versions.covers(since)

    @property
    def op_type(self) -> str:
        """The first (for most rows the one) op the row is about."""
        return self.ops[0]

    @property
    def since(self) -> int:
        return self.versions.since

    @property
    def until(self) -> int:
        return self.versions.until

    @property
    def label(self) -> str:
        """``Softmax-11..12``, ``Resize-18+``, ``Constant-12``."""
        return f"{', '.join(self.ops)}-{self.versions.text()}"

    @property
    def ops_text(self) -> str:
        """The ops as a table names them: ``named``, else the list (``ReduceMax, ReduceMin``)."""
        return self.named or ", ".join(self.ops)

    # the names each table's rows had before the one schema: kept for their readers
    @property
    def first(self) -> int:
        return self.versions.since

    @property
    def last(self) -> int:
        return self.versions.until

    @property
    def openvino(self) -> str:
        return self.does

    @property
    def cpu(self) -> str:
        return self.does

    @property
    def reason(self) -> str:
        return self.does

    @property
    def detect(self) -> Condition | None:
        return self.condition
