"""Run against the installed package: python -m pytest test.py"""
import numpy as np

import cextend as torch
from my_package import MyAddModule


def test_installed_package_adds_and_backpropagates():
    a = torch.randn(4, 3, requires_grad=True)
    b = torch.randn(4, 3, requires_grad=True)
    out = MyAddModule()(a, b)
    np.testing.assert_array_equal(out.detach().numpy(), a.detach().numpy() + b.detach().numpy())
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((4, 3), np.float32))
