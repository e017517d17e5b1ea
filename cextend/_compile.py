"""torch.compile as an identity: cextend runs eagerly, so a compiled model is the model.

The first call notes (once per process) that nothing is compiled; the
arguments torch takes are accepted and checked as torch checks them.
"""
import warnings

_noted = []


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same "
                           "time.")
    if model is None:
        return lambda function: compile(function, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                        mode=mode, options=options, disable=disable)
    if not callable(model):
        raise RuntimeError("torch.compile: model must be a callable (a function or an nn.Module), got %s"
                           % type(model).__name__)
    if not _noted and not disable:
        _noted.append(True)
        warnings.warn("cextend.compile returns the model unchanged: cextend runs eagerly (its C kernels are "
                      "already compiled), so there is nothing to compile", UserWarning, stacklevel=2)
    return model
