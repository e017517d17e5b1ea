"""The documented deviations from torch: the one place they live.

ALLOWED holds the statement patterns where cextend deliberately differs
from torch, each with its reason; docs/torch-parity.md lists them (its
"Deliberately different" section) and the UNSPECIFIED ops (its
"Unspecified" section).  A deviation can only excuse a statement where
exactly one of the two libraries raised: `excuse` checks this before
asking any entry, so a deviation never stands for a different number
without an error.

OPEN holds known bugs, parked while the library is fixed; each names its
entry in DISAGREEMENTS.md and starts with "OPEN:".  They are not
deviations: they may match any disagreement, so each is as narrow as its
bug, and every one of them must go.  The summary counts them apart.

A program stops at an excused or open statement: what follows would
compare two different states.
"""
import re

from . import verify
from .program import Stmt
from .session import namespace


class Deviation:
    """A documented deviation: matches(code, torch_error, cextend_error, history,
    value) -> bool, asked only when exactly one of the errors is None (history:
    the statements before, as Stmt objects; value(expr): an expression's value
    in cextend's namespace, None if it fails).  Where cextend is the one that
    raised, the predicate checks the operands (shared memory, strides,
    dtypes), never cextend's own message."""

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


def _zero_dim_index(code, torch_error, cextend_error, history, value=None):
    return (cextend_error is None and isinstance(torch_error, IndexError)
            and "invalid index of a 0-dim tensor" in str(torch_error) and "[0]" in code)


def _zero_tensor_grad(code, torch_error, cextend_error, history, value=None):
    return cextend_error is None and "ZeroTensors are immutable" in str(torch_error)


_EXPANDED_OR_NO_GRAD_VIEW = ("more than one element of the written-to tensor refers to a single memory location",
                             "A view was created in no_grad mode and is being modified inplace")


def _names_from_autograd_grad(history):
    """The program's names that hold autograd.grad's results, or views
    and items of them (an assignment whose expression starts with one)."""
    names = set()
    for stmt in history:
        line = stmt.code.splitlines()[-1].strip()        # a `with` block's statement
        if " = " not in line:
            continue
        target, expression = line.split(" = ", 1)
        if expression.startswith("torch.autograd.grad(") or (_VIEW_CHAIN.match(expression)
                                                              and _root(expression) in names):
            names.add(target.strip())
    return names


# A name followed by indexing and method calls only (v2[0].t(), v2[0][1:]).
_VIEW_CHAIN = re.compile(r"^v\d+(\[[^\]]*\]|\.\w+(\([^()]*\))?)*$")


def _root(expression):
    return expression.split("[")[0].split(".")[0].split(" ")[0]


def _write_into_autograd_grad(code, torch_error, cextend_error, history, value=None):
    if cextend_error is not None or not any(m in str(torch_error) for m in _EXPANDED_OR_NO_GRAD_VIEW):
        return False
    line = code.splitlines()[-1].strip()
    target = line.split(" = ", 1)[-1] if "] = " not in line else line.split("] = ")[0]
    return _root(target.strip()) in _names_from_autograd_grad(history)


def _backward_through(*calls):
    """torch raised in a backward (or autograd.grad) whose graph holds one of calls, cextend did not."""
    def matches(code, torch_error, cextend_error, history, value=None):
        return (cextend_error is None and torch_error is not None
                and any(b in code for b in ("backward(", "autograd.grad("))
                and any(c in s.code for s in history for c in calls))
    return matches


def _huber_mixed_dtypes(code, torch_error, cextend_error, history, value=None):
    return (_backward_through("call_huber_loss")(code, torch_error, cextend_error, history)
            and re.search(r"Found dtype \w+ but expected (Float|Double)", str(torch_error)) is not None)


def _nll_loss_permuted_input(code, torch_error, cextend_error, history, value=None):
    return (_backward_through("call_nll_loss")(code, torch_error, cextend_error, history)
            and "grad_input must be contiguous" in str(torch_error))


def _tensors(args):
    a, k = args
    return [x for x in list(a) + list(k.values()) if hasattr(x, "_data")]


def _shares_memory(x, y):
    import numpy as np
    return type(x._data) is np.ndarray and type(y._data) is np.ndarray and np.shares_memory(x._data, y._data)


def _arguments(code, callee, value):
    """(args, kwargs) of the statement's call `callee(...)`, evaluated in
    cextend's namespace, or None."""
    found = re.search(r"\b%s\((.*)\)$" % callee, code.splitlines()[-1].strip())
    return value("(lambda *a, **k: (a, k))(%s)" % found.group(1)) if found else None


