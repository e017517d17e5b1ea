"""The TH shim, function by function: a small extension built through
create_extension calls each TH function the shim provides, and the numbers
that come back are checked against numpy."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import cextend as cx
from cextend.utils import _th

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HEADER = r"""
int th_storage(THFloatTensor *t, float value, int64_t *out);
int th_new_with_size(THDoubleTensor *o1, THDoubleTensor *o2, THDoubleTensor *o3, THDoubleTensor *o4);
int th_views(THFloatTensor *src, THFloatTensor *narrowed, THFloatTensor *selected, THFloatTensor *transposed);
int th_new_views(THFloatTensor *src, THFloatTensor *out, int64_t *out_info);
int th_resize(THFloatTensor *t, int which);
int th_resize_as_fill(THFloatTensor *out, THFloatTensor *like, float value);
int th_math(THDoubleTensor *r, THDoubleTensor *t, THDoubleTensor *src, int op, double value);
int th_addmm(THFloatTensor *r, float beta, THFloatTensor *t, float alpha, THFloatTensor *m1, THFloatTensor *m2);
int th_addbmm(THDoubleTensor *r, double beta, THDoubleTensor *t, double alpha, THDoubleTensor *b1, THDoubleTensor *b2);
int th_queries(THLongTensor *t, int64_t *out);
int th_retain_free(THFloatTensor *t, int64_t *out);
int th_int_byte(THIntTensor *i, THByteTensor *b, THIntTensor *grown);
int th_bad_size(THFloatTensor *t);
int th_resize_as_then_fill(THFloatTensor *out, THFloatTensor *in);
void th_check_then_write(THFloatTensor *out, int ok);
THFloatTensor *th_new_or_fail(int fail);
double th_general_h(THFloatTensor *t);
THFloatTensor *th_narrow_of(THFloatTensor *t);
int th_two(THFloatTensor *a, THDoubleTensor *b);
int th_leak_check(void);
"""

SOURCE = r"""
#include <TH/TH.h>
#include "th_all.h"

/* out = [storage size, storage data is tensor data - offset, offset, size after fill] */
int th_storage(THFloatTensor *t, float value, int64_t *out)
{
    THFloatStorage *s = THFloatTensor_storage(t);
    out[0] = THFloatStorage_size(s);
    out[1] = THFloatStorage_data(s) + THFloatTensor_storageOffset(t) == THFloatTensor_data(t);
    out[2] = THFloatTensor_storageOffset(t);
    THFloatStorage_fill(s, value);
    out[3] = THFloatStorage_size(s);
    return 1;
}

static void arange_into(THDoubleTensor *out, THDoubleTensor *t)
{
    double *d = THDoubleTensor_data(t);
    for (ptrdiff_t i = 0; i < THDoubleTensor_nElement(t); ++i)
        d[i] = (double)i;
    THDoubleTensor_resizeAs(out, t);
    THDoubleTensor_copy(out, t);
    THDoubleTensor_free(t);
}

int th_new_with_size(THDoubleTensor *o1, THDoubleTensor *o2, THDoubleTensor *o3, THDoubleTensor *o4)
{
    arange_into(o1, THDoubleTensor_newWithSize1d(3));
    arange_into(o2, THDoubleTensor_newWithSize2d(2, 3));
    arange_into(o3, THDoubleTensor_newWithSize3d(2, 1, 3));
    arange_into(o4, THDoubleTensor_newWithSize4d(1, 2, 1, 3));
    return 1;
}

/* TH's in-place views: the outputs become views of src's memory. */
int th_views(THFloatTensor *src, THFloatTensor *narrowed, THFloatTensor *selected, THFloatTensor *transposed)
{
    THFloatTensor_narrow(narrowed, src, 1, 1, 2);
    THFloatTensor_select(selected, src, 0, 2);
    THFloatTensor_transpose(transposed, src, 0, 1);
    return 1;
}

