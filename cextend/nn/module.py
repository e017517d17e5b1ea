"""Module: the base class of layers, with torch.nn.Module's rules.

- Attribute assignment registers Parameters, sub-Modules and buffers, and
  a new kind of value under an existing name replaces the old one
  everywhere (a submodule assigned over a buffer removes the buffer).
- `__call__` runs forward pre-hooks, `forward`, then forward hooks, with
  torch's rules for what a hook may return.
- Full backward hooks (register_full_backward_hook / _pre_hook) as
  torch's: the module's positional Tensor inputs and its outputs pass
  through an identity Function (BackwardHookFunction), whose nodes'
  hooks see the gradients w.r.t. the outputs, then w.r.t. the inputs.
- Global hooks for every module (register_module_forward_hook and kin,
  importable from cextend.nn.modules.module as from torch's), run before
  the module's own.
- state_dict / load_state_dict(strict, assign) with torch's keys, errors
  and `IncompatibleKeys` result, `_extra_state` from get_extra_state /
  set_extra_state; `to` (torch's argument forms and errors) / `float` /
  `double` / `half` / `cuda` / `cpu` convert parameters in place (their
  identity is kept, so an optimizer built earlier still holds them).

One class, as torch's, so that its parts (registration, traversal, calls,
state, conversion) read against torch's Module section by section.
"""
import itertools
import warnings
from collections import OrderedDict, namedtuple

from cextend import _capture
from cextend.autograd.grad_mode import no_grad
from cextend.nn.parameter import Parameter
from cextend.tensor import Tensor
from cextend.utils.hooks import RemovableHandle
from cextend import _dtype
from cextend._memory_format import preserve_format
from cextend.nn._backward_hooks import _BackwardHook, _WrappedHook
from cextend.nn._module_to import _parse_to


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return first + "\n" + "\n".join((spaces * " ") + line if line.strip() else "" for line in lines)


_TENSOR_TYPES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                 "int64": "LongTensor", "int32": "IntTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}


def _legacy_type_name(t):
    """torch.typename of a tensor: cextend.FloatTensor, cextend.cuda.DoubleTensor, ..."""
    prefix = "cextend.cuda." if t.device.type == "cuda" else "cextend."
    return prefix + _TENSOR_TYPES.get(t.dtype.name, "Tensor")


def _typename(obj):
    """torch.typename: legacy tensor type names, module-qualified class names otherwise."""
    if isinstance(obj, Tensor):
        return _legacy_type_name(obj)
    module = type(obj).__module__
    return type(obj).__qualname__ if module == "builtins" else module + "." + type(obj).__qualname__


_HOOK_DICTS = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
               "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
               "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


# -- global hooks: every module's, run before its own (torch.nn.modules.module's) ----------------
# Called just before a buffer, parameter or submodule is registered; may return a replacement.
_global_buffer_registration_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()
# Around every module's forward and backward (for debugging and profiling, as torch says).
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_is_full_backward_hook = None        # None: no global backward hook yet; True: full; False: legacy
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()
# a captured step replays only while no global hook would have run
_capture.module_hooks_exist = lambda: bool(_global_forward_hooks or _global_forward_pre_hooks
                                           or _global_backward_hooks or _global_backward_pre_hooks)

_MIXED_GLOBAL_BACKWARD_HOOKS = ("Cannot use both regular backward hooks and full backward hooks as a global "
                                "Module hook. Please use only one of them.")