def _linear_bias_dtype(code, torch_error, cextend_error, history, value=None):
    """cextend refused F.linear with a bias of another dtype than the input's."""
    if torch_error is not None or cextend_error is None or value is None:
        return False
    called = _arguments(code, "call_linear", value)         # call_linear(torch, input, weight, bias)
    if called is None:
        return False
    args, kwargs = called
    x = args[1] if len(args) > 1 else kwargs.get("input")
    bias = args[3] if len(args) > 3 else kwargs.get("bias")
    return hasattr(x, "dtype") and hasattr(bias, "dtype") and bias.dtype != x.dtype


def _loop_order_overlap(code, torch_error, cextend_error, history, value=None):
    """cextend refused an in-place op (or an out= call) whose written tensor
    really shares memory with a tensor it reads."""
    if torch_error is not None or cextend_error is None or value is None:
        return False
    line = code.splitlines()[-1].strip()
    setitem = re.match(r"^(v\d+)\[.*\] = (.+)$", line)
    if setitem is not None:                                 # x[key] = y
        written, source = value(setitem.group(1)), value(setitem.group(2))
        return hasattr(written, "_data") and hasattr(source, "_data") and _shares_memory(written, source)
    rhs = line.split(" = ", 1)[1] if " = " in line else line
    call = re.match(r"^(.+?)\.(\w+_)\((.*)\)$", rhs)
    if call is not None:                                    # x.op_(...)
        written = value(call.group(1))
        read = value("(lambda *a, **k: (a, k))(%s)" % call.group(3))
    else:                                                   # torch.op(..., out=o)
        out = re.search(r"\bout=(v\d+)\)$", rhs)
        call = re.match(r"^torch\.(\w+)\((.*)\)$", rhs)
        if out is None or call is None:
            return False
        written = value(out.group(1))
        read = value("(lambda *a, **k: (a, k))(%s)" % call.group(2))
        if read is not None:
            read = (read[0], {k: v for k, v in read[1].items() if k != "out"})
    if written is None or read is None or not hasattr(written, "_data"):
        return False
    return any(_shares_memory(written, x) for x in _tensors(read))


def _out_expanded(code, torch_error, cextend_error, history, value=None):
    """cextend refused an out= whose tensor is expanded (a zero stride over
    more than one element)."""
    if torch_error is not None or cextend_error is None or value is None:
        return False
    out = re.search(r"\bout=(v\d+)\)", code)
    target = value(out.group(1)) if out is not None else None
    return target is not None and hasattr(target, "stride") and any(
        st == 0 and n > 1 for st, n in zip(target.stride(), target.shape))


def _matmul_strided_batched_out(code, torch_error, cextend_error, history, value=None):
    return (cextend_error is None and "matmul(" in code and "out=" in code
            and "must match the size of tensor b" in str(torch_error))


def _torch_internal_assert(code, torch_error, cextend_error, history, value=None):
    """torch failed one of its INTERNAL ASSERTs: it has no answer to compare
    with, so cextend's is checked on its own (verify.py): the gradients of
    a backward or autograd.grad against finite differences of the program.
    Elsewhere there is no check yet, and so no excuse."""
    if cextend_error is not None or "INTERNAL ASSERT FAILED" not in str(torch_error):
        return False
    lib = value("torch") if value is not None else None
    if lib is None or not verify.is_gradient_statement(code):
        return False
    return verify.gradients_hold(lib, namespace, history, Stmt(code, "backward"))


