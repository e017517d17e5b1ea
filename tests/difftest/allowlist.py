"""The documented deviations from torch: the one place they live.

ALLOWED holds the statement patterns where cextend deliberately differs
from torch, each with its reason; README.md ("Differential testing
against torch") lists them.  A deviation can only excuse a statement
where exactly one of the two libraries raised: `excuse` checks this
before asking any entry, so a deviation never stands for a different
number without an error.

OPEN holds known bugs, parked while the library is fixed; each names its
entry in DISAGREEMENTS.md and starts with "OPEN:".  They are not
deviations: they may match any disagreement, so each is as narrow as its
bug, and every one of them must go.  The summary counts them apart.

A program stops at an excused or open statement: what follows would
compare two different states.
"""


class Deviation:
    """A documented deviation: matches(code, torch_error, cextend_error) -> bool,
    asked only when exactly one of the errors is None."""

    def __init__(self, name, reason, matches):
        self.name = name
        self.reason = reason
        self.matches = matches

    def __repr__(self):
        return "<Deviation %s>" % self.name


class Open:
    """A known bug (DISAGREEMENTS.md id), matches(finding) -> bool."""

    def __init__(self, ident, name, matches):
        self.ident = ident
        self.name = "OPEN: %s %s" % (ident, name)
        self.matches = matches

    def __repr__(self):
        return "<%s>" % self.name


def _zero_dim_index(code, torch_error, cextend_error):
    return (cextend_error is None and isinstance(torch_error, IndexError)
            and "invalid index of a 0-dim tensor" in str(torch_error) and "[0]" in code)


ALLOWED = [
    Deviation("loss.data[0]",
              "x[0] on a 0-d tensor returns x (torch 0.4's legacy spelling, with its warning), so "
              "2017-era scripts run; torch 2.13 raises IndexError", _zero_dim_index),
]


class Unspecified:
    """An output torch documents as unspecified (indices among ties): when it
    is the only thing that differs, the program stops there, counted apart.
    Only the statement's own index output, and only its values, qualify."""

    def __init__(self, name, reason, ops, index_path):
        self.name = name
        self.reason = reason
        self.ops = ops
        self.index_path = index_path        # where the indices are, from the statement's target

    def __repr__(self):
        return "<Unspecified %s>" % self.name


UNSPECIFIED = [
    Unspecified("indices among ties", "topk, kthvalue, mode, median, nanmedian and sort may pick a "
                "different index among equal values; torch documents the choice as unspecified",
                ("topk", "kthvalue", "mode", "median", "nanmedian", "sort"), "[1]"),
    Unspecified("argsort among ties", "argsort (stable=False) may order equal values differently",
                ("argsort",), ""),
]


def unspecified(finding):
    """The Unspecified entry that covers `finding`, or None."""
    if finding.kind != "state" or " = " not in finding.stmt.code:
        return None
    target = finding.stmt.code.split(" = ")[0].strip()
    op = finding.stmt.op.split(" [")[0].rstrip("_")
    for entry in UNSPECIFIED:
        if op in entry.ops and all(d.field == "values" and d.path == target + entry.index_path
                                   for d in finding.differences):
            return entry
    return None


# Where torch 2.13 itself is wrong, the generator steers around (it cannot
# compare with a wrong answer): op name -> (why, how the generator avoids it).
TORCH_BUGS = {
    "median": "median(dim) of a tensor with a zero stride (expanded) reads the wrong memory; "
              "the generator passes such inputs through .contiguous()",
    "nanmedian": "as median",
}
# Ops whose value at their poles (0, -1, -2, ...) is rounding noise in both
# libraries (digamma's derivative at -1.0: 1.3e15 in torch, 6.6e32 here):
# the generator keeps their operands off the poles.
POLES = ("digamma", "lgamma", "polygamma", "mvlgamma", "psi")


def excuse(finding, allowed=None):
    """The Deviation that excuses `finding`, or None.  Only a statement that
    raised in one library and not in the other can be excused."""
    if finding.kind != "error" or (finding.torch_error is None) == (finding.cextend_error is None):
        return None
    if finding.differences:
        return None
    for deviation in ALLOWED if allowed is None else allowed:
        if deviation.matches(finding.stmt.code, finding.torch_error, finding.cextend_error):
            return deviation
    return None


# -- predicates for OPEN entries -------------------------------------------------------

def _raised(error, *texts):
    return error is not None and all(t in "%s: %s" % (type(error).__name__, error) for t in texts)


def cextend_raises(*texts):
    return lambda f: f.kind == "error" and f.torch_error is None and _raised(f.cextend_error, *texts)


def torch_raises(*texts):
    return lambda f: f.kind == "error" and f.cextend_error is None and _raised(f.torch_error, *texts)


