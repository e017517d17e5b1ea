"""The known disagreements (DISAGREEMENTS.md), as minimal programs.

    PYTHONPATH=tests python -m difftest.known            # which still disagree
    PYTHONPATH=tests python -m difftest.known --markdown > DISAGREEMENTS.md

Each repro is replayed by the tester's own Session in both libraries; a
fixed one no longer disagrees (then drop its OPEN entry in allowlist.py).
"""
import io
import sys
import warnings

from .allowlist import excuse
from .program import Stmt, definitions
from .session import Session

# id -> the statements of a minimal program
REPROS = {
    "D1": ["v0 = torch.tensor([0.5, 2.0])", "v1 = v0.exp_()"],
    "D2a": ["v0 = torch.tensor(0.8125)", "v1 = torch.sgn(v0)"],
    "D2b": ["v0 = torch.tensor([True, False])", "v1 = v0.sgn()"],
    "D3": ["v0 = torch.zeros(0, 3)", "v1 = torch.amax(v0, 1)"],
    "D4a": ["v0 = torch.zeros(3, 3)", "v1 = v0.diagonal()", "v2 = v1.mul_(2)"],
    "D4b": ["v0 = torch.ones(3, 4, requires_grad=True)", "v0.diagonal(1).sum().backward()"],
    "D5a": ["v0 = torch.tensor([1.5, -1.75], requires_grad=True)", "v1 = v0 + 0", "v2 = v1 ** 3",
            "v2[-1:] = 0.0", "v2.sum().backward()"],
    "D5b": ["v0 = torch.tensor([-2.0, 3.0], requires_grad=True)", "v1 = v0 / 2",
            "with torch.no_grad():\n    v0.add_(1)", "v1.sum().backward()"],
    "D5c": ["v0 = torch.tensor([0.375, -0.6875], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.fmod(1.75)",
            "v2.sum().backward()", "v2.sum().backward()"],
    "D5d": ["v0 = torch.tensor([1.0, -1.25], requires_grad=True)", "v1 = torch.sgn(v0)", "v2 = v1.zero_()",
            "v2.sum().backward()"],
    "D6a": ["v0 = torch.tensor(-1.5)", "v1 = torch.tensor([0.5])", "v0[...] = v1"],
    "D6b": ["v0 = torch.tensor([0.25, -1.25, 2.0])", "v1 = torch.tensor([True, False, False])", "v0[v1] = torch.tensor([[2.25]])"],
    "D6c": ["v0 = torch.zeros(1, 1)", "v1 = torch.tensor([[-1.25, -2.75, 1.0]], requires_grad=True)",
            "v0[[0, 0, 0], [0, 0, 0]] = v1", "v0.sum().backward()"],
    "D7": ["v0 = torch.tensor([0.5, 2.0], requires_grad=True)", "v1 = v0.digamma()"],
    "D8a": ["v0 = torch.tensor([0, 2], dtype=torch.int64)", "v1 = torch.tensor([2.5, -2.5], requires_grad=True)",
            "v2 = v0.copy_(v1)"],
    "D8b": ["v0 = torch.tensor([-0.5, 0.8])", "v1 = torch.tensor([-2.5, 1.0], requires_grad=True)",
            "v2 = v0.logical_or_(v1)"],
    "D8c": ["v0 = torch.tensor([1.0, -0.0, -1.25], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.logical_or_(torch.tensor(1.0))",
            "(v2 * torch.tensor([-2.5, 1.25, -1.75])).sum().backward()"],
    "D8d": ["v0 = torch.tensor([[-5, 3], [0, 1]])", "v1 = v0[::2]", "v2 = torch.tensor([0.5, -1.0], requires_grad=True)", "v3 = v1.eq_(v2)"],
    "D8e": ["v0 = torch.tensor([1, 2])", "v1 = torch.tensor([True, False])", "v2 = torch.tensor(0.125, requires_grad=True)",
            "v3 = torch.masked_fill(v0, v1, v2)"],
    "D9a": ["v0 = torch.tensor([-1.25, 2.25, -2.5], requires_grad=True)", "v1 = v0 * 2", "v2 = v1.unbind(0)",
            "with torch.no_grad():\n    v1.zero_()", "v3 = v2[0] * 1"],
    "D9b": ["v0 = torch.zeros(2)", "with torch.no_grad():\n    v1 = v0[:1]", "v2 = torch.tensor(-2.0, requires_grad=True)",
            "v3 = v0.mul_(v2)"],
    "D9c": ["v0 = torch.tensor([0.5, -0.25], requires_grad=True)", "v1 = FlattenView.apply(v0)",
            "with torch.no_grad():\n    v0.mul_(2)", "v2 = v1 * 1"],
    "D10a": ["v0 = torch.tensor([0.25, -0.25])", "v1 = v0.unsqueeze(0)", "v0.requires_grad_()"],
    "D10b": ["v0 = torch.tensor([2.0, -2.25], requires_grad=True)", "v1 = v0[::1]", "v0.requires_grad_(False)", "v2 = v1.sub_(1)"],
    "D10c": ["v0 = torch.tensor([2.0, -2.25], requires_grad=True)", "v1 = v0.t()", "v1.sum().backward()", "v0.detach_()",
             "(v1 * 3).sum().backward()"],
    "D11a": ["v0 = torch.tensor([2.25, 0.25], requires_grad=True)", "with torch.no_grad():\n    v1 = v0.view(2)",
             "(v1 * 2).sum().backward()"],
    "D11b": ["v0 = torch.tensor([1.25, 0.5], requires_grad=True)", "v1 = v0.sum(0)", "with torch.no_grad():\n    v2 = v1.view(())",
             "v2.backward()"],
    "D12": ["v0 = torch.tensor([[-2.25, 1.5]], requires_grad=True)", "v1 = v0.t()", "v2 = v1 * 2",
            "v2.sum().backward(inputs=[v1])", "v1.sum().backward()"],
    "D13": ["v0 = torch.tensor([-2.0, 1.75, 1.0], requires_grad=True)", "v1 = v0 + 0", "v1.retain_grad()", "v2 = v1[1]",
            "v2.zero_()", "v1.sum().backward()"],
    "D14": ["v0 = torch.tensor([-2.0, -1.5], requires_grad=True)", "v1 = torch.zeros(2)", "v1[0] = v0.sum()",
            "v1.sum().backward()", "v1.sum().backward()"],
    "D16a": ["v0 = torch.zeros(2)", "v1 = torch.tensor([0])", "v0[v1] = torch.tensor([1.0], dtype=torch.float64)"],
    "D16b": ["v0 = torch.tensor([True, False])", "v1 = 1.5 - v0"],
    "D16c": ["v0 = torch.tensor([True, False])", "v1 = abs(v0)"],
    "D16d": ["v0 = torch.tensor([1.0, 2.0])", "v1 = torch.atan2(v0, 2.0)"],
    "D16e": ["v0 = torch.tensor([1.0, 2.0])", "v1 = v0.logical_and_(0.0)"],
    "D16f": ["v0 = torch.tensor([0, -5, 2])", "v1 = v0 ** torch.tensor(-6)"],
    "D16g": ["v0 = torch.tensor([1.0, 2.0])", "v1 = v0.clamp_max(True)"],
    "D16h": ["v0 = torch.tensor([[1.0, 2.0, 3.0]])", "v1 = v0[0, 2::-1]"],
    "D16i": ["v0 = torch.tensor(True)", "v1 = v0.square()"],
    "D16j": ["v0 = torch.zeros(0, 3, dtype=torch.int64)", "v1 = torch.fmod(v0, torch.tensor([1, 1, 0]))"],
    "D16k": ["v0 = torch.zeros(0, dtype=torch.int64)", "v1 = v0.masked_fill_(torch.tensor(True), torch.tensor(inf))"],
    "D16l": ["v0 = torch.tensor([True, False])", "v1 = v0.add_(v0, alpha=2)"],
    "D17a": ["v0 = torch.zeros(3, 1)", "v1 = v0.logical_or_(torch.ones(1, 3, 1))"],
    "D17b": ["v0 = torch.tensor([3.0, 0.25, 0.5])", "v1 = torch.tensor([2, 1, 0])", "v0[v1] = v0"],
    "D17c": ["v0 = torch.tensor([[0.75, 0.5]]).expand(2, 2)", "v1 = v0.data", "v1[[0, 1]] = 0.0"],
    "D18a": ["v0 = torch.zeros(0, 3)", "v1 = v0.split(2, 0)"],
    "D18b": ["v0 = torch.zeros(0, 3)", "v1 = v0.chunk(2, 0)"],
    "D19a": ["v0 = torch.tensor([1.5, 2.0], requires_grad=True)", "v1 = v0 // 2", "v1.sum().backward()"],
    "D19b": ["v0 = torch.tensor([0.75, -1.75], requires_grad=True)", "v1 = -1 % v0", "v1.sum().backward()"],
    "D20a": ["v0 = torch.tensor([1.5], requires_grad=True)", "v1 = v0.round()", "v2 = (v1 * inf).sum()", "v2.backward()"],
    "D20b": ["v0 = torch.tensor([1.5, -2.5], requires_grad=True)", "v1 = v0.clone()", "v1.fill_(0.0)", "v2 = (v1 * inf).sum()",
             "v2.backward()"],
    "D20c": ["v0 = torch.tensor([1.0, 2.0], requires_grad=True)", "v1 = v0 * 1", "v1.fill_(0.0)", "v2 = torch.tensor(-1.5, requires_grad=True)",
             "(v1 * v2).sum().backward(create_graph=True)"],
    "D21a": ["v0 = torch.tensor([0.75, 1.5], requires_grad=True)", "v1 = v0.logical_or_(torch.tensor([1.0, 0.0]))"],
    "D21b": ["v0 = torch.tensor([-1.0, -0.25, 2.0], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.chunk(3)",
             "v3 = v2[0].logical_xor_(torch.tensor(0))"],
    "D22a": ["v0 = torch.tensor([-inf, 0.5])", "v1 = v0 ** torch.tensor(0.5)"],
    "D22b": ["v0 = torch.tensor([0.5, 0.0], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.pow_(torch.tensor(-inf))",
             "v2.sum().backward()"],
    "D22c": ["v0 = torch.tensor([0.5, 0.0], requires_grad=True)", "v1 = v0 ** -inf", "v1.sum().backward()"],
    "D23": ["v0 = torch.tensor([2.5, 3.0], requires_grad=True)", "v1 = v0.unbind(0)", "h0 = v1[0].register_hook(lambda g: g + 1)",
            "v1[1].sum().backward()"],
    "D24": ["v0 = torch.tensor([-0.75, 1.0], requires_grad=True)", "v1 = abs(v0)",
            "v2 = torch.autograd.grad(v1.sum(), [v0], create_graph=True)", "v2[0].sum().backward()", "v1.sum().backward()"],
    "D25a": ["v0 = torch.tensor([2.0, 1.75], requires_grad=True)", "v1 = v0 * 2", "v2 = torch.autograd.grad(v1.sum(), [v1])",
             "v3 = v2[0].div_(2)"],
    "D25b": ["v0 = torch.tensor([3.0, -2.75], requires_grad=True)", "v1 = v0 * 2", "v2 = torch.autograd.grad(v1.sum(), [v1])",
             "v3 = v2[0].masked_fill_(torch.tensor([True, False]), 0.25)"],
    "D26": ["v0 = torch.tensor([2.25], requires_grad=True)", "v1 = v0.clone()", "h0 = v1.register_hook(lambda g: g * 10)",
            "v2 = torch.autograd.grad(v1.sum(), [v0, v1])"],
    "D27": ["v0 = torch.tensor([0.0, -0.5, 1.25], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.clamp_(v1, None)",
            "v1.sum().backward()"],
    "D28": ["v0 = torch.tensor([[-3.0, -2.0], [0.0, -1.5]])", "v1 = v0.t().clone()", "v2 = v1.view(-1)"],
    "D29": ["v0 = torch.zeros(2)", "v1 = torch.tensor([False, True])", "v2 = torch.tensor(-1.25, requires_grad=True)",
            "v0[v1] = v2.clone()", "v3 = torch.tensor([-1.5, 0.75], requires_grad=True)", "v0[0] = v3.sum()", "v0.sum().backward()",
            "(v0 * 2).sum().backward()"],
    "D10d": ["v0 = torch.tensor([1.0, 2.0], requires_grad=True)", "v1 = v0 * 2",
             "with torch.no_grad():\n    v2 = v1[None]", "v1.detach_()"],
    "D13b": ["v0 = torch.tensor([-2.5, 0.75], requires_grad=True)", "v1 = v0 * 2", "v1.retain_grad()",
             "v2 = v1.div_(2.0)", "v1.sum().backward()"],
    "D16m": ["v0 = torch.tensor([True, False])", "v1 = v0.square_()"],
    "D16n": ["v0 = torch.zeros(2, dtype=torch.float64)", "v1 = v0.masked_scatter_(torch.tensor([True, False]), torch.ones(2))"],
    "D16o": ["v0 = torch.tensor([1, 2])", "v1 = v0.logcumsumexp(0)"],
    "D16p": ["v0 = torch.tensor([1, 2])", "v1 = torch.lerp(v0, torch.tensor([3, 4]), torch.tensor([0.5, 0.5]))"],
    "D16q": ["v0 = torch.ones(2, 2)", "v1 = v0.tril_(-1.5)"],
    "D16r": ["v0 = torch.tensor([True, False, True])", "v1 = v0.topk(2)"],
    "D16s": ["v0 = torch.ones(2)", "v1 = v0.addcdiv_(torch.tensor([1, 2]), torch.tensor([2, 2]))"],
    "D16t": ["v0 = torch.tensor([True, False])", "v1 = torch.put(v0, torch.tensor([0]), torch.tensor([0.5]))"],
    "D17d": ["v0 = torch.tensor([[False, True]])", "v1 = v0.clamp_(torch.tensor([[[True, False]]]), None)"],
    "D8f": ["v0 = torch.tensor([[-1.0], [-1.75]], requires_grad=True)", "v1 = v0 * 4", "v2 = v1.t()",
            "v3 = v2.logical_and_(torch.tensor([1, 0]))", "v4 = torch.autograd.grad(v2.sum(), [v0])"],
    "D19c": ["v0 = torch.tensor(-1.5, requires_grad=True)", "v1 = v0.clone()", "v2 = v1.asinh_()", "v2.backward()"],
    "D28b": ["v0 = torch.tensor([[-0.0, -0.25], [0.5, -1.25]])", "v1 = v0.t().clone()", "v2 = v1.reshape(-1)",
             "v3 = v1.mul_(2)"],
    "D30": ["v0 = torch.tensor([[1.0, 2.0], [2.0, 0.5]])", "v1 = torch.nanmedian(v0, 0)"],
    "D31": ["v0 = torch.tensor([1.5])", "v1 = torch.psi(v0)"],
    "D32": ["v0 = torch.tensor(-2.75)", "v1 = v0[-1]"],
    "D33": ["v0 = torch.tensor([-inf, -1.75, 0.5])", "v1 = torch.var_mean(v0)"],
    "D34": ["v0 = torch.tensor([4, 0])", "v1 = v0.addcmul(torch.tensor([2, 3]), torch.tensor([2, -2]), value=-0.5)"],
    "D35": ["v0 = torch.tensor([nan, 2.0], requires_grad=True)", "v1 = v0.amax()", "v1.backward()"],
    "D36": ["v0 = torch.tensor(1.25)", "v1 = v0 % torch.tensor([-0.25, 0.5])", "v2 = 1 / v1"],
}
# After main fixed D1-D36 (their OPEN entries went; the tester now also
# checks out= forms and the sign of zeros):
REPROS.update({
    "D37a": ["v0 = torch.tensor([[1.0, 3.0], [4.0, 2.0]])", "v1 = torch.zeros(2)", "v2 = torch.zeros(2, dtype=torch.int64)",
             "v3 = torch.max(v0, 1, out=(v1, v2))"],
    "D37b": ["v0 = torch.tensor([[1.0, 3.0], [4.0, 2.0]])", "v1 = torch.tensor(0.0)", "v2 = torch.min(v0, out=v1)"],
    "D37c": ["v0 = torch.tensor([3.0, 1.0, 2.0])", "v1 = torch.zeros(0)", "v2 = torch.zeros(0, dtype=torch.int64)",
             "v3 = torch.sort(v0, out=(v1, v2))"],
    "D38a": ["v0 = torch.tensor([1.0, 3.0], requires_grad=True)", "v1 = torch.zeros(2, 2)", "v2 = torch.outer(v0, v0, out=v1)"],
    "D38b": ["v0 = torch.tensor([1.0, 3.0], requires_grad=True)", "v1 = torch.zeros(2, dtype=torch.bool)",
             "v2 = torch.gt(v0, 2.0, out=v1)"],
    "D39a": ["v0 = torch.tensor([1.5, 2.5], dtype=torch.float64)", "v1 = torch.zeros(2)", "v2 = torch.round(v0, out=v1)"],
    "D39b": ["v0 = torch.tensor([1, 2])", "v1 = torch.zeros(())", "v2 = torch.amin(v0, 0, out=v1)"],
    "D39c": ["v0 = torch.tensor([0.5, 1.5, -1.0])", "v1 = torch.zeros(0)", "v2 = torch.zeros(0, dtype=torch.float64)",
             "v3 = torch.topk(v0, 2, out=(v1, v2))"],
    "D39d": ["v0 = torch.tensor([[1.0, 2.0, 0.5]])", "v1 = torch.zeros(1, dtype=torch.bool)", "v2 = torch.zeros(1, dtype=torch.int64)",
             "v3 = torch.kthvalue(v0, 2, out=(v1, v2))"],
    "D40a": ["v0 = torch.tensor([1.0, 3.0])", "v1 = torch.tensor(0.0)", "v2 = torch.sum(v0, out=v1)"],
    "D40b": ["v0 = torch.tensor([1.0, -3.0])", "v1 = torch.zeros(2)", "v2 = torch.relu(v0, out=v1)"],
    "D40c": ["v0 = torch.tensor([True, False])", "v1 = torch.tensor([1.0, 2.0])", "v2 = torch.zeros(2)",
             "v3 = torch.where(v0, v1, 0.5, out=v2)"],
    "D40d": ["v0 = torch.tensor([[1.0, 3.0, 2.0]])", "v1 = torch.tensor(0.0)", "v2 = torch.median(v0, out=v1)"],
    "D41a": ["v0 = torch.tensor([[1.0, 2.0], [3.0, 4.0]])", "v1 = v0[:1].expand(2, 2)", "v2 = v1.zero_()"],
    "D41b": ["v0 = torch.tensor([[1.0, 2.0], [3.0, 4.0]])", "v1 = v0[:1].expand(2, 2)", "v2 = v1.fill_(3)"],
    "D41c": ["v0 = torch.tensor([[1.0, 2.0], [3.0, 4.0]])", "v1 = v0[:1].expand(2, 2)", "v2 = v1.tril_()"],
    "D41d": ["v0 = torch.tensor([[1.0]])", "v0[0] = v0"],
    "D41e": ["v0 = torch.tensor([1.0, 2.0])", "v1 = v0.detach()", "v2 = v1.add_(v0[0])"],
    "D42a": ["v0 = torch.tensor([1.0, 2.0], requires_grad=True)", "v1 = v0 * 2", "v1.sum().backward()", "v1.sum().backward()"],
    "D42b": ["v0 = torch.tensor([2.0, 3.0], requires_grad=True)", "v1 = v0.addcmul(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]))",
             "v1.sum().backward()", "v1.sum().backward()"],
    "D42c": ["v0 = torch.tensor([[2.0, 3.0]], requires_grad=True)",
             "v1 = torch.scatter_add(v0, 1, torch.tensor([[0, 0]]), torch.tensor([[1.0, 2.0]]))", "v1.sum().backward()",
             "v1.sum().backward()"],
    "D42d": ["v0 = torch.tensor([2.0, 3.0], requires_grad=True)", "v1 = v0.clone()", "v1[:] = torch.tensor([1.0])",
             "v2 = v1.clone()", "v2.sum().backward()", "v2.sum().backward()"],
    "D42e": ["v0 = torch.tensor([1.0, 2.0], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.erfinv_()", "v1.mul_(2)",
             "v1.sum().backward()"],
    "D42f": ["v0 = torch.tensor([1.0, 2.0], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.cumprod_(0)", "v1.sum().backward()"],
    "D42g": ["v0 = torch.tensor([2.0, 3.0], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.pow_(torch.tensor(2))",
             "v3 = v1.pow_(-1)", "v2.sum().backward()"],
    "D42h": ["v0 = torch.tensor([2.0, 3.0], requires_grad=True)", "v1 = torch.cummax(v0, 0)", "v2 = v1[1].zero_()",
             "v1[0].sum().backward()"],
    "D43a": ["v0 = torch.tensor([1.0, -0.0, -1.0])", "v1 = v0.clamp(min=0)"],
    "D43b": ["v0 = torch.tensor([0.0, -0.0])", "v1 = torch.maximum(v0, torch.tensor([-0.0, 0.0]))"],
    "D43c": ["v0 = torch.tensor([-0.0, 1.0])", "v1 = v0.cumsum(0)"],
    "D43d": ["v0 = torch.tensor([-0.0, 1.0])", "v1 = v0.logcumsumexp(0)"],
    "D43e": ["v0 = torch.tensor([-0.0, 2.0])", "v1 = v0 ** torch.tensor(0.5)"],
    "D44a": ["v0 = torch.tensor([-inf, 2.0])", "v1 = v0 ** 0.5"],
    "D44b": ["v0 = torch.tensor([-inf, 2.0])", "v1 = v0 ** -0.5"],
    "D44c": ["v0 = torch.tensor([-0.0, 2.0], requires_grad=True)", "v1 = v0 ** 0.5", "v1.sum().backward()"],
    "D45a": ["v0 = torch.tensor([1.0, 2.0])", "v1 = True - v0"],
    "D45b": ["v0 = torch.tensor([True, False])", "v1 = v0 ** True"],
    "D45c": ["v0 = torch.tensor([True, False])", "v1 = v0.dot(v0)"],
    "D45d": ["v0 = torch.tensor([True, False])", "v1 = v0.cumsum_(0)"],
    "D45f": ["v0 = torch.zeros(0, dtype=torch.bool)", "v1 = v0.add_(True, alpha=2)"],
    "D45g": ["v0 = torch.tensor([True, False])", "v1 = torch.tensor(1.0, requires_grad=True)", "v2 = v0.fill_(v1)",
             "v2.requires_grad_(True)"],
    "D46": ["v0 = torch.tensor(-2.0)", "v1 = v0.expand()"],
    "D47": ["v0 = torch.tensor([1.0, 2.0])", "v1 = v0.clamp_(torch.tensor(0.0), 1.0)"],
    "D48": ["v0 = torch.tensor([1, 2])", "v1 = torch.tensor(1.5, requires_grad=True)", "v2 = v1 * 1", "v0[::2] = v2"],
    "D48b": ["v0 = torch.tensor([[[2, 1, -2]], [[0, -3, 2]]])", "v1 = v0.chunk(2, -3)",
             "v2 = torch.tensor([[-1.5, -2.0, 0.0]], requires_grad=True)", "v1[1][-1, 0::2] = v2"],
    "D49": ["v0 = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)", "v1 = v0 * 2", "v2 = v1.t()",
            "v3 = v1.view(4)", "v4 = v3.zero_()", "v2.sum().backward()"],
    "D50": ["v0 = torch.tensor([[1.0, 2.0]], requires_grad=True)", "v1 = v0 * 1", "v1.retain_grad()", "v1.sum().backward()",
            "v2 = MulDirty.apply(v1, 0.5)"],
    "D51": ["v0 = torch.tensor([[1.0, 2.0]], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.t()", "v3 = v1.zero_()",
            "v1.detach_()", "v4 = v3.fill_(torch.tensor(0.75))"],
    "D52": ["v0 = torch.tensor([-0.0, 2.0], requires_grad=True)", "v1 = v0.atan2(torch.tensor([0.0, 1.0]))",
            "v1.sum().backward()"],
    "D53": ["v0 = torch.tensor([1.0, 2.0], requires_grad=True)", "v0.sum().backward(inputs=[v0, v0])"],
    "D54": ["v0 = torch.tensor([[-3.0, -1.0, inf]])", "v1 = torch.std_mean(v0, 1)"],
    "D55": ["v0 = torch.tensor([1.0, 2.0])", "v1 = torch.tensor([1.0], dtype=torch.float64)",
            "v2 = torch.einsum('i,j->ij', v0, v1)"],
    "D56a": ["v0 = torch.tensor([[2.875, -0.8125, -1.125], [1.1875, -1.1875, -0.0]])", "v1 = v0.T.flip(1)",
             "v2 = v1.reshape(6)", "v3 = v1.trunc_()"],
    "D56b": ["v0 = torch.tensor([[2.875, -0.8125, -1.125], [1.1875, -1.1875, -0.0]])", "v1 = v0.T.rot90(3)",
             "v2 = v1.reshape(6)", "v3 = v1.trunc_()"],
    "D56c": ["v0 = torch.tensor([[[-0.25, -1.25, 0.0]]])", "v1 = v0.expand(2, 1, 3).clone()", "v2 = v1.view(-1)"],
    "D56d": ["v0 = torch.tensor([[1.5, -1.25], [-2.5, 1.25]])", "v1 = v0.t() * 2",
             "v2 = v1 * torch.tensor([[1.0, 2.0], [3.0, 4.0]])", "v3 = v2.view(-1)"],
    "D48c": ["v0 = torch.tensor([0])", "v1 = torch.tensor(-1.25, requires_grad=True)", "v2 = v0.fill_(v1)",
             "v3 = v2.select(-1, 0)"],
    "D48d": ["v0 = torch.tensor([[-2, -4], [0, 2]])", "v1 = v0.split(1, 0)", "v2 = torch.tensor([[1.25, -2.75]], requires_grad=True)",
             "v3 = v1[0].copy_(v2)"],
    "D59": ["v0 = torch.tensor([[1.0, inf, 2.0]], requires_grad=True)", "v1 = torch.var_mean(v0, 1)", "v1[1].sum().backward()"],
    "D60": ["v0 = torch.tensor([[1.5, -1.25], [-2.5, 1.25]])", "v1 = v0.atan2_(0)"],
    "D60b": ["v0 = torch.tensor([1.0, 2.0])", "v1 = v0.atan2_(True)"],
    "D39e": ["v0 = torch.tensor([[1.0, 2.0]])", "v1 = torch.zeros(1)", "v2 = torch.any(v0, 1, out=v1)"],
    "D39f": ["v0 = torch.tensor([1.5, 2.5])", "v1 = torch.zeros(2, dtype=torch.int64)", "v2 = torch.cumsum(v0, 0, out=v1)"],
    "D48e": ["v0 = torch.tensor([True])", "with torch.no_grad():\n    v1 = v0.unbind(-1)",
             "v2 = v1[0].copy_(torch.tensor(1.5, requires_grad=True))"],
    "D61": ["v0 = torch.tensor([True, False])", "v1 = call_relu6(torch, v0)"],
    "D62": ["v0 = torch.tensor([[[-2.5, 1.25, 2.0]]])", "v1 = v0.expand(2, 1, 3)", "v2 = torch.tensor([[[1.0, 1.0, -inf]]])",
            "v3 = call_conv1d(torch, v1, v2, padding=1)"],
    "D63": ["v0 = torch.tensor([nan, 0.0, 2.0, 0.0], requires_grad=True)", "v1 = v0.prod()", "v1.backward()"],
    "D64": ["v0 = torch.tensor([inf, -inf, 1.0])", "v1 = call_gelu(torch, v0)"],
    "D65": ["v0 = torch.tensor(0.5)", "v1 = call_binary_cross_entropy(torch, v0, torch.tensor(1.5))"],
    "D66": ["v0 = torch.ones(1, 1, 2, 2, dtype=torch.float64)", "v1 = torch.ones(1, 1, 2, 2, dtype=torch.float64)",
            "v2 = call_conv_transpose2d(torch, v0, v1, torch.tensor([1.0]))"],
    "D67": ["v0 = torch.zeros((0, 3), dtype=torch.int64)", "v1 = torch.softmax(v0, 1)"],
    "D68": ["v0 = torch.tensor([1.0, -3.0], requires_grad=True)", "v1 = torch.var_mean(v0)",
            "h0 = v1[1].register_hook(lambda g: g + 1)", "v1[0].backward()"],
    "D69": ["v0 = torch.tensor([[[[0.5, 0.25], [1.0, 2.0]]]], requires_grad=True)", "v1 = call_avg_pool2d(torch, v0, 2)",
            "v1.sum().backward(create_graph=True)"],
    "D70": ["v0 = torch.tensor([[[0, -3, 2]]])", "v1 = torch.tensor([[[2, 6]]])", "v2 = call_conv1d(torch, v0, v1)"],
    "D56e": ["v0 = torch.tensor([[0.375, 0.3125], [0.875, -0.3125]], requires_grad=True)",
             "v1 = v0.t().clamp_max(torch.tensor([[0.75, 0.8125], [-0.875, -0.75]]))",
             "with torch.no_grad():\n    v2 = v1.flatten()"],
    "D70b": ["v0 = torch.tensor([[[[1, 2], [3, 4]]]])", "v1 = call_max_pool2d(torch, v0, 2)"],
    "D70c": ["v0 = torch.tensor([[[[1, 2], [3, 4]]]])", "v1 = call_avg_pool2d(torch, v0, 2)"],
    "D71": ["v0 = torch.tensor([inf, 1.0])", "v1 = torch.polygamma(2, v0)"],
    "D72": ["v0 = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)",
            "v1 = call_huber_loss(torch, v0, torch.tensor([0.5, 1.0]))", "v1.backward()"],
    "D73": ["v0 = torch.tensor([1, 2])", "v1 = call_dropout(torch, v0, 1.0)"],
    "D45h": ["v0 = torch.tensor([[-4, -4], [6, -4]])", "v1 = True ** v0"],
    "D41f": ["v0 = torch.tensor([[0.5, 1.0, 2.0], [1.0, 1.5, 0.25]])", "v1 = v0.unbind(1)", "v1[2][[0, 1]] = v1[0]"],
    "D49b": ["v0 = torch.tensor([[-0.0, 2.25, -2.75], [2.75, 1.25, 1.0]], requires_grad=True)", "v1 = v0 * 2", "v2 = v1.t()",
             "v3 = v1.reshape(3, 2)", "v4 = v3.mul_(-1.0)", "v2.sum().backward()"],
    "D56f": ["v0 = torch.tensor([[[1.25, -2.25, -2.0]]])", "v1 = v0.expand(2, 1, 3).clone()", "v2 = v1.reshape(-1)",
             "v3 = v1.zero_()"],
    "D74": ["v0 = torch.tensor([-0.625, 0.5], requires_grad=True)",
            "v1 = call_kl_div(torch, torch.tensor([-0.25, 0.5]), v0, reduction='sum')", "(v1 * 0).backward()"],
    "D75": ["v0 = torch.tensor([1.0, 2.0])", "v1 = torch.tensor([0.5, -1.0], requires_grad=True)",
            "v2 = v0.addcdiv_(v1, torch.tensor([2, 4]))", "v2.sum().backward()"],
    "D76": ["v0 = torch.tensor([1.0, 2.0], requires_grad=True)", "v1 = v0.sum()", "v2 = torch.tensor([1.0], requires_grad=True)",
            "v1.retain_grad()", "v1.backward(inputs=[v2])"],
    "D69b": ["v0 = torch.ones(1, 1, 2, 2)", "v1 = torch.ones(1, 1, 2, 2, requires_grad=True)",
             "v2 = call_conv_transpose2d(torch, v0, v1)", "v3 = torch.autograd.grad(v2.sum(), [v1], create_graph=True)"],
    "D77": ["v0 = torch.tensor([[[[2.75, -2.25]], [[0.5, -2.5]]], [[[-0.75, 2.25]], [[-1.75, -0.0]]]])",
            "v1 = call_batch_norm(torch, v0, torch.zeros(2), torch.ones(2), torch.tensor([0.25, -inf]), "
            "torch.tensor([0.25, -0.5]), training=True, momentum=0.0)"],
    "D78": ["v0 = torch.tensor([9.5, 1.0])", "v1 = v0.tanh()", "v2 = v1.atanh()"],
    "D79": ["v0 = torch.tensor([[2.0, 1.25, -0.5], [0.0, 0.75, 1.0]])", "v1 = v0.repeat_interleave(2, 1)", "v1.detach_()"],
    "D41g": ["v0 = torch.tensor([[-0.25, 1.5], [0.0, -1.25], [1.25, -1.75]])", "v1 = v0.T", "v2 = v1.data.mul_(v1[0])"],
    "D69c": ["v0 = torch.tensor([[-0.0625, 1.6875], [1.8125, 1.375]], requires_grad=True)", "v1 = torch.relu(v0)",
             "v1.sum().backward(create_graph=True)"],
    "D39g": ["v0 = torch.ones(2, 3)", "v1 = torch.ones(3, 2)", "v2 = torch.zeros(4, 3)[::2]",
             "with torch.no_grad():\n    v3 = torch.matmul(v0, v1, out=v2)"],
    "D48f": ["v0 = torch.tensor([[-3, -3], [3, -3]])",
             "v1 = v0.index_fill_(0, torch.tensor([1]), torch.tensor(0.75, requires_grad=True))"],
    "D80a": ["v0 = torch.tensor(-2.75, requires_grad=True)", "v1 = True ** v0", "v1.backward()"],
    "D80b": ["v0 = torch.tensor([0, -2])", "v1 = torch.tensor(-1.0, requires_grad=True)",
             "v2 = v0.masked_fill_(torch.tensor([True, True]), v1)", "v3 = v2 - torch.tensor(2.5)", "v3.mean().backward()"],
    "D81": ["v0 = torch.tensor([[-inf, 0.1875, 0.6875], [0.6875, 0.375, -0.9375]])",
            "v1 = call_cross_entropy(torch, v0, torch.tensor([1, 2]), ignore_index=1)"],
    "D82": ["v0 = torch.tensor([-0.625]).expand(4)", "v1 = torch.ones(4, 3)",
            "v2 = torch.tensor([-0.25], dtype=torch.float64).expand(3)", "v3 = call_linear(torch, v0, v1.t(), v2)"],
    "D83": ["v0 = torch.zeros(2, dtype=torch.float64)", "v1 = torch.tensor([2.5], requires_grad=True)", "v0[0] = v1.sum()",
            "v0[torch.tensor([0])] = torch.tensor([0.25], dtype=torch.float64)", "v2 = torch.tensor([-2.25, 1.5]) ** v0",
            "v2.sum().backward()"],
    "D84": ["v0 = torch.tensor([[-3, -3], [3, -3]])", "v1 = torch.index_fill(v0, 0, torch.tensor([1]), torch.tensor(-inf))"],
    "D85": ["v0 = torch.tensor([[[[2.0, -2.5], [-2.0, 2.25]], [[0.75, -2.5], [-0.25, 2.0]]]], requires_grad=True)",
            "v1 = v0.transpose(-1, -2)", "v2 = call_nll_loss(torch, v1, torch.tensor([[[0, 0], [1, 0]]]), reduction='none')",
            "v2.sum().backward()"],
    "D86": ["v0 = torch.tensor([-2.5, 0.5], requires_grad=True)", "v1 = v0 * 2", "v2 = NoMaterialize.apply(v1)",
            "v1.mean().backward(inputs=[v2[0], v2[1]])", "v3 = v2[1].mul_(-inf)", "v2[0].mean().backward()"],
    "D87": ["v0 = torch.tensor(0.25)", "v1 = v0.lerp_(torch.tensor(-0.0), torch.tensor([1.0]))"],
    "D57": ["v0 = torch.tensor([[[2, 4]]])", "v1 = v0.baddbmm(torch.tensor([[[6, 3]]]), torch.tensor([[[2, 2], [2, 2]]]), "
            "beta=0.5, alpha=-1.5)"],
    "D58": ["v0 = torch.tensor([[1.75, 0.25, -2.75], [2.75, -1.75, -0.5]], dtype=torch.float64)",
            "v1 = torch.tensor([[1.25, -1.125, 1.25, -0.125], [-0.8125, -0.4375, -0.5, -0.3125], "
            "[-1.375, -1.625, 1.25, 0.1875]], dtype=torch.float64)",
            "v2 = torch.tensor([[0.5, -inf], [0.875, 0.6875], [-1.3125, -inf], [1.5, -0.0625]], dtype=torch.float64)",
            "v3 = torch.einsum('ij,jk,kl->il', v0, v1, v2)"],
})
REPROS["D22b"] = ["v0 = torch.tensor([0.5, 0.0], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.copy_(v1)",
             "v3 = v2.pow_(torch.tensor(-inf))", "v2.sum().backward()"]
