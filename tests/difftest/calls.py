"""The op table's `call` functions: how an op that is not spelled
`torch.NAME(tensor, ...)` is called (cat and stack take a list, einsum an
equation first, linear lives in nn.functional).  Each takes the library
first, so one function serves both: programs call `_cat_call(torch, a, b,
dim=1)`, and a repro prints the function's source above the program.
"""
import inspect

from cextend._ops.registry import OPS

CALLS = {info.call.__name__: info.call for info in OPS.values() if info.call is not None}
SOURCES = {name: inspect.getsource(fn) for name, fn in CALLS.items()}


def name_of(info):
    return info.call.__name__
