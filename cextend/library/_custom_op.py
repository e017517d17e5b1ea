"""custom_op: a Python function (usually around your C kernel) as an op, as torch.library.custom_op.

    @custom_op("mylib::scale", mutates_args=())
    def scale(x: Tensor, alpha: float) -> Tensor:
        x = x.contiguous()              # empty_like keeps x's layout: C order first
        y = cextend.empty_like(x)
        lib.scale(x, y, x.numel(), alpha)
        return y

    scale.register_autograd(lambda ctx, g: (g * ctx.alpha, None),
                            setup_context=lambda ctx, inputs, output: setattr(ctx, "alpha", inputs[1]))

Calling the op binds its arguments to the function's signature, checks
each against its schema type as torch's dispatcher does (a string for a
float is a RuntimeError naming the op, the argument and the type, not a
failure deep in the kernel), picks the kernel for the tensors' device, and
runs it with grad mode off.  When grad
mode is on and an input requires grad, the call is recorded through a
Function subclass made for the op (GeneratedBackwardFor_<ns>_<name>_default,
as torch names it), whose backward is the registered formula.  Tensors named
in mutates_args get their version counters bumped, so autograd notices that
they changed.  Outputs may not alias inputs or each other.
"""
import inspect

import numpy as np

from cextend.autograd import Function
from cextend.autograd.grad_mode import is_grad_enabled, no_grad
from cextend._errors import ArgumentError, ArgumentTypeError
from cextend.library._schema import (UNKNOWN_MUTATES, argument_checks, describe_value, infer_schema,
                                     param_schema_types, resolved_annotations)
from cextend.tensor import Tensor