def state(fields=None, code=None, path=None, torch=None, before=None, both_raised=False):
    """A state difference whose every item has a field in `fields` ('values',
    'requires_grad', 'grad_fn is None', 'type', ...), `path` in its path and
    `torch` in torch's side; `code` in the statement, `before` in an earlier one."""
    def matches(f):
        if f.kind != "state" or (code is not None and not any(c in f.stmt.code for c in _tuple(code))):
            return False
        if before is not None and not any(b in s.code for s in f.history for b in _tuple(before)):
            return False
        if both_raised and f.torch_error is None:
            return False
        return all((fields is None or d.field in _tuple(fields)) and (path is None or path in d.path)
                   and (torch is None or torch in str(d.torch)) for d in f.differences)
    return matches


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def any_of(*predicates):
    return lambda f: any(p(f) for p in predicates)


def retained_after_inplace(f):
    """Only .grad values differ, one of them on a tensor that retain_grad() was called on."""
    if f.kind != "state" or not all(d.path.endswith(".grad") and d.field == "values" for d in f.differences):
        return False
    return any("%s.retain_grad()" % d.path[:-len(".grad")] in s.code for d in f.differences for s in f.history)


_META = ("requires_grad", "grad_fn is None")
_VIEW_REBASE = ("is a view and its base or another view of its base has been modified inplace",
                "A view was created in no_grad mode and its base")
_NO_GRAD = ("no_grad()", "set_grad_enabled(False)")
_NON_DIFFERENTIABLE_INPLACE = ("logical_", "eq_(", "ne_(", "lt_(", "le_(", "gt_(", "ge_(")


def torch_side_raises(*texts):
    """A state difference where reading some attribute raised in torch."""
    return lambda f: f.kind == "state" and any(t in str(d.torch) for d in f.differences for t in texts)


def written_from_autograd_grad(f):
    """A statement writing into (a view of) a result of torch.autograd.grad."""
    names = [s.code.split(" = ")[0] for s in f.history if " = torch.autograd.grad(" in s.code]
    code = f.stmt.code
    return f.kind == "state" and ("_(" in code or "] =" in code) and any(n + "[" in code for n in names)


