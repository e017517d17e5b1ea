"""Adamax: torch.optim.Adamax (Adam with the infinity norm; weight decay, maximize)."""
from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.adam import _steps_as_tensors
from cextend.optim.optimizer import Optimizer
from cextend.tensor import Tensor


def check_lr_eps_betas_decay(lr, eps, betas, weight_decay):
    """The argument checks (and torch's messages) that Adamax, NAdam and RAdam share."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError("Invalid learning rate: {}".format(lr))
    if not 0.0 <= eps:
        raise ValueError("Invalid epsilon value: {}".format(eps))
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError("Invalid beta parameter at index 1: {}".format(betas[1]))
    if not 0.0 <= weight_decay:
        raise ValueError("Invalid weight_decay value: {}".format(weight_decay))


def set_flag_defaults(optimizer, **extra):
    """__setstate__'s defaults for the groups of an older state (torch's setdefault calls)."""
    for group in optimizer.param_groups:
        group.setdefault("foreach", None)
        group.setdefault("maximize", False)
        group.setdefault("differentiable", False)
        group.setdefault("capturable", False)
        for key, value in extra.items():
            group.setdefault(key, value)
    _steps_as_tensors(optimizer)


class Adamax(Optimizer):
    """Adamax as torch's single-tensor algorithm: exp_avg.lerp_(grad, 1 - beta1);
    exp_inf = maximum(beta2 * exp_inf, |grad| + eps); param.addcdiv_(exp_avg, exp_inf,
    -lr / (1 - beta1**step))."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        check_lr_eps_betas_decay(lr, eps, betas, weight_decay)
        check_flags("Adamax", differentiable=differentiable, foreach=foreach, capturable=capturable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        set_flag_defaults(self)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = (F.scalar(b) for b in group["betas"])
            lr = F.scalar(group["lr"])
            eps, weight_decay = group["eps"], group["weight_decay"]
            for p in self._with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = F.step_tensor()
                    state["exp_avg"] = F.zeros_like(p._data)
                    state["exp_inf"] = F.zeros_like(p._data)
                param = p._data
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                grad = p.grad._data if not group["maximize"] else -p.grad._data
                step = F.increment(state["step"])
                if weight_decay != 0:
                    grad = F.add(grad, param, alpha=weight_decay)
                F.lerp_(exp_avg._data, grad, 1 - beta1)
                F.mul_(exp_inf._data, beta2)
                norm = abs(grad)
                norm += eps
                F.maximum_(exp_inf._data, norm)
                clr = lr / (1 - beta1 ** step)
                F.addcdiv_(param, exp_avg._data, exp_inf._data, value=-clr)
                F.bump(p, exp_avg, exp_inf)
        return loss
