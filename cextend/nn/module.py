"""Module: the base class of layers, with parameter/buffer/child registration."""
from collections import OrderedDict, namedtuple

import numpy as np

from cextend.nn.parameter import Parameter
from cextend.tensor import Tensor, _wrap

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Subclass and define forward(); assign Parameters and Modules as attributes."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("Module [%s] is missing the required \"forward\" function"
                                  % type(self).__name__)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -- registration -------------------------------------------------------
    def _check_ready(self):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameters or modules before Module.__init__() call")

    def register_parameter(self, name, param):
        """Add a parameter (or None, which keeps the name as an empty slot)."""
        self._check_ready()
        _check_name(name, self, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError("cannot assign '%s' object to parameter '%s' (cextend.nn.Parameter or None "
                            "required)" % (type(param).__name__, name))
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add state that is not a parameter (saved in state_dict if persistent)."""
        self._check_ready()
        _check_name(name, self, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError("cannot assign '%s' object to buffer '%s' (cextend Tensor or None required)"
                            % (type(tensor).__name__, name))
        self._buffers[name] = tensor
        if not persistent:
            self.__dict__.setdefault("_non_persistent", set()).add(name)

    def add_module(self, name, module):
        self._check_ready()
        if module is not None and not isinstance(module, Module):
            raise TypeError("%s is not a Module subclass" % type(module).__name__)
        _check_name(name, self, "module")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            self._check_ready()
            self.__dict__.pop(name, None)
            self._buffers.pop(name, None)
            self._modules.pop(name, None)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError("cannot assign '%s' as parameter '%s' (cextend.nn.Parameter or None "
                                "expected)" % (type(value).__name__, name))
            params[name] = None
        elif isinstance(value, Module):
            self._check_ready()
            self.__dict__.pop(name, None)
            self._parameters.pop(name, None)
            self._modules[name] = value
        elif self.__dict__.get("_modules") is not None and name in self._modules:
            if value is not None:
                raise TypeError("cannot assign '%s' as child module '%s' (cextend.nn.Module or None "
                                "expected)" % (type(value).__name__, name))
            self._modules[name] = None
        elif self.__dict__.get("_buffers") is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError("cannot assign '%s' as buffer '%s' (cextend Tensor or None expected)"
                                % (type(value).__name__, name))
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, ()):
                del self.__dict__[store][name]
                return
        object.__delattr__(self, name)

    # -- traversal ------------------------------------------------------------
    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def _named_members(self, store, prefix, recurse):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True):
        return self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- state --------------------------------------------------------------
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An ordered name -> tensor mapping of parameters and persistent buffers."""
        destination = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        skip = self.__dict__.get("_non_persistent", ())
        for name, b in self._buffers.items():
            if b is not None and name not in skip:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict=True):
        """Copy values in; with strict, missing or unexpected keys raise."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            array = value._data if isinstance(value, Tensor) else np.asarray(value)
            if tuple(array.shape) != tuple(target.shape):
                errors.append("size mismatch for %s: copying a param with shape %s from checkpoint, the "
                              "shape in current model is %s." % (key, list(array.shape), list(target.shape)))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: %s. " % ", ".join('"%s"' % k for k in unexpected))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: %s. " % ", ".join('"%s"' % k for k in missing))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for %s:\n\t%s"
                               % (type(self).__name__, "\n\t".join(errors)))
        for key, target in own.items():
            if key in state_dict:
                value = state_dict[key]
                target._data[...] = value._data if isinstance(value, Tensor) else np.asarray(value)
                target._bump_version()
        return _IncompatibleKeys(missing, unexpected)

    # -- modes and utilities ------------------------------------------------
    def train(self, mode=True):
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad._data[...] = 0
                p.grad._bump_version()

    def apply(self, fn):
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def _cast(self, numpy_dtype):
        for module in self.modules():
            for store in (module._parameters, module._buffers):
                for t in store.values():
                    if t is not None and t.is_floating_point():
                        t._data = t._data.astype(numpy_dtype)
                        if t.grad is not None:
                            t.grad = _wrap(t.grad._data.astype(numpy_dtype))
        return self

    def _move(self, device_type):
        """Parameters, buffers and their grads to "cuda" or "cpu", in place."""
        from cextend._device import DeviceArray
        from cextend.device import as_device
        as_device(device_type).require_available("Module.to")

        def moved(array):
            on_device = type(array) is DeviceArray
            if device_type == "cuda":
                return array if on_device else DeviceArray.from_host(array)
            return array.to_host() if on_device else array

        for module in self.modules():
            for store in (module._parameters, module._buffers):
                for t in store.values():
                    if t is not None:
                        t._data = moved(t._data)
                        if t.grad is not None:
                            t.grad = _wrap(moved(t.grad._data))
        return self

    def cuda(self):
        return self._move("cuda")

    def cpu(self):
        return self._move("cpu")

    def to(self, dtype=None, device=None):
        from cextend import _dtype
        from cextend.device import as_device
        if isinstance(dtype, str) and dtype.startswith(("cpu", "cuda")):
            dtype, device = None, dtype
        if device is not None:
            self._move(as_device(device).type)
        return self if dtype is None else self._cast(_dtype.as_dtype(dtype).numpy)

    def double(self):
        return self._cast(np.float64)

    def float(self):
        return self._cast(np.float32)

    def extra_repr(self):
        """Override to show a layer's settings inside its repr."""
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, child in self._modules.items():
            child_repr = repr(child).replace("\n", "\n  ")
            lines.append("(%s): %s" % (name, child_repr))
        if not lines:
            return type(self).__name__ + "()"
        if len(lines) == 1 and not self._modules:
            return "%s(%s)" % (type(self).__name__, lines[0])
        return "%s(\n  %s\n)" % (type(self).__name__, "\n  ".join(lines))

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))


def _check_name(name, module, what):
    if not isinstance(name, str):
        raise TypeError("%s name should be a string, got %s" % (what, type(name).__name__))
    if not name or "." in name:
        raise KeyError("%s name can't be empty or contain \".\", got %r" % (what, name))
    if name in module.__dict__ and not any(name in module.__dict__[s] for s in
                                           ("_parameters", "_buffers", "_modules")):
        raise KeyError("attribute '%s' already exists" % name)
