"""Measure this core's peak FMA throughput (GFLOP/s) with bench/peak_probe.c.

Compiled on first use with cffi into build/bench; returns {dtype: GFLOP/s}
for the widest ISA the CPU runs (AVX-512, else AVX2), or {} elsewhere.
"""
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build", "bench")


def _module():
    from cffi import FFI
    ffi = FFI()
    ffi.cdef("double probe_avx512_f32(int64_t); double probe_avx512_f64(int64_t);"
             "double probe_avx2_f32(int64_t); double probe_avx2_f64(int64_t); int probe_chains(void);")
    with open(os.path.join(HERE, "peak_probe.c")) as f:
        ffi.set_source("_cextend_peak_probe", f.read(), extra_compile_args=["-O3"])
    os.makedirs(BUILD, exist_ok=True)
    built = ffi.compile(tmpdir=BUILD)
    sys.path.insert(0, os.path.dirname(built))
    import _cextend_peak_probe
    return _cextend_peak_probe.lib


def measure(isa, repeats=7, iterations=4_000_000):
    """{'float32': GFLOP/s, 'float64': GFLOP/s} on one core for isa."""
    if platform.machine() not in ("x86_64", "AMD64") or isa not in ("avx512", "avx2"):
        return {}
    lib = _module()
    lanes = {"avx512": {"float32": 16, "float64": 8}, "avx2": {"float32": 8, "float64": 4}}[isa]
    result = {}
    for dtype, width in lanes.items():
        probe = getattr(lib, "probe_%s_%s" % (isa, "f32" if dtype == "float32" else "f64"))
        probe(10000)
        times = []
        for _ in range(repeats):
            # The probe runs in this thread: its CPU time excludes time
            # spent descheduled on a shared machine (as bench.py's clock).
            start = time.thread_time()
            probe(iterations)
            times.append(time.thread_time() - start)
        flops = 2.0 * width * lib.probe_chains() * iterations
        result[dtype] = flops / min(times) / 1e9
    return result


if __name__ == "__main__":
    import cextend
    print(measure(cextend.get_isa()))
