"""CUDA status, as torch.cuda reports it.

cextend's own kernels run on the CPU (CUDA kernels are not built yet), so
is_available() is False and unavailable_reason() says why.  Extensions
built with create_extension(with_cuda=True) can still use CUDA themselves.
"""

_REASON = ("cextend's kernels are CPU-only in this build: no CUDA library was built "
           "(a user's own extension can still use CUDA via create_extension(with_cuda=True))")


def is_available():
    """False: cextend computes on the CPU (see unavailable_reason())."""
    return False


def unavailable_reason():
    return _REASON


def device_count():
    return 0
