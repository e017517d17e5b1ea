"""The test suite's own setup (tests/conftest.py), run on a small suite in a
temporary folder: skips are counted one line per reason (every skip for want
of torch is one), long runs are left out of `make test` and counted, with
and without pytest-xdist's workers."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

SUITE = '''
import pytest

no_torch = pytest.mark.skipif(True, reason="torch 2.13 not installed: comparison with torch skipped")


@no_torch
@pytest.mark.parametrize("i", range(3))
def test_compares_with_torch(i):
    pass


@pytest.mark.parametrize("i", range(2))
def test_imports_torch(i):
    pytest.importorskip("torch")


def test_needs_a_gpu():
    pytest.skip("no usable GPU")


@pytest.mark.parametrize("i", [pytest.param(0), pytest.param(1, marks=pytest.mark.long_run),
                               pytest.param(2, marks=pytest.mark.long_run)])
def test_sometimes_long(i):
    pass


@pytest.mark.long_run
def test_long():
    pass


def test_fails():
    assert False, "a failure stays detailed"
'''


def run_suite(tmp_path, *args, all_runs=False):
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    shutil.copy(os.path.join(HERE, "conftest.py"), str(suite / "conftest.py"))
    (suite / "test_small.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k != "CEXTEND_TEST_ALL"}
    if all_runs:
        env["CEXTEND_TEST_ALL"] = "1"
    # torch may be installed here: a folder first on the path makes `import torch` fail, as without it
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True, exist_ok=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    env["PYTHONPATH"] = str(tmp_path / "shadow")
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", os.devnull,
                             "--rootdir", str(suite), str(suite), *args],
                            capture_output=True, text=True, timeout=300, env=env, cwd=str(suite))
    return result.stdout


@pytest.mark.parametrize("workers", [[], ["-n", "2", "--dist", "worksteal"]], ids=["serial", "xdist"])
def test_skips_are_one_line_per_reason_and_long_runs_are_counted(tmp_path, workers):
    out = run_suite(tmp_path, *workers)
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "not run (-rs lists each skip)" in line)
    assert lines[start + 1:start + 4] == [
        "5 skipped: torch is not installed; `make test-torch` installs the CPU build",
        "1 skipped: no usable GPU",
        "3 long-run cases deselected: `make test-all` runs them"], out
    assert "SKIPPED [" not in out                        # no per-test skip lines
    assert "FAILED test_small.py::test_fails - AssertionError: a failure stays detailed" in out
    assert "1 failed, 1 passed, 6 skipped" in lines[-1], out


def test_make_test_all_runs_the_long_runs(tmp_path):
    out = run_suite(tmp_path, all_runs=True)
    assert "1 failed, 4 passed, 6 skipped" in out.splitlines()[-1], out
    assert "long-run" not in out


def test_dash_rs_lists_each_skip_instead(tmp_path):
    out = run_suite(tmp_path, "-rs")
    assert "SKIPPED [3] test_small.py:" in out and "torch 2.13 not installed" in out
    assert "5 skipped: torch is not installed" not in out
    assert "3 long-run cases deselected" in out