OPDEFS = {}


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Wrap fn into a custom op named "namespace::name" (as torch.library.custom_op).

    mutates_args: the names of the arguments fn writes to ((), or "unknown"
    for every Tensor argument).  device_types: "cpu", "cuda" or a list of
    them for which fn is the kernel (None: every device).  Usable as a
    decorator, with or without fn.
    """
    def inner(fn):
        schema_text = infer_schema(fn, mutates_args=mutates_args) if schema is None else schema
        namespace, opname = _split_name(name)
        op = CustomOpDef(namespace, opname, schema_text, fn, mutates_args)
        op.register_kernel(device_types)(fn)
        return op
    if fn is None:
        return inner
    return inner(fn)


def _split_name(name):
    if not isinstance(name, str) or name.count("::") != 1:
        raise ValueError("custom_op name must look like \"namespace::name\" (e.g. \"mylib::my_linear\"), got %r"
                         % (name,))
    namespace, opname = name.split("::")
    for part in (namespace, opname):
        if not part.isidentifier():
            raise ValueError("custom_op name %r: %r is not a valid identifier" % (name, part))
    return namespace, opname


class CustomOpDef:
    """The op custom_op returns: call it, or register more behaviour on it."""

    def __init__(self, namespace, name, schema, fn, mutates_args):
        self._namespace = namespace
        self._name = name
        self._schema = schema
        self._init_fn = fn
        self._signature = resolved_annotations(fn)
        types = param_schema_types(self._signature)          # None where a given schema= covers a name
        tensor_params = tuple(n for n, t in types.items() if t is None or t.startswith("Tensor"))
        if isinstance(mutates_args, str):
            self._mutated = tensor_params if mutates_args == UNKNOWN_MUTATES else ()
        else:
            self._mutated = tuple(n for n in self._signature.parameters if n in set(mutates_args))
        self._positional = tuple(n for n, p in self._signature.parameters.items()
                                 if p.kind != inspect.Parameter.KEYWORD_ONLY)
        self._keyword_only = tuple(n for n, p in self._signature.parameters.items()
                                   if p.kind == inspect.Parameter.KEYWORD_ONLY)
        checks = argument_checks(schema)
        self._argument_checks = tuple((name, position, checks[name])
                                      for position, name in enumerate(self._signature.parameters)
                                      if name in checks)
        self._backend_fns = {}
        self._abstract_fn = None
        self._setup_context_fn = None
        self._backward_fn = None
        self._function = _make_function(self)
        self.__name__ = getattr(fn, "__name__", name)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__module__ = getattr(fn, "__module__", __name__)
        if any(t is not None and t.startswith("Tensor") for n, t in types.items() if n in self._keyword_only):
            raise NotImplementedError("custom_op with kwarg-only Tensor args. Please make your tensors not "
                                      "kwarg-only. Got: %s" % schema)
        OPDEFS[self._qualname] = self

    @property
    def _qualname(self):
        return "%s::%s" % (self._namespace, self._name)

    def __repr__(self):
        return "<CustomOpDef(%s)>" % self._qualname

    # -- registration ------------------------------------------------------
    def register_kernel(self, device_types, fn=None, /):
        """fn as the op's implementation for device_types ("cpu", "cuda", a list; None: all)."""
        def inner(fn):
            kinds = [device_types] if device_types is None or isinstance(device_types, str) else list(device_types)
            for kind in kinds:
                if kind not in (None, "cpu", "cuda"):
                    raise ValueError("%s: unknown device type %r (expected 'cpu' or 'cuda')" % (self, kind))
                self._backend_fns[kind] = fn
            return fn
        return inner if fn is None else inner(fn)

    def register_fake(self, fn, /):
        """fn(*args) -> outputs of the right shape and dtype, without computing (opcheck compares)."""
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """backward(ctx, *grads) -> one gradient (or None) per input; setup_context(ctx, inputs, output)
        (with keyword_only_inputs between them if the op has keyword-only arguments) saves what it needs."""
        if self._mutated:
            raise RuntimeError("Cannot register autograd formula for non-functional operator %s with schema "
                               "%s::%s%s. Please create a functional operator and register an autograd "
                               "formula for that." % (self, self._namespace, self._name, self._schema))
        self._backward_fn = backward
        self._setup_context_fn = setup_context

    # -- calling -----------------------------------------------------------
    def _bind(self, args, kwargs):
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError("%s: %s (schema: %s)" % (self._qualname, error, self._schema)) from None
        bound.apply_defaults()
        return (tuple(bound.arguments[n] for n in self._positional),
                {n: bound.arguments[n] for n in self._keyword_only})

    def _check_arguments(self, positional, keyword_only):
        """Each argument against its schema type, as torch's dispatcher converts
        them: a RuntimeError (and a TypeError) naming the op, the argument and
        the type, before the kernel runs."""
        count = len(positional)
        schema = self._schema if not self._schema.startswith("(") else self._qualname + self._schema
        for name, position, check in self._argument_checks:
            value = positional[position] if position < count else keyword_only[name]
            ok = check(value)
            if ok is True:
                continue
            if ok == "range":
                raise ArgumentError("%s(): argument '%s' (position %d) must be an int within int64 (schema type "
                                    "'%s'), but got %s; schema: %s"
                                    % (self._qualname, name, position, check.schema_type, describe_value(value),
                                       schema))
            raise ArgumentTypeError("%s(): argument '%s' (position %d) must be %s (schema type '%s'), but got %s; "
                                    "schema: %s" % (self._qualname, name, position, check.expected,
                                                    check.schema_type, describe_value(value), schema))

    def _tensors(self, positional):
        """Every Tensor among the arguments (list arguments flattened)."""
        found = []
        for name, value in zip(self._positional, positional):
            if isinstance(value, Tensor):
                found.append((name, value))
            elif _is_tensor_list(value):
                found.extend((name, v) for v in value if isinstance(v, Tensor))
        return found

    def _kernel(self, positional):
        kinds = {("cuda" if t.is_cuda else "cpu") for _, t in self._tensors(positional)}
        kind = "cuda" if "cuda" in kinds else "cpu"
        kernel = self._backend_fns.get(kind) or self._backend_fns.get(None)
        if kernel is None:
            raise NotImplementedError("%s has no kernel for %s tensors (registered: %s); add one with "
                                      "%s.register_kernel(%r)" % (self._qualname, kind,
                                                                  ", ".join(str(k) for k in self._backend_fns),
                                                                  self.__name__, kind))
        return kernel

    def __call__(self, *args, **kwargs):
        positional, keyword_only = self._bind(args, kwargs)
        self._check_arguments(positional, keyword_only)
        kernel = self._kernel(positional)
        tensors = self._tensors(positional)
        if is_grad_enabled() and any(t.requires_grad for _, t in tensors):
            result = self._function.apply_op(kernel, positional, keyword_only)
        else:
            with no_grad():
                result = kernel(*positional, **keyword_only)
            check_aliasing(self, positional, result)
        for name, tensor in tensors:
            if name in self._mutated:
                tensor._bump_version()
        return result

    def _run_fake(self, *args, **kwargs):
        positional, keyword_only = self._bind(args, kwargs)
        self._check_arguments(positional, keyword_only)
        if self._abstract_fn is None:
            if self._schema.endswith("-> ()") and self._mutated:
                return None         # torch generates this trivial fake for mutating ops returning nothing
            raise RuntimeError("There was no fake impl registered for %s. This is necessary for "
                               "torch.compile/export/fx tracing to work. Please use `%s.register_fake` to "
                               "add an fake impl." % (self, self.__name__))
        with no_grad():
            return self._abstract_fn(*positional, **keyword_only)