ALLOWED = [
    # D80 in DISAGREEMENTS.md.
    Deviation("torch's internal asserts",
              "where torch 2.13 fails one of its own INTERNAL ASSERTs ('please report a bug to PyTorch': "
              "backward through `True ** x`, or through an integer tensor that masked_fill_ gave a value "
              "requiring grad), cextend computes the result, and its gradients are checked against finite "
              "differences of the program instead", _torch_internal_assert),
    Deviation("matmul into a strided batched out=",
              "torch.matmul of a batched (3-d or more) and a 2-d operand with out= a tensor of the "
              "result's shape but transposed strides raises a size mismatch in torch 2.13 (its folded "
              "product is written through the out's strides, a torch bug); cextend writes the product",
              _matmul_strided_batched_out),
    Deviation("out= an expanded tensor",
              "a reduction, matrix product or tril/triu with out= an expanded (stride-0) tensor: torch "
              "writes every result into the shared element (sum adds them all, amax keeps the largest); "
              "cextend raises, as torch does for elementwise ops", _out_expanded),
    # D41g in DISAGREEMENTS.md.
    Deviation("in-place op on memory it reads, in a layout torch cannot check",
              "an in-place op whose operand shares elements with the written tensor, where either is "
              "strided (x.T.mul_(x.T[0])): torch cannot check the overlap, runs the op and its answer "
              "depends on its loop order; cextend raises (it refuses partial overlaps of dense tensors "
              "exactly as torch); so does masked_scatter_ from a source sharing the written tensor's memory "
              "(torch reads the source as it writes), and a reduction or matrix product whose out= shares "
              "memory with its input (torch fills out first, then reads the overwritten input)",
              _loop_order_overlap),
    Deviation("loss.data[0]",
              "x[0] on a 0-d tensor returns x (torch 0.4's legacy spelling, with its warning), so "
              "2017-era scripts run; torch 2.13 raises IndexError", _zero_dim_index),
    # D24 in DISAGREEMENTS.md.
    Deviation("accumulating into a lazy zero gradient",
              "where a double backward leaves torch's lazy ZeroTensor in a .grad (abs, sign, ...), a "
              "later backward accumulating into it raises 'ZeroTensors are immutable' in torch; "
              "cextend's zero gradient is an ordinary tensor and the backward adds to it",
              _zero_tensor_grad),
    # D25a in DISAGREEMENTS.md.  The generator never writes into autograd.grad's
    # results (D25b: masked_fill_ through torch's expanded view writes every element).
    Deviation("writing into autograd.grad's results",
              "torch.autograd.grad may return an expanded (stride-0) view or a view made under "
              "no_grad (the gradient of sum() is a broadcast scalar), so an in-place op on the result "
              "raises in torch; cextend returns ordinary tensors, which can be written",
              _write_into_autograd_grad),
    # D72 in DISAGREEMENTS.md (a torch bug: its forward promotes, its backward kernel does not).
    Deviation("huber_loss of mixed dtypes",
              "huber_loss of a float64 input and a float32 target (or the reverse, or an integer "
              "target) computes in both; "
              "torch's backward then raises 'Found dtype Float but expected Double' (smooth_l1_loss and "
              "mse_loss differentiate the same operands); cextend returns each operand's gradient in "
              "its own dtype, as smooth_l1_loss's", _huber_mixed_dtypes),
    # D85 in DISAGREEMENTS.md (a torch bug: nll_loss2d's backward makes grad_input with the
    # input's strides, then requires it contiguous).
    Deviation("nll_loss backward of a permuted 4-d input",
              "nll_loss over a 4-d input whose strides are permuted (e.g. x.transpose(-1, -2)) computes "
              "in both; torch's backward then raises 'grad_input must be contiguous'; cextend returns "
              "the gradient (the one torch gives for x.contiguous())", _nll_loss_permuted_input),
    # D82 in DISAGREEMENTS.md (torch's answer depends on the operands' layouts).
    Deviation("linear with a bias of another dtype",
              "F.linear with a bias whose dtype is not the input's raises in cextend for every layout; "
              "torch raises 'self and mat2 must have the same dtype' when the bias is contiguous and the "
              "input contiguous or 2-d (its fused addmm), but computes in the matmul's dtype when the "
              "input or the bias is strided or expanded", _linear_bias_dtype),
]


class Unspecified:
    """An output torch documents as unspecified (indices among ties): when it
    is the only thing that differs, the program stops there, counted apart.
    Only the statement's own index output, and only its values, qualify;
    an entry with index_path None covers only the sign of zero results."""

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
    Unspecified("zero sign among equal extremes", "-0.0 and 0.0 compare equal: which one max/min/amax/"
                "amin/aminmax return depends on the reduction order (torch's vectorised loop), and which "
                "one minimum/maximum return, on the loop too, and which "
                "one clamp returns against a bound of the other sign, or lerp at a weight of 1 or 0, on "
                "whether torch's loop is vectorised",
                ("max", "min", "amax", "amin", "aminmax", "call_max_pool1d", "call_max_pool2d",
                 "clamp", "clamp_min", "clamp_max", "clip", "lerp", "minimum", "maximum"), None),
    Unspecified("zero sign of a zero sum of products", "a sum of products that is exactly zero: torch's "
                "own small gemm starts from the first product (-0.0 stays), BLAS libraries add to +0.0; "
                "cextend's kernels add to +0.0",
                ("matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "einsum", "call_einsum", "tensordot",
                 "addmm", "addbmm", "baddbmm", "addmv", "linear", "call_linear", "chain_matmul"), None),
    Unspecified("zero sign of gelu", "torch sends some float32 gelu calls to oneDNN, whose zero signs "
                "depend on the CPU (gelu(-0.0) and gelu(-40.0) are -0.0 on AVX-512 and +0.0 on AVX2); "
                "cextend's follow ATen's formula", ("gelu", "call_gelu"), None),
]


