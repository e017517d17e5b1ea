"""infer_schema: an op's schema string from its type annotations, as torch.library's.

    def f(x: Tensor, out: Tensor, alpha: float = 1.0) -> None: ...
    infer_schema(f, mutates_args={"out"})  ->  "(Tensor x, Tensor(a1!) out, float alpha=1.0) -> ()"

The same supported types, spellings and error messages as torch 2.13,
with cextend's Tensor, dtype and device in place of torch's.
"""
import collections.abc
import inspect
import typing
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
