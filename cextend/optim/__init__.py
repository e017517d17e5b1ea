"""Optimizers and learning-rate schedulers with torch.optim's semantics.

SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD
and Rprop each update as torch 2.13's single-tensor (foreach=False)
implementation does, one in-place operation after another; LBFGS is
torch's algorithm (two-loop recursion, optional strong-Wolfe line search).
`state_dict()` / `load_state_dict()` have torch's structure.
`cextend.optim.lr_scheduler` holds the schedulers, `cextend.optim.swa_utils`
the weight averaging (AveragedModel, SWALR, update_bn).
"""
from cextend.optim import lr_scheduler, swa_utils
from cextend.optim.adadelta import Adadelta
from cextend.optim.adagrad import Adagrad
from cextend.optim.adam import Adam, AdamW
from cextend.optim.adamax import Adamax
from cextend.optim.asgd import ASGD
from cextend.optim.lbfgs import LBFGS
from cextend.optim.nadam import NAdam
from cextend.optim.optimizer import Optimizer
from cextend.optim.radam import RAdam
from cextend.optim.rmsprop import RMSprop
from cextend.optim.rprop import Rprop
from cextend.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "ASGD", "Rprop", "LBFGS", "lr_scheduler", "swa_utils"]
