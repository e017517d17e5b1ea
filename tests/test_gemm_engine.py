"""The GEMM engine: every ISA against the reference kernel, around every
blocking edge, on every layout; bitwise identical for any thread count."""
import itertools

import numpy as np
import pytest

import cextend as cx
from cextend import _backend, ops
from cextend._C import ffi, lib
from helpers import assert_product_close, layouts, poisoned, product_bound

FAST_ISAS = [isa for isa in cx.available_isas() if isa != "reference"]
# (mr, nr, kc, mc) of each ISA's plan (of large products), per dtype, as compiled (src/kernels/).
BLOCKS = {isa: {dtype: tuple(_backend.gemm_blocking(isa, dtype)[key] for key in ("mr", "nr", "kc", "mc"))
                for dtype in (np.float32, np.float64)} for isa in FAST_ISAS}


def plan_spans(isa, dtype, most_rows=4096):
    """[(first_row_count, last_row_count, (mr, nr, kc, mc))]: the plans products
    of each number of rows use (some ISAs run few rows with another tile)."""
    spans = []
    for rows in range(1, most_rows + 1):
        plan = tuple(_backend.gemm_blocking(isa, dtype, rows=rows)[key] for key in ("mr", "nr", "kc", "mc"))
        if spans and spans[-1][2] == plan:
            spans[-1][1] = rows
        else:
            spans.append([rows, rows, plan])
    spans[-1][1] = None      # and every larger product
    return [tuple(span) for span in spans]


SPANS = {isa: {dtype: plan_spans(isa, dtype) for dtype in (np.float32, np.float64)} for isa in FAST_ISAS}


@pytest.fixture
def isa_and_threads():
    """Restore the automatic ISA and thread count after each test."""
    threads = cx.get_num_threads()
    yield
    cx.set_isa("auto")
    cx.set_num_threads(threads)


def edge_sizes(block):
    return sorted({1, block - 1, block, block + 1, 2 * block + 1} - {0})