OPEN = [
    Open("D5", "saved tensors differ from torch's (pow's result, div's input by a number; sgn's result)",
         any_of(cextend_raises("modified by an inplace operation"),
                cextend_raises("backward through the graph a second time"),
                torch_raises("modified by an inplace operation", "output 0 of Sgn"))),
    Open("D6", "copy_/setitem: a source with extra leading size-1 dims is rejected (or its gradient)",
         any_of(cextend_raises("must match the size of tensor b"), cextend_raises("returned an invalid gradient"),
                cextend_raises("boolean array indexing assignment requires"))),
    Open("D8", "in-place ops on integer/bool tensors and non-differentiable in-place ops: history differs",
         any_of(state(_META, code=("copy_(", "] = ", "masked_fill", "fill_(", "MulDirty") + _NON_DIFFERENTIABLE_INPLACE),
                state("values", before="logical_"), state(path=".grad", before="logical_"),
                torch_raises("Autograd not support dtype"))),
    Open("D9", "views torch refuses to rebase (multi-output, no_grad, custom Function) are rebased",
         any_of(torch_side_raises(*_VIEW_REBASE), torch_raises(*_VIEW_REBASE[:1]),
                torch_raises(_VIEW_REBASE[1]))),
    Open("D10", "a base's requires_grad_()/requires_grad_(False)/detach_() is not seen by its views",
         any_of(state(_META, code="requires_grad_("), state(path=".grad", before="detach_()"),
                state(_META, before="detach_()"), state(_META, code="detach_()"),
                torch_raises("a view of a leaf Variable that requires grad"))),
    Open("D11", "views made under no_grad: torch keeps them out of the graph (no .grad, no gradient)",
         any_of(state("type", path=".grad", torch="'none'"),
                state("type", torch="'none'", before=_NO_GRAD),
                lambda f: torch_raises("does not require grad and does not have a grad_fn")(f)
                and any(m in s.code for s in f.history for m in _NO_GRAD))),
    Open("D12", "backward(inputs=[non-leaf]) does not retain_grad() the non-leaf",
         state(path=".grad", before="inputs=[")),
    Open("D13", "retain_grad() then an in-place op: the old version's gradient is retained",
         retained_after_inplace),
    Open("D14", "a second backward through setitem/copy_ (CopySlices) does not raise",
         torch_raises("backward through the graph a second time")),
    Open("D16", "dtype and argument checks torch makes (bool arithmetic, index_put dtypes, numbers "
                "where a Tensor is required, int ** negative, ...)",
         any_of(torch_raises("Index put requires the source and destination dtypes match"),
                torch_raises("bool tensor is not supported"), torch_raises("not implemented for 'Bool'"),
                torch_raises("does not support bool input"), torch_raises("must be Tensor, not"),
                torch_raises("Boolean inputs not supported"),
                torch_raises("received an invalid combination of arguments"),
                torch_raises("cannot be converted to type"),
                cextend_raises("must be a number, not bool"),
                cextend_raises("can't be cast to the desired output type Bool"),
                cextend_raises("Integers to negative integer powers are not allowed"),
                cextend_raises("ZeroDivisionError"), torch_raises("missing 1 required positional argument"),
                torch_raises("step must be greater than zero"), state("dtype", code="square"),
                torch_raises("does not support bool"), torch_raises("Integer division with addcdiv"),
                torch_raises("expected to have the same dtype"),
                torch_raises("can't be cast to the desired output type Bool"),
                torch_raises("expected self and source to have same dtypes"),
                torch_raises("not implemented for 'Long'"), torch_raises("expected dtype"),
                torch_raises("must be int, not float"))),
    Open("D17", "in-place shape and memory-overlap checks",
         any_of(torch_raises("refer to a single memory location", "input tensor and the written-to"),
                lambda f: torch_raises("doesn't match the broadcast shape")(f) and "clamp_(" in f.stmt.code,
                cextend_raises("refers to a single memory location"))),
    Open("D18", "split/chunk of an empty dimension return a different number of pieces",
         state("type", code=(".split(", ".chunk("))),
    Open("D19", "ops torch has no derivative for (floor_divide, remainder by a tensor, asinh_) get one",
         torch_raises("derivative for")),
    Open("D20", "zero gradients computed as g * 0: NaN from inf/NaN, and attached under create_graph",
         any_of(state(_META, path=".grad", code="create_graph=True"),
                state("values", path=".grad", torch="0."))),
    Open("D21", "non-differentiable in-place ops on a leaf, or on views, get the differentiable checks",
         lambda f: any_of(cextend_raises("Variable that requires grad is being used in an in-place"),
                          cextend_raises("is a view and is being modified inplace"))(f)
         and any(t in f.stmt.code for t in _NON_DIFFERENTIABLE_INPLACE)),
    Open("D22", "pow at special values: (-inf) ** 0.5, and its gradients at 0 and +-inf",
         any_of(state("values", code="**"), state("values", path=".grad", before=("**", "pow")))),
    Open("D23", "hooks on a multi-output op's output that got no gradient: torch calls them with None",
         torch_raises("NoneType")),
    Open("D26", "autograd.grad with a hooked non-leaf among the inputs: torch returns its pre-hook "
                "gradient when its node runs anyway (a torch inconsistency)",
         state("values", code="torch.autograd.grad(", before="register_hook")),
    Open("D27", "x.clamp_(x, ...) saves the bound after the change: backward does not raise",
         lambda f: torch_raises("modified by an inplace operation")(f)
         and any("clamp_(" in s.code for s in f.history)),
    Open("D28", "clone() does not preserve strides (torch: preserve_format), so .view() of a clone "
                "of a transposed tensor works, and reshape() of it aliases",
         any_of(torch_raises("view size is not compatible"),
                lambda f: state("values")(f) and any(".clone()" in s.code for s in f.history)
                and any(".reshape(" in s.code or ".view(" in s.code for s in f.history))),
    Open("D34", "addcmul/addcdiv on integer tensors: torch casts a fractional value to the integer "
                "type first (-0.5 -> 0)", state("values", code=("addcmul", "addcdiv"))),
    Open("D30", "nanmedian(dim) returns a named tuple called median", state("type", code="nanmedian")),
    Open("D31", "cextend has names torch does not (torch.psi, Tensor.psi)", torch_raises("no attribute 'psi'")),
    Open("D32", "x[-1] on a 0-d tensor works (torch: IndexError; the documented deviation is x[0])",
         torch_raises("index -1 is out of bounds for dimension 0 with size 0")),
    Open("D33", "var_mean/std_mean's mean at +-inf: torch's (Welford) is NaN, cextend's is the mean",
         state("values", code=("var_mean", "std_mean"))),
    Open("D35", "amax/amin backward with a NaN: torch's gradient is NaN (split over x == result, which "
                "nothing equals); cextend routes it to the NaN as max() does",
         state("values", path=".grad", before=("amax", "amin"))),
    Open("D36", "remainder's zero takes the divisor's sign (numpy): 1.25 % -0.25 is -0.0, torch +0.0",
         state("values", before=(" % ", "remainder"))),
    Open("D24", "(candidate deviation) torch raises accumulating into a .grad that is a lazy ZeroTensor",
         torch_raises("ZeroTensors are immutable")),
    Open("D25", "(candidate deviation) torch's autograd.grad can return expanded or no_grad views",
         any_of(torch_raises("more than one element of the written-to tensor refers to a single memory"),
                torch_raises("A view was created in no_grad mode and is being modified inplace"),
                written_from_autograd_grad)),
]


def open_item(finding):
    """The OPEN entry that matches `finding`, or None."""
    for item in OPEN:
        if item.matches(finding):
            return item
    return None
