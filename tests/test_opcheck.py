"""opcheck against planted bugs: each kind of bug in a user's C kernel is caught by its check.

One extension (built once per module) holds a correct square kernel and
variants with one bug each; every op is a few lines of Python around one of
them.  A planted bug must fail its own check and leave the others passing,
so the report points at the bug.  The sanitizer cases run in a subprocess:
a kernel that writes out of bounds corrupts the heap of whoever runs it.
"""
import json
import os
import subprocess
import sys

import pytest

import cextend
from cextend import Tensor
from cextend.library import OpCheckError, custom_op, opcheck
from cextend.utils.ffi import load_inline

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_gradcheck", "test_layouts",
          "test_determinism", "test_float32", "test_sanitize")

HEADER = """
int square(const double *x, double *y, int64_t n);
int square_backward(const double *x, const double *g, double *gx, int64_t n);
int square_backward_one_wrong(const double *x, const double *g, double *gx, int64_t n, int64_t wrong);
int square_in_place_too(double *x, double *y, int64_t n);
int total_in_chunks(const double *x, double *out, int64_t n, int chunks);
"""
SOURCE = """
int square(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] * x[i];
    return 0;
}

int square_backward(const double *x, const double *g, double *gx, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        gx[i] = 2 * x[i] * g[i];
    return 0;
}

/* Planted: element `wrong` of the gradient is 1.5 times too large. */
int square_backward_one_wrong(const double *x, const double *g, double *gx, int64_t n, int64_t wrong)
{
    for (int64_t i = 0; i < n; ++i)
        gx[i] = (i == wrong ? 3 : 2) * x[i] * g[i];
    return 0;
}

/* Planted: "saves memory" by also squaring its input in place. */
int square_in_place_too(double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; ++i) {
        y[i] = x[i] * x[i];
        x[i] = y[i];
    }
    return 0;
}

/* Planted: one partial sum per chunk, so the rounding depends on the chunk count. */
int total_in_chunks(const double *x, double *out, int64_t n, int chunks)
{
    double total = 0;
    for (int c = 0; c < chunks; ++c) {
        double partial = 0;
        for (int64_t i = n * c / chunks; i < n * (c + 1) / chunks; ++i)
            partial += x[i];
        total += partial;
    }
    *out = total;
    return 0;
}
"""


@pytest.fixture(scope="module")
def lib():
    return load_inline("planted", HEADER, SOURCE)


def square_op(lib, name, forward=None, backward=None, mutates_args=()):
    """An op around lib.square (or the given forward), differentiable through backward."""
    @custom_op("planted::" + name, mutates_args=mutates_args)
    def op(x: Tensor) -> Tensor:
        if forward is not None:
            return forward(x)
        x = x.contiguous()
        y = cextend.empty_like(x)
        lib.square(x, y, x.numel())
        return y

    op.register_fake(lambda x: cextend.empty_like(x))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def default_backward(ctx, g):
        x, = ctx.saved_tensors
        x, g = x.contiguous(), g.contiguous()
        gx = cextend.empty_like(x)
        lib.square_backward(x, g, gx, x.numel())
        return gx

    op.register_autograd(backward or default_backward, setup_context=setup_context)
    return op


def sample(*shape):
    return cextend.randn(*shape, dtype=cextend.float64, requires_grad=True)


def failing(results):
    return {name: result for name, result in results.items() if result != "SUCCESS"}


def test_a_correct_kernel_passes_every_check(lib):
    op = square_op(lib, "correct")
    for shape in [(4, 5), (7,), (0, 3), (2, 1, 3)]:
        assert opcheck(op, (sample(*shape),)) == dict.fromkeys(CHECKS, "SUCCESS")
    with pytest.raises(ValueError, match="subset of"):
        opcheck(op, (sample(3),), test_utils=("test_nothing",))
    assert set(opcheck(op, (sample(3),), test_utils="test_schema")) == {"test_schema"}