def shapes_for(isa, dtype):
    """(n, k, m) around each blocking edge of each plan the ISA runs: mr/mc
    on rows, nr on columns, kc on k; each plan's row counts offset into the
    span of row counts it serves."""
    cases = set()
    for first, last, (mr, nr, kc, mc) in SPANS[isa][dtype]:
        base = first - 1

        def rows(n):
            n += base
            return n if n >= first and (last is None or n <= last) else None

        for n in edge_sizes(mr):
            cases.add((rows(n), 17, 2 * nr + 3))
        for n in (mc - 1, mc + 1):
            if n >= first and (last is None or n <= last):
                cases.add((n, 17, 2 * nr + 3))
        for m in edge_sizes(nr):
            cases.add((rows(2 * mr + 1), 9, m))
        for k in edge_sizes(kc):
            cases.add((rows(mr + 2), k, nr + 1))
        # Enough rows to pack B whole, and k wider than the row-contiguous
        # packer's group of eight micro-panels (dx = dy W and dW = dy^T x have
        # N = k), with a ragged last group and panel.
        cases.add((rows(5 * mr + 3), 8 * nr + nr // 2 + 3, 2 * nr + 5))
    cases = {case for case in cases if case[0] is not None}
    cases.add((0, 5, 7))
    cases.add((3, 0, 5))
    return sorted(cases)


def products(x, w, b, dy):
    y = ops.linear_forward(x, w, b, out=poisoned((x.shape[0], w.shape[0]), x.dtype))
    dx, dw, db = (poisoned(s, x.dtype) for s in (x.shape, w.shape, w.shape[:1]))
    _backend.linear_backward(dy, x, w, dx, dw, db)
    return y, dx, dw, db


CASES = [(isa, dtype, shape) for isa in FAST_ISAS for dtype in (np.float32, np.float64)
         for shape in shapes_for(isa, dtype)]


@pytest.mark.parametrize("isa,dtype,shape", CASES,
                         ids=["%s-%s-%dx%dx%d" % (i, np.dtype(d).name, *s) for i, d, s in CASES])
def test_fast_kernel_matches_reference(isa, dtype, shape, isa_and_threads):
    n, k, m = shape
    rng = np.random.default_rng(n * 1000 + k * 10 + m)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    dy = rng.standard_normal((n, m)).astype(dtype)
    cx.set_isa(isa)
    y, dx, dw, db = products(x, w, b, dy)
    assert_product_close(y, x, w.T, dtype, b)
    assert_product_close(dx, dy, w, dtype)
    assert_product_close(dw, dy.T, x, dtype)
    assert_product_close(db, np.ones(n), dy, dtype)
    cx.set_isa("reference")
    ref = products(x, w, b, dy)
    bounds = (product_bound(x, w.T, dtype, b), product_bound(dy, w, dtype), product_bound(dy.T, x, dtype),
              product_bound(np.ones(n), dy, dtype))
    for ours, theirs, bound in zip((y, dx, dw, db), ref, bounds):
        # Each is within the bound of the exact answer, so within twice it of the other.
        assert np.all(np.abs(ours.astype(np.float64) - theirs) <= 2 * bound)


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_layout_and_the_small_path_give_the_same_bits(isa, dtype, isa_and_threads):
    cx.set_isa(isa)
    mr, nr, _, _ = BLOCKS[isa][dtype]
    rng = np.random.default_rng(2)
    for n in (mr - 1, 4 * mr, 4 * mr + 1, 9 * mr + 3):     # both sides of the no-pack threshold
        x = rng.standard_normal((n, 37)).astype(dtype)
        w = rng.standard_normal((2 * nr + 5, 37)).astype(dtype)
        dy = rng.standard_normal((n, 2 * nr + 5)).astype(dtype)
        reference = ops.linear_forward(x, w), ops.linear_backward(dy, x, w)
        for (xn, xv), (wn, wv) in itertools.product(list(layouts(x))[:4], list(layouts(w))[:4]):
            np.testing.assert_array_equal(ops.linear_forward(xv, wv), reference[0], err_msg=xn + wn)
        for (dn, dv), (xn, xv) in itertools.product(list(layouts(dy))[:4], list(layouts(x))[:4]):
            for got, want in zip(ops.linear_backward(dv, xv, w), reference[1]):
                np.testing.assert_array_equal(got, want, err_msg=dn + xn)


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_b_packed_panel_by_panel_matches_b_packed_whole(isa, dtype, isa_and_threads):
    # The forward pass packs W^T one micro-panel at a time as the first row
    # block reaches it; a column-major W is packed a whole block at a time.
    # Past a row block, a column block (nc as this CPU uses it) and a k
    # block, with ragged ends everywhere, both give the same bits.
    cx.set_isa(isa)
    plan = _backend.gemm_blocking(isa, dtype)
    n, k, m = plan["mc"] + plan["mr"] + 3, plan["kc"] + 7, plan["nc"] + plan["nr"] + 5
    rng = np.random.default_rng(n + k + m)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    by_panel = ops.linear_forward(x, w, b)
    whole = ops.linear_forward(x, np.asfortranarray(w), b)
    np.testing.assert_array_equal(by_panel, whole)
    assert_product_close(by_panel, x, w.T, dtype, b)


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(257, 300, 129), (64, 520, 700), (7, 1000, 390), (300, 64, 5)])
def test_results_are_bitwise_identical_for_any_thread_count(isa, dtype, shape, isa_and_threads):
    n, k, m = shape
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    dy = rng.standard_normal((n, m)).astype(dtype)
    cx.set_isa(isa)
    results = []
    for threads in (1, 2, 3):
        cx.set_num_threads(threads)
        results.append(products(x, w, b, dy))
    for other in results[1:]:
        for a, b_ in zip(results[0], other):
            np.testing.assert_array_equal(a, b_)


