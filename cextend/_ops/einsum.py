"""einsum as a composition of differentiable ops.

Operands are contracted pairwise, each pair as one batched matrix product
(permute to batch x free x contracted, reshape to 3-D, matmul on the C
GEMM, reshape back), left to right as torch does without opt_einsum (the
order decides, with an infinity among the operands, between -inf and NaN).
Repeated subscripts within an operand take its diagonal first, and
subscripts that no later step needs are summed away as soon as possible.
Every step is an ordinary Tensor op, so gradients (of any order) come
from the ops themselves.
"""
import string

from cextend._ops._operands import require_tensor
from cextend.autograd import views
from cextend._ops.registry import Sample, register
from cextend._promotion import _torch_name

_SPARE = string.ascii_uppercase + string.ascii_lowercase


def _parse(equation, operands):
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, rhs = equation.split("->")
        explicit = True
    else:
        lhs, rhs, explicit = equation, None, False
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(inputs) else
                           "einsum(): fewer operands were provided than specified in the equation")
    used = set(c for c in equation if c.isalpha())
    spare = [c for c in _SPARE if c not in used]
    ellipsis_dims = 0
    for sub, t in zip(inputs, operands):
        letters = sum(1 for c in sub if c.isalpha())
        if "..." in sub:
            ellipsis_dims = max(ellipsis_dims, t.dim() - letters)
        elif letters != t.dim():
            raise RuntimeError("einsum(): the number of subscripts in the equation (%d) does not match "
                               "the number of dimensions (%d) for operand %d%s"
                               % (letters, t.dim(), inputs.index(sub),
                                  "" if explicit else " and no ellipsis was given"))
        for c in sub.replace("...", ""):
            if not c.isalpha():
                raise RuntimeError("einsum(): invalid subscript given at index %d in the equation string, "
                                   "subscripts must be in [a-zA-Z]" % equation.index(c))
    ellipsis_letters = "".join(spare[:ellipsis_dims])
    expanded = []
    for sub, t in zip(inputs, operands):
        if "..." in sub:
            count = t.dim() - sum(1 for c in sub if c.isalpha())
            sub = sub.replace("...", ellipsis_letters[ellipsis_dims - count:])
        expanded.append(sub)
    if explicit:
        output = rhs.replace("...", ellipsis_letters)
        for c in output:
            if not any(c in s for s in expanded):
                raise RuntimeError("einsum(): output subscript %s does not appear in the equation for any "
                                   "input operand" % c)
    else:
        counts = {}
        for s in expanded:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        output = ellipsis_letters + "".join(sorted(c for c, n in counts.items()
                                                   if n == 1 and c not in ellipsis_letters))
    return expanded, output


def _take_diagonals(t, sub):
    """Repeated subscripts within one operand: keep the diagonal."""
    while True:
        repeated = next((c for c in sub if sub.count(c) > 1), None)
        if repeated is None:
            return t, sub
        first = sub.index(repeated)
        second = sub.index(repeated, first + 1)
        t = t.diagonal(0, first, second)
        sub = "".join(c for i, c in enumerate(sub) if i not in (first, second)) + repeated


def _sum_out(t, sub, keep):
    dims = tuple(i for i, c in enumerate(sub) if c not in keep)
    if not dims:
        return t, sub
    return t.sum(dims), "".join(c for c in sub if c in keep)


