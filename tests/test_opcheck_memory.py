"""opcheck with default arguments catches a kernel's memory bugs at the user's line.

Planted bugs (a write one past the end, a write before the start, a read
past the end), in the float64 and the float32 kernel, must make opcheck
fail with the file:line of the bug, both under ASan (the default where the
compiler has its runtime) and with guard pages (sanitize=False, the
fallback without one); the calling process must carry on and exit 0.  Each
scenario runs in a subprocess so that a regression that corrupts the
caller shows up as that process's exit status, not as a crashed test run.
"""
import json
import os
import re
import subprocess
import sys

import pytest

from cextend.library._sanitize import sanitizer_runtimes
from cextend.utils._jit_cache import compiler_command

BUGS = {
    "write_past_end": "y[n] = 1;",
    "write_before_start": "y[-1] = 1;",
    "read_past_end": "y[0] += 0 * x[n];",
}

SCRIPT = r'''
import json, sys
import cextend
from cextend import Tensor
from cextend.library import OpCheckError, custom_op, opcheck
from cextend.utils.ffi import load_inline

bug, planted_in, mode = sys.argv[1], sys.argv[2], sys.argv[3]
SOURCE = """
#include <stdint.h>
void square_f64(const double *x, double *y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
    F64_BUG
}
void square_f32(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
    F32_BUG
}
void square_backward_f64(const double *x, const double *g, double *gx, int64_t n) {
    for (int64_t i = 0; i < n; ++i) gx[i] = 2 * x[i] * g[i];
}
void square_backward_f32(const float *x, const float *g, float *gx, int64_t n) {
    for (int64_t i = 0; i < n; ++i) gx[i] = F32_FACTOR * x[i] * g[i];
}
"""
BUGS = json.loads(sys.argv[4])
source = (SOURCE.replace("F64_BUG", BUGS.get(bug, "") if planted_in == "f64" else "")
          .replace("F32_BUG", BUGS.get(bug, "") if planted_in == "f32" else "")
          .replace("F32_FACTOR", "3" if bug == "float32_gradient" else "2"))
lib = load_inline("planted_%s_%s" % (bug, planted_in), """
void square_f64(const double *x, double *y, int64_t n);
void square_f32(const float *x, float *y, int64_t n);
void square_backward_f64(const double *x, const double *g, double *gx, int64_t n);
void square_backward_f32(const float *x, const float *g, float *gx, int64_t n);
""", source)


@custom_op("planted::square_%s_%s" % (bug, planted_in), mutates_args=())
def square(x: Tensor) -> Tensor:
    x = x.contiguous()
    y = cextend.empty_like(x)
    (lib.square_f64 if x.dtype == cextend.float64 else lib.square_f32)(x, y, x.numel())
    return y


def backward(ctx, g):
    x, = ctx.saved_tensors
    x, g = x.contiguous(), g.contiguous()
    gx = cextend.empty_like(x)
    (lib.square_backward_f64 if x.dtype == cextend.float64 else lib.square_backward_f32)(x, g, gx, x.numel())
    return gx


square.register_fake(lambda x: cextend.empty_like(x))
square.register_autograd(backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
x = cextend.randn(5, 7, dtype=cextend.float64, requires_grad=True)
try:
    opcheck(square, (x,), sanitize={"default": None, "guard": False}[mode])
    report = None
except OpCheckError as error:
    report = str(error)
# The caller carries on: its own tensors and allocator still work.
total = float((cextend.ones(1000) * 2).sum())
print(json.dumps({"report": report, "total": total, "source": source}))
'''


def _has_asan():
    try:
        sanitizer_runtimes(compiler_command())
        return True
    except RuntimeError:
        return False


def run_planted(tmp_path, bug, planted_in, mode):
    script = tmp_path / "planted.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, CEXTEND_EXTENSIONS_DIR=str(tmp_path / "extensions"))
    result = subprocess.run([sys.executable, str(script), bug, planted_in, mode, json.dumps(BUGS)],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, "the calling process died (status %d):\n%s" % (result.returncode,
                                                                                 result.stderr[-3000:])
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["total"] == 2000.0
    return found


def bug_line(source, planted_in):
    """The 1-based line of the planted bug within the source string."""
    marker = BUGS_BY_DTYPE[planted_in]
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if marker in line)
    return next(i for i in range(start, len(lines)) if any(b in lines[i] for b in BUGS.values())) + 1


