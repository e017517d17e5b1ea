"""opcheck: run the checks on an op and its sample arguments (torch.library.opcheck, and more).

Returns {test name: "SUCCESS" or the exception}; with raise_exception=True
(the default) the first failure raises OpCheckError instead, its message
the failing test's name and its report.  Every test works on fresh copies
of the sample, so one test cannot disturb another.
"""
import numpy as np

from cextend.library._custom_op import CustomOpDef, OPDEFS
from cextend.library._numeric_checks import check_determinism, check_gradcheck, check_layouts
from cextend.library._registration_checks import check_autograd_registration, check_faketensor, check_schema
from cextend.library._sanitize import check_sanitize

ALL_TEST_UTILS = {
    "test_schema": check_schema,
    "test_autograd_registration": check_autograd_registration,
    "test_faketensor": check_faketensor,
    "test_gradcheck": check_gradcheck,
    "test_layouts": check_layouts,
    "test_determinism": check_determinism,
    "test_sanitize": check_sanitize,
}
DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_gradcheck",
                      "test_layouts", "test_determinism")


class OpCheckError(Exception):
    """opcheck found a problem (raise_exception=True)."""

    __module__ = "cextend.library"


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception=True, sanitize=False,
            atol=None, rtol=None):
    """Check op on the sample (args, kwargs); see cextend.library's docstring for what each test does.

    sanitize=True adds test_sanitize (the op's C calls replayed under
    ASan + UBSan).  atol/rtol (both or neither) loosen test_layouts'
    comparisons from bitwise equality, for kernels whose results
    legitimately depend on the memory layout.
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
    tests = list(test_utils)
    if sanitize and "test_sanitize" not in tests:
        tests.append("test_sanitize")
    results = dict.fromkeys(tests)
    if "test_sanitize" in tests:
        # First: a kernel that writes out of bounds may corrupt this process in
        # the other tests; the sanitizer's report says where before that happens.
        tests.remove("test_sanitize")
        tests.insert(0, "test_sanitize")
    for name in tests:
        try:
            with np.errstate(all="ignore"):     # a broken op's NaNs and overflows are reported, not warned
                ALL_TEST_UTILS[name](op, args, kwargs, atol=atol, rtol=rtol)
            results[name] = "SUCCESS"
        except Exception as error:
            if raise_exception:
                raise OpCheckError("opcheck(op, ...): %s failed with %s" % (name, error)) from error
            results[name] = error
    return results
