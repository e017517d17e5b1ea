"""The optional CUDA library: it builds and exports every entry point
wherever nvcc exists; its argument checks match the CPU's on any machine;
its kernels agree with the CPU kernels where a GPU is present."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import cextend.cuda as cuda
from cextend import ops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
HEADER = open(os.path.join(ROOT, "src", "cextend.h")).read()
CUDA_NAMES = sorted(set(re.findall(r"\b(cextend_cuda_\w+)\s*\(", HEADER)))
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"),
                                reason="nvcc (the CUDA toolkit) is not installed")
needs_gpu = pytest.mark.skipif(not cuda.is_available(),
                               reason="no usable GPU: %s" % cuda.unavailable_reason())


@pytest.fixture(scope="module")
def built_library(tmp_path_factory):
    from cuda_build import build_cuda_library
    out = tmp_path_factory.mktemp("cuda")
    return build_cuda_library(str(out))


# The tests that build the library with nvcc (for five architectures) are long
# runs: `make cuda` and `make test-all` run them.
@needs_nvcc
@pytest.mark.long_run
def test_builds_for_every_architecture_and_exports_every_entry_point(built_library):
    exported = subprocess.run(["nm", "-D", "--defined-only", built_library], capture_output=True,
                              text=True, check=True).stdout
    missing = [name for name in CUDA_NAMES if " " + name + "\n" not in exported + "\n"]
    assert CUDA_NAMES and missing == []
    cuobjdump = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if os.path.exists(cuobjdump):
        elf = subprocess.run([cuobjdump, "--list-elf", built_library], capture_output=True, text=True).stdout
        for arch in ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90"):
            assert arch in elf
        assert "compute_90" in subprocess.run([cuobjdump, "--list-ptx", built_library],
                                              capture_output=True, text=True).stdout


@needs_nvcc
def test_missing_nvcc_is_a_clear_build_error(monkeypatch):
    import cuda_build
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("NVCC", raising=False)
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(os.path, "exists", lambda path: False)
    with pytest.raises(cuda_build.CudaBuildError, match="nvcc was not found"):
        cuda_build.find_nvcc()


def test_availability_says_why():
    if cuda.is_available():
        assert cuda.unavailable_reason() is None and cuda.device_count() >= 1
    else:
        assert cuda.unavailable_reason() and cuda.device_count() == 0
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            cuda.DeviceBuffer(16)


@needs_nvcc
@pytest.mark.long_run
def test_argument_checks_match_the_cpu_library(built_library):
    """Illegal arguments are rejected on the host before any CUDA call, with
    the CPU entry point's status and message, so this runs without a GPU."""
    import test_c_api as cpu_cases
    from cffi import FFI
    ffi = FFI()
    with open(os.path.join(os.path.dirname(built_library), "_cuda_cdef.h")) as f:
        ffi.cdef(f.read())
    lib = ffi.dlopen(built_library)
    from cextend._C import lib as cpu_lib, ffi as cpu_ffi
    checked = 0
    for entry, cases in cpu_cases.ILLEGAL.items():
        for change, status, name in cases:
            if entry is cpu_cases.pool_backward and name == "indices" and change[4] != cpu_ffi.NULL:
                continue        # index values live in device memory: checked on the GPU (tested there)
            for sfx in ("f32", "f64"):
                fn, args, _ = entry(sfx)
                for position, value in change.items():
                    args[position - 1] = value
                cpu_status = fn(*args)
                cpu_message = cpu_ffi.string(cpu_lib.cextend_last_error()).decode()
                cuda_fn = getattr(lib, fn.__name__.replace("cextend_", "cextend_cuda_"))
                cuda_args = [ffi.cast("void *", cpu_ffi.cast("uintptr_t", a)) if isinstance(a, cpu_ffi.CData)
                             else a for a in args]
                cuda_args = [ffi.cast(ffi.typeof(cuda_fn).args[i], a) if isinstance(a, ffi.CData) else a
                             for i, a in enumerate(cuda_args)]
                assert cuda_fn(*cuda_args) == cpu_status == status
                cuda_message = ffi.string(lib.cextend_cuda_last_error()).decode()
                assert cuda_message.split(": ", 1)[1] == cpu_message.split(": ", 1)[1]
                checked += 1
    assert checked > 90


# ---- on a GPU: every kernel against the CPU kernels ------------------------------

DTYPES = [np.float32, np.float64]
SHAPES = [(1, 1, 1), (0, 5, 3), (5, 0, 3), (7, 13, 5), (64, 64, 64), (97, 131, 67), (256, 300, 129)]


def tolerance(dtype):
    return 1e-5 if dtype == np.float32 else 1e-12


def device(array):
    return cuda.to_device(array)


def host(buffer, shape, dtype):
    return cuda.to_host(buffer, shape, dtype)


