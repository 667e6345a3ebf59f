"""OpenVINO's ONNX frontend defects and what ovpool does about each: one table, ``DEFECTS``.

The module's names, kept for their readers: the table, its conditions and lowerings, the engine
that applies them and the README renderer are ``ovpool.ov.translate``'s modules now (``table``,
``conditions``, ``lowerings``, ``apply``, ``facts``, ``converters``, ``readme``), each rule an
entry of its translation registry. New code imports ``ovpool.ov.translate``.
``python -m ovpool.ov.frontend_fixes`` prints the README's defect table.
"""

from __future__ import annotations

from ovpool.defects import Defect
from ovpool.ov.translate.apply import _inexact, _since_version, apply, defect_of, rewrite
from ovpool.ov.translate.converters import extensions
from ovpool.ov.translate.facts import _constants, _types
from ovpool.ov.translate.lowerings import Lowering
from ovpool.ov.translate.readme import readme_table
from ovpool.ov.translate.table import DEFECTS, NEWEST

__all__ = [
    "DEFECTS",
    "NEWEST",
    "Defect",
    "Lowering",
    "_constants",
    "_inexact",
    "_since_version",
    "_types",
    "apply",
    "defect_of",
    "extensions",
    "readme_table",
    "rewrite",
]

if __name__ == "__main__":
    print(readme_table())
