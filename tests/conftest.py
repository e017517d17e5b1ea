"""Test-suite configuration: hypothesis profiles, long runs, parallel
workers and the skip summary.

Hypothesis: `ci` (the default) runs a fixed, derandomized number of
examples so the suite's time and results are repeatable; `fuzz` (make fuzz)
runs many.  Choose with HYPOTHESIS_PROFILE.

Long runs: a test (or one case of a parametrised test) marked `long_run`
runs only when CEXTEND_TEST_ALL=1 (`make test-all`, CI), or when -m names
the marker.  The mark is for cases that add time, not coverage: the same
code path as a case `make test` keeps (another dimension, a later sample on
a strided layout), or a build check that `make test-all` and CI run.
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


# -- long runs, and running in parallel ------------------------------------------------------
#
# make test runs the suite on pytest-xdist's workers (-n auto --dist worksteal):
# every test may run on any worker, in any order.  A module-scoped fixture
# (a C extension built once for a module's tests) is then built once per
# worker that runs one of its tests, in that worker's own temporary folders.
# (xdist_group cannot pin a module to one worker here: pytest-xdist 3.8 marks
# the group in item._nodeid, which pytest 9 no longer reads.)

LONG_RUNS = os.environ.get("CEXTEND_TEST_ALL", "").strip() not in ("", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "long_run: left out of `make test`; `make test-all` (CEXTEND_TEST_ALL=1) "
                                       "runs it")
    config._cextend_long_runs = 0


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Leave out the long runs, after -k and -m chose (so the count is of what would have run)."""
    if LONG_RUNS or "long_run" in (config.getoption("markexpr", "") or ""):
        return
    keep = [item for item in items if item.get_closest_marker("long_run") is None]
    if len(keep) < len(items):
        left_out = [item for item in items if item.get_closest_marker("long_run") is not None]
        config.hook.pytest_deselected(items=left_out)
        config._cextend_long_runs = len(left_out)
        items[:] = keep


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:            # an xdist worker: tell the controller
        workeroutput["cextend_long_runs"] = session.config._cextend_long_runs


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist's controller: each worker collected the whole suite, so each counted the same."""
    count = getattr(node, "workeroutput", {}).get("cextend_long_runs", 0)
    node.config._cextend_long_runs = max(node.config._cextend_long_runs, count)


# -- skips: one line per reason ---------------------------------------------------------------
#
# pyproject's addopts reports failures, errors, xfails and xpasses test by
# test (-rfExX); skips are counted here, one line per reason, unless -rs (or
# -ra) asks for them one by one.  `PYTEST_ARGS=-rs make test` lists them.

def _skip_reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    reason = reason.strip()
    for prefix in ("Skipped: ", "could not import "):
        if reason.startswith(prefix):
            reason = reason[len(prefix):]
    return reason


TORCH_MISSING = "torch is not installed; `make test-torch` installs the CPU build"


def _for_want_of_torch(reason):
    """The modules' own words for a missing torch ("torch 2.13 not installed: ...",
    "... install it with ...", importorskip's "No module named 'torch'")."""
    return "torch" in reason and any(word in reason for word in ("not installed", "No module named", "install it",
                                                                  "'torch'"))


def skip_summary(reports):
    """[(count, reason)], most common first: every skip for want of torch is one reason."""
    counts = {}
    for report in reports:
        reason = _skip_reason(report)
        if _for_want_of_torch(reason):
            reason = TORCH_MISSING
        counts[reason] = counts.get(reason, 0) + 1
    return sorted(((n, reason) for reason, n in counts.items()), key=lambda item: (-item[0], item[1]))


_MOST_SKIP_LINES = 12


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    long_runs = getattr(config, "_cextend_long_runs", 0)
    reportchars = getattr(terminalreporter, "reportchars", "")
    skipped = terminalreporter.stats.get("skipped", [])
    listed = "s" in reportchars or "S" in reportchars         # -rs: pytest lists each skip itself
    summary = [] if listed or not skipped else skip_summary(skipped)
    if not summary and not long_runs:
        return
    width = max(terminalreporter._tw.fullwidth, 40)
    terminalreporter.write_sep("=", "not run" if listed else "not run (-rs lists each skip)")
    lines = ["{:,} skipped: {}".format(count, reason) for count, reason in summary[:_MOST_SKIP_LINES]]
    rest = summary[_MOST_SKIP_LINES:]
    if rest:
        lines.append("{:,} skipped for {} other reasons".format(sum(n for n, _ in rest), len(rest)))
    if long_runs:
        lines.append("{:,} long-run case{} deselected: `make test-all` runs {}".format(
            long_runs, "" if long_runs == 1 else "s", "it" if long_runs == 1 else "them"))
    for line in lines:
        terminalreporter.write_line(line if len(line) <= width else line[:width - 3] + "...")