def _is_or_within(path, name):
    """path names the value `name` or a part of it (v1, v1.grad, v1[0]), never v10."""
    return path == name or path.startswith((name + ".", name + "["))


def unspecified(finding):
    """The Unspecified entry that covers `finding`, or None."""
    line = finding.stmt.code.splitlines()[-1]       # a `with` block's statement
    if finding.kind != "state" or " = " not in line:
        return None
    target = line.split(" = ")[0].strip()
    op = finding.stmt.op.split(" [")[0].split(" ")[0].rstrip("_")      # "topk out=" is topk
    called = set(re.findall(r"(\w+)\(", line.split(" = ", 1)[1]))
    out_pair = re.search(r"out=\((\w+), (\w+)\)", line)         # (values, indices) given as out=
    value_out, index_out = out_pair.groups() if out_pair else (None, None)
    single_out = re.search(r"out=(v\d+)\)", line)
    if single_out and value_out is None:
        value_out = single_out.group(1)
    # x.clamp_(...) writes x too, and through it its base and other views;
    # an out= that itself differs likewise (nothing else the statement
    # could have changed: a difference from before would have stopped the
    # program there)
    receiver = re.match(r"(v\d+)\.\w+_\(", line.split(" = ", 1)[1])
    written = receiver.group(1) if receiver else (
        value_out if any(d.path == value_out for d in finding.differences) else None)
    for entry in UNSPECIFIED:
        # -0.0 and 0.0 tie too: the value picked among them may differ in sign.
        if (op in entry.ops or (entry.index_path is None and called & set(entry.ops))) and all((entry.index_path is not None and d.field == "values"
                                    and (d.path == target + entry.index_path
                                         or (entry.index_path == "[1]" and d.path == index_out)))
                                   or (d.field == "zero sign" and (_is_or_within(d.path, target)
                                                                   or d.path == value_out
                                                                   or written is not None))
                                   for d in finding.differences):
            return entry
    return None


