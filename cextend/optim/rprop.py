"""Rprop: torch.optim.Rprop (resilient backpropagation; etas, step_sizes, maximize)."""
import numpy as np

from cextend.optim import _inplace as F
from cextend.optim._flags import check_flags
from cextend.optim.adamax import set_flag_defaults
from cextend.optim.optimizer import Optimizer
from cextend.tensor import Tensor


class Rprop(Optimizer):
    """Rprop as torch's single-tensor algorithm.

    Each element's step size is multiplied by etaplus where the gradient kept
    its sign since the last step, by etaminus where it flipped (and that
    element's gradient is then taken as 0, so it does not move and the next
    step counts as unchanged), and clamped to step_sizes; the parameter moves
    by -sign(grad) * step_size.
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError("Invalid eta values: {}, {}".format(etas[0], etas[1]))
        check_flags("Rprop", differentiable=differentiable, foreach=foreach, capturable=capturable)
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        set_flag_defaults(self)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in self._with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = F.step_tensor()
                    state["prev"] = F.zeros_like(p._data)
                    state["step_size"] = F.full_like(p.grad._data, F.scalar(group["lr"]))
                param = p._data
                prev, step_size = state["prev"], state["step_size"]
                grad = p.grad._data if not group["maximize"] else -p.grad._data
                F.increment(state["step"])
                grad = np.array(grad)               # a copy: the elements whose sign flipped are zeroed
                sign = np.asarray(np.sign(grad * prev._data))
                factor = sign.copy()                # torch's sign[sign > 0] = etaplus, ... in turn
                np.copyto(factor, etaplus, where=sign > 0)
                np.copyto(factor, etaminus, where=sign < 0)
                np.copyto(factor, 1, where=sign == 0)
                size = step_size._data
                size *= factor
                np.clip(size, step_size_min, step_size_max, out=size)
                np.copyto(grad, 0, where=factor == factor.dtype.type(etaminus))
                F.addcmul_(param, np.sign(grad), size, value=-1)
                prev._data[...] = grad
                F.bump(p, prev, step_size)
        return loss
