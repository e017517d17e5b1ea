"""Memory-overlap checks as torch makes them (ATen's MemoryOverlap.cpp).

torch refuses an in-place op when its output and an input share memory
*partially*: the same elements in another order, or a shifted window,
would make the result depend on the loop order.  It can only tell for
non-overlapping-and-dense tensors; for any other layout it gives up
("too hard") and runs the op.  We draw the line exactly where torch does,
so that a program torch accepts runs here and one it refuses raises.
"""
import numpy as np

NO, FULL, PARTIAL, TOO_HARD = "no", "full", "partial", "too hard"

SELF_OVERLAP_MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers to a "
                        "single memory location. Please clone() the tensor before performing the operation.")


def check_not_self_overlapping(a):
    """torch refuses to write in place into a tensor whose elements share
    memory (an expanded one: a stride of 0 over more than one element)."""
    strides = getattr(a, "strides", ())
    if 0 in strides and a.size > 1 and any(st == 0 and n > 1 for st, n in zip(strides, a.shape)):
        raise RuntimeError(SELF_OVERLAP_MESSAGE)


_MESSAGE = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
            "single memory location. Please clone() the tensor before performing the operation.")


def non_overlapping_and_dense(a):
    """No two elements share memory and no gap lies between them, in some order."""
    expected = a.itemsize
    for stride, size in sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return all(st >= 0 for st, n in zip(a.strides, a.shape) if n != 1)


def same_layout(a, b):
    """Same shape and strides, as torch compares them: a size-1 dim's stride
    counts too (x[0::2] of one element keeps stride 2 and differs from x),
    which cextend's views give as torch's do (unsqueeze, expand, reshape)."""
    return a.itemsize == b.itemsize and a.shape == b.shape and a.strides == b.strides


def _start(a):
    return a.__array_interface__["data"][0]


def status(a, b):
    """Overlap of numpy arrays a and b, as torch's get_overlap_status."""
    if a is b:
        return FULL
    if a.size == 0 or b.size == 0 or not np.may_share_memory(a, b):
        return NO
    if not non_overlapping_and_dense(a) or not non_overlapping_and_dense(b):
        return TOO_HARD
    a_begin, b_begin = _start(a), _start(b)
    a_end, b_end = a_begin + a.nbytes, b_begin + b.nbytes
    if a_begin == b_begin and a_end == b_end:
        return FULL if same_layout(a, b) else PARTIAL
    return PARTIAL if a_begin < b_end and b_begin < a_end else NO


# Where torch gives up, it runs the op and its answer depends on the order
# its loops visit the elements (x.T.mul_(x.T[0]) reads values it already
# overwrote).  numpy would buffer and give another answer; rather than a
# number torch does not define, cextend refuses when the two really share
# an element (a documented deviation: torch runs it).
_UNDEFINED_MESSAGE = ("unsupported operation: the input tensor shares elements with the written-to tensor in a "
                      "layout where the result would depend on the order elements are written (torch runs it "
                      "and its answer is undefined; cextend refuses). Please clone() the input first.")


def _shares_elements(a, b):
    try:
        return np.shares_memory(a, b, max_work=1 << 20)
    except np.exceptions.TooHardError:
        return True         # cannot prove them apart: refuse rather than guess


def _check(out, inputs, refused):
    for x in inputs:
        data = getattr(x, "_data", None)
        if not isinstance(data, np.ndarray):
            continue
        found = status(out, data)
        if found in refused:
            raise RuntimeError(_MESSAGE)
        if found == TOO_HARD and _shares_elements(out, data):
            raise RuntimeError(_UNDEFINED_MESSAGE)


def check_no_partial(out, inputs):
    """torch's assert_no_partial_overlap(out, input) for each Tensor input."""
    _check(out, inputs, (PARTIAL,))


def check_no_overlap(out, inputs):
    """torch's assert_no_overlap: index ops refuse even a full overlap."""
    _check(out, inputs, (PARTIAL, FULL))


def check_not_read_while_written(out, inputs):
    """An in-place op torch runs element by element, reading each input as
    it writes out (masked_scatter_'s source): where they share memory its
    answer depends on that loop order, so refuse any shared element."""
    for x in inputs:
        data = getattr(x, "_data", None)
        if isinstance(data, np.ndarray) and _shares_elements(out, data):
            raise RuntimeError(_UNDEFINED_MESSAGE)
