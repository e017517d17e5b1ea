"""Optimizers and learning-rate schedulers with torch.optim's semantics.

SGD, Adam, AdamW, RMSprop, Adagrad and Adadelta each update as torch
2.13's single-tensor (foreach=False) implementation does, one in-place
operation after another; `state_dict()` / `load_state_dict()` have
torch's structure.  `cextend.optim.lr_scheduler` holds the schedulers.
"""
from cextend.optim import lr_scheduler
from cextend.optim.adadelta import Adadelta
from cextend.optim.adagrad import Adagrad
from cextend.optim.adam import Adam, AdamW
from cextend.optim.optimizer import Optimizer
from cextend.optim.rmsprop import RMSprop
from cextend.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "lr_scheduler"]
