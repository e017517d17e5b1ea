"""The C entry points called directly through cffi with illegal arguments.

As netlib's BLAS tests do for GEMM: each illegal argument gives status -i
(i its 1-based position), a message naming it, and no output written.
"""
import pytest

from cextend._C import ffi, lib

SENTINEL = 7
CTYPES = {"f32": "float", "f64": "double"}
N, K, M = 3, 4, 5
PLANES, PLANE = 2, 6
BIG = 2 ** 62


def buffer(ctype, count):
    """An output buffer holding the sentinel everywhere."""
    return ffi.new("%s[]" % ctype, [SENTINEL] * count)


def data(ctype, count):
    """An input buffer whose values differ from the sentinel."""
    return ffi.new("%s[]" % ctype, [i % 5 - 2.5 for i in range(count)])


def linear_forward(sfx):
    t = CTYPES[sfx]
    out = {"y": buffer(t, N * M)}
    args = [N, K, M, data(t, N * K), K, 0, data(t, M * K), K, 0, data(t, M), out["y"], M]
    return getattr(lib, "cextend_linear_forward_" + sfx), args, out


def linear_forward_contiguous(sfx):
    t = CTYPES[sfx]
    out = {"y": buffer(t, N * M)}
    args = [N, K, M, data(t, N * K), data(t, M * K), data(t, M), out["y"]]
    return getattr(lib, "cextend_linear_forward_contiguous_" + sfx), args, out


def linear_backward(sfx):
    t = CTYPES[sfx]
    out = {"dx": buffer(t, N * K), "dw": buffer(t, M * K), "db": buffer(t, M)}
    args = [N, K, M, data(t, N * M), M, 0, data(t, N * K), K, 0, data(t, M * K), K, 0,
            out["dx"], K, out["dw"], K, out["db"]]
    return getattr(lib, "cextend_linear_backward_" + sfx), args, out


def add_forward(sfx):
    t = CTYPES[sfx]
    out = {"out": buffer(t, 6)}
    return getattr(lib, "cextend_add_forward_" + sfx), [6, data(t, 6), data(t, 6), out["out"]], out


def add_backward(sfx):
    t = CTYPES[sfx]
    out = {"grad_a": buffer(t, 6), "grad_b": buffer(t, 6)}
    return (getattr(lib, "cextend_add_backward_" + sfx),
            [6, data(t, 6), out["grad_a"], out["grad_b"]], out)


def mul_constant_forward(sfx):
    t = CTYPES[sfx]
    out = {"out": buffer(t, 6)}
    return getattr(lib, "cextend_mul_constant_forward_" + sfx), [6, data(t, 6), 2.0, out["out"]], out


def mul_constant_backward(sfx):
    t = CTYPES[sfx]
    out = {"grad_x": buffer(t, 6)}
    return getattr(lib, "cextend_mul_constant_backward_" + sfx), [6, data(t, 6), 2.0, out["grad_x"]], out


def pool_forward(sfx):
    t = CTYPES[sfx]
    out = {"values": buffer(t, PLANES), "indices": buffer("int64_t", PLANES)}
    args = [PLANES, PLANE, data(t, PLANES * PLANE), out["values"], out["indices"]]
    return getattr(lib, "cextend_global_max_pool_forward_" + sfx), args, out


def pool_backward(sfx):
    t = CTYPES[sfx]
    out = {"grad_x": buffer(t, PLANES * PLANE)}
    args = [PLANES, PLANE, data(t, PLANES), ffi.new("int64_t[]", [0, PLANE - 1]), out["grad_x"]]
    return getattr(lib, "cextend_global_max_pool_backward_" + sfx), args, out


def relu_forward(sfx):
    t = CTYPES[sfx]
    out = {"out": buffer(t, 6)}
    return getattr(lib, "cextend_relu_forward_" + sfx), [6, data(t, 6), out["out"]], out


def threshold_backward(sfx):
    t = CTYPES[sfx]
    out = {"grad_x": buffer(t, 6)}
    return getattr(lib, "cextend_threshold_backward_" + sfx), [6, data(t, 6), data(t, 6), out["grad_x"]], out


def axpy(sfx):
    t = CTYPES[sfx]
    out = {"out": buffer(t, 6)}
    return getattr(lib, "cextend_axpy_" + sfx), [6, 0.5, data(t, 6), data(t, 6), out["out"]], out


def sgd_step(sfx):
    """Updates in place: the parameter and the momentum buffer are the outputs."""
    t = CTYPES[sfx]
    out = {"param": buffer(t, 6), "momentum_buffer": buffer(t, 6)}
    args = [6, out["param"], data(t, 6), out["momentum_buffer"], 0, -0.1, 0.01, 0.9, 1.0, 0, 0]
    return getattr(lib, "cextend_sgd_step_" + sfx), args, out


def sum_total(sfx):
    t = CTYPES[sfx]
    out = {"total": buffer(t, 1)}
    return getattr(lib, "cextend_sum_" + sfx), [6, data(t, 6), out["total"]], out