def test_one_wrong_gradient_element_is_named_by_its_index(lib):
    def backward(ctx, g):
        x, = ctx.saved_tensors
        x = x.contiguous()          # gx laid out as x: empty_like keeps a transposed layout, as torch's
        gx = cextend.empty_like(x)
        lib.square_backward_one_wrong(x, g.contiguous(), gx, x.numel(), 11)
        return gx
    op = square_op(lib, "one_wrong_element", backward=backward)
    x = sample(4, 5)
    results = opcheck(op, (x,), raise_exception=False)
    assert set(failing(results)) == {"test_gradcheck"}
    report = str(results["test_gradcheck"])
    assert "gradcheck of planted::one_wrong_element in float64 failed (input 0 is 'x')" in report
    assert "Jacobian mismatch for output 0 with respect to input 0" in report
    assert "1 of 400 Jacobian elements differ" in report
    # Flat element 11 of a (4, 5) input is (2, 1); only its own output depends on it.
    line = [l for l in report.splitlines() if l.strip().startswith("(2, 1) -> (2, 1):")]
    assert line, report
    numerical, analytical = (float(v) for v in line[0].split(":", 1)[1].split(",")[:2])
    value = x.detach().numpy()[2, 1]
    assert numerical == pytest.approx(2 * value, rel=1e-6) and analytical == pytest.approx(3 * value, rel=1e-9)
    with pytest.raises(OpCheckError, match=r"opcheck\(op, ...\): test_gradcheck failed with gradcheck of"):
        opcheck(op, (x,))


def test_an_undeclared_mutation_is_named(lib):
    def forward(x):
        y = cextend.empty_like(x)
        lib.square_in_place_too(x, y, x.numel())
        return y
    op = square_op(lib, "mutates_silently", forward=forward)
    results = opcheck(op, (sample(3, 4),), raise_exception=False)
    assert "test_schema" in failing(results)
    assert str(results["test_schema"]).startswith("Argument x is not defined as mutable but was mutated")


def test_a_declared_mutation_passes_the_schema_check_and_bumps_the_version(lib):
    @custom_op("planted::square_in_place", mutates_args={"x"})
    def op(x: Tensor) -> Tensor:
        y = cextend.empty_like(x)
        lib.square_in_place_too(x, y, x.numel())
        return y
    op.register_fake(lambda x: cextend.empty_like(x))
    x = cextend.randn(3, 4, dtype=cextend.float64)
    assert opcheck(op, (x,), test_utils=("test_schema", "test_faketensor")) == \
        {"test_schema": "SUCCESS", "test_faketensor": "SUCCESS"}
    version = x._version
    op(x)
    assert x._version > version


def test_a_strided_input_read_as_contiguous_fails_layouts(lib):
    def forward(x):                     # hands C the raw data pointer: the layout is ignored
        y = cextend.empty(x.shape, dtype=x.dtype)
        lib.square(lib.ffi.cast("double *", x._data.ctypes.data), y, x.numel())
        return y
    op = square_op(lib, "ignores_strides", forward=forward)
    results = opcheck(op, (sample(4, 5),), raise_exception=False)
    assert set(failing(results)) == {"test_layouts"}
    report = str(results["test_layouts"])
    assert report.startswith("'x' given as transposed storage (shape (4, 5), strides (1, 4)): output 0 differs "
                             "at index (0, 1)")
    assert "reads a strided tensor as if it were contiguous" in report


def test_an_expanded_grad_output_read_as_contiguous_fails_layouts(lib):
    def backward(ctx, g):               # the cotangent's raw pointer: a stride-0 one is misread
        x, = ctx.saved_tensors
        x = x.contiguous()
        gx = cextend.empty_like(x)
        lib.square_backward(x, lib.ffi.cast("double *", g._data.ctypes.data), gx, x.numel())
        return gx
    op = square_op(lib, "ignores_grad_strides", backward=backward)
    results = opcheck(op, (sample(4, 5),), raise_exception=False)
    assert set(failing(results)) == {"test_layouts"}
    assert str(results["test_layouts"]).startswith("backward with an expanded (stride-0) grad_output: the "
                                                   "gradient of 'x' differs at index (1, 0)")


