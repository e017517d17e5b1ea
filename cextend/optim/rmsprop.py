"""RMSprop: torch.optim.RMSprop (alpha, eps, centered, momentum, weight decay, maximize)."""
from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.adam import _steps_as_tensors
from cextend.optim.optimizer import Optimizer
from cextend.tensor import Tensor


class RMSprop(Optimizer):
    """RMSprop as torch's single-tensor algorithm: square_avg.mul_(alpha).addcmul_(grad, grad,
    1 - alpha); centered subtracts grad_avg**2 before the square root; eps is added after it."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= eps:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        if not 0.0 <= momentum:
            raise ValueError("Invalid momentum value: {}".format(momentum))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        if not 0.0 <= alpha:
            raise ValueError("Invalid alpha value: {}".format(alpha))
        check_flags("RMSprop", differentiable=differentiable, foreach=foreach, capturable=capturable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        _steps_as_tensors(self)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = F.scalar(group["lr"])
            alpha, eps, momentum = group["alpha"], group["eps"], group["momentum"]
            weight_decay, centered = group["weight_decay"], group["centered"]
            for p in self._with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = F.step_tensor()
                    state["square_avg"] = F.zeros_like(p._data)
                    if momentum > 0:
                        state["momentum_buffer"] = F.zeros_like(p._data)
                    if centered:
                        state["grad_avg"] = F.zeros_like(p._data)
                param = p._data
                grad = p.grad._data if not group["maximize"] else -p.grad._data
                square_avg = state["square_avg"]
                F.increment(state["step"])
                if weight_decay != 0:
                    grad = F.add(grad, param, alpha=weight_decay)
                F.mul_(square_avg._data, alpha)
                F.addcmul_(square_avg._data, grad, grad, value=1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]
                    F.lerp_(grad_avg._data, grad, 1 - alpha)
                    grad_avg._bump_version()
                    avg = F.addcmul_(square_avg._data.copy(), grad_avg._data, grad_avg._data, value=-1)
                    avg = F.sqrt(avg)
                else:
                    avg = F.sqrt(square_avg._data)
                avg += eps
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    F.mul_(buf._data, momentum)
                    F.addcdiv_(buf._data, grad, avg)
                    buf._bump_version()
                    F.add_(param, buf._data, alpha=-lr)
                else:
                    F.addcdiv_(param, grad, avg, value=-lr)
                F.bump(p, square_avg)
        return loss
