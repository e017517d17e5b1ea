"""The implementation-choice flags torch's optimizers take.

cextend runs one implementation, torch's single-tensor (foreach=False)
algorithm.  `foreach` is accepted and stored (torch's foreach path is the
same algorithm over lists of tensors, equal up to rounding); the flags that
ask for a different behaviour (`fused`, `capturable`, `differentiable`) are
refused with a clear error rather than silently ignored.
"""


def check_flags(name, differentiable=False, fused=None, foreach=None, capturable=False):
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        raise RuntimeError("%s: fused=True is not supported by cextend (it runs torch's single-tensor "
                           "algorithm); leave fused unset" % name)
    if differentiable:
        raise RuntimeError("%s: differentiable=True is not supported by cextend (optimizer steps are "
                           "not recorded by autograd)" % name)
    if capturable:
        raise RuntimeError("%s: capturable=True is not supported by cextend (there are no CUDA graphs "
                           "to capture)" % name)
