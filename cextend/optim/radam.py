"""RAdam: torch.optim.RAdam (rectified Adam; decoupled weight decay, maximize)."""
from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.adamax import check_lr_eps_betas_decay, set_flag_defaults
from cextend.optim.optimizer import Optimizer


class RAdam(Optimizer):
    """RAdam as torch's single-tensor algorithm.

    The moments follow Adam's; rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
    with rho_inf = 2 / (1 - beta2) - 1.  While rho_t <= 5 the step is the
    bias-corrected momentum times lr; after that it is also scaled by the
    adaptive term sqrt(1 - beta2**t) / (sqrt(exp_avg_sq) + eps) and the
    rectification sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)).
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        check_lr_eps_betas_decay(lr, eps, betas, weight_decay)
        check_flags("RAdam", differentiable=differentiable, foreach=foreach, capturable=capturable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        set_flag_defaults(self, decoupled_weight_decay=False)

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
                    state["exp_avg_sq"] = F.zeros_like(p._data)
                param = p._data
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                grad = p.grad._data if not group["maximize"] else -p.grad._data
                step = F.increment(state["step"])
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        F.mul_(param, 1 - lr * weight_decay)
                    else:
                        grad = F.add(grad, param, alpha=weight_decay)
                F.lerp_(exp_avg._data, grad, 1 - beta1)
                F.mul_(exp_avg_sq._data, beta2)
                F.addcmul_(exp_avg_sq._data, grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                update = exp_avg._data / bias_correction1 * lr
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    root = F.sqrt(exp_avg_sq._data)
                    root += eps
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    update = update * ((bias_correction2 ** 0.5) / root) * rect
                F.add_(param, update, alpha=-1.0)
                F.bump(p, exp_avg, exp_avg_sq)
        return loss
