"""ASGD: torch.optim.ASGD (averaged SGD; lambd, alpha, t0, weight decay, maximize)."""
from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.adamax import set_flag_defaults
from cextend.optim.optimizer import Optimizer
from cextend.tensor import Tensor


class ASGD(Optimizer):
    """Averaged stochastic gradient descent as torch's single-tensor algorithm.

    The state holds the step size `eta` and the averaging weight `mu` as
    0-d tensors of the `step` counter's dtype (so float32-rounded, as
    torch's), and the average `ax`.  Each step: param *= 1 - lambd * eta;
    param -= eta * grad; ax += (param - ax) * mu (ax = param while mu is 1);
    then eta = lr / (1 + lambd * lr * step)**alpha and mu = 1 / max(1, step - t0).
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= weight_decay:
            raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
        check_flags("ASGD", differentiable=differentiable, foreach=foreach, capturable=capturable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        set_flag_defaults(self)
        for p_state in self.state.values():
            if not isinstance(p_state, dict):
                continue
            for key in ("eta", "mu"):
                if key in p_state and not isinstance(p_state[key], Tensor):
                    p_state[key] = F.step_tensor(float(p_state[key]))

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = F.scalar(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            for p in self._with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = F.step_tensor()
                    state["eta"] = F.step_tensor(lr)
                    state["mu"] = F.step_tensor(1.0)
                    state["ax"] = F.zeros_like(p._data)
                param = p._data
                eta, mu, ax = state["eta"], state["mu"], state["ax"]
                grad = p.grad._data if not group["maximize"] else -p.grad._data
                step = F.increment(state["step"])
                if weight_decay != 0:
                    grad = F.add(grad, param, alpha=weight_decay)
                eta_value = float(eta._data)
                F.mul_(param, 1 - lambd * eta_value)
                F.add_(param, grad, alpha=-eta_value)
                mu_value = float(mu._data)
                if mu_value != 1:
                    difference = param - ax._data
                    difference *= mu_value
                    ax._data += difference
                else:
                    ax._data[...] = param
                # torch's as_tensor of the number: the default dtype's rounding, whatever eta's dtype
                eta._data[...] = F.step_tensor(lr / ((1 + lambd * lr * step) ** alpha))._data
                mu._data[...] = F.step_tensor(1 / max(1, step - t0))._data
                F.bump(p, ax, eta, mu)
        return loss
