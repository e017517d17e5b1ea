"""Your own ops, checked: custom_op, register_* and opcheck (as torch.library).

    from cextend.library import custom_op, opcheck

    @custom_op("mylib::square", mutates_args=())
    def square(x: cextend.Tensor) -> cextend.Tensor:
        ...                                 # usually: call your C kernel (cextend.utils.ffi.load)

    square.register_autograd(backward, setup_context=setup_context)
    opcheck(square, (cextend.randn(4, 5, dtype=cextend.float64, requires_grad=True),))

opcheck's tests (all run on copies of the sample):
  test_schema                 arguments not in mutates_args are unchanged; outputs alias nothing
  test_autograd_registration  inputs that require grad meet an autograd formula
  test_faketensor             the fake implementation's shapes and dtypes are the kernel's
  test_gradcheck              gradcheck and gradgradcheck in float64, naming the worst elements
  test_layouts                transposed, sliced, stride-0 grad_output, zero-size and size-1 inputs
                              give the contiguous run's results
  test_determinism            bitwise-equal results over repeats and over 1..N threads
  test_sanitize               (sanitize=True) the op's C calls replayed under ASan + UBSan
"""
from cextend.library._custom_op import CustomOpDef, custom_op
from cextend.library._opcheck import DEFAULT_TEST_UTILS, OpCheckError, opcheck
from cextend.library._sanitize import SanitizerError
from cextend.library._schema import infer_schema
from cextend.library._custom_op import OPDEFS


def _op(op):
    if isinstance(op, str):
        if op not in OPDEFS:
            raise ValueError("no custom op named %r (ops are named \"namespace::name\")" % op)
        return OPDEFS[op]
    if not isinstance(op, CustomOpDef):
        raise TypeError("expected an op made by custom_op or its \"namespace::name\", got %s" % type(op).__name__)
    return op


def register_fake(op, fn=None, /):
    """op.register_fake(fn), for an op or its name; usable as a decorator."""
    if fn is None:
        return lambda fn: _op(op).register_fake(fn)
    return _op(op).register_fake(fn)


def register_autograd(op, backward, /, *, setup_context=None):
    """op.register_autograd(backward, setup_context=...), for an op or its name."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, fn=None, /):
    """op.register_kernel(device_types, fn), for an op or its name; usable as a decorator."""
    return _op(op).register_kernel(device_types, fn)


__all__ = ["custom_op", "CustomOpDef", "opcheck", "OpCheckError", "DEFAULT_TEST_UTILS", "SanitizerError",
           "infer_schema", "register_fake", "register_autograd", "register_kernel"]
