"""cextend's exception classes that are two things at once.

torch raises RuntimeError for a bad size, shape or dtype, where Python's
convention (and numpy) says ValueError or TypeError; these are both, so
an `except` written for either catches them.
"""


class ArgumentError(ValueError, RuntimeError):
    """A bad size, shape or setting: a ValueError by Python's convention and
    a RuntimeError as torch raises it, so code written for torch (`except
    RuntimeError`) catches it too."""


class DtypeError(TypeError, RuntimeError):
    """A tensor of a dtype the kernel does not take: a TypeError, and a
    RuntimeError as torch's (NotImplementedError, "expected scalar type")."""


class ArgumentTypeError(TypeError, RuntimeError):
    """An argument of the wrong kind where torch raises RuntimeError (a
    custom op's argument against its schema, set_num_threads(2.5)): a
    TypeError by Python's convention, and a RuntimeError as torch's."""


class OutOfMemoryError(MemoryError, RuntimeError):
    """An allocation that failed: a MemoryError, and a RuntimeError as
    torch's ("DefaultCPUAllocator: can't allocate memory")."""