/* out = clone of (src narrowed, transposed, selected); out_info = shapes seen. */
int th_new_views(THFloatTensor *src, THFloatTensor *out, int64_t *out_info)
{
    THFloatTensor *shared = THFloatTensor_newWithTensor(src);
    THFloatTensor *narrow = THFloatTensor_newNarrow(shared, 0, 1, 2);          /* rows 1..2 */
    THFloatTensor *trans = THFloatTensor_newTranspose(narrow, 0, 1);           /* (cols, 2) */
    THFloatTensor *row = THFloatTensor_newSelect(trans, 0, 3);                 /* column 3 */
    THFloatTensor *clone = THFloatTensor_newClone(trans);
    out_info[0] = THFloatTensor_isContiguous(trans);
    out_info[1] = THFloatTensor_isContiguous(clone);
    out_info[2] = THFloatTensor_size(trans, 0);
    out_info[3] = THFloatTensor_size(trans, 1);
    out_info[4] = THFloatTensor_nDimension(row);
    out_info[5] = (int64_t)(THFloatTensor_data(row)[0] * 1000);
    out_info[6] = THFloatTensor_data(clone) != THFloatTensor_data(trans);
    THFloatTensor_resizeAs(out, clone);
    THFloatTensor_copy(out, clone);
    THFloatTensor_free(row);
    THFloatTensor_free(clone);
    THFloatTensor_free(trans);
    THFloatTensor_free(narrow);
    THFloatTensor_free(shared);
    return 1;
}

int th_resize(THFloatTensor *t, int which)
{
    const int64_t size[3] = {2, 3, 4}, stride[3] = {1, 2, 6};   /* a column-major 2x3x4 */
    switch (which) {
    case 1: THFloatTensor_resize1d(t, 5); break;
    case 2: THFloatTensor_resize2d(t, 2, 3); break;
    case 3: THFloatTensor_resize3d(t, 2, 3, 4); break;
    case 4: THFloatTensor_resize4d(t, 1, 2, 3, 2); break;
    case 5: THFloatTensor_resizeNd(t, 3, size, stride); break;
    case 6: THFloatTensor_resizeNd(t, 3, size, NULL); break;
    }
    float *d = THFloatTensor_data(t);
    for (ptrdiff_t i = 0; i < THFloatTensor_nElement(t); ++i)
        d[THFloatTensor_offsetOf(t, i)] = (float)i;
    return 1;
}

/* TH's rule: an output that already has the size keeps its strides. */
int th_resize_as_fill(THFloatTensor *out, THFloatTensor *like, float value)
{
    THFloatTensor_resizeAs(out, like);
    THFloatTensor_fill(out, value);
    return THFloatTensor_isContiguous(out);
}

int th_math(THDoubleTensor *r, THDoubleTensor *t, THDoubleTensor *src, int op, double value)
{
    switch (op) {
    case 0: THDoubleTensor_fill(r, value); break;
    case 1: THDoubleTensor_zero(r); break;
    case 2: THDoubleTensor_resizeAs(r, t); THDoubleTensor_copy(r, t); break;
    case 3: THDoubleTensor_add(r, t, value); break;
    case 4: THDoubleTensor_mul(r, t, value); break;
    case 5: THDoubleTensor_cadd(r, t, value, src); break;
    case 6: THDoubleTensor_cmul(r, t, src); break;
    }
    return op;
}

int th_addmm(THFloatTensor *r, float beta, THFloatTensor *t, float alpha, THFloatTensor *m1, THFloatTensor *m2)
{
    THFloatTensor_addmm(r, beta, t, alpha, m1, m2);
    return 1;
}

int th_addbmm(THDoubleTensor *r, double beta, THDoubleTensor *t, double alpha, THDoubleTensor *b1, THDoubleTensor *b2)
{
    THDoubleTensor_addbmm(r, beta, t, alpha, b1, b2);
    return 1;
}

