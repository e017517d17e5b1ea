"""Render bench/results.json as the Markdown tables in README.md.

    python bench/table.py [bench/results.json]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fmt_time(seconds):
    return "%.1f us" % (seconds * 1e6) if seconds < 1e-3 else "%.2f ms" % (seconds * 1e3)


def ratio(value):
    return "-" if value is None else "%.2f" % value


def table(rows):
    lines = ["| op | N x K x M | dtype | ours (median) | numpy/ours | torch/ours | GFLOP/s | % peak |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %dx%dx%d | %s | %s | %s | %s | %.1f | %s |" % (
            r["op"], r["N"], r["K"], r["M"], r["dtype"], fmt_time(r["seconds"]["ours"]["median"]),
            ratio(r["ratio_numpy"]), ratio(r["ratio_torch"]), r["gflops"],
            "-" if r["percent_of_peak"] is None else "%.0f%%" % r["percent_of_peak"]))
    return "\n".join(lines)


def scaling(rows):
    one = {(r["op"], r["N"], r["K"], r["M"], r["dtype"]): r for r in rows if r["threads"] == 1}
    lines = ["| op | N x K x M | dtype | 1 thread | 2 threads | speed-up |", "|---|---|---|---|---|---|"]
    for r in rows:
        key = (r["op"], r["N"], r["K"], r["M"], r["dtype"])
        if r["threads"] == 2 and key in one and r["N"] >= 128:
            t1, t2 = one[key]["seconds"]["ours"]["median"], r["seconds"]["ours"]["median"]
            lines.append("| %s | %dx%dx%d | %s | %s | %s | %.2fx |" % (
                r["op"], r["N"], r["K"], r["M"], r["dtype"], fmt_time(t1), fmt_time(t2), t1 / t2))
    return "\n".join(lines)


def main(path):
    with open(path) as f:
        record = json.load(f)
    machine = record["machine"]
    peaks = ", ".join("%s %.0f GFLOP/s" % kv for kv in machine["peak_gflops_per_core"].items())
    versions = record["versions"]
    print("Measured %s on %s (%d cores, ISA %s; measured FMA peak per core: %s), numpy %s, torch %s; "
          "%d interleaved samples per case.\n" % (
              record["date"][:10], machine["processor"] or machine["machine"], machine["cores"],
              machine["isa"], peaks, versions["numpy"], versions["torch"] or "not installed",
              record["repeats"]))
    print("Single thread (numpy's BLAS and torch pinned to one thread too):\n")
    print(table([r for r in record["results"] if r["threads"] == 1]))
    print("\nTwo threads, cextend's own scaling:\n")
    print(scaling(record["results"]))
    over = record["overhead_seconds"]
    print("\nPer-call overhead: " + ", ".join("%s %.1f us" % (k, v * 1e6) for k, v in over.items()) + ".")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results.json"))
