"""Adadelta: torch.optim.Adadelta (rho, eps, lr, weight decay, maximize)."""
from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.adam import _steps_as_tensors
from cextend.optim.optimizer import Optimizer
from cextend.tensor import Tensor


class Adadelta(Optimizer):
    """Adadelta as torch's single-tensor algorithm: square_avg tracks grad**2,
    delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * grad, acc_delta tracks
    delta**2, and param -= lr * delta."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= rho <= 1.0:
            raise ValueError("Invalid rho value: {}".format(rho))
        if not 0.0 <= eps:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        check_flags("Adadelta", differentiable=differentiable, foreach=foreach, capturable=capturable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        _steps_as_tensors(self)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = F.scalar(group["lr"])
            rho, eps, weight_decay = group["rho"], group["eps"], group["weight_decay"]
            for p in self._with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = F.step_tensor()
                    state["square_avg"] = F.zeros_like(p._data)
                    state["acc_delta"] = F.zeros_like(p._data)
                param = p._data
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                F.increment(state["step"])
                grad = p.grad._data if not group["maximize"] else -p.grad._data
                if weight_decay != 0:
                    grad = F.add(grad, param, alpha=weight_decay)
                F.mul_(square_avg._data, rho)
                F.addcmul_(square_avg._data, grad, grad, value=1 - rho)
                std = F.sqrt(square_avg._data + eps)
                delta = F.sqrt(acc_delta._data + eps)
                delta /= std
                delta *= grad
                F.mul_(acc_delta._data, rho)
                F.addcmul_(acc_delta._data, delta, delta, value=1 - rho)
                F.add_(param, delta, alpha=-lr)
                F.bump(p, square_avg, acc_delta)
        return loss
