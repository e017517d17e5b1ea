"""Optimizers: SGD and Adam, updating in the order PyTorch's do.

Updates run on the parameters' arrays outside the graph, each step
written as the sequence of in-place operations torch performs, so a step
agrees with torch's to rounding in both float32 and float64.
"""
import math

import numpy as np

from cextend.tensor import Tensor


class Optimizer:
    """Base: param_groups (lists of parameters with their settings) and state."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = {}
        self.param_groups = []
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group):
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, got %s" % type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._data[...] = 0
                    p.grad._bump_version()

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(p, p.grad._data, group, self.state.setdefault(id(p), {}))
                    p._bump_version()
        return loss

    def _update(self, p, grad, group, state):
        raise NotImplementedError


def _check(name, value, minimum=0.0):
    if not value >= minimum:
        raise ValueError("Invalid %s value: %r" % (name, value))


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening,
    Nesterov momentum and weight decay (torch.optim.SGD's algorithm)."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, maximize=False):
        _check("learning rate", lr)
        _check("momentum", momentum)
        _check("weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize))

    def _update(self, p, grad, group, state):
        data = p._data
        d_p = -grad if group["maximize"] else grad
        if group["weight_decay"] != 0:
            d_p = d_p + group["weight_decay"] * data
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = d_p.copy()
            else:
                buf *= momentum
                buf += (1 - group["dampening"]) * d_p
            d_p = d_p + momentum * buf if group["nesterov"] else buf
        data -= group["lr"] * d_p


class Adam(Optimizer):
    """Adam (torch.optim.Adam's single-tensor algorithm, amsgrad optional)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, maximize=False):
        _check("learning rate", lr)
        _check("epsilon", eps)
        _check("weight_decay", weight_decay)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError("Invalid beta parameter at index %d: %r" % (i, beta))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _update(self, p, grad, group, state):
        data = p._data
        if group["maximize"]:
            grad = -grad
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(data)
            state["exp_avg_sq"] = np.zeros_like(data)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = np.zeros_like(data)
        beta1, beta2 = group["betas"]
        state["step"] += 1
        step = state["step"]
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * data
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg += (grad - exp_avg) * (1 - beta1)                 # lerp_(grad, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad                   # addcmul_(grad, grad, 1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = group["lr"] / bias_correction1
        bias_correction2_sqrt = math.sqrt(bias_correction2)
        if group["amsgrad"]:
            np.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
            denom = np.sqrt(state["max_exp_avg_sq"]) / bias_correction2_sqrt + group["eps"]
        else:
            denom = np.sqrt(exp_avg_sq) / bias_correction2_sqrt + group["eps"]
        data -= step_size * (exp_avg / denom)                     # addcdiv_(exp_avg, denom, -step_size)
