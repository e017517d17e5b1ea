"""The scalar-first overloads torch still accepts, with its deprecation warning.

2017-era optimizers wrote `p.data.add_(-lr, grad)`, `torch.add(x, alpha, y)`,
`exp_avg_sq.addcmul_(1 - beta2, grad, grad)` and `addcdiv_(-step, a, b)`:
the number first, then the tensor(s).  torch 2.13 still runs them, warning
that the overload is deprecated; so does cextend, mapping them onto the
keyword forms (`alpha=` / `value=`).
"""
import numbers
import warnings

from cextend.tensor import Tensor


def _warn(op, old, new):
    warnings.warn("This overload of %s is deprecated:\n\t%s\nConsider using one of the following signatures "
                  "instead:\n\t%s" % (op, old, new), UserWarning, stacklevel=4)


def _too_many(op, allowed, given):
    raise TypeError("%s() takes %d positional arguments but %d were given" % (op, allowed, given))


def alpha_first(op, number, rest, alpha):
    """(other, alpha) for op(input, number, other): the deprecated form of op(input, other, alpha=number)."""
    if len(rest) != 1 or not isinstance(rest[0], Tensor) or isinstance(number, Tensor) or \
            not isinstance(number, numbers.Number) or alpha != 1:
        _too_many(op, 2, 2 + len(rest))
    _warn(op, "%s(Number alpha, Tensor other)" % op, "%s(Tensor other, *, Number alpha = 1)" % op)
    return rest[0], number


def value_first(op, number, tensor1, rest, value):
    """(tensor1, tensor2, value) for op(input, number, t1, t2): the deprecated form of
    op(input, t1, t2, value=number)."""
    if len(rest) != 1 or not isinstance(tensor1, Tensor) or not isinstance(rest[0], Tensor) or \
            isinstance(number, Tensor) or not isinstance(number, numbers.Number) or value != 1:
        _too_many(op, 3, 3 + len(rest))
    _warn(op, "%s(Number value, Tensor tensor1, Tensor tensor2)" % op,
          "%s(Tensor tensor1, Tensor tensor2, *, Number value = 1)" % op)
    return tensor1, rest[0], number
