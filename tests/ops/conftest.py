"""Each operator test item records the conversions its models went through (``on_openvino``) and is
settled by them once its own checks have passed: a disagreement fails it, a known gap makes it an
xfail."""

from __future__ import annotations

from collections.abc import Generator

import on_openvino
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    record = on_openvino.begin_item(item.nodeid)
    try:
        result = yield
    finally:
        on_openvino.end_item()
    record.settle()
    return result
