"""Module backward hooks: torch's BackwardHook and BackwardHookFunction.

A module's positional Tensor inputs and its outputs pass through an
identity Function; the hooks of that Function's nodes see the gradients
with respect to the outputs, then with respect to the inputs, and call the
module's full backward (pre-)hooks with them (cextend.nn.module).
"""
import functools
import warnings
import weakref

from cextend.autograd.function import Function
from cextend.autograd.grad_mode import is_grad_enabled
from cextend.tensor import Tensor


# -- backward hooks: torch's BackwardHook and BackwardHookFunction ---------------------------------
class BackwardHookFunction(Function):
    """The identity, applied to a module's Tensor inputs and to its outputs so
    that one node sees their gradients (torch.nn.modules._functions'). Its
    outputs are views of its inputs made inside a custom Function, so modifying
    one in place raises torch's view+inplace error."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *args):
        return args


class _WrappedHook:
    """A legacy backward hook on a node: hook(module, grad_input, grad_output)
    (the module held weakly, as torch's)."""

    def __init__(self, hook, module):
        self.hook = hook
        self.module = weakref.ref(module)
        functools.update_wrapper(self, hook)

    def __call__(self, grad_input, grad_output):
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        result = self.hook(module, grad_input, grad_output)
        if result is not None and len(result) != len(grad_input):
            # torch's engine checks every node hook's result so
            raise RuntimeError("hook '{}' has returned an incorrect number of values (got {}, but expected {})"
                               .format(getattr(self.hook, "__name__", "hook"), len(result), len(grad_input)))
        return result


def _pack_with_none(indices, values, size):
    res = [None] * size
    for idx, val in zip(indices, values):
        res[idx] = val
    return tuple(res)


class _BackwardHook:
    """One call's full backward hooks (torch.utils.hooks.BackwardHook): the
    output node's hook records grad_output (after the pre-hooks, which may
    replace it); the input node's hook hands grad_input and grad_output to the
    user hooks, which may replace grad_input. Non-Tensor positions read None."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _set_user_hook(self, grad_fn):
        def hook(grad_input, _):
            if self.grad_outputs is None:
                # the gradient reached the inputs without passing the outputs
                # (a double backward)
                return None
            res = _pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, got {}, but "
                                       "expected {}".format(len(out), len(res)))
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_tensors_index)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args):
        tensors_idx = []
        tensors = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad
        if not (requires_grad and is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        if len(new_tensors) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input Tensors.")
        grad_fns = [t.grad_fn for t in new_tensors
                    if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        if not grad_fns:
            raise RuntimeError("Error while setting up backward hooks. Please open an issue with a code sample "
                               "to reproduce this.")
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        out = tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args):
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        def fn(grad_fn):
            def hook(_, grad_output):
                self.grad_outputs = _pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
                if self.user_pre_hooks:
                    expected_len = len(self.grad_outputs)
                    for user_pre_hook in self.user_pre_hooks:
                        hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
                        if hook_grad_outputs is None:
                            continue
                        actual_len = len(hook_grad_outputs)
                        if actual_len != expected_len:
                            raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                               "got {}, but expected {}".format(actual_len, expected_len))
                        self.grad_outputs = hook_grad_outputs
                local_grad_outputs = self.grad_outputs
                if self.input_tensors_index is None:
                    # no input requires grad: the hooks fire here, with grad_input all None
                    warnings.warn("Full backward hook is firing when gradients are computed with respect to "
                                  "module outputs since no inputs require gradients. See "
                                  "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                                  "#torch.nn.Module.register_full_backward_hook for more details.",
                                  stacklevel=5)
                    grad_inputs = _pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients.")
                    self.grad_outputs = None
                if local_grad_outputs is not None:
                    return tuple(local_grad_outputs[i] for i in self.output_tensors_index)
                return None

            grad_fn.register_hook(hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]
