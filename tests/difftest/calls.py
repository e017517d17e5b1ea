"""The op table's `call` functions: how an op that is not spelled
`torch.NAME(tensor, ...)` is called (cat and stack take a list, einsum an
equation first, the nn ops live in nn.functional).  Each takes the library
first, so one function serves both.  Programs call it as `call_NAME(torch,
...)` (NAME the op's name in the table), and a repro prints its source
above the program, so the repro runs on its own.
"""
import inspect
import re
import textwrap

from cextend._ops.registry import OPS


def program_name(info):
    return "call_" + info.name


def _source(name, fn):
    """fn's source as a standalone `def name(lib, ...)`: renamed, and the
    values of the variables it closes over written in (functional_call)."""
    text = textwrap.dedent(inspect.getsource(fn))
    text = re.sub(r"^def \w+\(", "def %s(" % name, text, count=1, flags=re.M)
    for var, value in inspect.getclosurevars(fn).nonlocals.items():
        text = re.sub(r"\b%s\b" % re.escape(var), repr(value), text)
    return text.rstrip() + "\n"


def name_of(info):
    return program_name(info)


CALLS = {program_name(info): info.call for info in OPS.values() if info.call is not None}
SOURCES = {name: _source(name, fn) for name, fn in CALLS.items()}
