"""Adam and AdamW: torch.optim.Adam / AdamW (amsgrad, weight decay, maximize)."""
from cextend import _backend
from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.optimizer import Optimizer
from cextend.tensor import Tensor


class Adam(Optimizer):
    """Adam; with decoupled_weight_decay=True it is AdamW.

    The step is torch's single-tensor algorithm: exp_avg.lerp_(grad, 1 -
    beta1); exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2); the bias
    corrections from the float `step` counter; then
    param.addcdiv_(exp_avg, sqrt(v) / sqrt(bias_correction2) + eps, -lr / bias_correction1).
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
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
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, beta in enumerate(betas):
            if isinstance(beta, Tensor) and beta.numel() != 1:
                raise ValueError("Tensor betas[%d] must be 1-element" % i)
        check_flags(type(self).__name__, differentiable=differentiable, fused=fused, foreach=foreach,
                    capturable=capturable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
        _steps_as_tensors(self)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = (F.scalar(b) for b in group["betas"])
            lr = F.scalar(group["lr"])
            weight_decay = group["weight_decay"]
            eps = group["eps"]
            amsgrad = group["amsgrad"]
            for p in self._with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = F.step_tensor()
                    state["exp_avg"] = F.zeros_like(p._data)
                    state["exp_avg_sq"] = F.zeros_like(p._data)
                    if amsgrad:
                        state["max_exp_avg_sq"] = F.zeros_like(p._data)
                param = p._data
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                step = F.increment(state["step"])
                if not amsgrad and _fused_step(p, exp_avg, exp_avg_sq, group, lr, beta1, beta2, step):
                    F.bump(p, exp_avg, exp_avg_sq)
                    continue
                grad = p.grad._data if not group["maximize"] else -p.grad._data
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
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2 ** 0.5
                if amsgrad:
                    max_exp_avg_sq = state["max_exp_avg_sq"]
                    F.maximum_(max_exp_avg_sq._data, exp_avg_sq._data)
                    max_exp_avg_sq._bump_version()
                    denom = F.sqrt(max_exp_avg_sq._data) / bias_correction2_sqrt
                else:
                    denom = F.sqrt(exp_avg_sq._data) / bias_correction2_sqrt
                denom += eps
                F.addcdiv_(param, exp_avg._data, denom, value=-step_size)
                F.bump(p, exp_avg, exp_avg_sq)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay: param *= 1 - lr * weight_decay before the Adam step."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def _steps_as_tensors(optimizer):
    """State loaded with a plain-number `step` (older checkpoints) gets torch's 0-d float32 tensor."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            p_state = optimizer.state.get(p, [])
            if len(p_state) != 0 and "step" in p_state and not isinstance(p_state["step"], Tensor):
                p_state["step"] = F.step_tensor(float(p_state["step"]))


def _fused_step(p, exp_avg, exp_avg_sq, group, lr, beta1, beta2, step):
    """The update of p and its moments in one C call, with the arithmetic of Adam.step's
    op-by-op path (the same bits); False, having changed nothing, where the kernel does not take
    the arrays (strided, another dtype, on a device, amsgrad's running maximum)."""
    weight_decay = group["weight_decay"]
    if weight_decay == 0:
        mode, decay = _backend.ADAM_NO_DECAY, 0.0
    elif group["decoupled_weight_decay"]:
        mode, decay = _backend.ADAM_DECOUPLED, 1 - lr * weight_decay
    else:
        mode, decay = _backend.ADAM_L2, weight_decay
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    try:
        return _backend.adam_step(p._data, p.grad._data, exp_avg._data, exp_avg_sq._data, mode, decay, 1 - beta1,
                                  beta2, bias_correction2 ** 0.5, group["eps"], -(lr / bias_correction1),
                                  group["maximize"])
    except TypeError:           # a hyperparameter that is not a number: the op-by-op step says so
        return False
