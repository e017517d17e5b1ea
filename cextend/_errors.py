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
