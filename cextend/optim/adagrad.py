"""Adagrad: torch.optim.Adagrad (lr_decay, initial_accumulator_value, eps, weight decay, maximize)."""
from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.optimizer import Optimizer
from cextend.tensor import Tensor


class Adagrad(Optimizer):
    """Adagrad as torch's single-tensor algorithm: sum += grad * grad; the step size
    lr / (1 + (step - 1) * lr_decay); param -= clr * grad / (sqrt(sum) + eps).

    As in torch, the state (`step` and the `sum` accumulator) of the
    parameters given at construction is created right away.
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= lr_decay:
            raise ValueError("Invalid lr_decay value: {}".format(lr_decay))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        if not 0.0 <= initial_accumulator_value:
            raise ValueError("Invalid initial_accumulator_value value: {}".format(initial_accumulator_value))
        if not 0.0 <= eps:
            raise ValueError("Invalid epsilon value: {}".format(eps))
        check_flags("Adagrad", differentiable=differentiable, fused=fused, foreach=foreach)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = F.step_tensor()
                state["sum"] = F.full_like(p._data, initial_accumulator_value)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
        for s in self.state.values():
            if isinstance(s, dict) and "step" in s and not isinstance(s["step"], Tensor):
                s["step"] = F.step_tensor(float(s["step"]))

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = F.scalar(group["lr"])
            weight_decay, lr_decay, eps = group["weight_decay"], group["lr_decay"], group["eps"]
            for p in self._with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    # torch fills a group added later from the optimizer-wide default
                    state["step"] = F.step_tensor()
                    state["sum"] = F.full_like(p._data, self.defaults["initial_accumulator_value"])
                param = p._data
                state_sum = state["sum"]
                step = F.increment(state["step"])
                grad = p.grad._data if not group["maximize"] else -p.grad._data
                if weight_decay != 0:
                    grad = F.add(grad, param, alpha=weight_decay)
                clr = lr / (1 + (step - 1) * lr_decay)
                F.addcmul_(state_sum._data, grad, grad, value=1)
                std = F.sqrt(state_sum._data)
                std += eps
                F.addcdiv_(param, grad, std, value=-clr)
                F.bump(p, state_sum)
        return loss