BUGS_BY_DTYPE = {"f64": "square_f64(", "f32": "square_f32("}


def assert_names_the_line(report, source, planted_in):
    match = re.search(r" at (\S+?):(\d+) in (\w+)", report)
    assert match, report
    path, line, function = match.group(1), int(match.group(2)), match.group(3)
    assert function == "square_%s" % planted_in, report
    if path.endswith(".py"):        # load_inline names the line in the .py file that holds the literal
        with open(path) as f:
            assert any(b in f.read().splitlines()[line - 1] for b in BUGS.values()), report
    else:
        assert path.startswith("planted_") and line == bug_line(source, planted_in), report


def cases(in_make_test):
    """Every (bug, dtype); those not in in_make_test run in make test-all (each builds three libraries)."""
    return [pytest.param(bug, dtype, marks=() if (bug, dtype) in in_make_test else pytest.mark.long_run)
            for bug in sorted(BUGS) for dtype in ("f64", "f32")]


@pytest.mark.parametrize("bug, planted_in", cases({("write_past_end", "f64"), ("write_past_end", "f32"),
                                                   ("write_before_start", "f64"), ("read_past_end", "f32")}))
def test_default_opcheck_names_the_line_of_a_memory_bug(tmp_path, bug, planted_in):
    found = run_planted(tmp_path, bug, planted_in, "default")
    report = found["report"]
    assert report is not None and report.startswith("opcheck(op, ...): test_sanitize failed with ")
    if _has_asan():
        assert "AddressSanitizer: heap-buffer-overflow" in report
        assert ("READ" if bug.startswith("read") else "WRITE") in report
    assert_names_the_line(report, found["source"], planted_in)


@pytest.mark.parametrize("bug, planted_in", cases({("read_past_end", "f64"), ("write_before_start", "f32")}))
def test_guard_pages_find_the_same_bugs_without_a_sanitizer(tmp_path, bug, planted_in):
    found = run_planted(tmp_path, bug, planted_in, "guard")
    report = found["report"]
    assert report is not None and "against a guard page" in report, report
    expected = {"write_past_end": "WRITE just past the end of argument 2",
                "write_before_start": "WRITE %d bytes before the start of argument 2"
                                      % (8 if planted_in == "f64" else 4),
                "read_past_end": "READ just past the end of argument 1"}[bug]
    assert expected in report, report
    assert_names_the_line(report, found["source"], planted_in)


def test_a_float32_only_gradient_bug_fails_opcheck(tmp_path):
    found = run_planted(tmp_path, "float32_gradient", "f32", "default")
    report = found["report"]
    assert report.startswith("opcheck(op, ...): test_float32 failed with planted::square_float32_gradient_f32 "
                             "in float32: the gradient of 'x' differs from the float64 run"), report


@pytest.mark.parametrize("mode", ["default", "guard"])
def test_a_correct_kernel_passes_in_both_modes(tmp_path, mode):
    assert run_planted(tmp_path, "none", "f64", mode)["report"] is None


CRASHING = r'''
import json, os
import cextend
from cextend import Tensor
from cextend.library import custom_op, opcheck
from cextend.utils.ffi import load_inline

lib = load_inline("wild_write", "void wild(const double *x, double *y, int64_t n);", """
#include <stdint.h>
void wild(const double *x, double *y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    y[n + (1 << 28)] = 1;       /* 2 GiB past the end: no margin catches this, the process faults */
}
""")


@custom_op("planted::wild", mutates_args=())
def wild(x: Tensor) -> Tensor:
    y = cextend.empty_like(x)
    lib.wild(x.contiguous(), y, x.numel())
    return y


wild.register_fake(lambda x: cextend.empty_like(x))
before = os.getpid()
results = opcheck(wild, (cextend.randn(6, dtype=cextend.float64),), raise_exception=False)
assert os.getpid() == before
print(json.dumps({k: str(v) for k, v in results.items()}))
'''


