"""How ovpool translates what OpenVINO's ONNX frontend would get wrong: the translation registry
(``registry``: entries keyed by domain, op and since-version range, each a rewrite before the
frontend or a ``ConversionExtension``) and OpenVINO's frontend defects, ``DEFECTS``.

OpenVINO 2026.4's ONNX frontend computes something other than the ONNX model on a few nodes, or
refuses valid ones. Each row of ``DEFECTS`` (``table``; an ``ovpool.defects.Defect``) names the
operator, the range of since-versions, the condition (a function of the node that gives its text,
``axis=1``, or None when the node is fine), what OpenVINO does, and how ovpool computes the ONNX
meaning instead: a lowering that rewrites the node, before the frontend sees it, into nodes
OpenVINO converts exactly. A row without a lowering, or a node its lowering cannot take (a Resize
whose input dims are not static), is refused at convert time with one line naming the node, its
op and version, and the reason; with ``allow_inexact`` the node is left to OpenVINO and the same
line is a warning.

A node takes the first row that applies to it: the Resize rows whose lowering is the per-axis
matrices (which compute every Resize attribute at once) come before the one that only renumbers
negative axes. Nodes in Loop, If and Scan bodies are rewritten too.

Where each piece is:

* ``table``: the rows (``DEFECTS``);
* ``conditions`` and ``lowerings``: those of the Softmax, Resize, Upsample, Constant, RoiAlign
  and Div rows; the other rows' are in ``ovpool.ov.frontend_rewrites``, and those of the
  departures OpenVINO CPU shows on some data only that the conversion computes exactly (TopK ties,
  NaN in Greater, 8-bit overflow...) in ``ovpool.ov.value_fixes``; what they may know of the
  model, ``Facts``, is ``ovpool.ov.node_facts``', built by ``facts``;
* ``apply``: the engine, ``rewrite(proto, label, shapes, allow_inexact)`` finds the replacements
  and ``apply`` writes them into a copy of the model;
* ``converters``: the ``ConversionExtension`` converters of the ``ai.ovpool`` nodes the lowerings
  write;
* ``registry``: every translation as an entry, and ``conversion_extensions``, the extensions of
  one model's conversion (pooling, quantization, the converters);
* ``readme``: the README's defect table, ``readme_table()`` (``python -m ovpool.ov.frontend_fixes``
  prints it).

The departures of OpenVINO CPU that depend on the data fed, which no conversion can see, are
``ovpool.ov.cpu_deviations``.
"""

from __future__ import annotations

from ovpool.ov.translate.apply import apply, defect_of, rewrite
from ovpool.ov.translate.readme import readme_table
from ovpool.ov.translate.registry import ENTRIES, Entry, conversion_extensions, entries
from ovpool.ov.translate.table import DEFECTS

__all__ = ["DEFECTS", "ENTRIES", "Entry", "apply", "conversion_extensions", "defect_of", "entries", "readme_table", "rewrite"]
