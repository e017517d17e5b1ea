"""Optimizer: param_groups, per-parameter state, state_dict, hooks.

The same structure and semantics as torch.optim.Optimizer (2.13):

- `param_groups` is a list of dicts, each holding `params` (a list of
  Tensors) and that group's hyperparameters; a key a group leaves out takes
  the optimizer's `defaults`.
- `state` maps each parameter Tensor to a dict of its state (for example
  `exp_avg`, `step`); state values are cextend Tensors, `step` a 0-d
  float32 tensor as torch keeps it.
- `state_dict()` returns `{'state': {index: {...}}, 'param_groups':
  [{..., 'params': [indices]}]}`, parameters numbered in the order the
  groups list them.  Like torch's, it holds the live state tensors, not
  copies: deep-copy it to keep a snapshot.
- `load_state_dict(sd)` uses the loaded state as given: a state tensor
  whose dtype already matches its parameter is used as it is (not
  copied); floating state other than `step` is cast to the parameter's
  dtype.

Subclasses implement `step()` as torch's single-tensor (foreach=False)
algorithm, written as the same sequence of in-place operations on the
arrays behind the tensors (see `_functional`).
"""
import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain

from cextend import _capture
from cextend._overlap import check_not_self_overlapping
from cextend.autograd.grad_mode import enable_grad, no_grad
from cextend.tensor import Tensor
from cextend.utils.hooks import RemovableHandle


class _RequiredParameter:
    """Singleton marking a hyperparameter that has no default."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    if isinstance(obj, Tensor):
        return "cextend.Tensor"
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module == "builtins" else module + "." + name


class Optimizer:
    """Base class of all optimizers.

    params: an iterable of Tensors, or of dicts (parameter groups) each with
    a "params" entry and optional per-group hyperparameters.
    defaults: the hyperparameters a group takes when it does not set them.
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors "
                            "or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __init_subclass__(cls, **kwargs):
        """Wrap each subclass's step() so that step hooks run around it."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_runs_step_hooks", False):
            cls.step = _with_step_hooks(step)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += "\nParameter Group %d\n" % i
            for key in sorted(group.keys()):
                if key != "params":
                    text += "    %s: %s\n" % (key, group[key])
        return text + ")"

    # -- parameter groups ---------------------------------------------------
    def add_param_group(self, param_group):
        """Add a group of parameters (a dict with "params") with its own settings."""
        if not isinstance(param_group, dict):
            raise TypeError("param_group must be a dict, but got %s" % type(param_group))
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list "
                            "instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names "
                                 "are missing")
            param_group["param_names"] = names

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization "
                                 "parameter %s" % name)
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, "
                          "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for "
                          "more information", stacklevel=3)

        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. cannot add "
                                 "param group %s to the optimizer" % which)
        if not seen.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def _with_grad(self, group):
        """The group's parameters that have a gradient, each checked before
        its update: torch refuses to write into a parameter whose elements
        share memory (an expanded one)."""
        for p in group["params"]:
            if p.grad is not None:
                if p._data.dtype.kind == "V":
                    # the update kernels read float32/float64 memory; bfloat16 bits would be misread
                    raise TypeError("%s.step(): bfloat16 parameters are not supported by cextend's "
                                    "optimizers; keep float32 parameters (and cast a copy to bfloat16)"
                                    % type(self).__name__)
                check_not_self_overlapping(p._data)
                yield p

    # -- gradients ----------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Reset the gradients: to None (default), or to zeros in place."""
        if _capture._active is not None:        # a captured step replays this call as it is
            _capture.optimizer_used(self)
            return _capture.eager(Optimizer._zero_grad, self, set_to_none)
        return self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none):
        for group in self.param_groups:
            for p in group["params"]:
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

    def step(self, closure=None):
        """Perform one optimization step (the closure re-evaluates the loss)."""
        raise NotImplementedError

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- hooks --------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), run before step."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None, run after step."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state_dict ---------------------------------------------------------
    def state_dict(self):
        """{'state': {index: state}, 'param_groups': [{..., 'params': [index, ...]}]}.

        The state values are the live tensors (as in torch): copy.deepcopy
        the result to keep a snapshot that later steps do not change.
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        """Floating state follows the parameter's dtype; `step` is kept as it is."""
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        """Load state from state_dict() output (of this or an equal optimizer).

        Parameters are matched by position, group by group.  State tensors are
        used as given (not copied) when their dtype already matches.
        """
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size "
                             "of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, param_id,
                                                                           param_groups, key)
            if isinstance(value, dict):
                return {k: cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, param_id=param_id, param_groups=param_groups)
                                   for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


def _add_hook(hooks, hook, prepend):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _with_step_hooks(step):
    """step() run with grad recording off, between the pre and post hooks."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if _capture._active is not None:        # a captured step replays this call as it is
            _capture.optimizer_used(self)
            return _capture.eager(run, self, args, kwargs)
        return run(self, args, kwargs)

    def run(self, args, kwargs):
        for hook in list(self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError("optimizer_pre_hook must return None or a tuple of "
                                       "(new_args, new_kwargs), but got %s." % (result,))
        with no_grad():
            out = step(self, *args, **kwargs)
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper._runs_step_hooks = True
    return wrapper