REPROS["D22c"] = ["v0 = torch.tensor([0.5, 0.0], requires_grad=True)", "v1 = v0.clone()", "v2 = v1.mul_(1)",
             "v3 = v2.pow_(torch.tensor(-inf))", "v2.sum().backward()"]
REPROS["D22d"] = ["v0 = torch.tensor([0.5, 0.0], requires_grad=True)", "v1 = v0 * 1", "v3 = v1 ** torch.tensor(-inf)", "v3.sum().backward()"]


GROUPS = [
 ("D1", "Tensor.NAME_() of every unary pointwise op raises TypeError", "cextend raises",
  "The in-place forms (`exp_`, `relu_`, `sin_`, `abs_`, `sign_`, ... every `_unary` entry) are installed as "
  "a bound method of the `Unary` object, so the tensor is never passed. Hit by ~15% of generated programs.", ["D1"]),
 ("D2", "sgn/sign crash on 0-d and bool tensors", "cextend raises", "", ["D2a", "D2b"]),
 ("D3", "amax/amin over an empty dimension crash (builtin `any` shadowed?)", "cextend raises", "", ["D3"]),
 ("D4", "diagonal() is numpy's read-only view", "cextend raises",
  "In-place ops on `x.diagonal()` raise, and so does diagonal's own backward.", ["D4a", "D4b"]),
 ("D5", "saved tensors differ from torch's", "both directions",
  "cextend saves what torch does not: pow's result when the exponent is a number (torch: self only), div's "
  "input when the divisor is a number, fmod's inputs for a number (torch saves nothing, so a second backward "
  "works). And the reverse: torch's sgn saves its result, cextend's saves nothing.", ["D5a", "D5b", "D5c", "D5d"]),
 ("D6", "copy_/setitem: a source with extra leading size-1 dims", "cextend raises",
  "torch drops leading size-1 dims of the source (`x0d[...] = t1`, `x[mask] = t[[v]]`); cextend rejects them, "
  "or accepts them in forward and then fails in backward.", ["D6a", "D6b", "D6c"]),
 ("D7", "digamma has no derivative: its result silently does not require grad", "wrong metadata (silent missing gradient)",
  "torch: polygamma(1, x) * grad.", ["D7"]),
 ("D8", "in-place ops on integer/bool tensors, and non-differentiable in-place ops", "wrong metadata / wrong gradient, no error",
  "torch: `int.copy_(float requiring grad)` and `float.logical_or_(requiring grad)` leave self without history; "
  "a non-differentiable in-place op (logical_or_) leaves self's history as it was, so the gradient flows through "
  "unchanged (cextend: zero); comparisons in place (`eq_`, `lt_` ...) do record a grad_fn (zero gradient) even on an "
  "int self; masked_fill of an int tensor with a value requiring grad raises.", ["D8a", "D8b", "D8c", "D8d", "D8e", "D8f"]),
 ("D9", "views torch refuses to rebase are rebased", "torch raises",
  "Outputs of split/chunk/unbind (multi-output views), views made under no_grad, and views returned by custom "
  "Functions: after their base changes in place, torch raises at the next use (even reading `grad_fn`); cextend "
  "silently regenerates them.", ["D9a", "D9b", "D9c"]),
 ("D10", "a base's requires_grad_()/requires_grad_(False)/detach_() is not seen by its views", "mixed",
  "torch: a view's requires_grad follows its base; after `base.detach_()` a later backward through an old view "
  "no longer accumulates into base.grad.", ["D10a", "D10b", "D10c", "D10d"]),
 ("D11", "views made under no_grad are kept out of the graph in torch", "wrong .grad / torch raises",
  "torch reports them requires_grad=True, is_leaf=True, but backward through them gives no .grad anywhere, and "
  "backward from one raises 'does not require grad'. cextend gives them a .grad.", ["D11a", "D11b"]),
 ("D12", "backward(inputs=[non_leaf]) does not retain_grad() the non-leaf", "wrong .grad, no error",
  "torch calls retain_grad() on non-leaf inputs, so later backwards keep accumulating into their .grad.", ["D12"]),
 ("D13", "retain_grad() then an in-place op: the old version's gradient is retained", "wrong .grad, no error",
  "torch moves the retain hook to the tensor's new grad_fn.", ["D13", "D13b"]),
 ("D14", "a second backward through setitem (CopySlices) does not raise", "torch raises", "", ["D14"]),
 ("D16", "dtype and argument checks", "error parity (mostly torch raises)",
  "index_put with a different source dtype; bool arithmetic (`1.5 - bool`, `abs(bool)`, `relu(bool)`, `pow_` "
  "on bool, argmax on bool, unary `+` on bool); Python numbers where torch requires a Tensor (atan2, "
  "logical_*); negative slice steps; masked_fill_ of inf into int64. cextend raising where torch computes: "
  "`int ** negative int tensor`, `clamp_max(True)`, int fmod by a zero that broadcasts into an empty "
  "result, `bool.add_(bool, alpha=2)`. And one silent dtype: `square(bool)` is int64 in torch.",
  ["D16a", "D16b", "D16c", "D16d", "D16e", "D16h", "D16k", "D16f", "D16g", "D16j", "D16l", "D16i", "D16m", "D16n", "D16o", "D16p", "D16q", "D16r", "D16s", "D16t"]),
 ("D17", "in-place shape and memory-overlap checks", "error parity",
  "", ["D17a", "D17b", "D17c", "D17d"]),
 ("D18", "split/chunk of an empty dimension", "wrong result, no error", "", ["D18a", "D18b"]),
 ("D19", "ops torch has no derivative for get one", "torch raises", "", ["D19a", "D19b", "D19c"]),
 ("D20", "zero gradients computed as `g * 0`", "wrong gradient, no error",
  "round/floor/sign/fill_/copy_ (self's old value) backward return `g * 0`: an inf or NaN incoming gradient "
  "becomes NaN (torch: exact zeros), and under create_graph the zeros stay attached to the graph.",
  ["D20a", "D20b", "D22b", "D20c"]),
 ("D21", "non-differentiable in-place ops get the differentiable checks", "cextend raises", "", ["D21a", "D21b"]),
 ("D22", "pow at special values", "wrong number, no error", "numpy's power, not C's pow: (-inf) ** 0.5.", ["D22a"]),
 ("D23", "hooks on a multi-output op's output that got no gradient", "torch raises",
  "torch calls the hook with None; cextend does not call it.", ["D23"]),
 ("D26", "autograd.grad with a hooked non-leaf among the inputs", "different number (a torch inconsistency)",
  "torch returns the pre-hook gradient of input v1 when v1's node runs anyway (another input lies below it), "
  "and the post-hook one when v1 is the only input. Decision: not emulated; the generator keeps hooked "
  "non-leaf tensors out of autograd.grad's inputs (noted in allowlist.py).", ["D26"]),
 ("D27", "x.clamp_(x, ...) saves the bound after the change", "torch raises", "the y.mul_(y) case, for clamp_'s tensor bounds.", ["D27"]),
 ("D28", "clone() does not preserve strides", "torch raises",
  "torch's clone keeps a transposed tensor's strides (memory_format=preserve_format), so .view() of it raises "
  "(and stride()/is_contiguous() differ).", ["D28", "D28b"]),
 ("D30", "nanmedian(dim) returns a named tuple called median", "wrong type, no error", "", ["D30"]),
 ("D31", "names torch does not have (torch.psi, Tensor.psi)", "torch raises",
  "torch has torch.special.psi only.", ["D31"]),
 ("D32", "x[-1] on a 0-d tensor works", "torch raises",
  "The documented legacy deviation is `x[0]` (`loss.data[0]`); other indices should still raise.", ["D32"]),
 ("D33", "var_mean/std_mean's mean at +-inf", "different number (a torch quirk)",
  "torch's Welford update gives NaN for the mean where torch.mean gives -inf. Emulate, or document.", ["D33"]),
 ("D34", "addcmul/addcdiv on integer tensors with a fractional value", "wrong number, no error",
  "torch casts value to the tensors' integer type first (-0.5 -> 0).", ["D34"]),
 ("D35", "amax/amin backward with a NaN", "wrong gradient, no error",
  "torch splits the gradient evenly over the elements equal to the result, and nothing equals NaN: the "
  "gradient is NaN everywhere. cextend routes it to the NaN (as torch's max() does).", ["D35"]),
 ("D36", "the sign of remainder's zeros", "wrong number, no error",
  "numpy's remainder gives a zero the divisor's sign; torch's is +0.0. Visible through 1/x.", ["D36"]),
 ("D24", "torch raises accumulating into a .grad that is a ZeroTensor", "torch raises (documented deviation)",
  "abs's double backward produces torch's lazy ZeroTensor; accumulating into it raises. Decision: ALLOWED, "
  "listed in docs/torch-parity.md (torch raises, cextend computes).", ["D24"]),
 ("D37", "out= of max/min, sort, topk, kthvalue, median and nanmedian is ignored", "wrong result, no error",
  "The out tensors are neither written nor resized, and the result is a new tuple (torch returns the out "
  "tensors, in a named tuple called max_out, sort_out, ...). Holds for max()/min() without dim too.",
  ["D37a", "D37b", "D37c"]),
 ("D38", "out= and autograd", "error parity",
  "torch raises 'functions with out=... arguments don't support automatic differentiation' when an input "
  "requires grad (grad mode on) for every differentiable op; cextend computes for addcdiv, addcmul, addmm, "
  "amax, amin, baddbmm, bmm, kthvalue, lerp, logcumsumexp, logsumexp, max, median, min, nan_to_num, "
  "nanmedian, norm, outer, sort, std, topk, tril, triu, var; and cextend raises for the non-differentiable "
  "ones, where torch computes: eq, ne, lt, le, gt, ge, logical_and/or/xor/not, floor_divide.",
  ["D38a", "D38b"]),
 ("D39", "out= dtype checks", "torch raises",
  "Where torch requires out's dtype to be the result's (round, trunc, amin, amax, min/max, indices of "
  "topk/sort/kthvalue/median that are not int64, values of another dtype, a bool out for any/all), cextend "
  "casts; and where torch computes in out's dtype (cumsum(float, out=int64)), cextend refuses the cast. "
  "Shapes: torch resizes an out that is a view of another tensor (matmul), cextend refuses; a batched "
  "matmul into a sliced out of the wrong shape raises in torch only.",
  ["D39a", "D39b", "D39c", "D39d", "D39e", "D39f", "D39g"]),
 ("D40", "out= where torch has no out= overload", "torch raises",
  "torch.sum(x), prod(x), std(x, bool), var(x, bool), median(x), nanmedian(x) (no dim), relu(x) and "
  "where(cond, x, number) take no out=; cextend accepts it.", ["D40a", "D40b", "D40c", "D40d"]),
 ("D41", "memory-overlap checks", "error parity",
  "torch lets zero_, fill_, tril_ and triu_ (and out= of tril/triu) write into an expanded tensor, cextend "
  "raises; torch raises when the source of a write partly overlaps the destination (`x[0] = x`, "
  "`x.add_(x[0])` through another alias), cextend computes; and cextend sees an overlap between two "
  "columns of one tensor (unbind(1) outputs), which share no element. D41g: `y.mul_(y[0])` through .data, "
  "which torch does not refuse: torch reads the operand as its own loop overwrites it, cextend reads a copy "
  "(torch's answer depends on its loop order: a candidate for steering around).", ["D41a", "D41b", "D41c", "D41d", "D41e", "D41f", "D41g"]),
 ("D42", "a second backward and in-place changes: the saved tensors differ", "error parity (both directions)",
  "torch saves what its formula needs for the inputs that require grad: a Python number multiplied in is "
  "saved (as a wrapped tensor), so a second backward raises; addcmul and scatter_add save nothing when only "
  "self requires grad, and setitem's CopySlices nothing either, where cextend's nodes save and then raise. "
  "In-place ops whose formula uses self save a clone of the original self in torch (erfinv_, cumprod_), so "
  "changing the result later does not invalidate backward; pow_ with a tensor exponent saves its result; "
  "cummax saves its indices.", ["D42a", "D42b", "D42c", "D42d", "D42e", "D42f", "D42g", "D42h"]),
 ("D43", "the sign of zeros", "different zero sign, no error",
  "torch's clamp/relu keep -0.0 (x is not below the bound), maximum/minimum/fmax/fmin of 0.0 and -0.0 "
  "return the first operand, cumsum and logcumsumexp start from +0.0, pow(-0.0, tensor(0.5)) is +0.0 "
  "(numpy: -0.0 in all these). Visible through 1/x, atan2, copysign.",
  ["D43a", "D43b", "D43c", "D43d", "D43e"]),
 ("D44", "pow by the numbers 0.5 and -0.5", "wrong number, no error",
  "torch computes x ** 0.5 as sqrt and x ** -0.5 as rsqrt: (-inf) ** 0.5 is NaN, (-inf) ** -0.5 NaN, and the "
  "gradient at -0.0 is -inf; cextend follows C's pow (inf, 0, inf).", ["D44a", "D44b", "D44c"]),
 ("D45", "bool operands", "error parity (mostly torch raises)",
  "A Python bool in a subtraction (`True - x`, `x - True`, rsub); pow, dot, mm/bmm/matmul, cumsum_/cumprod_ "
  "on bool tensors; and a bool tensor fill_'ed with a value that requires grad "
  "(requires_grad_ then raises in torch). `bool ** True` makes cextend build an int8 array it cannot even "
  "describe (`.dtype` raises). cextend raises where torch computes: `bool.add_(True, alpha=2)`, "
  "`True ** int_tensor` with negative exponents (a bool base: 1 ** -4 is 1).",
  ["D45a", "D45b", "D45c", "D45d", "D45f", "D45g", "D45h"]),
 ("D46", "expand() with no sizes", "torch raises", "", ["D46"]),
 ("D47", "clamp_(tensor, number)", "cextend raises", "torch 2.13 accepts a Tensor and a number as bounds.", ["D47"]),
 ("D48", "writing a value that requires grad into an integer tensor through a slice", "wrong metadata / cextend raises",
  "torch records history on the int tensor (requires_grad True, a grad_fn) when the write goes through a "
  "slice (and fill_ with such a value makes a later view raise 'Autograd not support dtype: Long'); through an "
  "output of chunk, split or unbind (also one made under no_grad, of a bool tensor), cextend raises the view "
  "errors torch keeps for differentiable dtypes.", ["D48", "D48b", "D48c", "D48d", "D48e", "D48f"]),
 ("D49", "rebasing a transposed view after an in-place op through .view() or .reshape()",
  "cextend raises / WRONG GRADIENT, no error",
  "After `v3 = v1.view(...)` (or a reshape that views) is modified in place, an older transposed view `v2 = "
  "v1.t()` of the same base must be regenerated from the new base: through .view() cextend raises (a "
  "transposed layout cannot be viewed), through .reshape() it silently keeps the old history, so the gradient "
  "misses the in-place op (D49b: 2 where torch gives -2).", ["D49", "D49b"]),
 ("D50", "a custom Function's mark_dirty resets a non-leaf's retained .grad", "wrong .grad, no error",
  "torch: the dirty tensor's .grad is None afterwards (a builtin in-place op keeps it, in both).", ["D50"]),
 ("D51", "a view's grad_fn after base.detach_() and an in-place op", "wrong metadata", "The D10 family.", ["D51"]),
 ("D52", "atan2's gradient at (+-0, 0)", "wrong gradient, no error", "torch: 0; cextend: NaN (0/0).", ["D52"]),
 ("D53", "backward(inputs=[x, x])", "wrong .grad, no error", "torch accumulates once per distinct input.", ["D53"]),
 ("D54", "std_mean/var_mean's mean with an infinity last", "different number (a torch quirk)",
  "D33's Welford emulation: torch's mean is inf when the infinity comes last along the dim, NaN when it comes "
  "before finite values; cextend gives NaN for both.", ["D54"]),
 ("D55", "einsum of float32 and float64 operands", "cextend raises", "torch promotes.", ["D55"]),
 ("D56", "the layout (strides) of results", "wrong values through aliasing / error parity of view()",
  "torch's results keep their input's layout where cextend's do not, and the other way round: flip of a "
  "transposed tensor is transposed in torch (so reshape() of it copies; cextend's result is contiguous and "
  "reshape() views it, so an in-place op shows through), rot90 the reverse; clone of an expanded tensor is "
  "contiguous in torch (cextend keeps numpy's odd strides, so view(-1) raises); a pointwise op follows its "
  "first operand's layout in torch (view(-1) raises there, not in cextend), and so does clamp with tensor "
  "bounds (so flatten() under no_grad copies in torch: requires_grad False; cextend views).",
  ["D56a", "D56b", "D56c", "D56d", "D56e", "D56f"]),
 ("D57", "baddbmm on integer tensors with fractional beta/alpha", "wrong number, no error",
  "As D34: torch casts beta and alpha to the integer type first.", ["D57"]),
 ("D59", "var_mean/std_mean: the mean's gradient with an infinity in the row", "wrong gradient, no error",
  "torch: 1/n for every element; cextend: 0.", ["D59"]),
 ("D60", "atan2_ with a Python number", "torch raises", "As D16d for the in-place form (a number or a bool).", ["D60", "D60b"]),
 ("D61", "relu6 (hardtanh) of a bool tensor", "torch raises", "", ["D61"]),
 ("D62", "conv1d over a padded, batched input with an infinite weight", "wrong number, no error",
  "torch skips the padding; cextend multiplies the padded zeros (0 * -inf = NaN) when the batch has more than "
  "one sample; the same for conv_transpose2d's weight gradient with output_padding (NaN where torch has "
  "finite values).", ["D62"]),
 ("D63", "prod's gradient with two zeros and a NaN", "different gradient, no error",
  "torch's prod backward returns zeros when the input holds two or more zeros (the product of the others "
  "always includes a zero); cextend multiplies through the NaN.", ["D63"]),
 ("D64", "float32 gelu at +inf", "different number, no error",
  "torch's answer depends on the CPU: its oneDNN path gives NaN at +inf on AVX-512 and inf on AVX2 "
  "(ATen's kernel, and cextend, give inf).", ["D64"]),
 ("D65", "binary_cross_entropy with a target outside [0, 1]", "torch raises", "", ["D65"]),
 ("D66", "conv_transpose2d with a float32 bias and float64 operands", "cextend raises",
  "torch computes (conv1d/conv2d raise in both).", ["D66"]),
 ("D67", "softmax of an empty int64 tensor", "cextend raises", "torch returns the empty tensor.", ["D67"]),
 ("D68", "a hook on var_mean's output that got no gradient", "torch raises",
  "As D23 for var_mean/std_mean: torch calls the hook with None.", ["D68"]),
 ("D69", "ops whose backward is not differentiable: the .grad under create_graph", "wrong metadata, no error",
  "avg_pool2d's backward in cextend is not recorded under create_graph, so the .grad does not require grad (and a "
  "double backward through it would silently give nothing); torch's does. Likewise conv_transpose2d's weight "
  "gradient from autograd.grad(create_graph=True): torch's requires grad (its backward node takes the weight "
  "as an input), cextend's does not; and relu's (torch records threshold_backward, whose result requires grad).",
  ["D69", "D69b", "D69c"]),
 ("D70", "conv1d/conv2d, max_pool2d and avg_pool2d on integer tensors", "cextend raises", "torch computes in int64.",
  ["D70", "D70b", "D70c"]),
 ("D71", "polygamma(2, inf)", "different number, no error", "torch: NaN; cextend: -0.0.", ["D71"]),
 ("D72", "huber_loss of float64 input and float32 target: backward", "torch raises (a torch bug?)",
  "torch's forward promotes, its backward raises 'Found dtype Float but expected Double' (mse_loss works). "
  "Candidate for steering around rather than emulating.", ["D72"]),
 ("D73", "dropout of an integer tensor with p=1", "cextend raises", "torch returns zeros of the input's dtype.", ["D73"]),
 ("D74", "kl_div's gradient where the target is not positive", "wrong gradient, no error",
  "torch's is 0 where its incoming gradient is 0 (it masks log(target) for target <= 0); cextend multiplies "
  "0 by NaN.", ["D74"]),
 ("D75", "addcdiv_ with an integer divisor: backward", "torch raises (a torch bug?)",
  "torch's backward raises \"result type Float can't be cast to the desired output type Long\"; candidate for "
  "steering around.", ["D75"]),
 ("D76", "backward(inputs=[unrelated]) from a root that retains its grad", "wrong .grad, no error",
  "torch still fills the root's .grad (1.0); cextend leaves it None.", ["D76"]),
 ("D77", "batch_norm with an infinite weight", "different number, no error",
  "torch folds the weight into a scale and a shift, so x_hat * -inf becomes inf - inf = NaN where cextend "
  "gives +-inf.", ["D77"]),
 ("D78", "float32 tanh near 1", "different number (1 ulp, amplified)",
  "tanh(9.5) in float32 is 1.0 in torch (correctly rounded) and 0.99999994 in cextend (numpy's float32 tanh), "
  "so atanh of it is inf against 8.66.", ["D78"]),
 ("D79", "repeat_interleave's result is a view in torch", "torch raises",
  "torch's repeat_interleave(int) returns a view of an internal expanded tensor (detach_() raises \"Can't "
  "detach views in-place\").", ["D79"]),
 ("D80", "torch's internal asserts", "torch raises (torch bugs)",
  "`True ** x` (x float, requiring grad) then backward, and backward through an int tensor that masked_fill_ "
  "gave a value requiring grad: torch fails an INTERNAL ASSERT. With no answer from torch, the tester checks "
  "cextend's gradients against finite differences of the program (difftest/verify.py) before it excuses one.",
  ["D80a", "D80b"]),
 ("D81", "cross_entropy with infinite logits", "wrong number, no error",
  "A row whose target is ignore_index (or -100) still poisons the mean with NaN in cextend; torch skips it. "
  "The same with label_smoothing and an inf logit.", ["D81"]),
 ("D82", "linear with a bias of another float dtype (1-d input, transposed weight)", "cextend raises",
  "torch computes (matmul + add promote).", ["D82"]),
 ("D83", "setitem's backward for an overwritten region", "wrong gradient, no error",
  "The gradient of a value written by setitem and later overwritten is exactly 0 in torch; cextend multiplies "
  "the incoming gradient by 0, so a NaN or inf there (pow's gradient at a negative base) becomes NaN. The D20 "
  "family.", ["D83"]),
 ("D84", "index_fill of an infinity into an integer tensor", "torch raises", "", ["D84"]),
 ("D85", "nll_loss over a non-contiguous 4-d input, reduction='none': backward", "torch raises (a torch bug)",
  "torch's backward raises 'grad_input must be contiguous'. Candidate for steering around.", ["D85"]),
 ("D86", "retained .grad of a custom Function's outputs after an in-place op on a sibling output",
  "wrong .grad in torch (a torch bug)",
  "backward(inputs=[out0, out1]) retains both; after out1.mul_(...), a backward through out0 leaves "
  "out0.grad None in torch; cextend fills it. torch moves the retain_grad hook of output 0, not "
  "output 1, to the in-place op's node (its update_tensor_hooks_on_new_gradfn pops the hook at the "
  "tensor's new output_nr), so out0.grad receives out1's gradient; where output 0 retains no grad it "
  "fails an INTERNAL ASSERT (`a, b = x.var_mean(0); b.retain_grad(); b.mul_(2)`). cextend moves out1's "
  "hook.", ["D86"]),
 ("D87", "lerp_ on a 0-d tensor with a weight of shape [1]", "torch raises",
  "torch checks that the in-place result keeps self's shape ('output with shape [] doesn't match the "
  "broadcast shape [1]'); cextend's lerp_ does not.", ["D87"]),
 ("D58", "einsum's contraction order", "different number at inf (order-dependent)",
  "torch contracts left to right here ((AB)C); with an infinity the order decides between -inf and NaN.",
  ["D58"]),
 ("D25", "torch's autograd.grad returns expanded views", "torch raises (documented deviation) / aliasing",
  "The gradient of sum() is an expanded (stride-0) tensor in torch: an in-place op on it raises, and "
  "masked_fill_/setitem on it write every element (one memory location). cextend returns real arrays. "
  "Decision: the raise (D25a) is ALLOWED and listed in docs/torch-parity.md; the generator never writes into "
  "autograd.grad's results, so the aliasing case (D25b, a torch hazard not reproduced) is not compared.",
  ["D25a", "D25b"]),
]



