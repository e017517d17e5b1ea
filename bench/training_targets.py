"""The performance issue's targets (issue 26), checked against a `make bench` run.

    python bench/training_targets.py      # after make bench: reads bench/*.json

GEMM against OpenBLAS on the same instruction set, from bench/results.json
(each side's best kernels) and bench/results_avx2.json (cextend's AVX2
kernels against OpenBLAS's Haswell kernel, measured on AVX-512 machines);
training and autograd overhead from bench/autograd_results.json.  Every
value is other_time / our_time.  Reported, never asserted.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
GEMM_SHAPES = [(32, 128, 128), (64, 512, 512), (128, 1024, 1024), (256, 2048, 2048), (1024, 4096, 4096)]
AUTOGRAD_GOALS = [
    ("2", "MLP epoch vs torch, 1 thread", "MLP epoch, 1 thread", 1.5),
    ("2", "MLP epoch vs torch, 2 threads", "MLP epoch, 2 threads", 1.5),
    ("2", "MLP epoch vs hand-written numpy", "MLP epoch", 0.6),
    ("2", "captured MLP epoch (cextend.capture) vs torch, 1 thread", "MLP epoch, captured, 1 thread", 1.5),
    ("2", "captured MLP epoch (cextend.capture) vs torch, 2 threads", "MLP epoch, captured, 2 threads", 1.5),
    ("2", "captured MLP epoch (cextend.capture) vs hand-written numpy", "MLP epoch, captured", 0.6),
    ("2", "CNN demo epoch vs torch, 1 thread", "CNN epoch, 1 thread", 1.2),
    ("2", "captured CNN demo epoch (cextend.capture) vs torch, 1 thread", "CNN epoch, captured, 1 thread", 1.2),
    ("3", "elementwise chain, per op, vs torch", "chain (per op)", 1.5),
    ("3", "nn.Linear 1x8x8 forward+backward vs torch", "nn.Linear 1x8x8 fwd+bwd", 2.0),
]


def _load(name):
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def gemm_checks(record, pairing):
    """Worst ratio against numpy over the issue's shapes, per op and dtype, on one thread."""
    out = []
    if record is None:
        return out
    rows = [r for r in record["results"] if r.get("suite") == "gemm" and r["threads"] == 1
            and tuple(r["shape"]) in GEMM_SHAPES and "numpy" in r["ratios"]]
    kernel = "/".join(sorted({r["numpy_kernel"] or "?" for r in rows})) or "?"
    for op in ("linear_forward", "linear_fwd_bwd"):
        for dtype in ("float32", "float64"):
            mine = [r for r in rows if r["name"] == op and r["dtype"] == dtype]
            if not mine:
                continue
            worst = min(mine, key=lambda r: r["ratios"]["numpy"])
            what = "%s %s, cextend %s vs OpenBLAS %s, worst of %d shapes (at %s)" % (
                op, dtype, record["ours"]["isa"], kernel, len(mine), "x".join(map(str, worst["shape"])))
            out.append(("1", what, worst["ratios"]["numpy"], 1.0))
    return out


def autograd_checks(record):
    out = []
    if record is None:
        return out
    for target, what, key, goal in AUTOGRAD_GOALS:
        value = record.get(key, {}).get("ratio")
        out.append((target, what, value, goal))
    memory = record.get("memory")
    if memory:
        out.append(("2", "live blocks of a training step, numpy's / ours (%d / %d)"
                    % (memory["numpy_blocks"], memory["cextend_blocks"]),
                    memory["numpy_blocks"] / max(1, memory["cextend_blocks"]), 0.5))
        if "captured_blocks" in memory:
            out.append(("2", "live blocks of a captured training step, numpy's / ours (%d / %d)"
                        % (memory["numpy_blocks"], memory["captured_blocks"]),
                        memory["numpy_blocks"] / max(1, memory["captured_blocks"]), 0.5))
        for kind in ("cextend", "captured"):
            if kind + "_arrays" in memory:      # numpy's array buffers only (no Python objects)
                out.append(("2", "live array buffers of a%s training step, numpy's / ours (%d / %d)"
                            % (" captured" if kind == "captured" else "n eager", memory["numpy_arrays"],
                               memory[kind + "_arrays"]),
                            max(1, memory["numpy_arrays"]) / max(1, memory[kind + "_arrays"]), 0.5))
    return out


def same_machine(a, b):
    """Whether two runs' records describe one machine (its processor and CPU flags)."""
    return a.get("machine", {}).get("processor") == b.get("machine", {}).get("processor") and \
        a.get("cpu_flags") == b.get("cpu_flags")


def checks():
    """[(target, what, value or None, goal)] for every target the saved runs measured.  The
    AVX2 pairing counts only when it ran on results.json's machine: a file left by a run on
    another CPU (an AVX-512 one, before a run on an AVX2-only one) is not this run's."""
    native, avx2, autograd = _load("results.json"), _load("results_avx2.json"), _load("autograd_results.json")
    if native is not None and avx2 is not None and not same_machine(native, avx2):
        avx2 = None
    out = gemm_checks(native, "native") + gemm_checks(avx2, "avx2") + autograd_checks(autograd)
    return out


def verdict(value, goal):
    if value is None:
        return "not run"
    return "met" if value >= goal else "SHORT"


def markdown(rows):
    lines = ["| target | what | reached | goal | |", "|---|---|---|---|---|"]
    for target, what, value, goal in rows:
        lines.append("| %s | %s | %s | >= %.2f | %s |" % (
            target, what, "-" if value is None else "%.2f" % value, goal, verdict(value, goal)))
    return "\n".join(lines)


def main():
    rows = checks()
    autograd = _load("autograd_results.json") or {}
    print("issue 26 targets (other_time / our_time; above the goal: met):")
    for target, what, value, goal in rows:
        print("  [%s] %-88s %6s  goal >= %.2f  %s" % (target, what, "-" if value is None else "%.2f" % value,
                                                    goal, verdict(value, goal)))
    for name, key in (("start", "load_average_start"), ("end", "load_average_end")):
        if key in autograd:
            print("  autograd run's load average at %s: %s" % (name, " ".join("%.2f" % v for v in autograd[key])))


if __name__ == "__main__":
    main()