/* out = [nElement, nDimension, isContiguous, size0, stride0, ..., size3, stride3] */
int th_queries(THLongTensor *t, int64_t *out)
{
    out[0] = THLongTensor_nElement(t);
    out[1] = THLongTensor_nDimension(t);
    out[2] = THLongTensor_isContiguous(t);
    for (int d = 0; d < THLongTensor_nDimension(t) && d < 4; ++d) {
        out[3 + 2 * d] = THLongTensor_size(t, d);
        out[4 + 2 * d] = THLongTensor_stride(t, d);
    }
    return 1;
}

/* Shares t's storage through a C tensor kept alive by retain, writes
 * through it, then releases it: out = [refcount after retain, live objects
 * during, after]. */
int th_retain_free(THFloatTensor *t, int64_t *out)
{
    THFloatTensor *alias = THFloatTensor_newWithTensor(t);
    THFloatTensor_retain(alias);
    out[0] = alias->refcount;
    THFloatTensor_free(alias);
    THFloatTensor_data(alias)[0] = 42.0f;          /* still alive: one reference left */
    out[1] = cextend_th_live_objects();
    THFloatTensor_free(alias);
    out[2] = cextend_th_live_objects();
    return 1;
}

int th_int_byte(THIntTensor *i, THByteTensor *b, THIntTensor *grown)
{
    THIntTensor_mul(i, i, 3);
    THByteTensor_add(b, b, 7);
    THIntTensor_resize2d(grown, 2, 2);
    THIntTensor_fill(grown, -5);
    return 1;
}

int th_bad_size(THFloatTensor *t)
{
    return (int)THFloatTensor_size(t, 5);
}

int th_resize_as_then_fill(THFloatTensor *out, THFloatTensor *in)
{
    /* extension-ffi's usual shape: memory-safe under TH, whose failed resize never returned here */
    THFloatTensor_resizeAs(out, in);
    float *o = THFloatTensor_data(out);
    int64_t n = THFloatTensor_nElement(in);
    for (int64_t i = 0; i < n; ++i)
        o[i] = 1.0f;
    return 7;
}

void th_check_then_write(THFloatTensor *out, int ok)
{
    THArgCheck(ok, 2, "ok must be nonzero");
    THFloatTensor_fill(out, 42.0f);
}

double th_general_h(THFloatTensor *t)
{
    /* roi_crop's style: what TH's THGeneral.h declared, used with no include of its own
       (implicit declarations are errors in create_extension's builds) */
    (void)t;
    return floor(2.7) + (M_PI > 3.14) + (THInf == DBL_MAX) + (INT_MAX > 0) + (FLT_EPSILON < 1.0f) +
           (time(NULL) > 0) + THMin(1, 2) + THMax(0, -1) + (sqrt(4.0) == 2.0);
}

THFloatTensor *th_narrow_of(THFloatTensor *t)
{
    return THFloatTensor_newNarrow(t, 0, 1, 2);
}

THFloatTensor *th_new_or_fail(int fail)
{
    THFloatTensor *t = THFloatTensor_newWithSize1d(3);
    THFloatTensor_fill(t, 5.0f);
    if (fail) {
        THFloatTensor_free(t);
        THError("asked to fail");
    }
    return t;
}

int th_two(THFloatTensor *a, THDoubleTensor *b)
{
    (void)a;
    (void)b;
    return 1;
}

