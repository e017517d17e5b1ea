"""NAdam: torch.optim.NAdam (momentum_decay, decoupled weight decay, maximize)."""
from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.adamax import check_lr_eps_betas_decay, set_flag_defaults
from cextend.optim.optimizer import Optimizer
from cextend.tensor import Tensor


class NAdam(Optimizer):
    """NAdam as torch's single-tensor algorithm.

    mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay)); the running
    product of the mu_t is kept in state (`mu_product`, a 0-d tensor of the
    `step` counter's dtype, rounded there as torch's is); the moments follow
    Adam's, denom = sqrt(exp_avg_sq / (1 - beta2**t)) + eps, and the
    parameter takes the gradient's and the moment's Nesterov terms as two
    addcdiv_ steps.  decoupled_weight_decay=True multiplies the parameter by
    1 - lr * weight_decay instead of adding weight_decay * param to the
    gradient.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_lr_eps_betas_decay(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError("Invalid momentum_decay value: {}".format(momentum_decay))
        check_flags("NAdam", differentiable=differentiable, foreach=foreach, capturable=capturable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        set_flag_defaults(self, decoupled_weight_decay=False)
        for p_state in self.state.values():
            if isinstance(p_state, dict) and "mu_product" in p_state \
                    and not isinstance(p_state["mu_product"], Tensor):
                p_state["mu_product"] = F.step_tensor(float(p_state["mu_product"]))

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = (F.scalar(b) for b in group["betas"])
            lr = F.scalar(group["lr"])
            eps, weight_decay = group["eps"], group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            for p in self._with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = F.step_tensor()
                    state["mu_product"] = F.step_tensor(1.0)
                    state["exp_avg"] = F.zeros_like(p._data)
                    state["exp_avg_sq"] = F.zeros_like(p._data)
                param = p._data
                exp_avg, exp_avg_sq, mu_product = state["exp_avg"], state["exp_avg_sq"], state["mu_product"]
                grad = p.grad._data if not group["maximize"] else -p.grad._data
                step = F.increment(state["step"])
                bias_correction2 = 1 - beta2 ** step
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        F.mul_(param, 1 - lr * weight_decay)
                    else:
                        grad = F.add(grad, param, alpha=weight_decay)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                F.mul_(mu_product._data, mu)            # in the counter's dtype, as torch's 0-d tensor
                mu_product._bump_version()
                mu_product_value = float(mu_product._data)
                F.lerp_(exp_avg._data, grad, 1 - beta1)
                F.mul_(exp_avg_sq._data, beta2)
                F.addcmul_(exp_avg_sq._data, grad, grad, value=1 - beta2)
                denom = F.sqrt(exp_avg_sq._data / bias_correction2)
                denom += eps
                mu_product_next = mu_product_value * mu_next
                F.addcdiv_(param, grad, denom, value=(-lr * (1.0 - mu) / (1.0 - mu_product_value)))
                F.addcdiv_(param, exp_avg._data, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
                F.bump(p, exp_avg, exp_avg_sq)
        return loss
