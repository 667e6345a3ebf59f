"""Shared test settings: hypothesis profiles (``ci`` is the default), skips for optional peers, and
a private compiled-model cache: no test writes into the user's ``~/.cache/ovpool/openvino``."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.register_profile("deep", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True, scope="session")
def _private_compiled_model_cache(tmp_path_factory):
    """Every test, and every process a test starts, caches compiled models under pytest's
    temporary folder (``$OVPOOL_CACHE_DIR``), never in the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OVPOOL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ovpool-cache"))
        yield
