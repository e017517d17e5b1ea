import numpy as np
import pytest

import cextend as torch
import cextend.nn as nn
from cextend.autograd import Variable
from modules.add import MyAddModule


class MyNetwork(nn.Module):
    def __init__(self):
        super(MyNetwork, self).__init__()
        self.add = MyAddModule()

    def forward(self, input1, input2):
        return self.add(input1, input2)


model = MyNetwork()
x = torch.range(1, 25).view(5, 5)
input1, input2 = Variable(x), Variable(x * 4)
print(model(input1, input2))
print(input1 + input2)


def test_legacy_module_matches_python_add():
    with pytest.warns(DeprecationWarning, match="Legacy autograd function"):
        out = model(input1, input2)
    np.testing.assert_array_equal(out.numpy(), (input1 + input2).numpy())


def test_legacy_function_backpropagates():
    a = Variable(torch.randn(3, 4), requires_grad=True)
    b = Variable(torch.randn(3, 4), requires_grad=True)
    with pytest.warns(DeprecationWarning):
        out = model(a, b)
    (out * 2).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full((3, 4), 2, np.float32))
    np.testing.assert_array_equal(b.grad.numpy(), np.full((3, 4), 2, np.float32))
