"""infer_schema: an op's schema string from its type annotations, as torch.library's.

    def f(x: Tensor, out: Tensor, alpha: float = 1.0) -> None: ...
    infer_schema(f, mutates_args={"out"})  ->  "(Tensor x, Tensor(a1!) out, float alpha=1.0) -> ()"

The same supported types, spellings and error messages as torch 2.13,
with cextend's Tensor, dtype and device in place of torch's.
"""
import collections.abc
import inspect
import numbers
import re
import typing

import numpy as np

from cextend._dtype import dtype
from cextend.device import device
from cextend.tensor import Tensor

UNKNOWN_MUTATES = "unknown"


def _types():
    return Tensor, dtype, device


def _derived(base, name, list_base, optional_base_list, optional_list_base):
    def sequences(item):
        return (typing.Sequence[item], typing.List[item], collections.abc.Sequence[item], list[item])
    result = [(base, name), (typing.Optional[base], name + "?")]
    if list_base:
        result += [(s, name + "[]") for s in sequences(base)]
    if optional_base_list:
        result += [(s, name + "?[]") for s in sequences(typing.Optional[base])]
    if optional_list_base:
        result += [(typing.Optional[s], name + "[]?") for s in sequences(base)]
    return result


_PARAM_TYPES = None
_RETURN_TYPES = None


def supported_types():
    """({annotation: schema type} for parameters, the same for returns)."""
    global _PARAM_TYPES, _RETURN_TYPES
    if _PARAM_TYPES is None:
        Tensor, dtype, device = _types()
        table = [(Tensor, "Tensor", True, True, False), (int, "SymInt", True, False, True),
                 (float, "float", True, False, True), (bool, "bool", True, False, True),
                 (str, "str", False, False, False), (dtype, "ScalarType", False, False, False),
                 (device, "Device", False, False, False)]
        _PARAM_TYPES = dict(pair for line in table for pair in _derived(*line))
        _RETURN_TYPES = {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]", list[Tensor]: "Tensor[]",
                         int: "SymInt", float: "float", bool: "bool"}
    return _PARAM_TYPES, _RETURN_TYPES


