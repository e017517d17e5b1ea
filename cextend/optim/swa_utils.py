"""Stochastic weight averaging: torch.optim.swa_utils (AveragedModel, SWALR, update_bn).

AveragedModel keeps a deep copy of a model whose parameters (and, with
use_buffers=True, buffers) are a running average of the model's: an equal
average by default (SWA), or what avg_fn (one tensor at a time, returning
the new value) or multi_avg_fn (lists of tensors, updated in place)
computes; get_ema_multi_avg_fn / get_swa_multi_avg_fn / get_ema_avg_fn /
get_swa_avg_fn make torch's.  The first update_parameters() copies the
model.  SWALR anneals each group's lr to swa_lr; update_bn recomputes the
BatchNorm running statistics with one pass over the data.

The arithmetic is torch's CPU arithmetic: the default average is
avg + (p - avg) / (n + 1); the multi-tensor ones are lerp_ (EMA weight
1 - decay; SWA weight 1 / (n + 1), a float32 number when n is the
int64 counter tensor, as torch computes it).
"""
import itertools
import math
import warnings
from copy import deepcopy

from cextend import _factories
from cextend._dtype import int64
from cextend.autograd.grad_mode import no_grad
from cextend.nn.batchnorm import _BatchNorm
from cextend.nn.module import Module
from cextend.optim import _inplace as F
from cextend.optim.lr_scheduler import LRScheduler, _format_param
from cextend.tensor import Tensor

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError("Invalid decay value {} provided. Please provide a value in [0,1] range.".format(decay))


def _lerp_all(targets, ends, weight):
    """targets[i].lerp_(ends[i], weight) for each (torch's _foreach_lerp_ on CPU)."""
    for target, end in zip(targets, ends):
        F.lerp_(target._data, end._data, weight)
        target._bump_version()


def get_ema_multi_avg_fn(decay=0.999):
    """The in-place exponential moving average over lists of tensors:
    ema = decay * ema + (1 - decay) * param (a lerp_ with weight 1 - decay)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if ema_param_list[0].is_floating_point():
            _lerp_all(ema_param_list, current_param_list, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """The in-place equal average over lists of tensors: avg.lerp_(param, 1 / (n + 1))."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if averaged_param_list[0].is_floating_point():
            weight = 1 / (num_averaged + 1)     # a counter tensor gives a float32 tensor, as torch's
            _lerp_all(averaged_param_list, current_param_list, F.scalar(weight))
        else:
            diffs = [current - averaged for averaged, current in zip(averaged_param_list, current_param_list)]
            for averaged, diff in zip(averaged_param_list, diffs):
                if isinstance(num_averaged, Tensor):
                    averaged.addcdiv_(diff, num_averaged + 1)
                else:
                    averaged.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """The exponential moving average of one tensor: returns decay * ema + (1 - decay) * param."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """The equal average of one tensor: returns avg + (param - avg) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(averaged, current):
    """{(device, dtype): ([averaged...], [current...])}, in the order the groups first appear."""
    groups = {}
    for a, c in zip(averaged, current):
        lists = groups.setdefault((str(a.device), a.dtype), ([], []))
        lists[0].append(a)
        lists[1].append(c)
    return groups


class AveragedModel(Module):
    """A running average of a model's parameters (SWA by default; EMA with
    multi_avg_fn=get_ema_multi_avg_fn(decay)).

    model: the module to average (deep-copied into `.module`); device: where
    the copy lives; avg_fn(averaged, current, n_averaged) -> new value, or
    multi_avg_fn(averaged_list, current_list, n_averaged) updating in place
    (not both); use_buffers: average the buffers too (otherwise they are
    copied from the model at each update).  `n_averaged` is an int64
    buffer.  Call update_parameters(model) after each step to average in.
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _factories.tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Average the model's current parameters in (the first call copies them)."""
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param, model_param = self.parameters(), model.parameters()
        self_param_detached, model_param_detached = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            self_param_detached.append(p_averaged.detach())
            model_param_detached.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)

        if self.n_averaged > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                groups = _group_by_device_and_dtype(self_param_detached, model_param_detached)
                for (device, _), (self_params, model_params) in groups.items():
                    n_averaged = self.n_averaged.to(device)
                    if self.multi_avg_fn:
                        self.multi_avg_fn(self_params, model_params, n_averaged)
                    else:
                        # torch's CPU path (its foreach devices lerp instead, with a float32 weight)
                        avg_fn = get_swa_avg_fn()
                        for p_averaged, p_model in zip(self_params, model_params):
                            p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))
            else:
                for p_averaged, p_model in zip(self_param_detached, model_param_detached):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.detach().copy_(self.avg_fn(p_averaged.detach(), p_model, n_averaged))

        if not self.use_buffers:
            # buffers not averaged follow the source model
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader, model, device=None):
    """Recompute the BatchNorm layers' running_mean / running_var with one pass over loader.

    Each batch is a tensor, or a list/tuple whose first element is the
    input.  The statistics are reset and averaged over all batches
    (momentum None for the pass); the model's train/eval mode and the
    layers' momentum are restored afterwards.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to swa_lr (a number, or one per group) over anneal_epochs
    epochs ("cos" or "linear"), then holds it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got {}".format(
                anneal_strategy))
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError("anneal_epochs must be equal or greater than 0, got {}".format(anneal_epochs))
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """Every attribute but the optimizer and the anneal function."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