def test_isa_controls(isa_and_threads):
    assert "reference" in cx.available_isas() and "generic" in cx.available_isas()
    assert cx.get_isa() == cx.available_isas()[-1]         # auto picks the best
    cx.set_isa("generic")
    assert cx.get_isa() == "generic"
    with pytest.raises(ValueError, match="isa must be one of"):
        cx.set_isa("sse9")
    cx.set_isa(None)
    assert cx.get_isa() == cx.available_isas()[-1]
    assert lib.cextend_set_isa(7) == -1
    assert lib.cextend_set_isa(-5) == -1


def test_thread_controls(isa_and_threads):
    cx.set_num_threads(3)
    assert cx.get_num_threads() == 3
    with pytest.raises(ValueError, match="n must be >= 1"):
        cx.set_num_threads(0)
    with pytest.raises(TypeError):
        cx.set_num_threads(2.0)
    assert lib.cextend_set_num_threads(0) == -1


def test_forced_isa_from_the_environment():
    import os
    import subprocess
    import sys
    code = "import cextend; print(cextend.get_isa())"
    for isa in cx.available_isas():
        out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, CEXTEND_ISA=isa),
                             capture_output=True, text=True, check=True)
        assert out.stdout.strip() == isa
    bad = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, CEXTEND_ISA="nonsense"),
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "CEXTEND_ISA=nonsense" in bad.stderr


def test_omp_num_threads_sets_the_default():
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import cextend; print(cextend.get_num_threads())"],
                         env=dict(os.environ, OMP_NUM_THREADS="3"), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"