def resolved_annotations(fn):
    """fn's signature with string annotations (from __future__ import annotations) evaluated."""
    signature = inspect.signature(fn)

    def resolve(annotation):
        if isinstance(annotation, str):
            try:
                return eval(annotation, getattr(fn, "__globals__", {}))
            except Exception as error:
                raise ValueError("infer_schema(func): Unsupported type annotation %s. It is not a type. "
                                 "(%s: %s). Got func with signature %s)"
                                 % (annotation, type(error).__name__, error, signature)) from None
        return annotation

    params = [p.replace(annotation=resolve(p.annotation)) for p in signature.parameters.values()]
    return signature.replace(parameters=params, return_annotation=resolve(signature.return_annotation))


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema of prototype_function from its annotations (torch.library.infer_schema)."""
    signature = resolved_annotations(prototype_function)
    param_types, _ = supported_types()

    def error(what):
        raise ValueError("infer_schema(func): %s Got func with signature %s)" % (what, signature))

    if not isinstance(mutates_args, str):
        mutates_args = tuple(mutates_args)
    elif mutates_args != UNKNOWN_MUTATES:
        raise ValueError("mutates_args must either be a sequence of the names of the arguments that are "
                         "mutated or the string 'unknown'. ")
    params, seen, keyword_only = [], set(), False
    for index, (name, param) in enumerate(signature.parameters.items()):
        if param.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if param.kind == inspect.Parameter.KEYWORD_ONLY and not keyword_only:
            params.append("*")
            keyword_only = True
        if param.annotation is inspect.Parameter.empty:
            error("Parameter %s must have a type annotation." % name)
        if param.annotation not in param_types:
            error("Parameter %s has unsupported type %s. The valid types are: %s."
                  % (name, param.annotation, param_types.keys()))
        schema_type = param_types[param.annotation]
        mutated = (mutates_args == UNKNOWN_MUTATES and schema_type.startswith("Tensor")) or \
            (not isinstance(mutates_args, str) and name in mutates_args)
        if mutated:
            if not schema_type.startswith("Tensor"):
                error("Parameter %s is in mutable_args but only Tensors or collections of Tensors can be "
                      "mutated" % name)
            schema_type = "Tensor(a%d!)%s" % (index, schema_type[len("Tensor"):])
        seen.add(name)
        if param.default is inspect.Parameter.empty:
            params.append("%s %s" % (schema_type, name))
        else:
            params.append("%s %s=%s" % (schema_type, name, _default_repr(param.default, name, error)))
    if not isinstance(mutates_args, str):
        missing = set(mutates_args) - seen
        if missing:
            error("%s in mutates_args were not found in the custom op's signature. mutates_args should "
                  "contain the names of all args that the custom op mutates, or just the string 'unknown' "
                  "if you don't know." % missing)
    returns = parse_return(signature.return_annotation, error)
    text = "(%s) -> %s" % (", ".join(params), returns)
    return text if op_name is None else op_name + text


def _default_repr(value, name, error):
    _, dtype, device = _types()
    if value is None or isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, (str, device)):
        return '"%s"' % value
    if isinstance(value, dtype):
        return value.name
    error("Parameter %s has an unsupported default value type %s. Please file an issue on GitHub so we "
          "can prioritize this." % (name, type(value)))


def parse_return(annotation, error):
    _, return_types = supported_types()
    if annotation is None:
        return "()"
    if annotation is inspect.Parameter.empty:
        error("No return type annotation was provided. Please add one.")
    if typing.get_origin(annotation) is not tuple:
        if annotation not in return_types:
            error("Return has unsupported type %s. The valid types are: %s." % (annotation, return_types))
        return return_types[annotation]
    args = typing.get_args(annotation)
    for arg in args:
        if arg not in return_types:
            error("Return has unsupported type %s. The valid types are: %s." % (annotation, return_types))
    inner = ", ".join(return_types[a] for a in args)
    return "((%s))" % inner if len(args) == 1 else "(%s)" % inner


def param_schema_types(signature):
    """{name: schema type, or None if its annotation is missing or unsupported (a given schema=)}."""
    param_types, _ = supported_types()
    return {name: param_types.get(p.annotation) for name, p in signature.parameters.items()}


# -- checking a call's arguments against the schema ------------------------------------------------
#
# torch's dispatcher converts each argument to its schema type before the
# kernel runs, and refuses one it cannot convert with a RuntimeError naming
# the op, the argument and the type.  These are the same conversions'
# acceptance rules (a float argument takes any real number or a one-element
# Tensor, an int one an integer within int64, a list a list or tuple of
# them, ...), so a string for a float fails at the call, not in the kernel.

def schema_params(schema):
    """[(name, schema type without alias annotations)] of a schema string
    ("ns::op(Tensor(a0!) x, float y=1.0, *, SymInt n) -> Tensor" or the
    part after the name)."""
    head = schema.rsplit("->", 1)[0]
    start, end = head.find("("), head.rfind(")")
    if start < 0 or end < start:
        return []
    params, depth, quote, current = [], 0, None, []
    for ch in head[start + 1:end]:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            params.append("".join(current))
            current = []
            continue
        current.append(ch)
    params.append("".join(current))
    result = []
    for text in params:
        text = text.split("=", 1)[0].strip()
        if not text or text == "*":
            continue
        type_text, _, name = text.rpartition(" ")
        result.append((name.strip(), re.sub(r"\([^)]*\)", "", type_text).strip()))
    return result


def _is_int64(value):
    return -2 ** 63 <= value <= 2 ** 63 - 1


def _one_element(value):
    return isinstance(value, Tensor) and value.numel() == 1


def _int_like(value):
    if isinstance(value, numbers.Integral):         # bool too, as torch's dispatcher takes it
        return "range" if not _is_int64(int(value)) else True
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biu":
        return True
    return _one_element(value)


def _float_like(value):
    if isinstance(value, (numbers.Real, np.bool_)):
        return True
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf":
        return True
    return _one_element(value)


_ELEMENT_CHECKS = {
    "Tensor": (lambda v: isinstance(v, Tensor), "a Tensor"),
    "SymInt": (_int_like, "an int"),
    "int": (_int_like, "an int"),
    "float": (_float_like, "a float"),
    "bool": (_float_like, "a bool"),
    "str": (lambda v: isinstance(v, str), "a str"),
    "ScalarType": (lambda v: isinstance(v, dtype), "a cextend dtype"),
    "Device": (lambda v: isinstance(v, (device, str)), "a device (a cextend.device or a string such as 'cpu')"),
}

_PLURAL = {"a Tensor": "Tensors", "an int": "ints", "a float": "floats",
           "a bool": "bools", "a str": "strs", "a cextend dtype": "cextend dtypes"}


class ArgumentCheck:
    """What one schema type accepts: check(value) is True, False, or
    "range" (an int outside int64)."""

    __slots__ = ("schema_type", "expected", "_element", "_optional", "_list", "_optional_elements")

    def __init__(self, schema_type):
        match = re.fullmatch(r"(\w+)(\?)?(\[\d*\])?(\?)?", schema_type)
        if match is None or match.group(1) not in _ELEMENT_CHECKS:
            raise KeyError(schema_type)
        base, elem_optional, listed, list_optional = match.groups()
        self.schema_type = schema_type
        self._element, singular = _ELEMENT_CHECKS[base]
        self._list = listed is not None
        self._optional_elements = self._list and elem_optional is not None
        self._optional = (list_optional if self._list else elem_optional) is not None
        if self._list:
            each = _PLURAL.get(singular, singular) + (" or Nones" if self._optional_elements else "")
            self.expected = "a list (or tuple) of " + each
        else:
            self.expected = singular
        if self._optional:
            self.expected += " or None"

    def __call__(self, value):
        if value is None:
            return self._optional
        if not self._list:
            return self._element(value)
        if isinstance(value, Tensor) and self._element is not _ELEMENT_CHECKS["Tensor"][0]:
            return value.dim() <= 1         # torch takes a 1-D tensor for an int[] or float[] too
        if not isinstance(value, (list, tuple)):
            return False
        for item in value:
            ok = (item is None and self._optional_elements) or (item is not None and self._element(item))
            if ok is not True:
                return ok
        return True


def argument_checks(schema):
    """{name: ArgumentCheck} for the schema's parameters whose type is one
    custom_op infers (others are left to the kernel)."""
    checks = {}
    for name, schema_type in schema_params(schema):
        try:
            checks[name] = ArgumentCheck(schema_type)
        except KeyError:
            pass
    return checks


def describe_value(value):
    if isinstance(value, Tensor):
        return "a Tensor of shape %s" % list(value.shape)
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return "%s %s" % (type(value).__name__, text)