def test_a_thread_count_dependent_result_fails_determinism(lib):
    @custom_op("planted::total", mutates_args=())
    def total(x: Tensor) -> Tensor:
        x = x.contiguous()
        out = cextend.empty((), dtype=x.dtype)
        lib.total_in_chunks(x, out, x.numel(), cextend.get_num_threads())
        return out
    total.register_fake(lambda x: cextend.empty((), dtype=x.dtype))
    threads = cextend.get_num_threads()
    cextend.manual_seed(0)      # a draw whose 1- and 2-thread sums round differently
    results = opcheck(total, (cextend.randn(1000, dtype=cextend.float64),), raise_exception=False)
    assert set(failing(results)) == {"test_determinism"}
    report = str(results["test_determinism"])
    assert report.startswith("with 2 threads (against 1 thread): output 0 differs at index ()"), report
    assert "bitwise identical for any thread count" in report
    assert cextend.get_num_threads() == threads


def test_an_openmp_reduction_fails_determinism():
    lib = load_inline("omp_total", "int omp_total(const double *x, double *out, int64_t n);", """
        int omp_total(const double *x, double *out, int64_t n)
        {
            double total = 0;
            #pragma omp parallel for reduction(+:total)
            for (int64_t i = 0; i < n; ++i)
                total += x[i];
            *out = total;
            return 0;
        }""", extra_compile_args=["-fopenmp"])

    @custom_op("planted::omp_total", mutates_args=())
    def omp_total(x: Tensor) -> Tensor:
        out = cextend.empty((), dtype=x.dtype)
        lib.omp_total(x.contiguous(), out, x.numel())
        return out
    omp_total.register_fake(lambda x: cextend.empty((), dtype=x.dtype))
    results = opcheck(omp_total, (cextend.randn(4096, dtype=cextend.float64),), raise_exception=False)
    assert set(failing(results)) == {"test_determinism"}
    assert "threads (against 1 thread)" in str(results["test_determinism"])


def test_zero_size_and_size_one_variants_are_run(tmp_path):
    # opcheck runs the op in a forked child, so the shapes it sees are written to a file.
    seen = tmp_path / "shapes.txt"

    @custom_op("planted::records_shapes", mutates_args=())
    def records_shapes(x: Tensor, w: Tensor) -> Tensor:
        with open(seen, "a") as f:
            f.write("%r\n" % ((tuple(x.shape), tuple(w.shape)),))
        return x.mm(w)
    records_shapes.register_fake(lambda x, w: x.new_empty(x.shape[0], w.shape[1]))
    records_shapes.register_autograd(lambda ctx, g: (g.mm(ctx.w.t()), ctx.x.t().mm(g)),
                                     setup_context=lambda ctx, inputs, output: ctx.__dict__.update(
                                         x=inputs[0], w=inputs[1]))
    # cextend's mm rounds transposed operands differently (by an ulp): compare within a tolerance.
    results = opcheck(records_shapes, (sample(3, 4), sample(4, 2)), test_utils="test_layouts",
                      raise_exception=False)
    if results["test_layouts"] != "SUCCESS":
        assert "by rounding only" in str(results["test_layouts"])
    assert opcheck(records_shapes, (sample(3, 4), sample(4, 2)), test_utils="test_layouts", atol=1e-12,
                   rtol=1e-12) == {"test_layouts": "SUCCESS"}
    assert {((0, 4), (4, 2)), ((1, 4), (4, 2)), ((3, 0), (0, 2)), ((3, 1), (1, 2)), ((3, 4), (4, 0)),
            ((3, 4), (4, 1))} <= {eval(line) for line in seen.read_text().splitlines()}


def test_fake_implementation_mismatch_and_absence():
    @custom_op("planted::transpose_copy", mutates_args=())
    def transpose_copy(x: Tensor) -> Tensor:
        return x.t().contiguous() * 1.0
    results = opcheck(transpose_copy, (sample(4, 5),), test_utils="test_faketensor", raise_exception=False)
    assert str(results["test_faketensor"]).startswith("There was no fake impl registered for "
                                                      "<CustomOpDef(planted::transpose_copy)>")
    transpose_copy.register_fake(lambda x: cextend.empty_like(x))
    results = opcheck(transpose_copy, (sample(4, 5),), test_utils="test_faketensor", raise_exception=False)
    assert str(results["test_faketensor"]).endswith("Shapes (4, 5) and (5, 4) are not equal!")