def _linear_products(rng, isa, dtype, n, k, m):
    """Random x (n, k), w (m, k), b, dy (n, m), and y = x w^T + b and dx = dy w under isa."""
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    dy = rng.standard_normal((n, m)).astype(dtype)
    cx.set_isa(isa)
    y = ops.linear_forward(x, w, b)
    dx = ops.linear_backward(dy, x, w, weight=False, bias=False)[0]
    return x, w, b, dy, y, dx


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(37, 23, 19), (70, 40, 45), (9, 300, 40), (5, 8, 8), (33, 1, 64)])
def test_a_row_does_not_depend_on_the_batch(isa, dtype, shape, isa_and_threads):
    """Tiny (unpacked), small (B read in place) and packed products all run
    the microkernel's arithmetic, so a row of y = x W^T + b (and of
    dx = dy W) comes out bitwise the same whatever rows share its batch."""
    n, k, m = shape
    rng = np.random.default_rng(n + k + m)
    x, w, b, dy, y, dx = _linear_products(rng, isa, dtype, n, k, m)
    for start, stop in [(0, 1), (n - 1, n), (1, min(n, 4)), (0, n // 2 or 1)]:
        np.testing.assert_array_equal(ops.linear_forward(x[start:stop], w, b), y[start:stop])
        part = ops.linear_backward(dy[start:stop], x[start:stop], w, weight=False, bias=False)[0]
        np.testing.assert_array_equal(part, dx[start:stop])


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_are_the_same_bits_on_either_side_of_a_plan_change(isa, dtype, isa_and_threads):
    """Where an ISA runs products of few rows with another tile, both plans
    sum each element in the same order (same kc): a row of y, dx (rows:
    the batch) and dW (rows: the outputs) does not depend on which plan
    ran, past two k blocks and with ragged edges on both tiles."""
    spans = SPANS[isa][dtype]
    switch = spans[1][0] if len(spans) > 1 else 48
    kc = spans[-1][2][2]
    n = m = switch + 13
    rng = np.random.default_rng(switch)
    x, w, b, dy, y, dx = _linear_products(rng, isa, dtype, n, 2 * kc + 11, m)
    dw = ops.linear_backward(dy, x, w, input=False, bias=False)[1]
    for rows in sorted({1, 2, switch - 7, switch - 1, switch, switch + 1, switch + 5, n} - {0}):
        np.testing.assert_array_equal(ops.linear_forward(x[:rows], w, b), y[:rows])
        part = ops.linear_backward(dy[:rows], x[:rows], w, weight=False, bias=False)[0]
        np.testing.assert_array_equal(part, dx[:rows])
        part = ops.linear_backward(dy[:, :rows], x, w[:rows], input=False, bias=False)[1]
        np.testing.assert_array_equal(part, dw[:rows])
    assert_product_close(y, x, w.T, dtype, b)


def test_the_plan_of_a_row_count():
    # The reported plan of large products is the one for any large row count.
    for isa in FAST_ISAS:
        for dtype in (np.float32, np.float64):
            assert _backend.gemm_blocking(isa, dtype, rows=10 ** 6) == _backend.gemm_blocking(isa, dtype)
            assert SPANS[isa][dtype][0][0] == 1 and SPANS[isa][dtype][-1][1] is None
            # Every plan of an ISA sums in k blocks of the same size: the same bits.
            assert len({plan[2] for _, _, plan in SPANS[isa][dtype]}) == 1
    blocks = ffi.new("int64_t[5]")
    assert lib.cextend_gemm_blocking_for_rows(lib.CEXTEND_ISA_GENERIC, 4, -1, blocks) == -3
    assert lib.cextend_gemm_blocking_for_rows(lib.CEXTEND_ISA_GENERIC, 4, 5, ffi.NULL) == -4


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_column_does_not_depend_on_the_width(isa, dtype, isa_and_threads):
    """A ragged last panel of at most nr / 2 columns runs a kernel half as
    wide (a classifier's 10 outputs); every element is the same chain of
    fused multiply-adds, so a column of y = x W^T + b (and of dx = dy W,
    whose columns are x's) is bitwise the same whatever columns share it."""
    mr, nr, kc, mc = BLOCKS[isa][dtype]
    rng = np.random.default_rng(nr + kc)
    n, k, m = 2 * mr + 3, 2 * kc + 3 * nr, 3 * nr       # k past two k blocks: the accumulating tiles too
    x, w, b, dy, y, dx = _linear_products(rng, isa, dtype, n, k, m)
    for width in sorted({1, nr // 2 - 1, nr // 2, nr // 2 + 1, nr - 1, nr + 1, nr + nr // 2, 2 * nr + 3} - {0}):
        np.testing.assert_array_equal(ops.linear_forward(x, w[:width].copy(), b[:width].copy()), y[:, :width])
        part = ops.linear_backward(dy, x[:, :width].copy(), w[:, :width].copy(), weight=False, bias=False)[0]
        np.testing.assert_array_equal(part, dx[:, :width])


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocking_is_reported_and_consistent(isa, dtype):
    plan = _backend.gemm_blocking(isa, dtype)
    assert plan["mr"] >= 1 and plan["nr"] >= 1 and plan["kc"] >= 1
    assert plan["mc"] % plan["mr"] == 0 and plan["nc"] % plan["nr"] == 0     # blocks hold whole tiles
    assert plan["mr"] * plan["nr"] <= 16 * 32                                # fits the edge-tile scratch


def test_blocking_rejects_what_has_no_plan():
    blocks = ffi.new("int64_t[5]")
    assert lib.cextend_gemm_blocking(lib.CEXTEND_ISA_REFERENCE, 4, blocks) == -1
    assert lib.cextend_gemm_blocking(lib.CEXTEND_ISA_AUTO, 4, blocks) == -1
    assert lib.cextend_gemm_blocking(lib.CEXTEND_ISA_GENERIC, 2, blocks) == -2
    assert lib.cextend_gemm_blocking(lib.CEXTEND_ISA_GENERIC, 8, ffi.NULL) == -3
    with pytest.raises(ValueError, match="isa must be one of"):
        _backend.gemm_blocking("sse9", np.float32)
