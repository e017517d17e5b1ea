"""Test-suite configuration: hypothesis profiles.

`ci` (the default) runs a fixed, derandomized number of examples so the
suite's time and results are repeatable; `fuzz` (make fuzz) runs many.
Choose with HYPOTHESIS_PROFILE.
"""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", max_examples=5000, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _private_extension_cache(tmp_path_factory):
    """JIT-built extensions (load / load_inline) go to a fresh cache, never ~/.cache."""
    previous = os.environ.get("CEXTEND_EXTENSIONS_DIR")
    os.environ["CEXTEND_EXTENSIONS_DIR"] = str(tmp_path_factory.mktemp("extensions"))
    yield
    if previous is None:
        os.environ.pop("CEXTEND_EXTENSIONS_DIR", None)
    else:
        os.environ["CEXTEND_EXTENSIONS_DIR"] = previous
