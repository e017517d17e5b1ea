"""Render bench/results.json as BENCHMARKS.md.

    python bench/table.py [bench/results.json] [--out BENCHMARKS.md]

Without --out the Markdown goes to stdout.  Rerun after a quiet
`make bench` to refresh the published figures.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import targets  # noqa: E402
import training_targets  # noqa: E402

CLOCK_TEXT = {
    "auto": "one-thread rows use the calling thread's CPU time (every library computes in that "
            "thread, and time spent descheduled on the shared machine does not count); "
            "two-thread rows use wall time",
    "wall": "wall time",
    "thread_cpu": "the calling thread's CPU time",
}


def fmt_time(seconds):
    if seconds is None:
        return "-"
    return "%.1f us" % (seconds * 1e6) if seconds < 1e-3 else "%.2f ms" % (seconds * 1e3)


def ratio(value):
    return "-" if value is None else "%.2f" % value


def shape(r):
    return "x".join(map(str, r["shape"]))


def load(r):
    return "%.2f" % r["load_average"][0] if r.get("load_average") else "-"


def gemm_table(rows):
    lines = ["| case | N x K x M | dtype | ours | numpy | torch | numpy/ours | torch/ours | GFLOP/s | % peak | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["seconds"]
        pct = r.get("percent_of_peak")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], shape(r), r["dtype"], fmt_time(s["ours"]["median"]),
            fmt_time(s.get("numpy", {}).get("median")), fmt_time(s.get("torch", {}).get("median")),
            ratio(r["ratios"].get("numpy")), ratio(r["ratios"].get("torch")),
            "%.1f" % r["gflops"] if "gflops" in r else "-", "%.0f%%" % pct if pct else "-", load(r)))
    return "\n".join(lines)


def system_time_notes(rows, share=0.05):
    """A line per row where some library spent `share` or more of its time
    in the kernel (page faults on fresh output arrays, mostly): that time is
    the operating system's, not the GEMM kernel's, and varies from call to
    call with which pages the allocator hands back."""
    lines = []
    for r in rows:
        system = r.get("system_seconds") or {}
        names = [n for n in ("ours", "numpy", "torch") if n in system and n in r["seconds"]]
        if not any(system[n] >= share * r["seconds"][n]["median"] for n in names):
            continue
        lines.append("- %s %s %s, %d thread(s): %s." % (
            r["name"], shape(r), r["dtype"], r["threads"],
            ", ".join("%s %s of %s" % (n, fmt_time(system[n]), fmt_time(r["seconds"][n]["median"]))
                      for n in names)))
    return lines


def busy(r, cores):
    """A multi-thread row measured while other work held a core, judged by
    the 1-minute load before and (it lags) after the row."""
    loads = [r[key][0] for key in ("load_average", "load_average_after") if r.get(key)]
    return bool(loads) and max(loads) >= cores - 0.5


def threads_table(rows, cores):
    lines = ["| case | N x K x M | dtype | ours, 1 thread | ours, 2 threads | speed-up | numpy/ours | torch/ours | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["seconds"]
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s%s |" % (
            r["name"], shape(r), r["dtype"], fmt_time(s.get("ours_1thread", {}).get("median")),
            fmt_time(s["ours"]["median"]), ratio(r.get("speedup_2_threads")),
            ratio(r["ratios"].get("numpy")), ratio(r["ratios"].get("torch")), load(r),
            " (busy)" if busy(r, cores) else ""))
    return "\n".join(lines)


def targets_table(record):
    lines = ["| target | what | reached | goal | |", "|---|---|---|---|---|"]
    for check in record.get("targets") or targets.checks(record["results"]):
        lines.append("| %s | %s | %s | %s | %s |" % targets.format_check(tuple(check)))
    return "\n".join(lines)


def settled_text(settled):
    if not settled or not settled.get("load"):
        return ""
    return ", %s %.0f s after it" % (" / ".join("%.2f" % x for x in settled["load"]), settled["after_s"])


def quiet_text(loads, others):
    """The performance issue's quiet run: a 1-minute load under 0.5 at the start and at the end,
    the end read once this run's own threads have stopped (bench.py --settle); and, since a
    load read after the run says little about the run itself, other processes' use during it
    (/proc/stat) under half a core as well."""
    settled = loads.get("settled")
    if not loads.get("start") or not settled or not settled.get("load") or not others:
        return ""
    quiet = loads["start"][0] < 0.5 and settled["load"][0] < 0.5 and others["cores"] < 0.5
    return (" A quiet run (1-minute load under 0.5 at its start and, once its own threads stopped, "
            "at its end; other processes under half a core during it): %s." % ("yes" if quiet else "no"))


def others_text(others):
    if not others:
        return ""
    return (" Other processes kept %.2f cores busy on average during the run (`/proc/stat` less this "
            "process), and the hypervisor stole %.1f%% of CPU time (other virtual machines on the host "
            "are not seen otherwise)." % (others["cores"], 100 * others["steal_share"]))


def describe(record):
    machine = record["machine"]
    peaks = ", ".join("%s %.0f GFLOP/s" % kv for kv in machine["peak_gflops_per_core"].items()) or "-"
    blas = "; ".join("%s %s, kernel %s" % (lib["internal_api"], lib["version"], lib.get("architecture"))
                     for lib in record["numpy"]["blas"]) or "unknown"
    torch = record.get("torch")
    torch_text = ("%s (BLAS %s, oneDNN %s)" % (torch["version"], torch["blas"],
                                               "enabled" if torch["mkldnn"] else "off")
                  if torch else "not installed")
    loads = record["load_average"]
    fmt_load = lambda v: " / ".join("%.2f" % x for x in v) if v else "unknown"  # noqa: E731
    removed = record["numpy"].get("removed_from_environment")
    loads_seen = [r["load_average"][0] for r in record["results"] if r.get("load_average")]
    return "\n".join([
        "- Measured %s with `%s`." % (record["date"].replace("T", " "), record.get("command", "bench/bench.py")),
        "- CPU: %s, %d cores; measured FMA peak per core (`bench/peak_probe.c`): %s." % (
            machine["processor"], machine["cores"], peaks),
        "- cextend %s, ISA %s." % (record["ours"]["version"], record["ours"]["isa"]),
        "- numpy %s on %s%s." % (record["numpy"]["version"], blas,
                                 " (re-executed without %s)" % removed if removed else ""),
        "- torch %s." % torch_text,
        "- Load average (1 / 5 / 15 min) at start %s%s, at end %s (this run's own threads "
        "included)%s; each row gives the 1-minute load before it ran.%s The machine has other users: "
        "rows taken under load are noisier.%s" % (
            fmt_load(loads["start"]),
            " (after %.0f s of waiting for it to settle)" % loads["waited_before_s"]
            if loads.get("waited_before_s") else "",
            fmt_load(loads["end"]), settled_text(loads.get("settled")),
            others_text(record.get("others_during_run")), quiet_text(loads, record.get("others_during_run"))),
        "- %d interleaved samples per case, medians; every ratio is other_time / our_time "
        "(above 1: cextend is faster)." % record["repeats"],
        "- Clock: %s." % CLOCK_TEXT.get(record.get("clock", "wall"), record.get("clock")),
    ] + ([
        "- This run shared the machine (1-minute load up to %.1f on %d cores). The CPU clock leaves "
        "out time spent waiting for a core, but not the other work's use of the shared L3 cache "
        "and memory bandwidth, which slows memory-bound parts (packing, large float64 products) "
        "on every side; a quiet run is the reference." % (max(loads_seen), machine["cores"])
    ] if loads_seen and max(loads_seen) >= machine["cores"] - 0.5 else []))


def load_warning(record):
    """A sentence when multi-thread rows ran on a machine already busy."""
    cores = record["machine"]["cores"]
    rows = [r for r in record["results"] if r["threads"] > 1]
    if not any(busy(r, cores) for r in rows):
        return ""
    return ("\n\n**Rows marked (busy) had a 1-minute load of %.1f or more on %d cores before or after "
            "them**: other work held a core, so their wall times measure contention, not scaling. The "
            "load average lags, so a row whose two-thread time is no better than its one-thread time "
            "was likely contended too." % (cores - 0.5, cores))


def render(record):
    results = record["results"]
    gemm1 = [r for r in results if r["suite"] == "gemm" and r["threads"] == 1]
    gemm2 = [r for r in results if r["suite"] == "gemm" and r["threads"] > 1]
    others = [r for r in results if r["suite"] != "gemm"]
    parts = ["# Benchmarks", "",
             "Generated by `bench/table.py` from `bench/results.json`, which `make bench` writes.",
             "", "## How these were measured", "", describe(record), "",
             "## The performance issue's targets", "",
             "GEMM against OpenBLAS on the same instruction set (`bench/results.json`, and "
             "`bench/results_avx2.json`: cextend's AVX2 kernels against OpenBLAS's Haswell kernel), "
             "training and autograd overhead (`bench/autograd_results.json`, from "
             "`bench/autograd_bench.py`).", "", training_targets.markdown(training_targets.checks()), "",
             "## Issue 15's kernel-level targets", "", targets_table(record), "",
             "## GEMM, one thread", "",
             "`linear_forward`: `ops.linear_forward(x, w, b)` against numpy's `x @ w.T + b` and torch's "
             "`F.linear`. `linear_fwd_bwd`: that plus `ops.linear_backward(g, x, w)` against "
             "`g @ w`, `g.T @ x`, `g.sum(0)` (torch: `mm`, `t().mm`, `sum`). N x K x M is batch x in x out; "
             "no autograd anywhere, no `no_grad()` blocks.", "", gemm_table(gemm1)]
    notes = system_time_notes(gemm1)
    if notes:
        parts += ["", "System time (median per call) where a library spent 5% or more of its time "
                  "in the kernel rather than computing: page faults on the fresh output arrays, "
                  "which every library allocates. On a virtual machine whose freed 2 MiB pages go "
                  "back to the host, a fault on one costs milliseconds, and which call meets one "
                  "varies.", ""] + notes
    if gemm2:
        parts += ["", "## GEMM, two threads", "",
                  "Every library on two threads; cextend on one thread is timed in the same "
                  "interleaving for the speed-up." + load_warning(record), "",
                  threads_table(gemm2, record["machine"]["cores"])]
    if others:
        parts += ["", "## Autograd and per-call overhead", "", gemm_table(others)]
    parts += ["", "Regenerate: `make bench` on a quiet machine (or `python bench/table.py "
              "bench/results.json --out BENCHMARKS.md` from a saved run).", ""]
    return "\n".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default=os.path.join(HERE, "results.json"))
    parser.add_argument("--out", help="write here instead of stdout")
    args = parser.parse_args(argv)
    with open(args.results) as f:
        text = render(json.load(f))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        print("wrote %s" % args.out)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