def _storage_of(tensor):
    data = tensor._data
    return data if isinstance(data, np.ndarray) else getattr(data, "buffer", data)


def _overlap(a, b):
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.may_share_memory(a, b)
    return a is b


def aliasing_problem(op, positional, result):
    """A message if an output aliases an input or another output, else None."""
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    outputs = [o for o in outputs if isinstance(o, Tensor)]
    for i, out in enumerate(outputs):
        for name, tensor in op._tensors(positional):
            if out is tensor or _overlap(_storage_of(out), _storage_of(tensor)):
                return ("Argument %s is not defined to alias output but was aliasing (output %d of %s shares "
                        "memory with its argument %r; return a new tensor, e.g. .clone())"
                        % (name, i, op._qualname, name))
        for j in range(i):
            if outputs[j] is out or _overlap(_storage_of(outputs[j]), _storage_of(out)):
                return "Outputs %d and %d alias unexpectedly (in %s)" % (j, i, op._qualname)
    return None


def check_aliasing(op, positional, result):
    problem = aliasing_problem(op, positional, result)
    if problem:
        raise RuntimeError("%s: The output of this custom operator (1) must not also be an input to this "
                           "custom operator and (2) may not alias any inputs to this custom operator or "
                           "other returns. %s" % (op._name, problem))


class _Call:
    """What the generated Function needs beyond the flat Tensor arguments."""

    __slots__ = ("kernel", "structure", "keyword_only", "returned_list")

    def __init__(self, kernel, structure, keyword_only):
        self.kernel = kernel
        self.structure = structure          # per positional argument: None, or the list's length
        self.keyword_only = keyword_only
        self.returned_list = False


def _is_tensor_list(value):
    """A list argument holding Tensors (List[Tensor] / List[Optional[Tensor]])."""
    return isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value)


def _flatten(op, positional):
    flat, structure = [], []
    for value in positional:
        if _is_tensor_list(value):
            flat.extend(value)
            structure.append(len(value))
        else:
            flat.append(value)
            structure.append(None)
    return flat, structure


def _unflatten(flat, structure):
    args, i = [], 0
    for length in structure:
        if length is None:
            args.append(flat[i])
            i += 1
        else:
            args.append(list(flat[i:i + length]))
            i += length
    return tuple(args)


def _make_function(op):
    """The Function subclass that records op calls for autograd."""
    def forward(ctx, *flat):
        call = flat[-1]
        args = _unflatten(flat[:-1], call.structure)
        output = call.kernel(*args, **call.keyword_only)
        check_aliasing(op, args, output)
        if op._setup_context_fn is not None:
            if op._keyword_only:
                op._setup_context_fn(ctx=ctx, inputs=args, keyword_only_inputs=dict(call.keyword_only),
                                     output=output)
            else:
                op._setup_context_fn(ctx=ctx, inputs=args, output=output)
        ctx._cextend_call = call
        if isinstance(output, list):
            call.returned_list = True
            return tuple(output)
        return output

    def backward(ctx, *grads):
        if op._backward_fn is None:
            raise RuntimeError("Trying to backward through %s.%s.default but no autograd formula was "
                               "registered. Please use register_autograd to add one."
                               % (op._namespace, op._name))
        call = ctx._cextend_call
        flat_needs = ctx.needs_input_grad
        ctx.needs_input_grad = _unflatten(flat_needs[:-1], call.structure)
        try:
            result = op._backward_fn(ctx, *grads)
        finally:
            ctx.needs_input_grad = flat_needs
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) != len(call.structure):
            raise RuntimeError("%s: the registered backward returned %d gradient(s), but the op has %d input(s) "
                               "(%s); return one gradient (or None) per input, in order"
                               % (op._qualname, len(result), len(call.structure), ", ".join(op._positional)))
        flat = []
        for grad, length, name in zip(result, call.structure, op._positional):
            if length is None:
                flat.append(grad)
            elif grad is None:
                flat.extend([None] * length)
            elif len(grad) != length:
                raise RuntimeError("%s: the gradient for list argument %r has %d entries, expected %d"
                                   % (op._qualname, name, len(grad), length))
            else:
                flat.extend(grad)
        return tuple(flat) + (None,)

    name = "GeneratedBackwardFor_%s_%s_default" % (op._namespace, op._name)
    cls = type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                                   "__module__": __name__})

    def apply_op(kernel, positional, keyword_only):
        flat, structure = _flatten(op, positional)
        call = _Call(kernel, structure, keyword_only)
        result = cls.apply(*flat, call)
        return list(result) if call.returned_list else result

    cls.apply_op = staticmethod(apply_op)
    return cls
