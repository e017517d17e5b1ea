"""Reverse-mode automatic differentiation: Function, backward, grad, gradcheck."""
from cextend.autograd import graph  # noqa: F401  (torch.autograd.graph: saved_tensors_hooks, save_on_cpu)
from cextend.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from cextend.autograd.engine import backward, grad
from cextend.autograd.function import Function, once_differentiable
from cextend.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from cextend.autograd.gradcheck import gradcheck, gradgradcheck, GradcheckError
from cextend.autograd.variable import Variable


__all__ = ["Variable", "Function", "once_differentiable", "backward", "grad", "gradcheck", "gradgradcheck",
           "GradcheckError", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "detect_anomaly",
           "set_detect_anomaly", "graph"]
