"""Legacy code: the TH shim through create_extension, and the old spellings."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import cextend as cx
from helpers import copy_sources
from parity_helpers import real_torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TH_HEADER = """
int th_fill_2d(THDoubleTensor *t, int64_t rows, int64_t cols, double value);
int64_t th_describe(THFloatTensor *t, int64_t *out);
int th_long_arange(THLongTensor *t, int64_t n);
int th_scratch_sum(THFloatTensor *src, THFloatTensor *dst);
int th_grow(THFloatTensor *t, int64_t n);
"""

TH_SOURCE = r"""
#include <TH/TH.h>
#include "th_ops.h"

int th_fill_2d(THDoubleTensor *t, int64_t rows, int64_t cols, double value)
{
    THDoubleTensor_resize2d(t, rows, cols);
    THDoubleTensor_fill(t, value);
    return 1;
}

/* out = [nDimension, nElement, contiguous, size0, stride0, size1, stride1] */
int64_t th_describe(THFloatTensor *t, int64_t *out)
{
    out[0] = THFloatTensor_nDimension(t);
    out[1] = THFloatTensor_nElement(t);
    out[2] = THFloatTensor_isContiguous(t);
    out[3] = THFloatTensor_size(t, 0);
    out[4] = THFloatTensor_stride(t, 0);
    out[5] = THFloatTensor_size(t, 1);
    out[6] = THFloatTensor_stride(t, 1);
    return out[1];
}

int th_long_arange(THLongTensor *t, int64_t n)
{
    THLongTensor_resize1d(t, n);
    int64_t *data = THLongTensor_data(t);
    for (int64_t i = 0; i < n; ++i)
        data[i] = i;
    return 1;
}

/* A temporary made and freed in C, as TH code did. */
int th_scratch_sum(THFloatTensor *src, THFloatTensor *dst)
{
    THFloatTensor *tmp = THFloatTensor_new();
    THFloatTensor_resizeAs(tmp, src);
    THFloatTensor_copy(tmp, src);
    THFloatTensor_resizeAs(dst, src);
    THFloatTensor_cadd(dst, tmp, 2.0f, src);     /* dst = 3 * src */
    THFloatTensor_free(tmp);
    return 1;
}