# Repros that still differ on purpose: a torch inconsistency the generator steers around.
AVOIDED = {"D25b": "the generator never writes into autograd.grad's results",
           "D62": "the generator keeps non-finite operands out of padded convolutions",
           "D26": "the generator keeps hooked non-leaf tensors out of autograd.grad's inputs",
           "D86": "the generator passes no custom Function output to backward(inputs=)",
           "D64": "the generator keeps float32 values from 2**127 up out of gelu (CPU-dependent in torch)"}


def status(key, finding):
    """'fixed', 'allowed: DEVIATION', 'avoided: WHY' or 'disagrees'."""
    if finding is None:
        return "fixed"
    deviation = excuse(finding)
    if deviation is not None:
        return "allowed: %s" % deviation.name
    if key in AVOIDED:
        return "avoided: %s" % AVOIDED[key]
    return "disagrees"


def replay(body, torch, cextend):
    """The first Finding replaying body, or None (the libraries agree)."""
    session = Session(torch, cextend)
    for code in body:
        hard, _ = session.step(Stmt(code, "known"))
        if hard is not None:
            return hard
    return None


HEADER = """# Where cextend and torch 2.13 still differ, on purpose

Generated by `PYTHONPATH=tests python -m difftest.known --markdown` (a test
checks that this file matches it).  The differential tester (`tests/difftest`)
found every entry; each is one of:

- **allowed**: a documented deviation (docs/torch-parity.md,
  `tests/difftest/allowlist.py`): cextend raises where torch computes, or the
  reverse, deliberately;
- **avoided**: torch 2.13 is inconsistent with itself there, or its answer
  depends on the CPU, so the generator steers around it (the program below
  shows the case; `python -m difftest.known ID` replays it on this machine).

Repros of disagreements that were fixed stay in `tests/difftest/known.py`,
where `make test` replays every one of them; they are not listed here.
A bug found and not yet fixed would be parked as an OPEN entry in
`tests/difftest/allowlist.py`; there are none.

Each repro is a complete program after this header (custom Function classes
are defined in `tests/difftest/functions.py`):

    import torch            # or: import cextend as torch
    nan, inf = float('nan'), float('inf')

"""


