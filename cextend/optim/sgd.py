"""SGD: torch.optim.SGD (momentum, dampening, Nesterov, weight decay, maximize)."""
import numpy as np

from cextend import _backend
from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.optimizer import Optimizer
from cextend.tensor import _wrap


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum.

    The step is torch's single-tensor algorithm: with momentum the buffer
    starts as a copy of the first gradient (no dampening on that step),
    then buf = momentum * buf + (1 - dampening) * grad.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if lr < 0.0:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if momentum < 0.0:
            raise ValueError("Invalid momentum value: {}".format(momentum))
        if weight_decay < 0.0:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        check_flags("SGD", differentiable=differentiable, fused=fused, foreach=foreach)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            momentum = group["momentum"]
            lr = F.scalar(group["lr"])
            weight_decay = F.scalar(group["weight_decay"])
            for p in self._with_grad(group):
                state = self.state[p] if momentum != 0 else None
                if _fused_step(p, state, group, lr, weight_decay):
                    continue
                grad = p.grad._data if not group["maximize"] else -p.grad._data
                if weight_decay != 0:
                    grad = F.add(grad, p._data, alpha=weight_decay)
                if momentum != 0:
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = _wrap(grad.copy())
                    else:
                        F.mul_(buf._data, momentum)
                        F.add_(buf._data, grad, alpha=1 - group["dampening"])
                        buf._bump_version()
                    state["momentum_buffer"] = buf
                    grad = F.add(grad, buf._data, alpha=momentum) if group["nesterov"] else buf._data
                F.add_(p._data, grad, alpha=-lr)
                p._bump_version()
        return loss


def _fused_step(p, state, group, lr, weight_decay):
    """The whole update of p (and its momentum buffer) in one C call, with the arithmetic of
    the step written out in SGD.step; False, having changed nothing, where the kernel does not
    take the arrays (strided, another dtype, on a device), and the step then runs op by op."""
    data = p._data
    if type(data) is not np.ndarray:            # a device array: its own ops, op by op
        return False
    momentum = group["momentum"]
    buf = state.get("momentum_buffer") if state is not None else None
    first = momentum != 0 and buf is None
    array = np.empty_like(data) if first else (buf._data if buf is not None else None)
    try:
        done = _backend.sgd_step(data, p.grad._data, array, first, lr, weight_decay, momentum,
                                 group["dampening"], group["nesterov"], group["maximize"])
    except TypeError:           # a hyperparameter that is not a number: the op-by-op step says so
        return False
    if not done:
        return False
    if first:
        state["momentum_buffer"] = _wrap(array)
    elif buf is not None:
        buf._bump_version()
    p._bump_version()
    return True