_MIXED_BACKWARD_HOOKS = ("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                         "Please use only one of them.")


def _register_global(hooks, hook, extra_dict=None):
    handle = RemovableHandle(hooks, extra_dict=extra_dict)
    hooks[handle.id] = hook
    return handle


def register_module_buffer_registration_hook(hook):
    """hook(module, name, buffer) -> None or a replacement buffer, on every register_buffer."""
    return _register_global(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """hook(module, name, submodule) -> None or a replacement, on every add_module / submodule assignment."""
    return _register_global(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """hook(module, name, param) -> None or a replacement parameter, on every register_parameter."""
    return _register_global(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook):
    """hook(module, args) -> None or new args, before every module's forward (ahead of its own pre-hooks)."""
    return _register_global(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """hook(module, args, output) (with_kwargs: hook(module, args, kwargs, output)) -> None or a new
    output, after every module's forward (ahead of its own hooks); always_call: also when forward raises."""
    handle = _register_global(_global_forward_hooks, hook, extra_dict=[_global_forward_hooks_always_called,
                                                                       _global_forward_hooks_with_kwargs])
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_backward_hook(hook):
    """Deprecated (as torch's): the legacy backward hook for every module; see
    register_module_full_backward_hook."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError(_MIXED_GLOBAL_BACKWARD_HOOKS)
    _global_is_full_backward_hook = False
    return _register_global(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook):
    """hook(module, grad_output) -> None or a new grad_output, for every module (ahead of its own)."""
    return _register_global(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """hook(module, grad_input, grad_output) -> None or a new grad_input, for every module (ahead of
    its own)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError(_MIXED_GLOBAL_BACKWARD_HOOKS)
    _global_is_full_backward_hook = True
    return _register_global(_global_backward_hooks, hook)


def _run_registration_hooks(hooks, module, name, value):
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


class Module:
    """Subclass and define forward(); assign Parameters, Modules and buffers as attributes."""

    training: bool
    _version = 1        # saved in state_dict's _metadata, read back by _load_from_state_dict
    # True: __init__ passes its arguments on to the next class in the MRO
    # (for a Module mixed with another base class), as torch's
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and kwargs:
            raise TypeError("{}.__init__() got an unexpected keyword argument '{}'".format(
                type(self).__name__, next(iter(kwargs))))
        if self.call_super_init is False and args:
            raise TypeError("{}.__init__() takes 1 positional argument but {} were given".format(
                type(self).__name__, len(args) + 1))
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", {})
        set_(self, "_buffers", {})
        set_(self, "_non_persistent_buffers_set", set())
        for name in _HOOK_DICTS:
            set_(self, name, OrderedDict())
        set_(self, "_is_full_backward_hook", None)
        set_(self, "_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    def __setstate__(self, state):
        """Unpickling: a module pickled before a hook dict existed gets an empty one."""
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            if name not in self.__dict__:
                object.__setattr__(self, name, OrderedDict())
        if "_non_persistent_buffers_set" not in self.__dict__:
            object.__setattr__(self, "_non_persistent_buffers_set", set())
        if "_is_full_backward_hook" not in self.__dict__:
            object.__setattr__(self, "_is_full_backward_hook", None)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("Module [%s] is missing the required \"forward\" function"
                                  % type(self).__name__)

    # -- registration -----------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Add state that is not a parameter (in state_dict unless persistent=False)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError("buffer name should be a string. Got {}".format(_typename(name)))
        if "." in name:
            raise KeyError("buffer name can't contain \".\"")
        if name == "":
            raise KeyError("buffer name can't be empty string \"\"")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError("attribute '{}' already exists".format(name))
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError("cannot assign '{}' object to buffer '{}' (cextend Tensor or None required)"
                            .format(_typename(tensor), name))
        if _global_buffer_registration_hooks:
            tensor = _run_registration_hooks(_global_buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter (None keeps the name as an empty slot, left out of state_dict)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError("parameter name should be a string. Got {}".format(_typename(name)))
        if "." in name:
            raise KeyError("parameter name can't contain \".\"")
        if name == "":
            raise KeyError("parameter name can't be empty string \"\"")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError("attribute '{}' already exists".format(name))
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError("cannot assign '{}' object to parameter '{}' (cextend.nn.Parameter or None "
                            "required)".format(_typename(param), name))
        elif param.grad_fn is not None:
            raise ValueError("Cannot assign non-leaf Tensor to parameter '{0}'. Model parameters must be "
                             "created explicitly. To express '{0}' as a function of another Tensor, compute "
                             "the value in the forward() method.".format(name))
        else:
            if _global_parameter_registration_hooks:
                param = _run_registration_hooks(_global_parameter_registration_hooks, self, name, param)
            self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module (None keeps the name as an empty slot)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError("{} is not a Module subclass".format(_typename(module)))
        if not isinstance(name, str):
            raise TypeError("module name should be a string. Got {}".format(_typename(name)))
        if hasattr(self, name) and name not in self._modules:
            raise KeyError("attribute '{}' already exists".format(name))
        if "." in name:
            raise KeyError("module name can't contain \".\", got: {}".format(name))
        if name == "":
            raise KeyError("module name can't be empty string \"\"")
        if _global_module_registration_hooks:
            module = _run_registration_hooks(_global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    def register_module(self, name, module):
        self.add_module(name, module)

    def __getattr__(self, name):
        # reached for every parameter read (self.weight): a parameter first, with one lookup each
        d = self.__dict__
        store = d.get("_parameters")
        if store is not None and name in store:
            return store[name]
        for store in ("_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError("'{}' object has no attribute '{}'".format(type(self).__name__, name))

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError("cannot assign '{}' as parameter '{}' (cextend.nn.Parameter or None expected)"
                                .format(_typename(value), name))
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                if _global_module_registration_hooks:
                    value = _run_registration_hooks(_global_module_registration_hooks, self, name, value)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError("cannot assign '{}' as child module '{}' (cextend.nn.Module or None "
                                    "expected)".format(_typename(value), name))
                if _global_module_registration_hooks:
                    value = _run_registration_hooks(_global_module_registration_hooks, self, name, value)
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError("cannot assign '{}' as buffer '{}' (cextend.Tensor or None expected)"
                                        .format(_typename(value), name))
                    self.register_buffer(name, value, name not in self._non_persistent_buffers_set)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def _get_name(self):
        return type(self).__name__

    def get_submodule(self, target):
        """The submodule at a dotted path ("" is self); AttributeError naming the step that fails."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`module` is not an nn.Module, found {}".format(type(module)))
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target):
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    # -- traversal --------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    def modules(self, remove_duplicate=True):
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield module_prefix + ("." if module_prefix else "") + k, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    # -- calls and hooks --------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (a non-tuple is wrapped in one);
        with_kwargs: hook(module, args, kwargs) -> None or (new_args, new_kwargs)."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or a new output (with_kwargs: hook(module, args,
        kwargs, output)); always_call: run it even when forward raises."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                  self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or a new grad_output (a tuple as long), run when the
        gradients w.r.t. the module's outputs are known, before they flow on into it."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated, as torch's: a hook on the grad_fn of the module's (first) output, which sees
        that node's gradients; use register_full_backward_hook."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(_MIXED_BACKWARD_HOOKS)
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or a new grad_input: grad_input are the
        gradients w.r.t. the module's positional Tensor inputs (None for other arguments),
        grad_output w.r.t. its outputs. When no input requires grad it fires with grad_input
        all None; when no output does, never. forward then receives (and the caller gets) views
        of the tensors, which may not be modified in place."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(_MIXED_BACKWARD_HOOKS)
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _get_backward_hooks(self):
        """(full backward hooks, legacy backward hooks): the global ones first."""
        full_backward_hooks = []
        if _global_is_full_backward_hook is True:
            full_backward_hooks += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full_backward_hooks += self._backward_hooks.values()
        non_full_backward_hooks = []
        if _global_is_full_backward_hook is False:
            non_full_backward_hooks += _global_backward_hooks.values()
        if self._is_full_backward_hook is False:
            non_full_backward_hooks += self._backward_hooks.values()
        return full_backward_hooks, non_full_backward_hooks

    def _get_backward_pre_hooks(self):
        return list(_global_backward_pre_hooks.values()) + list(self._backward_pre_hooks.values())

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn):
        """torch's FutureWarnings where a legacy backward hook misses gradients."""
        if not isinstance(result, Tensor):
            if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
                warnings.warn("Using non-full backward hooks on a Module that does not return a single Tensor or "
                              "a tuple of Tensors is deprecated and will be removed in future versions. This hook "
                              "will be missing some of the grad_output. Please use register_full_backward_hook to "
                              "get the documented behavior.", FutureWarning, stacklevel=2)
                return
        else:
            result = (result,)
        if not isinstance(inputs, Tensor):
            if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
                warnings.warn("Using non-full backward hooks on a Module that does not take as input a single "
                              "Tensor or a tuple of Tensors is deprecated and will be removed in future versions. "
                              "This hook will be missing some of the grad_input. Please use "
                              "register_full_backward_hook to get the documented behavior.",
                              FutureWarning, stacklevel=2)
                return
        else:
            inputs = (inputs,)
        out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
        if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
            warnings.warn("Using a non-full backward hook when outputs are nested in python data structure is "
                          "deprecated and will be removed in future versions. This hook will be missing some "
                          "grad_output.", FutureWarning, stacklevel=2)
        elif len(out_grad_fn) > 1:
            warnings.warn("Using a non-full backward hook when outputs are generated by different autograd Nodes "
                          "is deprecated and will be removed in future versions. This hook will be missing some "
                          "grad_output. Please use register_full_backward_hook to get the documented behavior.",
                          FutureWarning, stacklevel=2)
        else:
            inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
            next_functions = {n[0] for n in grad_fn.next_functions}
            if inputs_grad_fn != next_functions:
                warnings.warn("Using a non-full backward hook when the forward contains multiple autograd Nodes "
                              "is deprecated and will be removed in future versions. This hook will be missing "
                              "some grad_input. Please use register_full_backward_hook to get the documented "
                              "behavior.", FutureWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_forward_hooks or _global_forward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            if _capture._active is not None:
                _capture.module_called(self)
            return self.forward(*args, **kwargs)
        if _capture._active is not None:
            _capture.refuse("a module hook runs")
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        """torch's _call_impl: global, then own forward pre-hooks; the backward hooks' identity on
        the inputs; forward; global, then own forward hooks; the identity on the outputs."""
        result = None
        called_always = set()
        try:
            full_backward_hooks, non_full_backward_hooks = [], []
            backward_pre_hooks = []
            if self._backward_pre_hooks or _global_backward_pre_hooks:
                backward_pre_hooks = self._get_backward_pre_hooks()
            if self._backward_hooks or _global_backward_hooks:
                full_backward_hooks, non_full_backward_hooks = self._get_backward_hooks()
            if _global_forward_pre_hooks or self._forward_pre_hooks:
                for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
                    if hook_id in self._forward_pre_hooks_with_kwargs:
                        new = hook(self, args, kwargs)
                        if new is not None:
                            if isinstance(new, tuple) and len(new) == 2:
                                args, kwargs = new
                            else:
                                raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                                   "new_kwargs), but got {}.".format(new))
                    else:
                        new = hook(self, args)
                        if new is not None:
                            args = new if isinstance(new, tuple) else (new,)
            bw_hook = None
            if full_backward_hooks or backward_pre_hooks:
                bw_hook = _BackwardHook(self, full_backward_hooks, backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            if _global_forward_hooks or self._forward_hooks:
                for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                    if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                        called_always.add(hook_id)
                    if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                        new = hook(self, args, kwargs, result)
                    else:
                        new = hook(self, args, result)
                    if new is not None:
                        result = new
            if bw_hook:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple "
                                  "of Tensors but received {}".format(type(result)), stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if non_full_backward_hooks:
                var = result
                while not isinstance(var, Tensor):
                    if isinstance(var, dict):
                        var = next(v for v in var.values() if isinstance(v, Tensor))
                    else:
                        var = var[0]
                grad_fn = var.grad_fn
                if grad_fn is not None:
                    for hook in non_full_backward_hooks:
                        grad_fn.register_hook(_WrappedHook(hook, self))
                    self._maybe_warn_non_full_backward_hook(args, result, grad_fn)
            return result
        except Exception:
            # the always_call hooks not run yet; torch calls the global ones without kwargs
            for hook_id, hook in list(_global_forward_hooks.items()):
                if hook_id in _global_forward_hooks_always_called and hook_id not in called_always:
                    try:
                        new = hook(self, args, result)
                        if new is not None:
                            result = new
                    except Exception as e:
                        warnings.warn("global module forward hook with ``always_call=True`` raised an exception "
                                      "that was silenced as another error was raised in forward: {}".format(e),
                                      stacklevel=2)
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            new = hook(self, args, kwargs, result)
                        else:
                            new = hook(self, args, result)
                        if new is not None:
                            result = new
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an exception that "
                                      "was silenced as another error was raised in forward: {}".format(e),
                                      stacklevel=2)
            raise

    # -- state_dict -------------------------------------------------------
    def get_extra_state(self):
        """Override (with set_extra_state) to keep more than tensors in state_dict: what it
        returns is stored under the `_extra_state` key."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. "
                           "Please file an issue to report this bug.")

    def set_extra_state(self, state):
        """Override (with get_extra_state): receives what load_state_dict finds under `_extra_state`."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. "
                           "Please file an issue to report this bug.")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if getattr(type(self), "get_extra_state", Module.get_extra_state) is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ordered name -> tensor mapping of parameters and persistent buffers (detached
        tensors sharing the parameters' storage, unless keep_vars)."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=2)
            if destination is None and len(args) > 0:
                destination = args[0]
            if prefix == "" and len(args) > 1:
                prefix = args[1]
            if keep_vars is False and len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if hasattr(destination, "_metadata"):
            # each module's version, as torch's: a checkpoint without it is
            # an old one, which a module may upgrade (BatchNorm's counter)
            destination._metadata[prefix[:-1]] = {"version": self._version}
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            if hook(self, destination, prefix, {}) is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) -> None, run before this module's entries are added."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None, run after this module's entries
        are added; it may edit state_dict in place."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs), run before this module's entries are loaded."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = lambda *args: hook(self, *args)
        return handle

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None, run after load_state_dict (may edit the key lists)."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append('While copying the parameter named "{}", expected cextend.Tensor or '
                                  'Tensor-like object from checkpoint but received {}'.format(key, type(input_param)))
                continue
            if len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
                input_param = input_param[0]          # 0.3-era checkpoints stored scalars as [1]
            if input_param.shape != param.shape:
                error_msgs.append("size mismatch for {}: copying a param with shape {} from checkpoint, the "
                                  "shape in current model is {}.".format(key, input_param.shape, param.shape))
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param, requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append('While copying the parameter named "{}", whose dimensions in the model are {} '
                                  'and whose dimensions in the checkpoint are {}, an exception occurred : {}.'
                                  .format(key, param.size(), input_param.size(), ex.args))
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(type(self), "set_extra_state", Module.set_extra_state) is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers in from state_dict.  Returns IncompatibleKeys(missing_keys,
        unexpected_keys); with strict, any such key is an error.  A shape mismatch is always one.
        assign=True makes the module hold the given tensors instead of copying into its own."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError("Expected state_dict to be dict-like, got {}.".format(type(state_dict)))
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be "
                                         "modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join('"{}"'.format(k) for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join('"{}"'.format(k) for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # -- modes ------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        if _capture._active is not None:        # a captured step replays this call as it is
            return _capture.eager(Module._zero_grad, self, set_to_none)
        return self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def apply(self, fn):
        """fn(module) for every submodule (children first), then for self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- conversion -------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """Convert every parameter, gradient and buffer with fn.  Parameters and their
        gradients keep their identity (their data is replaced, as torch's `.data =`)."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with no_grad():
                param.data = fn(param)
            if param.grad is not None:
                with no_grad():
                    param.grad.data = fn(param.grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """to(device=None, dtype=None, non_blocking=False), to(dtype, non_blocking=False),
        to(tensor, non_blocking=False), to(memory_format=...): floating parameters and buffers take
        the dtype (which must be a floating one), every one the device, and the 4-D and 5-D ones the
        memory format. Returns self. Other arguments raise torch's errors."""
        device, dtype, _non_blocking, convert_to_format = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            "dtype={}".format(dtype))

        def convert(t):
            if device is not None:
                t = t.to(device=device)
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype=dtype)
            if convert_to_format is not None and convert_to_format is not preserve_format and t.dim() in (4, 5):
                t = t.contiguous(memory_format=convert_to_format)
            return t

        return self._apply(convert)

    def cuda(self, device=None):
        target = "cuda" if device is None else "cuda:%d" % device if isinstance(device, int) else device
        return self._apply(lambda t: t.to(device=target))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dtype=dst_type))

    def _cast_floating(self, dtype):
        return self._apply(lambda t: t.to(dtype=dtype) if t.is_floating_point() else t)

    def float(self):
        return self._cast_floating(_dtype.float32)

    def double(self):
        return self._cast_floating(_dtype.float64)

    def half(self):
        return self._cast_floating(_dtype.float16)

    # -- printing ---------------------------------------------------------
    def extra_repr(self):
        """Override to show a layer's settings inside its repr."""
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"

    def __dir__(self):
        keys = set(object.__dir__(self)) | set(self._parameters) | set(self._modules) | set(self._buffers)
        return sorted(key for key in keys if not key[0].isdigit())     # not legal Python names