def test_inputs_requiring_grad_without_a_formula_fail_registration():
    @custom_op("planted::no_backward", mutates_args=())
    def no_backward(x: Tensor) -> Tensor:
        return x * 2.0
    no_backward.register_fake(lambda x: cextend.empty_like(x))
    results = opcheck(no_backward, (sample(3),), raise_exception=False)
    assert set(failing(results)) == {"test_autograd_registration", "test_gradcheck"}
    assert "argument 'x' requires grad, but the op has no autograd formula" in str(
        results["test_autograd_registration"])
    assert set(failing(opcheck(no_backward, (cextend.randn(3),), raise_exception=False))) == set()


SANITIZE_SCRIPT = """
import json
import cextend
from cextend import Tensor
from cextend.library import custom_op, opcheck
from cextend.utils.ffi import load_inline

lib = load_inline("sanitized", %(header)r, %(source)r)


def make(name, kernel):
    @custom_op("planted::" + name, mutates_args=())
    def op(x: Tensor) -> Tensor:
        x = x.contiguous()
        y = cextend.empty_like(x)
        getattr(lib, kernel)(x, y, x.numel())
        return y
    return op


x = cextend.randn(3, 5, dtype=cextend.float64)
report = {}
for name, kernel in [("fine", "fine"), ("one_past", "one_past"), ("int_overflow", "int_overflow")]:
    result = opcheck(make(name, kernel), (x,), test_utils=(), sanitize=True, raise_exception=False)
    report[name] = str(result["test_sanitize"])
print(json.dumps(report))
"""
SANITIZE_HEADER = """
int fine(const double *x, double *y, int64_t n);
int one_past(const double *x, double *y, int64_t n);
int int_overflow(const double *x, double *y, int64_t n);
"""
SANITIZE_SOURCE = """#include <limits.h>
int fine(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        y[i] = 2 * x[i];
    return 0;
}

int one_past(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i <= n; ++i)
        y[i] = 2 * x[i < n ? i : 0];
    return 0;
}

int int_overflow(const double *x, double *y, int64_t n)
{
    int big = INT_MAX - 2;
    for (int64_t i = 0; i < n; ++i) {
        big += 1;
        y[i] = x[i] + big;
    }
    return 0;
}
"""


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_sanitize_reports_the_first_error_at_the_users_line(tmp_path):
    script = tmp_path / "sanitize.py"
    script.write_text(SANITIZE_SCRIPT % {"header": SANITIZE_HEADER, "source": SANITIZE_SOURCE})
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["fine"] == "SUCCESS"
    overflow = report["one_past"]
    assert overflow.startswith("AddressSanitizer: heap-buffer-overflow at sanitized.c:%d in one_past (WRITE of "
                               "size 8" % _line_of(SANITIZE_SOURCE, "y[i] = 2 * x[i < n"))
    assert "while replaying call 1 of 1: one_past(float64[3, 5], float64[3, 5], 15)" in overflow
    log = overflow.rsplit("sanitizer log: ", 1)[1].strip()
    assert "heap-buffer-overflow" in open(log).read()
    assert report["int_overflow"].startswith("UndefinedBehaviorSanitizer: signed integer overflow")
    assert "at sanitized.c:%d" % _line_of(SANITIZE_SOURCE, "big += 1") in report["int_overflow"]


def test_sanitize_needs_calls_it_can_replay():
    @custom_op("planted::pure_python", mutates_args=())
    def pure_python(x: Tensor) -> Tensor:
        return x * 2.0
    results = opcheck(pure_python, (cextend.randn(3),), test_utils=(), sanitize=True, raise_exception=False)
    assert "made no C calls through a cextend.utils.ffi.load()/load_inline() extension" in str(
        results["test_sanitize"])
