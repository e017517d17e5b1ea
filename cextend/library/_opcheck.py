"""opcheck: run the checks on an op and its sample arguments (torch.library.opcheck, and more).

Returns {test name: "SUCCESS" or the exception}; with raise_exception=True
(the default) the first failure raises OpCheckError instead, its message
the failing test's name and its report.  Every test works on fresh copies
of the sample, so one test cannot disturb another.

The user's kernels never run unguarded in the caller's process: the tests
run in a forked child (cextend.library._isolate), on buffers with guard
margins; the sample's C calls are recorded there and replayed in a fresh
process under ASan + UBSan, or with guard pages where the compiler has no
sanitizer runtime (test_sanitize).  A kernel that writes out of bounds is
reported at its file:line and the caller carries on.
"""
import os
import tempfile

import numpy as np

from cextend.library import _isolate, _samples
from cextend.library._custom_op import CustomOpDef, OPDEFS
from cextend.library._numeric_checks import check_determinism, check_float32, check_gradcheck, check_layouts
from cextend.library._registration_checks import check_autograd_registration, check_faketensor, check_schema
from cextend.library._sanitize import check_sanitize, record_sample, replay
from cextend.utils._jit_record import OutOfBoundsError, guarding, read_stream

ALL_TEST_UTILS = {
    "test_schema": check_schema,
    "test_autograd_registration": check_autograd_registration,
    "test_faketensor": check_faketensor,
    "test_gradcheck": check_gradcheck,
    "test_layouts": check_layouts,
    "test_determinism": check_determinism,
    "test_float32": check_float32,
    "test_sanitize": check_sanitize,
}
DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_gradcheck",
                      "test_layouts", "test_determinism", "test_float32", "test_sanitize")
_IN_CALLER = ("test_determinism",)      # needs threads; see the module docstring


class OpCheckError(Exception):
    """opcheck found a problem (raise_exception=True)."""

    __module__ = "cextend.library"


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception=True, sanitize=None,
            atol=None, rtol=None):
    """Check op on the sample (args, kwargs); see cextend.library's docstring for what each test does.

    test_sanitize (in the defaults) replays the op's C calls in a process
    of their own: sanitize=None (default) under ASan + UBSan where the
    compiler has their runtimes, else with guard pages around every
    buffer; sanitize=True requires ASan + UBSan (and adds test_sanitize
    to test_utils); sanitize=False uses guard pages.  atol/rtol (both or
    neither) loosen test_layouts' comparisons from bitwise equality, for
    kernels whose results legitimately depend on the memory layout.
    """
    if (atol is None) != (rtol is None):
        raise ValueError("opcheck(op, ...): if you specify one of rtol/atol, you must specify both")
    if isinstance(op, str):
        op = OPDEFS.get(op, op)
    if not isinstance(op, CustomOpDef):
        raise ValueError("opcheck(op, ...): op must be an op made by cextend.library.custom_op, got %s"
                         % type(op).__name__)
    if test_utils == "ALL":
        test_utils = tuple(ALL_TEST_UTILS)
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    if not isinstance(test_utils, (tuple, list)) or not set(test_utils) <= set(ALL_TEST_UTILS):
        raise ValueError("opcheck(op, ..., test_utils=%s), expected test_utils to be subset of %s but it was "
                         "not" % (test_utils, tuple(ALL_TEST_UTILS)))
    if sanitize not in (None, True, False):
        raise ValueError("opcheck(op, ...): sanitize must be None, True or False, got %r" % (sanitize,))
    tests = list(test_utils)
    if sanitize and "test_sanitize" not in tests:
        tests.append("test_sanitize")
    if "test_sanitize" in tests:
        # First: its report names the line of an out-of-bounds access, the clearest account of a
        # kernel that would make the other tests fail in confusing ways.
        tests.remove("test_sanitize")
        tests.insert(0, "test_sanitize")
    settings = {"atol": atol, "rtol": rtol,
                "mode": {None: "auto", True: "asan", False: "guard"}[sanitize],
                "explicit": sanitize is not None or test_utils is not DEFAULT_TEST_UTILS}
    with np.errstate(all="ignore"):     # a broken op's NaNs and overflows are reported, not warned
        if _can_isolate(op, args, kwargs):
            results = _run_isolated(op, args, kwargs, tests, settings)
        else:
            results = _run_here(op, args, kwargs, tests, settings)
    for name in tests:
        if results[name] != "SUCCESS" and raise_exception:
            error = results[name]
            raise OpCheckError("opcheck(op, ...): %s failed with %s" % (name, error)) from error
    return results