def markdown(torch, cextend):
    """DISAGREEMENTS.md: the allowed and avoided repros.  Avoided ones are
    listed whatever this machine's torch answers (some depend on its CPU)
    and without an outcome; allowed ones with the outcome that excuses them."""
    out = io.StringIO()
    w = out.write
    w(HEADER)
    for ident, title, kind, note, keys in GROUPS:
        entries = []
        for key in keys:
            body = REPROS[key]
            if key in AVOIDED:
                entries.append((key, body, "avoided (%s)" % AVOIDED[key], None))
                continue
            f = replay(body, torch, cextend)
            state = status(key, f)
            if f is not None and state != "fixed":
                entries.append((key, body, state.replace(": ", " (", 1) + ")" if ": " in state else state, f))
        if not entries:
            continue
        w("## %s: %s\n\n*%s.* %s\n\n" % (ident, title, kind, note))
        for key, body, state, f in entries:
            w("`%s`: %s.\n\n```python\n" % (key, state))
            for text in definitions([Stmt(c, "") for c in body]):
                w(text + "\n")
            last = len(body) - 1 if f is None else f.index
            for i, code in enumerate(body[:last + 1]):
                w(code + ("    # <--" if f is not None and i == f.index else "") + "\n")
            w("```\n")
            if f is not None:
                w("```\n" + f.explain() + "\n```\n")
            w("\n")
    return out.getvalue().rstrip("\n") + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    import torch
    import cextend
    warnings.simplefilter("ignore")
    if "--markdown" in argv:
        sys.stdout.write(markdown(torch, cextend))
        return 0
    # IDs on the command line pick repros (D39 picks D39a, D39b, ...) and
    # print how each picked one still disagrees.
    wanted = [a for a in argv if not a.startswith("-")]
    counts = {}
    for ident, title, kind, note, keys in GROUPS:
        for key in keys:
            if wanted and not any(key == w or (key.startswith(w) and not key[len(w)].isdigit())
                                  for w in wanted):
                continue
            finding = replay(REPROS[key], torch, cextend)
            state = status(key, finding)
            word = state.split(":")[0]
            counts[word] = counts.get(word, 0) + 1
            print("%-6s %-9s %s%s" % (key, word, title, "" if word in ("fixed", "disagrees") else
                                       "  [%s]" % state.split(": ", 1)[1]))
            if wanted and word == "disagrees":
                print("    " + "\n    ".join(REPROS[key]))
                print("    " + finding.explain().replace("\n", "\n    "))
    print("%d repros: %s" % (sum(counts.values()), ", ".join("%d %s" % (n, w) for w, n in sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