def _contract(a, sa, b, sb, keep, sizes):
    """a (subscripts sa) times b (sb), keeping the subscripts in keep."""
    a, sa = _sum_out(a, sa, keep | set(sb))
    b, sb = _sum_out(b, sb, keep | set(sa))
    batch = [c for c in sa if c in sb and c in keep]
    contracted = [c for c in sa if c in sb and c not in keep]
    left = [c for c in sa if c not in sb]
    right = [c for c in sb if c not in sa]
    a = _broadcast(a, sa, sizes)
    b = _broadcast(b, sb, sizes)
    pa = a.permute(*[sa.index(c) for c in batch + left + contracted])
    pb = b.permute(*[sb.index(c) for c in batch + contracted + right])

    def size(letters):
        n = 1
        for c in letters:
            n *= sizes[c]
        return n
    if not contracted:
        # torch multiplies (mul promotes dtypes; each element is one product)
        product = pa.reshape(size(batch), size(left), 1) * pb.reshape(size(batch), 1, size(right))
    else:
        # torch's bmm: one dtype, named as its kernel names it
        if pa._data.dtype != pb._data.dtype:
            raise RuntimeError("expected scalar type %s but found %s"
                               % (_torch_name(pa._data.dtype), _torch_name(pb._data.dtype)))
        product = pa.reshape(size(batch), size(left), size(contracted)).matmul(
            pb.reshape(size(batch), size(contracted), size(right)))
    out = product.reshape([sizes[c] for c in batch + left + right])
    return out, "".join(batch + left + right)


def _broadcast(t, sub, sizes):
    """Expand size-1 dims that meet a larger size of the same subscript."""
    target = [sizes[c] for c in sub]
    return t.expand(target) if list(t.shape) != target else t


def einsum(equation, *operands):
    """torch.einsum: sums of products over the subscripts of an equation."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least "
                         "one operand and its subscripts list")
    operands = [require_tensor(t, "einsum", "operands") for t in operands]
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    subs, output = _parse(equation, operands)
    sizes = {}
    for sub, t in zip(subs, operands):
        for c, n in zip(sub, t.shape):
            if c in sizes and n != sizes[c] and n != 1 and sizes[c] != 1:
                raise RuntimeError("einsum(): operands do not broadcast with remapped shapes "
                                   "(original->remapped): subscript %s has sizes %d and %d" % (c, sizes[c], n))
            sizes[c] = max(sizes.get(c, n), n) if sizes.get(c, n) != 1 else n
    terms = []
    for t, sub in zip(operands, subs):
        t, sub = _take_diagonals(t, sub)
        terms.append((t, sub))
    while len(terms) > 1:
        (a, sa), (b, sb) = terms[0], terms[1]
        rest = [s for _, s in terms[2:]]
        keep = set(output).union(*rest) if rest else set(output)
        terms = [_contract(a, sa, b, sb, keep, sizes)] + terms[2:]
    (t, sub), = terms
    if len(operands) == 1:
        # torch permutes the operand to the output's labels, then the summed
        # ones, and sums those: a view of the input where nothing is summed
        order = [sub.index(c) for c in output] + [i for i, c in enumerate(sub) if c not in output]
        t = t.permute(*order)
        return t.sum(tuple(range(len(output), len(sub)))) if len(sub) > len(output) else t
    summed = bool(set().union(*subs) - set(output))
    t, sub = _sum_out(t, sub, set(output))
    t = _broadcast(t, sub, sizes)
    t = t.permute(*[sub.index(c) for c in output])
    # torch's pairwise products leave the result laid out in the output's
    # order; where labels were summed away its last step is a view() of it
    t = t.contiguous()
    if t._base is not None:
        t = views.forget_base(t)
    return t.view(t.shape) if summed else t


def _einsum_call(lib, equation, *operands):
    return lib.einsum(equation, *operands)


def _einsum_samples(rng):
    r = rng.standard_normal
    yield Sample("ij,jk->ik", r((3, 4)), r((4, 5)))
    yield Sample("bij,bjk->bik", r((2, 3, 4)), r((2, 4, 2)))
    yield Sample("i,i->", r((4,)), r((4,)))
    yield Sample("i,j->ij", r((3,)), r((4,)))
    yield Sample("ii->i", r((3, 3)))
    yield Sample("ij->ji", r((3, 4)))
    yield Sample("ij->", r((3, 4)))
    yield Sample("...ij,...jk", r((2, 3, 4)), r((4, 2)))
    yield Sample("ij,jk,kl->il", r((2, 3)), r((3, 4)), r((4, 2)))
    yield Sample("bhqd,bhkd->bhqk", r((1, 2, 3, 4)), r((1, 2, 5, 4)))


register("einsum", einsum, method=False, samples=_einsum_samples, family="linalg", call=_einsum_call)
