"""The example end to end (run after `python build.py`): python -m pytest test.py"""
import numpy as np
import pytest

import cextend as torch
import cextend.nn as nn
from modules.add import MyAddModule


class MyNetwork(nn.Module):
    def __init__(self):
        super(MyNetwork, self).__init__()
        self.add = MyAddModule()

    def forward(self, input1, input2):
        return self.add(input1, input2)


def test_forward_and_backward_through_the_c_op():
    model = MyNetwork()
    input1 = torch.randn(5, 5, requires_grad=True)
    input2 = torch.randn(5, 5, requires_grad=True)
    out = model(input1, input2)
    np.testing.assert_array_equal(out.detach().numpy(), (input1 + input2).detach().numpy())
    (out * 3).sum().backward()
    np.testing.assert_array_equal(input1.grad.numpy(), np.full((5, 5), 3, np.float32))
    np.testing.assert_array_equal(input2.grad.numpy(), np.full((5, 5), 3, np.float32))


def test_the_wrapper_checks_dtypes_and_outputs():
    from _ext import my_lib
    a = torch.randn(3, dtype=torch.double)
    with pytest.raises(TypeError, match="argument 1 must be float32"):
        my_lib.my_lib_add_forward(a, a, a, 3)
    out = np.zeros(3, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="argument 3 is written through but is read-only"):
        my_lib.my_lib_add_forward(np.ones(3, np.float32), np.ones(3, np.float32), out, 3)
