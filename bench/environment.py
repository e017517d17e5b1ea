"""What the benchmark runs against, and on what: the machine, the load on
it, numpy's BLAS kernel and torch's build, all recorded with the results.

Environments may set OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (this one pins
Haswell), which make numpy's OpenBLAS run an older kernel at about half its
speed on an AVX-512 CPU.  A fair comparison needs both unset, but only in
the benchmark's own process: they must stay as they are for tests and CI.
numpy and cextend alternate calls inside one process, so the process itself
is re-executed without them (they affect OpenBLAS only, not cextend).
"""
import os
import platform
import re
import sys
import time

HANDICAPS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# Set in the re-executed process: which variables were removed, and their values.
REMOVED_MARKER = "CEXTEND_BENCH_REMOVED"


def without_handicaps(environ):
    """A copy of environ without the variables that slow numpy's OpenBLAS down."""
    return {key: value for key, value in environ.items() if key not in HANDICAPS}


def reexec_without_handicaps(argv):
    """Re-execute this Python process without HANDICAPS if any is set.

    Must run before numpy is imported: OpenBLAS reads them when it loads.
    Returns only when nothing needed removing.
    """
    present = {key: os.environ[key] for key in HANDICAPS if key in os.environ}
    if not present:
        return
    env = without_handicaps(os.environ)
    env[REMOVED_MARKER] = " ".join("%s=%s" % item for item in sorted(present.items()))
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + list(argv), env)


PAIRING_MARKER = "CEXTEND_BENCH_PAIRING"


def reexec_for_avx2_pairing(argv):
    """Re-execute with numpy's OpenBLAS on its Haswell (AVX2) kernel at its
    real L2 size, for comparing cextend's AVX2 kernels with OpenBLAS's on an
    AVX-512 machine: the same instruction set on both sides.  Must run
    before numpy is imported.  Returns only in the re-executed process."""
    if os.environ.get(PAIRING_MARKER) == "avx2":
        return
    env = without_handicaps(os.environ)
    env["OPENBLAS_CORETYPE"] = "Haswell"
    env[PAIRING_MARKER] = "avx2"
    env[REMOVED_MARKER] = "OPENBLAS_L2_SIZE (OPENBLAS_CORETYPE=Haswell set for the AVX2 pairing)"
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + list(argv), env)


def cpu_flags():
    """The instruction-set flags that decide the kernels: avx2, fma, avx512f."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    present = set(line.split(":", 1)[1].split())
                    return [flag for flag in ("sse4_2", "avx", "avx2", "fma", "avx512f") if flag in present]
    except OSError:
        pass
    return []


def removed_handicaps():
    """'NAME=value ...' of the variables removed by the re-exec, or ''."""
    return os.environ.get(REMOVED_MARKER, "")


def load_average():
    """The 1, 5 and 15 minute load averages, or None where unavailable."""
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def cpu_usage():
    """(seconds every CPU spent busy, of them stolen by the hypervisor, this process's CPU
    seconds) since boot, from /proc/stat and os.times(); None where /proc/stat is missing.
    Two readings give what other processes used meanwhile: the load average cannot, since it
    counts this benchmark's own threads."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal (guest time is inside user already)
    values = [int(v) / ticks for v in fields[1:9]]
    busy = values[0] + values[1] + values[2] + values[5] + values[6] + values[7]
    own = os.times()        # every thread of this process (OpenMP's, OpenBLAS's, torch's), and its children
    return busy, values[7], own.user + own.system + own.children_user + own.children_system


def others_during(start, end, elapsed):
    """Average cores other processes kept busy between two cpu_usage() readings, and the share
    of all CPU time the hypervisor stole; None where either reading is missing."""
    if not start or not end or elapsed <= 0:
        return None
    busy, steal, own = (e - s for s, e in zip(start, end))
    cores = os.cpu_count() or 1
    return {"cores": max(0.0, (busy - steal - own) / elapsed), "steal_share": steal / (elapsed * cores),
            "seconds": elapsed}


def settle(limit_seconds, below=0.5, poll=5.0):
    """Wait, up to limit_seconds, for the 1-minute load to fall below `below` once this run's own
    work has stopped: the load at a run's end still counts its own threads, which take about 40 s
    of idling to fall from 1 to 0.5.  Returns (load averages, seconds waited)."""
    waited = 0.0
    load = load_average()
    while load and load[0] >= below and waited < limit_seconds:
        time.sleep(poll)
        waited += poll
        load = load_average()
    return load, waited


def cpu_model():
    """The CPU's model name, with its CPUID family and model where the name
    is vague (a VM's "AMD EPYC" is Zen 4 as family 25 model 17, Zen 5 as 26)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model") and key not in fields:
                    fields[key] = value.strip()
                if not line.strip() and fields:
                    break
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        name += " (family %s, model %s)" % (fields["cpu family"], fields["model"])
    return name


def blas_libraries():
    """numpy's BLAS as threadpoolctl sees it: one dict per library loaded
    (internal_api, architecture = the kernel in use, version, num_threads)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keep = ("internal_api", "architecture", "version", "num_threads", "threading_layer", "filepath")
    return [{key: lib.get(key) for key in keep} for lib in threadpool_info() if lib.get("user_api") == "blas"]


def describe_blas(libraries):
    """'openblas 0.3.31 SkylakeX (2 threads)' for each BLAS library."""
    if not libraries:
        return "unknown (install threadpoolctl to see numpy's BLAS kernel)"
    return "; ".join("%s %s, kernel %s, %s threads" % (
        lib["internal_api"], lib["version"], lib.get("architecture") or "?", lib["num_threads"])
        for lib in libraries)


def handicapped(libraries):
    """True if an OpenBLAS runs a Haswell kernel on a CPU with AVX-512."""
    try:
        with open("/proc/cpuinfo") as f:
            avx512 = " avx512f" in f.read()
    except OSError:
        return False
    return avx512 and any(lib["internal_api"] == "openblas" and lib.get("architecture") == "Haswell"
                          for lib in libraries)


def torch_build(torch):
    """torch's version and CPU GEMM path, from its build configuration."""
    if torch is None:
        return None
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    return {
        "version": torch.__version__,
        "blas": blas.group(1) if blas else None,
        "mkldnn": bool(torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled),
        "cpu_capability": next((line.split(":", 1)[1].strip() for line in config.splitlines()
                                if "CPU capability usage" in line), None),
    }


def describe_torch(info):
    if info is None:
        return "not installed"
    return "%s, BLAS %s, oneDNN (mkldnn) %s, CPU capability %s" % (
        info["version"], info["blas"], "enabled" if info["mkldnn"] else "off", info["cpu_capability"])