def adam_step(sfx):
    """Updates in place: the parameter and both moments are the outputs."""
    t = CTYPES[sfx]
    out = {"param": buffer(t, 6), "exp_avg": buffer(t, 6), "exp_avg_sq": buffer(t, 6)}
    args = [6, out["param"], data(t, 6), out["exp_avg"], out["exp_avg_sq"], 1, 0.01, 0.1, 0.999, 0.001,
            0.03, 1e-8, -0.1, 0]
    return getattr(lib, "cextend_adam_step_" + sfx), args, out


NULL = ffi.NULL
_KEEP_ALIVE = []


def misaligned(count=64):
    """A pointer one byte into a buffer: aligned for no element type."""
    raw = ffi.new("char[]", 8 * count + 8)
    _KEEP_ALIVE.append(raw)
    return ffi.cast("void *", raw + 1)


# entry -> list of ({position: value}, expected status, argument name in the message)
ILLEGAL = {
    linear_forward: [
        ({1: -1}, -1, "n"), ({2: -1}, -2, "k"), ({3: -1}, -3, "m"),
        ({4: NULL}, -4, "x"), ({5: K - 1}, -5, "ldx"), ({5: BIG}, -5, "ldx"), ({6: 2}, -6, "transx"),
        ({6: 1, 5: N - 1}, -5, "ldx"), ({7: NULL}, -7, "w"), ({8: 0}, -8, "ldw"),
        ({9: -1}, -9, "transw"), ({11: NULL}, -11, "y"), ({12: M - 1}, -12, "ldy"),
        ({1: BIG, 5: BIG}, -5, "ldx"), ({4: misaligned()}, -4, "x"), ({10: misaligned()}, -10, "b"),
        ({11: misaligned()}, -11, "y"),
    ],
    linear_backward: [
        ({1: -2}, -1, "n"), ({2: -2}, -2, "k"), ({3: -2}, -3, "m"),
        ({4: NULL}, -4, "dy"), ({5: M - 1}, -5, "lddy"), ({6: 3}, -6, "transdy"),
        ({7: NULL}, -7, "x"), ({8: 1}, -8, "ldx"), ({9: 2}, -9, "transx"),
        ({10: NULL}, -10, "w"), ({11: K - 1}, -11, "ldw"), ({12: 7}, -12, "transw"),
        ({14: K - 1}, -14, "lddx"), ({16: K - 1}, -16, "lddw"), ({7: misaligned()}, -7, "x"),
        ({15: misaligned()}, -15, "dw"), ({17: misaligned()}, -17, "db"),
    ],
    add_forward: [({1: -1}, -1, "count"), ({2: NULL}, -2, "a"), ({3: NULL}, -3, "b"),
                  ({4: NULL}, -4, "out"), ({1: BIG}, -1, "count"), ({3: misaligned()}, -3, "b")],
    add_backward: [({1: -1}, -1, "count"), ({2: NULL}, -2, "grad_out")],
    mul_constant_forward: [({1: -1}, -1, "count"), ({2: NULL}, -2, "x"), ({4: NULL}, -4, "out")],
    mul_constant_backward: [({1: -1}, -1, "count"), ({2: NULL}, -2, "grad_out"),
                            ({4: NULL}, -4, "grad_x")],
    pool_forward: [({1: -1}, -1, "planes"), ({2: -1}, -2, "plane_size"), ({2: 0}, -2, "plane_size"),
                   ({1: BIG}, -2, "plane_size"), ({3: NULL}, -3, "x"), ({4: NULL}, -4, "values"),
                   ({5: NULL}, -5, "indices")],
    pool_backward: [({1: -1}, -1, "planes"), ({2: -1}, -2, "plane_size"), ({3: NULL}, -3, "grad_values"),
                    ({4: NULL}, -4, "indices"), ({4: ffi.new("int64_t[]", [0, PLANE])}, -4, "indices"),
                    ({4: ffi.new("int64_t[]", [-1, 0])}, -4, "indices"), ({5: NULL}, -5, "grad_x")],
}
# Entry points of the CPU library only (tests/test_cuda.py matches ILLEGAL
# against the CUDA library's twins).
CPU_ONLY_ILLEGAL = {
    linear_forward_contiguous: [
        ({1: -1}, -1, "n"), ({2: -1}, -2, "k"), ({3: -1}, -3, "m"), ({4: NULL}, -4, "x"),
        ({5: NULL}, -5, "w"), ({7: NULL}, -7, "y"), ({4: misaligned()}, -4, "x"),
        ({6: misaligned()}, -6, "b"), ({1: BIG, 2: BIG}, -2, "k"),
    ],
    relu_forward: [({1: -1}, -1, "count"), ({2: NULL}, -2, "x"), ({3: NULL}, -3, "out"),
                   ({1: BIG}, -1, "count"), ({3: misaligned()}, -3, "out")],
    threshold_backward: [({1: -1}, -1, "count"), ({2: NULL}, -2, "grad_out"), ({3: NULL}, -3, "result"),
                         ({4: NULL}, -4, "grad_x"), ({3: misaligned()}, -3, "result")],
    axpy: [({1: -1}, -1, "count"), ({3: NULL}, -3, "x"), ({4: NULL}, -4, "y"), ({5: NULL}, -5, "out"),
           ({1: BIG}, -1, "count"), ({4: misaligned()}, -4, "y")],
    sum_total: [({1: -1}, -1, "count"), ({2: NULL}, -2, "x"), ({3: NULL}, -3, "total"),
                ({1: BIG}, -1, "count"), ({2: misaligned()}, -2, "x"), ({3: misaligned()}, -3, "total")],
    sgd_step: [({1: -1}, -1, "count"), ({2: NULL}, -2, "param"), ({3: NULL}, -3, "grad"),
               ({4: NULL}, -4, "momentum_buffer"), ({5: 2}, -5, "first_step"), ({10: -1}, -10, "nesterov"),
               ({11: 3}, -11, "maximize"), ({2: misaligned()}, -2, "param"), ({1: BIG}, -1, "count")],
    adam_step: [({1: -1}, -1, "count"), ({2: NULL}, -2, "param"), ({3: NULL}, -3, "grad"),
                ({4: NULL}, -4, "exp_avg"), ({5: NULL}, -5, "exp_avg_sq"), ({6: 3}, -6, "decay_mode"),
                ({14: 2}, -14, "maximize"), ({5: misaligned()}, -5, "exp_avg_sq"), ({1: BIG}, -1, "count")],
}
CASES = [(entry, sfx, change, status, name)
         for table in (ILLEGAL, CPU_ONLY_ILLEGAL)
         for entry, cases in table.items() for change, status, name in cases for sfx in CTYPES]


