"""cextend's benchmark: GEMM kernels and autograd against numpy (on its full
speed BLAS kernel) and torch (when installed), in one process, interleaved,
medians of repeats.

Every ratio is other_time / our_time: above 1 means cextend is faster.
% of peak is against this core's FMA peak measured by peak_probe.c.  The
process re-executes itself without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE
(see environment.py), prints numpy's BLAS kernel as threadpoolctl reports
it and the load average before every case, and writes every figure to
bench/results.json (bench/table.py renders it as BENCHMARKS.md).

    python bench/bench.py [--quick] [--repeats 11] [--suite gemm] [--filter 4096]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import environment  # noqa: E402

if __name__ == "__main__":
    if "--pairing" in sys.argv and sys.argv[sys.argv.index("--pairing") + 1:][:1] == ["avx2"]:
        environment.reexec_for_avx2_pairing(sys.argv)
    else:
        environment.reexec_without_handicaps(sys.argv)

# Interleaving three libraries' thread pools on few cores is only fair if
# none keeps spinning on a core after its call: make libgomp (cextend's and
# torch's) and OpenBLAS (numpy's) threads wait passively.  Must precede the
# imports that start those pools.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import cextend as cx  # noqa: E402
import peak  # noqa: E402
import registry  # noqa: E402
import targets  # noqa: E402
import gemm_cases  # noqa: E402,F401  (registers the "gemm" suite)
import autograd_cases  # noqa: E402,F401  (registers the "autograd" suite)

try:
    from threadpoolctl import threadpool_limits
except ImportError:                       # numpy's BLAS threads then stay as they are
    threadpool_limits = None

try:
    import torch
except ImportError:
    torch = None


def set_threads(threads):
    cx.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)


def run_case(case, repeats, peaks, sample_seconds, clock_choice="auto"):
    """Measure one case with every library limited to case.threads."""
    clock = registry.clock_for(case.threads, clock_choice)
    set_threads(case.threads)
    limiter = threadpool_limits(limits=case.threads, user_api="blas") if threadpool_limits else None
    try:
        load = environment.load_average()
        blas = environment.blas_libraries()
        candidates = case.make()
        wall, system = {}, {}
        samples = registry.interleaved(candidates, repeats, sample_seconds, clock, wall, system)
    finally:
        if limiter is not None:
            limiter.unregister()
    load_after = environment.load_average()
    seconds, ratios = registry.summarise(samples)
    ours = seconds["ours"]["median"]
    row = {
        "suite": case.suite, "name": case.name, "shape": list(case.shape), "dtype": case.dtype,
        "threads": case.threads, "clock": clock, "seconds": seconds,
        "ratios": {name: ratios[name] for name in ("numpy", "torch") if name in ratios},
        "load_average": load, "load_average_after": load_after,
        "numpy_kernel": "/".join("%s:%s" % (lib.get("architecture") or lib["internal_api"], lib["num_threads"])
                                 for lib in blas) or None,
    }
    if clock != "wall":
        # Kept to check the CPU clock against: on a quiet machine the two agree
        # unless a library hands work to threads the CPU clock does not see.
        row["wall_seconds"] = {name: statistics.median(s) for name, s in wall.items()}
    row["system_seconds"] = {name: statistics.median(s) for name, s in system.items()}
    if "ours_1thread" in ratios:
        row["speedup_2_threads" if case.threads == 2 else "speedup_threads"] = ratios["ours_1thread"]
    if case.flops:
        row["gflops"] = case.flops / ours / 1e9
        peak_total = peaks.get(case.dtype, 0) * case.threads
        row["percent_of_peak"] = 100 * row["gflops"] / peak_total if peak_total else None
    return row


def fmt_time(seconds):
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return "%.1fus" % (seconds * 1e6)
    return "%.2fms" % (seconds * 1e3)


def fmt_ratio(value):
    return "-" if value is None else "%.2f" % value


HEADER = ("%-20s %-15s %-7s %2s %10s %10s %10s %7s %7s %7s %5s %6s %-12s %s" % (
    "case", "N x K x M", "dtype", "th", "ours", "numpy", "torch", "np/ours", "th/ours",
    "GFLOP/s", "%peak", "2t/1t", "np kernel", "load"))


def format_row(r):
    s = r["seconds"]
    pct = r.get("percent_of_peak")
    speedup = r.get("speedup_2_threads", r.get("speedup_threads"))
    load = r["load_average"]
    return "%-20s %-15s %-7s %2d %10s %10s %10s %7s %7s %7s %5s %6s %-12s %s" % (
        r["name"], "x".join(map(str, r["shape"])), r["dtype"], r["threads"],
        fmt_time(s["ours"]["median"]), fmt_time(s.get("numpy", {}).get("median")),
        fmt_time(s.get("torch", {}).get("median")), fmt_ratio(r["ratios"].get("numpy")),
        fmt_ratio(r["ratios"].get("torch")), "%.1f" % r["gflops"] if "gflops" in r else "-",
        "%.0f%%" % pct if pct else "-", fmt_ratio(speedup), r["numpy_kernel"] or "-",
        "%.2f" % load[0] if load else "-")


def describe_ours():
    return "cextend %s, ISA %s (%s available)" % (cx.__version__, cx.get_isa(), ", ".join(cx.available_isas()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11, help="interleaved samples per case (default 11)")
    parser.add_argument("--quick", action="store_true", help="small shapes and one thread only")
    parser.add_argument("--threads", type=int, nargs="+", help="thread counts (default: 1, and 2 on large shapes)")
    parser.add_argument("--suite", nargs="+", choices=sorted(registry.suites()),
                        help="suites to run (default: all)")
    parser.add_argument("--filter", help="run only cases whose label contains this text")
    parser.add_argument("--sample-seconds", type=float, default=0.01, help="length of one sample (default 0.01)")
    parser.add_argument("--clock", choices=("auto", "wall", "thread_cpu"), default="auto",
                        help="auto (default): the calling thread's CPU time on one thread, wall time on more")
    parser.add_argument("--no-peak", action="store_true", help="skip measuring the FMA peak (no %% of peak)")
    parser.add_argument("--json", default=None,
                        help="where to write results (default bench/results.json, bench/results_avx2.json "
                             "for --pairing avx2)")
    parser.add_argument("--settle", type=float, default=0.0, metavar="SECONDS",
                        help="before the first case and after the last, wait up to this long for the "
                             "1-minute load to fall under 0.5 (a build just before, or this run's own "
                             "threads at its end, count in it) and record the load")
    parser.add_argument("--pairing", choices=("native", "avx2"), default="native",
                        help="native (default): each side's best kernels; avx2: cextend's AVX2 kernels "
                             "against OpenBLAS's Haswell kernel (the same instruction set)")
    args = parser.parse_args(argv)
    if args.json is None:
        args.json = os.path.join(HERE, "results.json" if args.pairing == "native" else "results_avx2.json")
    if args.pairing == "avx2":
        cx.set_isa("avx2")

    isa = cx.get_isa()
    peaks = {} if args.no_peak else peak.measure(isa)
    blas = environment.blas_libraries()
    torch_info = environment.torch_build(torch)
    waited_before = 0.0
    if args.settle > 0:
        load, waited_before = environment.settle(args.settle)
    load = environment.load_average()
    usage_start, clock_start = environment.cpu_usage(), time.monotonic()
    print(describe_ours())
    print("numpy %s: %s" % (np.__version__, environment.describe_blas(blas)))
    removed = environment.removed_handicaps()
    print("  (re-executed without %s)" % removed if removed else
          "  (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE were not set)")
    print("CPU flags: %s; pairing: %s" % (" ".join(environment.cpu_flags()) or "-", args.pairing))
    if environment.handicapped(blas) and args.pairing == "native":
        print("WARNING: numpy's OpenBLAS runs its Haswell kernel on an AVX-512 CPU: the numpy column is handicapped")
    print("torch: %s" % environment.describe_torch(torch_info))
    print("CPU: %s, %d cores; measured FMA peak per core: %s" % (
        environment.cpu_model(), os.cpu_count(), ", ".join("%s %.0f GFLOP/s" % kv for kv in peaks.items()) or "-"))
    print("load average at start: %s%s" % (" ".join("%.2f" % v for v in load) if load else "unknown",
                                           " (after waiting %.0f s for it to settle)" % waited_before
                                           if waited_before else ""))
    if threadpool_limits is None:
        print("note: threadpoolctl missing, numpy's BLAS threads are not limited")
    print("ratios are other_time / our_time (above 1: cextend is faster); %d interleaved samples, medians;"
          % args.repeats)
    print("clock: %s\n" % ("the calling thread's CPU time on one thread (time descheduled on a shared machine "
                           "does not count), wall time on more" if args.clock == "auto" else args.clock))

    chosen = args.suite or list(registry.suites())
    cases = [case for name in chosen for case in registry.suites()[name](args)]
    if args.filter:
        cases = [case for case in cases if args.filter in case.label()]
    print(HEADER)
    results = []
    for case in cases:
        row = run_case(case, args.repeats, peaks, args.sample_seconds, args.clock)
        print(format_row(row))
        sys.stdout.flush()
        results.append(row)
    set_threads(1)

    checks = targets.checks(results)
    if args.pairing == "native":
        print("\nissue 15 kernel-level targets:")
        for check in checks:
            print("  [%s] %-62s %8s  goal %-7s %s" % targets.format_check(check))
    end_load = environment.load_average()
    others = environment.others_during(usage_start, environment.cpu_usage(), time.monotonic() - clock_start)
    print("\nload average at end: %s" % (" ".join("%.2f" % v for v in end_load) if end_load else "unknown"))
    if others:
        print("other processes kept %.2f cores busy on average during the run; the hypervisor stole %.1f%% "
              "of CPU time" % (others["cores"], 100 * others["steal_share"]))
    settled = None
    if args.settle > 0:
        settled_load, waited = environment.settle(args.settle)
        settled = {"load": settled_load, "after_s": waited}
        print("load average %.0f s after the run: %s" % (
            waited, " ".join("%.2f" % v for v in settled_load) if settled_load else "unknown"))

    record = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
        "machine": {"processor": environment.cpu_model(), "machine": platform.machine(),
                    "cores": os.cpu_count(), "peak_gflops_per_core": peaks},
        "ours": {"version": cx.__version__, "isa": isa},
        "pairing": args.pairing,
        "cpu_flags": environment.cpu_flags(),
        "numpy": {"version": np.__version__, "blas": blas, "removed_from_environment": removed},
        "torch": torch_info,
        "load_average": {"start": load, "end": end_load, "settled": settled, "waited_before_s": waited_before},
        "others_during_run": others,
        "repeats": args.repeats,
        "clock": args.clock,
        "results": results,
        "targets": [list(check) for check in checks],
    }
    with open(args.json, "w") as f:
        json.dump(record, f, indent=1)
    print("wrote %s" % args.json)


if __name__ == "__main__":
    main()
