"""The Functions behind Tensor's differentiable methods.

Every backward is written with Tensor operations, so with create_graph=True
it is recorded too and higher derivatives work.
"""
from cextend.autograd._functions.arithmetic import Add, Div, MatMul, Mm, Mul, Neg, Pow, Sub
from cextend.autograd._functions.indexing import Cat, Index, IndexAdd, IndexPut, Stack
from cextend.autograd._functions.inplace import (AddInplace, DivInplace, MulInplace, Overwrite,
                                                 SubInplace)
from cextend.autograd._functions.pointwise import (Abs, Clamp, Clone, Exp, Log, Relu, Sigmoid, Sqrt,
                                                   Tanh, ToCopy, ToDevice)
from cextend.autograd._functions.reduction import Max, MaxDim, Mean, Sum
from cextend.autograd._functions.shape import (Expand, Permute, Reshape, Squeeze, Transpose, Unsqueeze,
                                               View)