int th_leak_check(void)
{
    return cextend_th_live_objects();
}
"""


@pytest.fixture(scope="module")
def th(tmp_path_factory):
    work = tmp_path_factory.mktemp("th_all")
    (work / "th_all.h").write_text(HEADER)
    (work / "th_all.c").write_text(SOURCE)
    (work / "build.py").write_text(
        "from cextend.utils.ffi import create_extension\n"
        "ffi = create_extension('_th_shim_ext.th_all', headers=['th_all.h'], sources=['th_all.c'],\n"
        "                       relative_to=__file__, verbose=False)\n"
        "ffi.build()\n")
    result = subprocess.run([sys.executable, "build.py"], cwd=work, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    sys.path.insert(0, str(work))
    try:
        from _th_shim_ext import th_all
        yield th_all
    finally:
        sys.path.remove(str(work))
        for key in [k for k in sys.modules if k.startswith("_th_shim_ext")]:
            del sys.modules[key]


@pytest.fixture(autouse=True)
def no_leaks(th):
    before = th.cextend_th_live_objects()
    yield
    assert th.cextend_th_live_objects() == before, "TH structs leaked"


def test_storage_size_data_and_fill(th):
    base = cx.zeros(4, 6)
    view = base[1:3, 2:5]                         # a strided view: the storage spans what it reaches
    out = np.zeros(4, np.int64)
    th.th_storage(view, 2.5, out)
    assert out.tolist() == [1 * 6 + 3, 1, 0, 9]
    expected = np.zeros((4, 6), np.float32)
    expected.reshape(-1)[8:17] = 2.5              # fill covers the whole span, as TH's storage fill
    np.testing.assert_array_equal(base.numpy(), expected)


def test_new_with_size_1d_to_4d(th):
    outs = [cx.tensor([1.0], dtype=cx.double).new() for _ in range(4)]
    th.th_new_with_size(*outs)
    for out, shape in zip(outs, [(3,), (2, 3), (2, 1, 3), (1, 2, 1, 3)]):
        assert out.shape == shape and out.dtype is cx.float64
        np.testing.assert_array_equal(out.numpy(), np.arange(np.prod(shape), dtype=np.float64).reshape(shape))


def test_narrow_select_transpose_share_the_source(th):
    src = cx.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    narrowed, selected, transposed = cx.Tensor(), cx.Tensor(), cx.Tensor()
    th.th_views(src, narrowed, selected, transposed)
    np.testing.assert_array_equal(narrowed.numpy(), src.numpy()[:, 1:3])
    np.testing.assert_array_equal(selected.numpy(), src.numpy()[2])
    np.testing.assert_array_equal(transposed.numpy(), src.numpy().T)
    with cx.no_grad():
        narrowed[0, 0] = -1.0                     # views, as in TH: the source sees the write
    assert src[0, 1].item() == -1.0 and transposed[1, 0].item() == -1.0


def test_new_narrow_select_transpose_clone(th):
    src_np = np.arange(20, dtype=np.float32).reshape(4, 5) / 10
    out, info = cx.Tensor(), np.zeros(7, np.int64)
    th.th_new_views(cx.from_numpy(src_np.copy()), out, info)
    assert info.tolist() == [0, 1, 5, 2, 1, int(src_np[1, 3] * 1000), 1]
    np.testing.assert_array_equal(out.numpy(), src_np[1:3].T)
    assert out.is_contiguous()


@pytest.mark.parametrize("which,shape", [(1, (5,)), (2, (2, 3)), (3, (2, 3, 4)), (4, (1, 2, 3, 2)), (6, (2, 3, 4))])
def test_resize_1d_to_4d_and_nd(th, which, shape):
    t = cx.Tensor()
    th.th_resize(t, which)
    assert t.shape == shape and t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), np.arange(np.prod(shape), dtype=np.float32).reshape(shape))


def test_resize_nd_with_strides(th):
    t = cx.Tensor()
    th.th_resize(t, 5)
    assert t.shape == (2, 3, 4) and t.stride() == (1, 2, 6)
    np.testing.assert_array_equal(t.numpy(), np.arange(24, dtype=np.float32).reshape(2, 3, 4))


def test_resize_of_a_tensor_with_the_right_size_keeps_its_strides(th):
    """issue 11 item 13: a strided `out` of the right size is written in
    place, through its strides; nothing outside the view changes."""
    big = cx.zeros(3, 8)
    out = big[:, ::2]                              # (3, 4) with strides (8, 2)
    assert th.th_resize_as_fill(out, cx.zeros(3, 4), 7.0) == 0     # still non-contiguous in C
    assert out.stride() == (8, 2) and out.shape == (3, 4)
    expected = np.zeros((3, 8), np.float32)
    expected[:, ::2] = 7.0
    np.testing.assert_array_equal(big.numpy(), expected)
    grown = big[:, :2]                             # the wrong size: contiguous storage of its own
    assert th.th_resize_as_fill(grown, cx.zeros(5, 5), 1.0) == 1
    assert grown.shape == (5, 5) and grown.numpy().sum() == 25
    np.testing.assert_array_equal(big.numpy(), expected)


def _math(th, op, r, t, src, value):
    th.th_math(r, t, src, op, value)
    return r.numpy()


def test_fill_zero_copy_add_mul_cadd_cmul(th):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    t, src = cx.from_numpy(a.copy()), cx.from_numpy(b.copy())
    np.testing.assert_array_equal(_math(th, 0, cx.zeros(3, 4, dtype=cx.double), t, src, 1.5), np.full((3, 4), 1.5))
    np.testing.assert_array_equal(_math(th, 1, cx.from_numpy(a.copy()), t, src, 0), np.zeros((3, 4)))
    np.testing.assert_array_equal(_math(th, 2, cx.tensor([0.0], dtype=cx.double).new(), t, src, 0), a)
    np.testing.assert_allclose(_math(th, 3, cx.tensor([0.0], dtype=cx.double).new(), t, src, 2.5), a + 2.5)
    np.testing.assert_allclose(_math(th, 4, cx.tensor([0.0], dtype=cx.double).new(), t, src, -3.0), a * -3.0)
    np.testing.assert_allclose(_math(th, 5, cx.tensor([0.0], dtype=cx.double).new(), t, src, 0.5), a + 0.5 * b)
    np.testing.assert_allclose(_math(th, 6, cx.tensor([0.0], dtype=cx.double).new(), t, src, 0), a * b)
    # strided operands and in place (r is t)
    strided = cx.from_numpy(a.T.copy()).t()
    _math(th, 5, strided, strided, cx.from_numpy(b.copy()), 2.0)
    np.testing.assert_allclose(strided.numpy(), a + 2 * b)
    np.testing.assert_array_equal(t.numpy(), a)           # inputs untouched
    np.testing.assert_array_equal(src.numpy(), b)


def test_addmm_and_addbmm(th):
    rng = np.random.default_rng(1)
    m1, m2, t = (rng.standard_normal(s).astype(np.float32) for s in [(3, 5), (5, 4), (3, 4)])
    r = cx.Tensor()
    th.th_addmm(r, 0.5, cx.from_numpy(t.copy()), 2.0, cx.from_numpy(m1.copy()), cx.from_numpy(m2.copy()))
    np.testing.assert_allclose(r.numpy(), 0.5 * t.astype(np.float64) + 2.0 * (m1.astype(np.float64) @ m2),
                               rtol=1e-5, atol=1e-5)
    nan_t = cx.from_numpy(np.full((3, 4), np.nan, np.float32))
    th.th_addmm(r, 0.0, nan_t, 1.0, cx.from_numpy(m1.T.copy()).t(), cx.from_numpy(m2.copy()))   # beta 0: t unread
    np.testing.assert_allclose(r.numpy(), m1.astype(np.float64) @ m2, rtol=1e-5, atol=1e-5)
    b1, b2, t2 = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 2, 5)), rng.standard_normal((3, 5))
    r2 = cx.from_numpy(t2.copy())
    th.th_addbmm(r2, -1.0, r2, 3.0, cx.from_numpy(b1), cx.from_numpy(b2))      # in place
    np.testing.assert_allclose(r2.numpy(), -t2 + 3.0 * np.einsum("bij,bjk->ik", b1, b2), rtol=1e-12)
    with pytest.raises(RuntimeError, match="size mismatch"):
        th.th_addmm(r, 1.0, cx.zeros(3, 4), 1.0, cx.zeros(3, 5), cx.zeros(4, 4))
    with pytest.raises(RuntimeError, match="equal number of batches"):
        th.th_addbmm(r2, 1.0, r2, 1.0, cx.zeros(2, 3, 2, dtype=cx.double), cx.zeros(3, 2, 5, dtype=cx.double))


def test_queries(th):
    out = np.full(11, -1, np.int64)
    th.th_queries(cx.zeros(2, 3, 5, dtype=cx.int64).permute(2, 0, 1), out)
    assert out.tolist() == [30, 3, 0, 5, 1, 2, 15, 3, 5, -1, -1]
    out[:] = -1
    th.th_queries(cx.zeros(0, dtype=cx.int64), out)                # TH's empty tensor: no dimensions
    assert out[:3].tolist() == [0, 0, 1]


def test_retain_and_free(th):
    t = cx.zeros(3)
    base = th.cextend_th_live_objects()
    out = np.zeros(3, np.int64)
    th.th_retain_free(t, out)
    assert out[0] == 2 and out[1] == base + 2 + 1 and out[2] == base + 2    # t's structs, then alias's
    assert t[0].item() == 42.0


def test_int_and_byte_tensors(th):
    i = cx.tensor([1, -2, 3], dtype=cx.int32)
    b = cx.tensor([250, 1, 2], dtype=cx.uint8)
    grown = cx.tensor([0], dtype=cx.int32).new()
    th.th_int_byte(i, b, grown)
    assert i.tolist() == [3, -6, 9] and i.dtype is cx.int32
    assert b.tolist() == [1, 8, 9] and b.dtype is cx.uint8                 # uint8 wraps, as TH's
    assert grown.tolist() == [[-5, -5], [-5, -5]]


def test_th_errors_become_runtime_errors(th):
    with pytest.raises(RuntimeError, match=r"th_bad_size\(\): invalid argument 2: dimension 5 out of range of 2D tensor"):
        th.th_bad_size(cx.zeros(2, 2))
    assert th.th_bad_size(cx.zeros(1, 2, 3, 4, 5, 6)) == 6      # and the error does not linger


def test_a_failed_check_never_returns_into_the_extension(th):
    """issue 25 item 3: TH's resizeAs fails (no memory for 2**40 floats); under TH the loop after it
    never ran.  It must not run here either: it would write 2**40 floats into a 1-float buffer."""
    out = cx.zeros(1)
    with pytest.raises(RuntimeError, match=r"th_resize_as_then_fill\(\): TH: (out of memory|a storage of)"):
        th.th_resize_as_then_fill(out, cx.ones(1).expand(2 ** 40))
    assert out.tolist() == [0.0]
    assert th.th_resize_as_then_fill(out, cx.ones(3)) == 7 and out.tolist() == [1.0, 1.0, 1.0]
    target = cx.zeros(2)
    with pytest.raises(RuntimeError, match=r"th_check_then_write\(\): invalid argument 2: ok must be nonzero"):
        th.th_check_then_write(target, 0)
    assert target.tolist() == [0.0, 0.0]            # the fill after the failed check did not run
    th.th_check_then_write(target, 1)
    assert target.tolist() == [42.0, 42.0]


def test_a_function_returning_a_pointer_unwinds_too(th):
    with pytest.raises(RuntimeError, match=r"th_new_or_fail\(\): asked to fail"):
        th.th_new_or_fail(1)            # the wrapper returned NULL for it; the tensor was freed first


def test_a_returned_th_tensor_comes_back_as_a_tensor(th):
    made = th.th_new_or_fail(0)         # C allocated its storage: the Tensor adopts it, the struct is freed
    assert isinstance(made, cx.Tensor) and made.dtype is cx.float32 and made.tolist() == [5.0, 5.0, 5.0]
    source = cx.arange(5.0)
    view = th.th_narrow_of(source)      # a view of an argument: the Tensor shares its memory
    assert view.tolist() == [1.0, 2.0]
    source[1] = 10.0
    assert view.tolist() == [10.0, 2.0]


def test_th_h_provides_what_thgeneral_h_did(th):
    assert th.th_general_h(cx.zeros(1)) == 2 + 1 + 1 + 1 + 1 + 1 + 1 + 0 + 1


def test_dtype_mismatch_names_the_argument(th):
    with pytest.raises(TypeError, match=r"argument 2 must be a float64 tensor \(a THDoubleTensor \*\), got float32"):
        th.th_two(cx.zeros(2), cx.zeros(2))
    with pytest.raises(TypeError, match=r"argument 1 must be a int32 tensor"):
        th.th_int_byte(cx.zeros(2), cx.zeros(2, dtype=cx.uint8), cx.Tensor())


def test_structs_of_earlier_arguments_are_freed_when_a_later_one_fails(th):
    """issue 11 item 17 (the no_leaks fixture checks the count after each test)."""
    before = th.cextend_th_live_objects()
    for _ in range(3):
        with pytest.raises(TypeError):
            th.th_two(cx.zeros(4), cx.zeros(4))            # the first converts, the second fails
        with pytest.raises(TypeError):
            th.th_two(cx.zeros(4), "not a tensor")
    assert th.cextend_th_live_objects() == before


def test_a_missing_th_function_fails_at_build_time_naming_it(tmp_path):
    (tmp_path / "uses_missing.h").write_text("int f(THFloatTensor *t);\n")
    (tmp_path / "uses_missing.c").write_text(
        '#include <TH/TH.h>\n/* THFloatTensor_notInComments is ignored */\n'
        'int f(THFloatTensor *t) { THFloatTensor_cumsum(t, t, 0); return THCharTensor_nElement(0); }\n')
    from cextend.utils.ffi import create_extension
    with pytest.raises(RuntimeError) as error:
        create_extension("_ext.uses_missing", headers=["uses_missing.h"], sources=["uses_missing.c"],
                         relative_to=str(tmp_path), verbose=False)
    message = str(error.value)
    assert "THFloatTensor_cumsum" in message and "THCharTensor_nElement" in message
    assert "uses_missing.c:3" in message and "notInComments" not in message


def test_every_shim_function_is_known_to_the_checker():
    provided = _th.provided_functions()
    for name in ["THFloatTensor_resizeNd", "THByteTensor_addbmm", "THIntStorage_fill", "THLongTensor_newClone",
                 "THDoubleTensor_newWithSize4d", "THFloatTensor_retain", "THError", "THFloatStorage_data"]:
        assert name in provided
    assert "THFloatTensor_cumsum" not in provided
    assert "THCudaTensor_resize4d" in _th.provided_functions(with_cuda=True)


STUB_CUDA = r"""
typedef int cudaError_t;
enum { cudaSuccess = 0 };
enum cudaMemcpyKind { cudaMemcpyDeviceToDevice = 3 };
cudaError_t cudaMalloc(void **p, unsigned long n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpy(void *d, const void *s, unsigned long n, enum cudaMemcpyKind k);
cudaError_t cudaMemset(void *d, int v, unsigned long n);
"""


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_thc_declarations_compile(tmp_path):
    """THC: every declaration compiles (against a stub of the CUDA runtime
    header, so no toolkit is needed), with warnings as errors."""
    (tmp_path / "cuda_runtime_api.h").write_text(STUB_CUDA)
    (tmp_path / "uses_thc.c").write_text(r"""
#include <THC/THC.h>
extern THCState *state;
int use(THCudaTensor *a, THCudaTensor *b)
{
    THCudaTensor *t = THCudaTensor_new(state);
    THCudaTensor_resizeAs(state, t, a);
    THCudaTensor_resize1d(state, t, 2);
    THCudaTensor_resize2d(state, t, 2, 3);
    THCudaTensor_resize3d(state, t, 2, 3, 4);
    THCudaTensor_resize4d(state, t, 1, 2, 3, 4);
    THCudaTensor_copy(state, t, b);
    THCudaTensor_zero(state, t);
    THCudaTensor_retain(state, t);
    int ok = THCudaTensor_isSameSizeAs(state, a, b) + THCudaTensor_isContiguous(state, t) +
             (int)THCudaTensor_nElement(state, t) + (int)THCudaTensor_size(state, t, 0) +
             (int)THCudaTensor_stride(state, t, 0) + THCudaTensor_nDimension(state, t) +
             (THCudaTensor_data(state, t) != 0) + (THCudaTensor_storage(state, t) != 0) +
             (int)THCudaTensor_storageOffset(state, t);
    THCudaTensor_free(state, t);
    THCudaTensor_free(state, t);
    return ok;
}
""")
    compiler = shutil.which("cc") or shutil.which("gcc")
    include = os.path.join(ROOT, "cextend", "include")
    result = subprocess.run([compiler, "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                             "-I", include, "-I", str(tmp_path), str(tmp_path / "uses_thc.c")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


TEST_FFI = r'''
import os, sys
sys.path.insert(0, os.getcwd())
import cextend as torch
from cextend.utils.ffi import compile_extension

compile_extension(name="test_extensions.cpulib", header="src/cpu/lib.h",
                  sources=["src/cpu/lib1.c", "src/cpu/lib2.c"], verbose=False)
from test_extensions import cpulib
tensor = torch.ones(2, 2).float()
cpulib.good_func(tensor, 2, 1.5)
assert torch.equal(tensor, torch.ones(2, 2) * 2 + 1.5)
new_tensor = cpulib.new_tensor(4)
assert torch.equal(new_tensor, torch.ones(4, 4) * 4)
f = cpulib.int_to_float(5)
assert type(f) is float
try:
    cpulib.good_func(tensor.double(), 2, 1.5)
    raise AssertionError("a double tensor was accepted as a THFloatTensor")
except TypeError:
    pass
try:
    cpulib.bad_func(tensor, 2, 1.5)
    raise AssertionError("bad_func did not raise")
except torch.FatalError as error:
    print("FatalError:", error)
'''


def test_compile_extension_passes_torch_0_4s_test_ffi(tmp_path):
    """torch 0.4's TestFFI.test_cpu (test/test_utils.py) with only its imports changed: its
    assertions are the reference, since torch 2.13 has no torch.utils.ffi."""
    cpu = tmp_path / "src" / "cpu"
    cpu.mkdir(parents=True)
    (cpu / "lib.h").write_text("void good_func(THFloatTensor *tensor, int a, float b);\n"
                               "void bad_func(THFloatTensor *tensor, int a, float b);\n"
                               "THFloatTensor * new_tensor(int a);\n"
                               "float int_to_float(int a);\n")
    (cpu / "lib1.c").write_text("#include <TH/TH.h>\n"
                                "void good_func(THFloatTensor *tensor, int a, float b)\n{\n"
                                "    THFloatTensor_mul(tensor, tensor, a);\n"
                                "    THFloatTensor_add(tensor, tensor, b);\n}\n"
                                "THFloatTensor * new_tensor(int a)\n{\n"
                                "    THFloatTensor *t = THFloatTensor_newWithSize2d(a, a);\n"
                                "    THFloatTensor_fill(t, a);\n    return t;\n}\n")
    (cpu / "lib2.c").write_text("#include <TH/TH.h>\n"
                                "void bad_func(THFloatTensor *tensor, int a, float b)\n{\n"
                                "    THFloatTensor_mul(tensor, tensor, a);\n"
                                "    THFloatTensor_add(tensor, tensor, b);\n"
                                "    THFloatTensor_addbmm(tensor, 1, tensor, 1, tensor, tensor);\n}\n"
                                "float int_to_float(int a)\n{\n    return a;\n}\n")
    result = subprocess.run([sys.executable, "-c", TEST_FFI], cwd=tmp_path, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT), timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "FatalError: bad_func(): " in result.stdout
    assert (tmp_path / "test_extensions" / "__init__.py").exists()
