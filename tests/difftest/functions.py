"""The custom autograd Functions programs may call, one source for both
libraries (exec'd with `torch` bound to each) and printed in repros.

Where torch's contract says what backward receives (None for non-Tensor
outputs and, with set_materialize_grads(False), for unused outputs;
zeros otherwise), the backward folds what it received into the gradient
it returns, so a difference shows up as a different number.
"""
import textwrap

_DEFS = {
    "MulDirty": '''
class MulDirty(torch.autograd.Function):
    """Multiplies its input in place, marks it dirty and returns it."""
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        x.mul_(k)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None
''',
    "DirtyNotReturned": '''
class DirtyNotReturned(torch.autograd.Function):
    """Marks an input dirty that it does not return (torch raises)."""
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2
''',
    "ValueAndIndex": '''
class ValueAndIndex(torch.autograd.Function):
    """A differentiable output and a non-differentiable index."""
    @staticmethod
    def forward(ctx, x):
        idx = x.reshape(-1).argmax()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x)
        return x * 2, idx

    @staticmethod
    def backward(ctx, g, g_idx):
        x, = ctx.saved_tensors
        return g * 2 + (100.0 if g_idx is None else float(g_idx.abs().sum()))
''',
    "PassThroughNonDiff": '''
class PassThroughNonDiff(torch.autograd.Function):
    """Returns its input unchanged but marked non-differentiable, and a product."""
    @staticmethod
    def forward(ctx, x):
        ctx.mark_non_differentiable(x)
        return x, x * 3

    @staticmethod
    def backward(ctx, g_same, g_prod):
        return g_prod * 3 + (100.0 if g_same is None else g_same)
''',
    "NoMaterialize": '''
class NoMaterialize(torch.autograd.Function):
    """set_materialize_grads(False): an unused output's gradient is None."""
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone(), x * 2

    @staticmethod
    def backward(ctx, ga, gb):
        if ga is None and gb is None:
            return None
        grad = gb * 2 if ga is None else (ga if gb is None else ga + gb * 2)
        return grad + (0.5 if ga is None else 0.0) + (0.25 if gb is None else 0.0)
''',
    "ScalarOut": '''
class ScalarOut(torch.autograd.Function):
    """A Tensor output and a non-Tensor output (its gradient is None)."""
    @staticmethod
    def forward(ctx, x):
        return x * 2, 3.5

    @staticmethod
    def backward(ctx, g, g_number):
        return g * 2 + (0.0 if g_number is None else 100.0)
''',
    "Identity": '''
class Identity(torch.autograd.Function):
    """Returns its input unchanged (torch makes the output a view of it)."""
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2
''',
    "ExpSaveOutput": '''
class ExpSaveOutput(torch.autograd.Function):
    """Saves an input and its output."""
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y
''',
    "CubeSetup": '''
class CubeSetup(torch.autograd.Function):
    """The torch >= 2.0 style: forward without ctx, then setup_context."""
    @staticmethod
    def forward(x, k):
        return x ** 3 * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.save_for_backward(x)
        ctx.k = k

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x ** 2 * ctx.k, None
''',
    "OnceSin": '''
class OnceSin(torch.autograd.Function):
    """A backward that may be differentiated only once."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos()
''',
    "MulNeeds": '''
class MulNeeds(torch.autograd.Function):
    """Computes only the gradients in ctx.needs_input_grad."""
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g * b if ctx.needs_input_grad[0] else None
        gb = g * a if ctx.needs_input_grad[1] else None
        return ga, gb
''',
    "MulConstant": '''
class MulConstant(torch.autograd.Function):
    """The classic: a non-Tensor argument gets a None gradient."""
    @staticmethod
    def forward(ctx, x, c):
        ctx.c = c
        return x * c

    @staticmethod
    def backward(ctx, g):
        return g * ctx.c, None
''',
    "ExtraNone": '''
class ExtraNone(torch.autograd.Function):
    """Returns trailing None gradients beyond its inputs (allowed)."""
    @staticmethod
    def forward(ctx, x):
        return x * 4

    @staticmethod
    def backward(ctx, g):
        return g * 4, None, None
''',
    "FlattenView": '''
class FlattenView(torch.autograd.Function):
    """Returns a view of its input made inside forward."""
    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.view(-1)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)
''',
}

SOURCES = {name: textwrap.dedent(text).strip("\n") + "\n" for name, text in _DEFS.items()}

# How each is called: T a float tensor, S another float tensor of T's shape
# (or broadcastable), k a Python number.
# Functions whose forward writes into their first input.
MUTATE_INPUT = ("MulDirty", "DirtyNotReturned")

SIGNATURES = {
    "MulDirty": "Tk", "DirtyNotReturned": "T", "ValueAndIndex": "T", "PassThroughNonDiff": "T",
    "NoMaterialize": "T", "ScalarOut": "T", "Identity": "T", "ExpSaveOutput": "T", "CubeSetup": "Tk",
    "OnceSin": "T", "MulNeeds": "TS", "MulConstant": "Tk", "ExtraNone": "T", "FlattenView": "T",
}


def define(lib):
    """The Function classes defined against `lib` (torch or cextend)."""
    namespace = {"torch": lib}
    for text in SOURCES.values():
        exec(compile(text, "<difftest functions>", "exec"), namespace)
    return {name: namespace[name] for name in SOURCES}
