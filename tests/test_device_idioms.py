"""The device-selection idioms of today's examples (issue 24, item 5).

torch.accelerator, torch.backends.{mps,cudnn,cuda,mkldnn,mha}, torch.cuda's
memory statistics, torch.onnx, torch.compile and the math constants, each
run through `each_lib` so the same program runs on cextend and (where it is
installed) on torch's CPU build, whose answers cextend gives without a GPU.
The one deliberate difference, reset_peak_memory_stats() being a no-op
where torch's CPU build raises, has its own test.
"""
import math
import warnings

import pytest

import cextend as cx
from parity_helpers import each_lib

no_gpu = pytest.mark.skipif(cx.cuda.is_available(), reason="the answers of a machine without a usable GPU")


@no_gpu
@each_lib
def test_accelerator_without_a_gpu_answers_as_torchs_cpu_build(lib):
    assert lib.accelerator.is_available() is False
    assert lib.accelerator.current_accelerator() is None
    assert lib.accelerator.device_count() == 0
    for call in (lib.accelerator.current_device_index, lib.accelerator.synchronize,
                 lambda: lib.accelerator.set_device_index(0)):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            call()


@no_gpu
@each_lib
def test_backend_flags_exist_and_say_what_is_missing(lib):
    assert lib.backends.mps.is_available() is False
    assert lib.backends.cudnn.is_available() is False and lib.backends.cudnn.version() is None
    assert isinstance(lib.backends.cudnn.enabled, bool) and isinstance(lib.backends.cudnn.deterministic, bool)
    saved = lib.backends.cudnn.benchmark
    try:
        lib.backends.cudnn.benchmark = True              # scripts set these; reading gives back what was set
        assert lib.backends.cudnn.benchmark is True
    finally:
        lib.backends.cudnn.benchmark = saved
    assert lib.backends.cuda.matmul.allow_tf32 is False
    assert lib.backends.mha.get_fastpath_enabled() is True


@no_gpu
@each_lib
def test_cuda_memory_statistics_are_zero_without_cuda(lib):
    for stat in (lib.cuda.memory_allocated, lib.cuda.max_memory_allocated, lib.cuda.memory_reserved,
                 lib.cuda.max_memory_reserved):
        assert stat() == 0
    assert dict(lib.cuda.memory_stats()) == {}
    lib.cuda.empty_cache()


def test_reset_peak_memory_stats_is_a_no_op_here_by_design():
    """torch's CPU build raises AttributeError from its C module; cextend keeps the call harmless
    so a script that resets its peak before a benchmark runs unchanged (docs/torch-parity.md)."""
    cx.cuda.reset_peak_memory_stats()
    cx.cuda.reset_max_memory_allocated()
    assert cx.cuda.max_memory_allocated() == cx.cuda.memory_allocated()


def test_allocation_counts_follow_buffers_when_a_gpu_is_there():
    if not cx.cuda.is_available():
        # The counting is exercised on the host: a DeviceBuffer cannot be made without a GPU.
        cx.cuda._count_allocation(1024)
        assert cx.cuda.memory_allocated() == 1024 and cx.cuda.max_memory_allocated() >= 1024
        cx.cuda._count_allocation(-1024)
        assert cx.cuda.memory_allocated() == 0
        cx.cuda.reset_peak_memory_stats()
        assert cx.cuda.max_memory_allocated() == 0
        return
    before = cx.cuda.memory_allocated()
    x = cx.ones(1000, device="cuda")
    assert cx.cuda.memory_allocated() >= before + 4000
    del x
    assert cx.cuda.memory_allocated() == before


@each_lib
def test_math_constants(lib):
    assert lib.inf == math.inf and lib.e == math.e and lib.pi == math.pi
    assert lib.nan != lib.nan


def test_compile_returns_the_model_and_notes_it_once():
    import cextend._compile as compiled
    compiled._noted.clear()
    model = cx.nn.Linear(3, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cx.compile(model) is model
        assert cx.compile(model, mode="max-autotune") is model

        @cx.compile(fullgraph=True)
        def double(x):
            return x * 2
    assert double(cx.ones(2)).tolist() == [2.0, 2.0]
    notes = [w for w in caught if "returns the model unchanged" in str(w.message)]
    assert len(notes) == 1
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        cx.compile(model, mode="default", options={})


def test_onnx_imports_and_export_says_it_is_not_supported():
    import cextend.onnx
    assert cextend.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="exporting to ONNX is not supported by cextend"):
        cx.onnx.export(cx.nn.Linear(2, 2), (cx.ones(1, 2),), "model.onnx")


def test_an_unknown_attribute_names_the_torch_api_and_the_list():
    with pytest.raises(AttributeError, match=r"torch\.fft is not supported by cextend \(docs/torch-parity\.md"):
        cx.fft
    assert not hasattr(cx, "definitely_not_an_api")
    with pytest.raises(AttributeError, match=r"^module 'cextend' has no attribute '__wrapped__'$"):
        cx.__wrapped__
    assert issubclass(cx.FatalError, RuntimeError)
