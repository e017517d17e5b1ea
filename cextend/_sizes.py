"""Sizes, counts and int arguments checked before numpy, cffi or C see them.

torch refuses a negative size, and a size whose element count overflows,
with a RuntimeError; an int outside int64 with a TypeError inside a size
list and a ValueError as a single argument; a failed allocation with a
RuntimeError.  numpy and cffi have their own errors for these ("negative
dimensions are not allowed", "array is too big", "Maximum allowed
dimension exceeded", "does not fit '32-bit int'", a MemoryError) that name
neither the op nor the argument.  These helpers raise cextend's instead:
ArgumentError (a ValueError and a RuntimeError) and OutOfMemoryError (a
MemoryError and a RuntimeError), in words that name what was wrong.

Every check costs nothing on the success path beyond a comparison or a
product of the sizes; the translations run only once numpy has failed.
"""
from cextend._errors import ArgumentError, OutOfMemoryError

INT64_MIN = -2 ** 63
INT64_MAX = 2 ** 63 - 1
MAX_DIMS = 64           # numpy's limit (torch has none)
# More elements than any buffer can hold: numpy's limit is bytes < 2**63,
# and 16 bytes covers every dtype's itemsize.
MAX_ELEMENTS = INT64_MAX // 16


def _where(op):
    return "%s(): " % op if op else ""


def in_int64(value):
    return INT64_MIN <= value <= INT64_MAX


def int64(value, name, op=None):
    """value itself; an ArgumentError (torch: a ValueError) when it is outside int64."""
    if INT64_MIN <= value <= INT64_MAX:
        return value
    raise ArgumentError("%sargument '%s' must fit in int64 (from -2**63 to 2**63 - 1), got %d"
                        % (_where(op), name, value))


def check_ndim(sizes, what="size", op=None):
    if len(sizes) > MAX_DIMS:
        raise ArgumentError("%s%s has %d dimensions, but a cextend tensor has at most %d"
                            % (_where(op), what, len(sizes), MAX_DIMS))


def check_count(sizes, what="size", op=None, itemsize=16):
    """sizes (non-negative ints) describe a tensor numpy can lay out: its
    non-zero sizes multiply to fewer than 2**63 bytes."""
    count = 1
    for s in sizes:
        if s:
            count *= s
    if count * itemsize > INT64_MAX:
        if 0 in sizes:
            raise ArgumentError("%sa tensor of %s %s cannot be laid out: its non-zero sizes multiply to %d, "
                                "more than memory can address" % (_where(op), what, list(sizes), count))
        raise ArgumentError("%sa tensor of %s %s would have %d elements, more than memory can address"
                            % (_where(op), what, list(sizes), count))


def new_shape(sizes, what="size", op=None):
    """The sizes of a tensor about to be made (ints): none negative, at most
    64 of them, and not more elements than memory can address."""
    for s in sizes:
        if s < 0:
            raise ArgumentError("%scannot make a tensor with a negative dimension (%d) in its %s %s"
                                % (_where(op), s, what, list(sizes)))
    check_ndim(sizes, what, op)
    check_count(sizes, what, op)
    return sizes


def _bytes(count):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if count < 1024 or unit == "EiB":
            return ("%d %s" % (count, unit)) if unit == "bytes" else ("%.2f %s" % (count, unit))
        count /= 1024


def out_of_memory(op, error=None, sizes=None, itemsize=None):
    """The OutOfMemoryError for a failed allocation (numpy's MemoryError knows its size)."""
    total = getattr(error, "_total_size", None)
    if total is None and sizes is not None and itemsize is not None:
        total = itemsize
        for s in sizes:
            total *= s
    what = "cannot allocate %s" % _bytes(total) if total is not None else "cannot allocate the result"
    if sizes is not None:
        what += " for a tensor of size %s" % list(sizes)
    return OutOfMemoryError("%sout of memory: %s" % (_where(op), what))


# numpy's ValueErrors for a size it cannot lay out
_NUMPY_SIZE_ERRORS = ("array is too big", "Maximum allowed size exceeded", "Maximum allowed dimension exceeded",
                      "maximum supported dimension for an ndarray", "number of dimensions must be within",
                      "negative dimensions are not allowed")


def translated(error, op, what="the result"):
    """cextend's error for numpy's failure `error` to make an array, or None
    when it is some other failure (re-raise that one)."""
    if isinstance(error, MemoryError):
        return error if isinstance(error, OutOfMemoryError) else out_of_memory(op, error)
    if isinstance(error, ValueError) and not isinstance(error, ArgumentError):
        text = str(error)
        if any(m in text for m in _NUMPY_SIZE_ERRORS):
            return ArgumentError("%s%s would be larger than memory can address (or have more than %d "
                                 "dimensions)" % (_where(op), what, MAX_DIMS))
    return None