# Where torch 2.13 itself is wrong, the generator steers around (it cannot
# compare with a wrong answer): op name -> (why, how the generator avoids it).
TORCH_BUGS = {
    "median": "median(dim) of a tensor with a zero stride (expanded) reads the wrong memory; "
              "the generator passes such inputs through .contiguous()",
    "nanmedian": "as median",
    "batch_norm": "batch_norm's backward with an expanded (stride-0) weight reads the wrong memory (gradients "
                  "like 6e-41 and 5e29), and in evaluation with five or more rows it reads a strided weight "
                  "(w[::2]) as if it were contiguous; the generator passes such operands through .contiguous()",
    "sgn": "the gradient of a real sgn is torch's 'efficient zero tensor', which later backward formulas "
           "treat as exact zeros or not depending on the op (var and mean give 0 where the input holds an "
           "infinity, mm gives NaN), std's raises 'ZeroTensors are immutable', and a leaf's .grad may be a "
           "tensor without storage; the generator gives sgn no operand that requires grad",
}
# Where torch 2.13 is inconsistent with itself outside the op table, the
# generator steers around too (no entry in docs/torch-parity.md: no generated program does it):
# - torch.autograd.grad with a hooked non-leaf among its inputs (D26): torch
#   returns that input's gradient before its hook when the input's node runs
#   anyway (another input lies below it), after the hook when it is the only
#   input.  autograd_features._inputs leaves out tensors with a hook.
# - backward(inputs=[an output of a custom Function]) followed by an in-place
#   op on a view of that output and a backward through it: torch 2.13
#   segfaults (seed 9601, program 30828).  autograd_features._inputs passes
#   no custom Function output to backward(inputs=).  That also avoids D86:
#   an in-place op on output 1 of a multi-output node moves output 0's
#   retain_grad hook in torch (output 0's .grad then gets output 1's
#   gradient; with no hook on output 0, an INTERNAL ASSERT fails).
# - In-place writes into autograd.grad's results (D25b): torch may return an
#   expanded view, so masked_fill_ writes every element through one memory
#   location.  Gen.protect() clones such targets first (see ALLOWED for D25a).
# Ops whose value at their poles (0, -1, -2, ...) is rounding noise in both
# libraries (digamma's derivative at -1.0: 1.3e15 in torch, 6.6e32 here):
# the generator keeps their operands off the poles.
POLES = ("digamma", "lgamma", "polygamma", "mvlgamma", "psi")
# Convolutions with padding and an infinite or NaN operand (D62): whether the
# padding's zeros meet the infinity (0 * inf = NaN) depends on which kernel
# torch 2.13 picks -- im2col (float64, or float32 with one image) multiplies
# them, oneDNN (float32 batches, groups; its choice varies with the CPU) skips
# some padded taps and not others.  cextend always multiplies, as torch's own
# im2col path; the generator keeps non-finite operands out of padded convs.
PADDED_CONVS = ("conv1d", "conv2d", "conv_transpose2d", "conv_transpose1d")
# mode() of a row holding a NaN: torch 2.13 may return a value that is not the
# most frequent ([1.5, -1.0, nan, -1.0, 2.25, -1.5, -1.25] gives -1.5); and
# hardtanh's (relu6's) gradient at NaN is 0 in torch's vectorised loop (16
# float32 or 8 float64 elements at a time) but 1 in its scalar tail.  The
# generator keeps NaN out of their inputs.
NAN_BUGS = ("mode", "hardtanh", "relu6")
# signbit of a NaN reads the NaN's sign, which IEEE 754 leaves unspecified:
# torch's vectorised min/max loops make every NaN they return negative (they
# OR in an all-ones mask), numpy's pass the input's NaN through.  The
# generator keeps NaN out of signbit's operands.
NAN_SIGNS = ("signbit",)
# layer_norm over a float32 row whose values are all equal: its variance is
# 0, so 1/sqrt(var + eps) (about 316) amplifies each library's rounding of
# the mean into gradients of a different noise (1e-4 against 0); the
# generator keeps such rows out of float32 layer_norm.  In float64, a value
# equal to its row's mean normalises to exactly 0 in cextend and to torch's
# Welford rounding noise (1e-17) in torch, which a later pow or division
# turns into inf against 4e25: such rows are kept out too.
CONSTANT_ROWS = ("layer_norm",)
# float32 gelu from 2**127 up (+inf included): torch's oneDNN path computes
# x * (1 + erf) before halving on some CPUs (inf, and NaN at +inf) and not
# on others, where ATen's formula (cextend's) gives x and inf.  The answer
# is CPU-dependent, so the generator keeps such values out of gelu.
OVERFLOW_EDGE = ("gelu",)
# layer_norm with an infinite or NaN weight or bias: where a value equals its
# row's mean, the normalised value is 0 in exact arithmetic; torch's Welford
# mean may round off it (inf * 1e-17 = inf), cextend's exact sum does not
# (inf * 0 = NaN).  The generator keeps non-finite parameters out of layer_norm.
# grid_sample with an infinite or NaN grid coordinate: torch 2.13's kernels disagree with
# each other (the 2-D vectorised forward clamps a NaN border coordinate to 0, its
# backward keeps it NaN and gathers at the integer-indefinite offset; the 3-D scalar
# kernel clamps it to size - 1), and can read outside the input.  The generator keeps
# non-finite grids (its argument 1) out of grid_sample.
FINITE_PARAMETERS = ("layer_norm", "grid_sample")


def excuse(finding, allowed=None):
    """The Deviation that excuses `finding`, or None.  Only a statement that
    raised in one library and not in the other can be excused."""
    if finding.kind != "error" or (finding.torch_error is None) == (finding.cextend_error is None):
        return None
    if finding.differences:
        return None
    for deviation in ALLOWED if allowed is None else allowed:
        if deviation.matches(finding.stmt.code, finding.torch_error, finding.cextend_error, finding.history,
                             finding.value):
            return deviation
    return None


# A known bug parked here is an Open(ident, name, matches) whose predicate
# checks the operands of the statement (not cextend's own error message).
OPEN = [
]


def open_item(finding):
    """The OPEN entry that matches `finding`, or None."""
    for item in OPEN:
        if item.matches(finding):
            return item
    return None