def _can_isolate(op, args, kwargs):
    """A fork can run the checks unless fork is missing or a CUDA tensor is in the sample
    (CUDA's state does not survive fork)."""
    if not _isolate.fork_available() or os.environ.get("CEXTEND_OPCHECK_IN_PROCESS"):
        return False
    positional, keyword_only = op._bind(args, kwargs or {})
    devices = []
    for value in list(positional) + list(keyword_only.values()):
        _samples.map_tensors(value, lambda t, _n=None: devices.append(t.device.type))
    return all(d == "cpu" for d in devices)


def _run_here(op, args, kwargs, tests, settings):
    """Every check in this process, on guarded buffers (no fork on this platform, or a CUDA sample)."""
    results = {}
    for name in tests:
        try:
            with guarding():
                ALL_TEST_UTILS[name](op, args, kwargs, **settings)
            results[name] = "SUCCESS"
        except Exception as error:
            results[name] = error
    return results


def _run_isolated(op, args, kwargs, tests, settings):
    """The checks in a forked child; test_sanitize's replay of the calls it recorded, from here."""
    with tempfile.TemporaryDirectory(prefix="cextend-opcheck-") as folder:
        stream_path = os.path.join(folder, "calls.pickle")

        def checks():
            results = {}
            with guarding():
                if "test_sanitize" in tests:
                    _isolate.note_progress("test_sanitize's recorded run of the sample")
                    with open(stream_path, "wb") as stream:
                        try:
                            record_sample(op, args, kwargs, stream)
                            results["test_sanitize"] = "SUCCESS"
                        except Exception as error:
                            results["test_sanitize"] = error
                for name in tests:
                    if name == "test_sanitize" or name in _IN_CALLER:
                        continue
                    _isolate.note_progress(name)
                    try:
                        ALL_TEST_UTILS[name](op, args, kwargs, **settings)
                        results[name] = "SUCCESS"
                    except Exception as error:
                        results[name] = error
            return _isolate.portable(results)

        try:
            results, crash = _isolate.run_in_child(checks), None
        except _isolate.ChildCrashed as error:
            results, crash = {}, error
        if "test_sanitize" in tests:
            results["test_sanitize"] = _sanitize_result(op, stream_path, results.get("test_sanitize", crash),
                                                        settings)
    unsafe = crash if crash is not None else results.get("test_sanitize", "SUCCESS")
    for name in tests:
        if name in _IN_CALLER:
            if unsafe != "SUCCESS":
                results[name] = RuntimeError("not run: it runs the op in this process, and %s" % (
                    "the checking process crashed" if crash is not None else "test_sanitize found a memory error"))
                continue
            try:
                with guarding():
                    ALL_TEST_UTILS[name](op, args, kwargs, **settings)
                results[name] = "SUCCESS"
            except Exception as error:
                results[name] = error
        elif name not in results:
            results[name] = crash
    return results


def _sanitize_result(op, stream_path, recorded_run, settings):
    """The replay's finding; else the guard margins' (OutOfBoundsError) or the crash; else SUCCESS.
    Any other failure of the recorded run is the other tests' to report."""
    extensions, calls = read_stream(stream_path) if os.path.exists(stream_path) else ({}, [])
    try:
        replay(op, extensions, calls, settings["mode"], settings["explicit"])
    except Exception as error:
        return error
    if isinstance(recorded_run, (OutOfBoundsError, _isolate.ChildCrashed)):
        return recorded_run
    return "SUCCESS"