def untouched(out):
    return {name: list(buf) for name, buf in out.items()} == {
        name: [SENTINEL] * len(buf) for name, buf in out.items()}


@pytest.mark.parametrize("entry,sfx,change,status,name", CASES,
                         ids=["%s-%s-%s" % (c[0].__name__, c[1], c[4]) for c in CASES])
def test_illegal_argument_is_reported_and_writes_nothing(entry, sfx, change, status, name):
    fn, args, out = entry(sfx)
    for position, value in change.items():
        args[position - 1] = value
    assert fn(*args) == status
    message = ffi.string(lib.cextend_last_error()).decode()
    assert "argument %d (%s) is illegal" % (-status, name) in message
    assert message.startswith("cextend_")
    assert untouched(out)


@pytest.mark.parametrize("sfx", CTYPES)
@pytest.mark.parametrize("entry", list(ILLEGAL) + list(CPU_ONLY_ILLEGAL))
def test_valid_call_succeeds(entry, sfx):
    fn, args, out = entry(sfx)
    assert fn(*args) == 0, ffi.string(lib.cextend_last_error())
    assert not untouched(out)


@pytest.mark.parametrize("sfx", CTYPES)
def test_null_means_skip_where_documented(sfx):
    fn, args, out = linear_forward(sfx)
    args[9] = NULL                                   # no bias
    assert fn(*args) == 0
    fn, args, out = linear_backward(sfx)
    args[12] = args[14] = args[16] = NULL            # skip dx, dw and db
    args[13] = args[15] = -5                          # a skipped output's ld is ignored
    assert fn(*args) == 0
    fn, args, out = add_backward(sfx)
    args[2] = args[3] = NULL
    assert fn(*args) == 0
    fn, args, out = sgd_step(sfx)
    args[3], args[7] = NULL, 0.0                     # no momentum: no buffer
    assert fn(*args) == 0


@pytest.mark.parametrize("sfx", CTYPES)
def test_null_is_legal_for_empty_operands(sfx):
    fn = getattr(lib, "cextend_linear_forward_" + sfx)
    assert fn(0, K, M, NULL, K, 0, data(CTYPES[sfx], M * K), K, 0, NULL, NULL, M) == 0
    assert fn(N, K, 0, data(CTYPES[sfx], N * K), K, 0, NULL, K, 0, NULL, NULL, 1) == 0
    pool = getattr(lib, "cextend_global_max_pool_forward_" + sfx)
    assert pool(0, 0, NULL, NULL, NULL) == 0


@pytest.mark.parametrize("sfx", CTYPES)
def test_contiguous_forward_matches_the_general_entry_bitwise(sfx):
    t = CTYPES[sfx]
    x, w, b = data(t, N * K), data(t, M * K), data(t, M)
    general, contiguous = buffer(t, N * M), buffer(t, N * M)
    assert getattr(lib, "cextend_linear_forward_" + sfx)(N, K, M, x, K, 0, w, K, 0, b, general, M) == 0
    assert getattr(lib, "cextend_linear_forward_contiguous_" + sfx)(N, K, M, x, w, b, contiguous) == 0
    assert list(general) == list(contiguous)
    assert getattr(lib, "cextend_linear_forward_contiguous_" + sfx)(N, K, M, x, w, NULL, contiguous) == 0