int th_grow(THFloatTensor *t, int64_t n)
{
    THFloatTensor_resize1d(t, n);
    THFloatTensor_fill(t, 1.0f);
    return 1;
}
"""


@pytest.fixture(scope="module")
def th_ops(tmp_path_factory):
    work = tmp_path_factory.mktemp("th_ops")
    (work / "th_ops.h").write_text(TH_HEADER)
    (work / "th_ops.c").write_text(TH_SOURCE)
    (work / "build.py").write_text(
        "from cextend.utils.ffi import create_extension\n"
        "ffi = create_extension('_ext.th_ops', headers=['th_ops.h'], sources=['th_ops.c'],\n"
        "                       relative_to=__file__, verbose=False)\n"
        "ffi.build()\n")
    subprocess.run([sys.executable, "build.py"], cwd=work, check=True, capture_output=True,
                   env=dict(os.environ, PYTHONPATH=ROOT))
    sys.path.insert(0, str(work))
    try:
        from _ext import th_ops
        yield th_ops
    finally:
        sys.path.remove(str(work))


def test_resize_hands_c_storage_to_the_tensor(th_ops):
    t = cx.tensor([1.0], dtype=cx.double).new()
    assert t.shape == (0,)
    version = t._version
    assert th_ops.th_fill_2d(t, 3, 4, 2.5) == 1
    assert t.shape == (3, 4) and t._version > version
    np.testing.assert_array_equal(t.numpy(), np.full((3, 4), 2.5))
    t += 1                                              # the adopted storage is ordinary memory
    assert float(t.sum()) == 3.5 * 12


def test_strided_views_are_described_not_copied(th_ops):
    base = cx.zeros(4, 6)
    out = np.zeros(7, np.int64)
    th_ops.th_describe(base.t(), out)                   # a transposed view
    assert list(out) == [2, 24, 0, 6, 1, 4, 6]
    th_ops.th_describe(base, out)
    assert list(out) == [2, 24, 1, 4, 6, 6, 1]


def test_long_tensors_and_c_temporaries(th_ops):
    idx = cx.tensor([0]).new()
    th_ops.th_long_arange(idx, 5)
    assert idx.dtype is cx.int64 and idx.tolist() == [0, 1, 2, 3, 4]
    src, dst = cx.tensor([1.0, 2.0, 3.0]), cx.Tensor()
    th_ops.th_scratch_sum(src, dst)
    assert dst.tolist() == [3.0, 6.0, 9.0]


def test_dtype_mismatch_and_non_tensors_raise(th_ops):
    with pytest.raises(TypeError, match=r"argument 1 must be a float64 tensor \(a THDoubleTensor \*\), got float32"):
        th_ops.th_fill_2d(cx.zeros(1), 2, 2, 1.0)
    with pytest.raises(TypeError, match="must be a cextend Tensor"):
        th_ops.th_fill_2d([1.0], 2, 2, 1.0)


def test_resizing_a_numpy_array_is_refused_without_leaking(th_ops):
    with pytest.raises(RuntimeError, match="resized by the C code; pass a cextend Tensor"):
        th_ops.th_grow(np.zeros(2, np.float32), 10)


@pytest.mark.skipif(os.environ.get("CEXTEND_SANITIZED") == "1",
                    reason="ASan's quarantine keeps freed memory resident by design")
def test_adopted_storage_is_freed(th_ops):
    def resident():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    for _ in range(50):
        th_ops.th_grow(cx.Tensor(), 1 << 18)            # 1 MiB each, dropped at once
    before = resident()
    for _ in range(2000):                               # 2 GiB allocated and released in total
        th_ops.th_grow(cx.Tensor(), 1 << 18)
    assert resident() - before < 16 * 2 ** 20


def test_legacy_example_builds_and_passes(tmp_path):
    work = tmp_path / "legacy"
    copy_sources("examples/legacy", work)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(work), ROOT]))
    subprocess.run([sys.executable, "build.py"], cwd=work, check=True, capture_output=True, env=env)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test.py"],
                            cwd=work, capture_output=True, text=True, env=env)
    assert result.returncode == 0 and "2 passed" in result.stdout, result.stdout + result.stderr


def test_instance_style_function_with_state():
    from cextend.autograd import Function

    class Scale(Function):
        def __init__(self, factor):
            super(Scale, self).__init__()
            self.factor = factor

        def forward(self, x):
            self.save_for_backward(x)
            return x * self.factor

        def backward(self, grad_output):
            x, = self.saved_tensors
            assert self.needs_input_grad == (True,)
            return grad_output * self.factor

    x = cx.randn(3, requires_grad=True)
    with pytest.warns(DeprecationWarning, match="non-static forward"):
        y = Scale(2.5)(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.5] * 3)


def test_legacy_spellings():
    from cextend.autograd import Variable
    from cextend.nn.modules.module import Module
    t = cx.randn(2)
    v = Variable(t)         # torch's Variable(t) is t.detach(): a new leaf on t's storage
    assert v is not t and isinstance(v, Variable) and isinstance(t, Variable) and type(v) is cx.Tensor
    v.add_(1)
    assert t.tolist() == v.tolist()
    assert Variable(cx.randn(2), requires_grad=True).requires_grad
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(t, volatile=True)
    assert Module is cx.nn.Module
    assert t.new().shape == (0,) and t.new(2, 3).shape == (2, 3) and t.new([1, 2]).tolist() == [1.0, 2.0]
    assert cx.randn(2, dtype=cx.double).new(1).dtype is cx.float64
    with pytest.warns(UserWarning, match="cextend.range is deprecated"):
        r = cx.range(1, 4)
    assert r.tolist() == [1.0, 2.0, 3.0, 4.0] and r.dtype is cx.float32     # end included, as it was
    with pytest.warns(UserWarning):
        assert cx.range(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert cx.cuda.is_available() or cx.cuda.unavailable_reason()
    import cextend.utils.ffi as legacy_ffi
    assert callable(legacy_ffi.create_extension)


def _cuda_toolkit():
    from cextend.utils.ffi import _cuda_paths
    try:
        return _cuda_paths()
    except RuntimeError:
        return None


@pytest.mark.skipif(_cuda_toolkit() is None, reason="no CUDA toolkit (headers and cudart) on this machine")
def test_era_cuda_source_builds_with_thc_and_refuses_cpu_tensors(tmp_path):
    """An extension-ffi era my_lib_cuda.c (THC API, extern THCState *state)
    compiles unchanged with with_cuda=True and links against cudart."""
    (tmp_path / "my_lib_cuda.h").write_text(
        "int my_lib_add_forward_cuda(THCudaTensor *input1, THCudaTensor *input2, THCudaTensor *output);\n")
    (tmp_path / "my_lib_cuda.c").write_text(r'''
#include <THC/THC.h>

extern THCState *state;

int my_lib_add_forward_cuda(THCudaTensor *input1, THCudaTensor *input2, THCudaTensor *output)
{
  if (!THCudaTensor_isSameSizeAs(state, input1, input2))
    return 0;
  THCudaTensor_resizeAs(state, output, input1);
  THCudaTensor_copy(state, output, input1);
  return 1;
}
''')
    (tmp_path / "build.py").write_text(
        "from cextend.utils.ffi import create_extension\n"
        "ffi = create_extension('_ext.my_lib_cuda', headers=['my_lib_cuda.h'], sources=['my_lib_cuda.c'],\n"
        "                       relative_to=__file__, with_cuda=True, verbose=False)\n"
        "ffi.build()\n")
    subprocess.run([sys.executable, "build.py"], cwd=tmp_path, check=True, capture_output=True,
                   env=dict(os.environ, PYTHONPATH=ROOT))
    check = ("from _ext import my_lib_cuda\n"
             "import cextend\n"
             "try:\n"
             "    my_lib_cuda.my_lib_add_forward_cuda(cextend.ones(2), cextend.ones(2), cextend.Tensor())\n"
             "except TypeError as error:\n"
             "    print('refused:', error)\n")
    result = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT])))
    assert result.returncode == 0, result.stderr
    assert "refused:" in result.stdout and "THCudaTensor" in result.stdout


_DEPRECATED = [   # (deprecated form, the op named in the warning, the keyword form it means)
    ("x.clone().add_(-0.1, g)", "add_", "x.clone().add_(g, alpha=-0.1)"),
    ("torch.add(x, 2, g)", "add", "torch.add(x, g, alpha=2)"),
    ("x.add(2, g)", "add", "x.add(g, alpha=2)"),
    ("x.sub(2, g)", "sub", "x.sub(g, alpha=2)"),
    ("x.clone().sub_(0.5, g)", "sub_", "x.clone().sub_(g, alpha=0.5)"),
    ("torch.addcmul(x, 0.5, g, h)", "addcmul", "torch.addcmul(x, g, h, value=0.5)"),
    ("x.clone().addcmul_(-2, g, h)", "addcmul_", "x.clone().addcmul_(g, h, value=-2)"),
    ("torch.addcdiv(x, 0.5, g, h)", "addcdiv", "torch.addcdiv(x, g, h, value=0.5)"),
    ("x.clone().addcdiv_(0.25, g, h)", "addcdiv_", "x.clone().addcdiv_(g, h, value=0.25)"),
]


@pytest.mark.parametrize("expression, op, keyword_form", _DEPRECATED)
def test_scalar_first_overloads_of_2017_optimizers_run_with_torchs_warning(expression, op, keyword_form):
    """issue 24 item 6: `p.data.add_(-lr, grad)` failed with 'Boolean value of Tensor is ambiguous'.
    Each library's deprecated form gives its keyword form's bits (torch and cextend may round the
    keyword forms differently by an ulp: see docs/torch-parity.md)."""
    rng = np.random.default_rng(0)
    data = {k: rng.standard_normal(5) for k in "xgh"}
    data["h"] = np.abs(data["h"]) + 0.5
    x, g, h = data["x"], data["g"], data["h"]
    expected = {"add_": x - 0.1 * g, "add": x + 2 * g, "sub": x - 2 * g, "sub_": x - 0.5 * g,
                "addcmul": x + 0.5 * g * h, "addcmul_": x - 2 * g * h, "addcdiv": x + 0.5 * g / h,
                "addcdiv_": x + 0.25 * g / h}[op]
    for lib in [cx] + ([real_torch] if real_torch is not None else []):
        names = {k: lib.tensor(v) for k, v in data.items()}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = eval(expression, {"torch": lib}, names).numpy()
        if lib is cx:       # torch warns once per process, for whichever deprecated overload comes first
            assert any(str(w.message).startswith("This overload of %s is deprecated:" % op) for w in caught)
        np.testing.assert_array_equal(got, eval(keyword_form, {"torch": lib}, names).numpy())
        np.testing.assert_allclose(got, expected, rtol=1e-15)


@pytest.mark.parametrize("expression", ["x.add(g, 2)", "x.clone().add_(g, 2)", "torch.add(x, 2, g, alpha=3)",
                                        "x.addcmul(g, g, 0.5)"])
def test_other_extra_positional_arguments_are_refused(expression):
    for lib in [cx] + ([real_torch] if real_torch is not None else []):
        names = {k: lib.ones(3) for k in "xg"}
        with pytest.raises(TypeError, match="positional argument"):
            eval(expression, {"torch": lib}, names)
