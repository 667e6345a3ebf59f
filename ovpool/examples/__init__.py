"""The bundled examples, found from any folder: ``ovpool.examples.path("tiny_pool.onnx")``
(``ovpool examples tiny_pool.onnx`` on the command line).

* ``tiny_pool.onnx``: Conv, ceil-mode MaxPool with indices, include-pad AveragePool, GlobalAveragePool;
* ``tiny_qdq.onnx``: a uint8 QDQ include-pad AveragePool (zero point 100) and Conv, as quantizers write them;
* ``spec_example1.xml``: OpenVINO's AvgPool-1 spec example that declares 32x32 where the rules give 16x16;
* ``trap.xml``: an AvgPool-14 with ``dilations``, which OpenVINO ignores.

``make_examples.py`` makes them.
"""

from __future__ import annotations

from pathlib import Path

from ovpool.errors import UsageError

NAMES = ("tiny_pool.onnx", "tiny_qdq.onnx", "spec_example1.xml", "trap.xml")


def path(name: str) -> Path:
    """The installed file of example ``name`` (``path("trap.xml")``); an unknown name is a
    ``UsageError`` listing the examples."""
    if name not in NAMES:
        raise UsageError(f"no example '{name}' (the examples: {', '.join(NAMES)})")
    return Path(__file__).with_name(name)
