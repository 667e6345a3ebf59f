"""The converters of the ``ai.ovpool`` nodes ``DEFECTS``' lowerings write, by op type
(``CONVERTERS``): ``ai.ovpool.Div`` here, the rest ``ovpool.ov.value_fixes.CONVERTERS``. Each is a
translation registry entry (``ovpool.ov.translate.registry``) of kind ``extension``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ovpool.ov import DOMAIN
from ovpool.ov import value_fixes as values


def divide(context: Any) -> list:
    """``ai.ovpool.Div`` as a Divide with ``m_pythondiv="false"`` on integers (-7 / 2 = -3, as ONNX
    truncates; the default ``true`` is floor division, -4)."""
    from openvino import opset1

    divide = opset1.divide(context.get_input(0), context.get_input(1))
    if divide.get_output_element_type(0).is_integral():
        divide.set_attribute("m_pythondiv", False)
    return list(divide.outputs())


CONVERTERS: dict[str, Callable[[Any], list]] = {"Div": divide, **values.CONVERTERS}


def extensions() -> list[object]:
    """The ``ConversionExtension``s of the ``ai.ovpool`` nodes the lowerings write: ``ai.ovpool.Div``
    (Divide, ``m_pythondiv="false"`` on integers) and ``ovpool.ov.value_fixes.CONVERTERS``."""
    from openvino.frontend.onnx import ConversionExtension

    return [ConversionExtension(op_type, DOMAIN, converter) for op_type, converter in CONVERTERS.items()]