def close(gpu, cpu, scale, dtype):
    """|gpu - cpu| <= tol * (|x||w| scale): the agreement the issue asks for."""
    assert gpu.shape == cpu.shape
    assert np.all(np.abs(gpu.astype(np.float64) - cpu) <= tolerance(dtype) * np.maximum(scale, 1))


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,k,m", SHAPES)
def test_linear_forward_and_backward_agree_with_cpu(n, k, m, dtype):
    ffi, lib = cuda.library()
    sfx = "f32" if dtype == np.float32 else "f64"
    rng = np.random.default_rng(n + k + m)
    x, w = rng.standard_normal((n, k)).astype(dtype), rng.standard_normal((m, k)).astype(dtype)
    b, dy = rng.standard_normal(m).astype(dtype), rng.standard_normal((n, m)).astype(dtype)
    dx_, dw_, db_ = (device(np.full(s, np.nan, dtype)) for s in ((n, k), (m, k), (m,)))
    y_ = device(np.full((n, m), np.nan, dtype))
    x_, w_, b_, dy_ = device(x), device(w), device(b), device(dy)
    ct = "float *" if dtype == np.float32 else "double *"
    p = lambda buf: ffi.cast(ct, buf.ptr)                 # noqa: E731
    cuda.check(getattr(lib, "cextend_cuda_linear_forward_" + sfx)(n, k, m, p(x_), max(k, 1), 0, p(w_), max(k, 1), 0,
                                                                   p(b_), p(y_), max(m, 1)))
    cuda.check(getattr(lib, "cextend_cuda_linear_backward_" + sfx)(
        n, k, m, p(dy_), max(m, 1), 0, p(x_), max(k, 1), 0, p(w_), max(k, 1), 0, p(dx_), max(k, 1),
        p(dw_), max(k, 1), p(db_)))
    scale_y = np.abs(x) @ np.abs(w).T + np.abs(b)
    close(host(y_, (n, m), dtype), ops.linear_forward(x, w, b).astype(np.float64), scale_y * max(k, 1), dtype)
    dx, dw, db = ops.linear_backward(dy, x, w)
    close(host(dx_, (n, k), dtype), dx, (np.abs(dy) @ np.abs(w)) * max(m, 1), dtype)
    close(host(dw_, (m, k), dtype), dw, (np.abs(dy).T @ np.abs(x)) * max(n, 1), dtype)
    close(host(db_, (m,), dtype), db, np.abs(dy).sum(0) * max(n, 1), dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_results_are_deterministic(dtype):
    ffi, lib = cuda.library()
    sfx = "f32" if dtype == np.float32 else "f64"
    rng = np.random.default_rng(1)
    dy, x = rng.standard_normal((513, 77)).astype(dtype), rng.standard_normal((513, 31)).astype(dtype)
    w = rng.standard_normal((77, 31)).astype(dtype)
    outs = []
    for _ in range(3):
        bufs = [device(a) for a in (dy, x, w)] + [device(np.zeros(s, dtype)) for s in ((77, 31), (77,))]
        ct = "float *" if dtype == np.float32 else "double *"
        p = [ffi.cast(ct, b.ptr) for b in bufs]
        cuda.check(getattr(lib, "cextend_cuda_linear_backward_" + sfx)(
            513, 31, 77, p[0], 77, 0, p[1], 31, 0, p[2], 31, 0, ffi.NULL, 31, p[3], 31, p[4]))
        outs.append((host(bufs[3], (77, 31), dtype), host(bufs[4], (77,), dtype)))
    for other in outs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(outs[0], other))


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_pool_and_helpers_agree_with_cpu(dtype):
    ffi, lib = cuda.library()
    sfx = "f32" if dtype == np.float32 else "f64"
    ct = "float *" if dtype == np.float32 else "double *"
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(1031).astype(dtype), rng.standard_normal(1031).astype(dtype)
    a_, b_, out_ = device(a), device(b), device(np.zeros(1031, dtype))
    p = lambda buf: ffi.cast(ct, buf.ptr)                 # noqa: E731
    cuda.check(getattr(lib, "cextend_cuda_add_forward_" + sfx)(1031, p(a_), p(b_), p(out_)))
    assert np.array_equal(host(out_, (1031,), dtype), a + b)
    cuda.check(getattr(lib, "cextend_cuda_mul_constant_forward_" + sfx)(1031, p(a_), 2.5, p(out_)))
    assert np.array_equal(host(out_, (1031,), dtype), a * dtype(2.5))
    for op, expected in ((0, a + b), (1, a - b), (2, a * b)):
        cuda.check(getattr(lib, "cextend_cuda_binary_" + sfx)(op, 1031, p(a_), p(b_), 0.0, 0, p(out_)))
        assert np.array_equal(host(out_, (1031,), dtype), expected)
    cuda.check(getattr(lib, "cextend_cuda_relu_" + sfx)(1031, p(a_), p(out_)))
    assert np.array_equal(host(out_, (1031,), dtype), np.maximum(a, 0))
    sums = device(np.zeros(7, dtype))
    table = rng.standard_normal((7, 301)).astype(dtype)
    t_ = device(table)
    cuda.check(getattr(lib, "cextend_cuda_sum_" + sfx)(7, 301, 1, p(t_), p(sums)))
    close(host(sums, (7,), dtype), table.astype(np.float64).sum(1), np.abs(table).sum(1) * 301, dtype)
    planes = rng.standard_normal((6, 35)).astype(dtype)
    planes[2, 7] = np.nan
    values_, idx_ = device(np.zeros(6, dtype)), device(np.zeros(6, np.int64))
    cuda.check(getattr(lib, "cextend_cuda_global_max_pool_forward_" + sfx)(
        6, 35, p(device(planes)), p(values_), ffi.cast("int64_t *", idx_.ptr)))
    assert np.array_equal(host(idx_, (6,), np.int64), planes.argmax(1))
    bad = device(np.array([0, 35, 1, 2, 3, 4], np.int64))
    grad_ = device(np.full((6, 35), 7, dtype))
    with pytest.raises(ValueError, match="indices"):
        cuda.check(getattr(lib, "cextend_cuda_global_max_pool_backward_" + sfx)(
            6, 35, p(values_), ffi.cast("int64_t *", bad.ptr), p(grad_)))
    assert np.all(host(grad_, (6, 35), dtype) == 7)        # nothing written


@needs_gpu
def test_device_buffers_are_freed_once():
    buffer = cuda.to_device(np.arange(10.0))
    assert np.array_equal(cuda.to_host(buffer, (10,), np.float64), np.arange(10.0))
    buffer.free()
    buffer.free()
    assert buffer.freed