def test_a_kernel_that_crashes_does_not_take_the_caller_down(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(CRASHING)
    env = dict(os.environ, CEXTEND_EXTENSIONS_DIR=str(tmp_path / "extensions"))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads(result.stdout.strip().splitlines()[-1])
    sanitize = results["test_sanitize"]
    assert re.search(r"(SEGV|buffer-overflow|wild-addr|unknown-crash|guard page).* in wild", sanitize) or \
        "wild.c:5" in sanitize or re.search(r"killed by SIG(SEGV|BUS|ABRT)", sanitize), sanitize
    # The tests after the crash are reported as not run because of it, naming where it happened
    # (under make sanitize, ASan's handler turns the fault into an abort).
    assert re.search(r"the checking process was killed by SIG(SEGV|BUS|ABRT) during test_sanitize's recorded run",
                     results["test_schema"]), results["test_schema"]


OPENMP_AFTER_A_POOL = r'''
import os, sys
import cextend
from cextend import Tensor
from cextend.library import custom_op, opcheck
from cextend.utils.ffi import load_inline

lib = load_inline("omp_scale", "void scale(const double *x, double *y, int64_t n);", """
#include <stdint.h>
void scale(const double *x, double *y, int64_t n) {
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) y[i] = 3 * x[i];
}
""", extra_compile_args=["-fopenmp"])


@custom_op("planted::omp_scale", mutates_args=())
def scale(x: Tensor) -> Tensor:
    y = cextend.empty_like(x)
    lib.scale(x.contiguous(), y, x.numel())
    return y


scale.register_fake(lambda x: cextend.empty_like(x))
scale.register_autograd(lambda ctx, g: 3 * g)
scale(cextend.randn(4000, dtype=cextend.float64))   # libgomp's pool now has threads, which a fork leaves behind
results = opcheck(scale, (cextend.randn(4000, dtype=cextend.float64, requires_grad=True),), raise_exception=False)
print({k: str(v) for k, v in results.items()})
'''


def test_an_openmp_kernel_is_checked_after_the_caller_used_its_threads(tmp_path):
    """A forked child that enters a multi-threaded OpenMP region waits forever for the parent's pool
    threads; the child runs single-threaded and test_determinism (which needs threads) runs here."""
    script = tmp_path / "omp.py"
    script.write_text(OPENMP_AFTER_A_POOL)
    env = dict(os.environ, CEXTEND_EXTENSIONS_DIR=str(tmp_path / "extensions"), CEXTEND_OPCHECK_TIME_LIMIT="120")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    results = eval(result.stdout.strip().splitlines()[-1])
    assert set(results.values()) == {"SUCCESS"}, results


ENDLESS = r'''
import cextend
from cextend import Tensor
from cextend.library import custom_op, opcheck
from cextend.utils.ffi import load_inline

lib = load_inline("endless", "void spin(const double *x, double *y, int64_t n);", """
#include <stdint.h>
void spin(const double *x, double *y, int64_t n) {
    volatile int64_t i = 0;
    while (i >= 0) i = (i + 1) % (n + 1);      /* never ends */
    y[0] = x[0];
}
""")


@custom_op("planted::spin", mutates_args=())
def spin(x: Tensor) -> Tensor:
    y = cextend.empty_like(x)
    lib.spin(x.contiguous(), y, x.numel())
    return y


spin.register_fake(lambda x: cextend.empty_like(x))
results = opcheck(spin, (cextend.randn(3, dtype=cextend.float64),), raise_exception=False)
print({k: str(v) for k, v in results.items()})
'''


def test_a_kernel_that_never_returns_is_stopped_at_the_time_limit(tmp_path):
    script = tmp_path / "endless.py"
    script.write_text(ENDLESS)
    env = dict(os.environ, CEXTEND_EXTENSIONS_DIR=str(tmp_path / "extensions"), CEXTEND_OPCHECK_TIME_LIMIT="3")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    results = eval(result.stdout.strip().splitlines()[-1])
    assert "ran past its time limit of 3 s" in results["test_sanitize"], results
    assert "ran past its time limit of 3 s (CEXTEND_OPCHECK_TIME_LIMIT) and was killed during test_sanitize" \
        in results["test_schema"], results
