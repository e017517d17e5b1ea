"""Issue 15's kernel-level targets, checked against a benchmark's rows.

Each check returns (target, what, value, goal, met), value None when the
rows it needs were not run (a --quick run, torch not installed).  These
are reported, never asserted: performance is measured, not tested.
"""
LARGE = (1024, 4096, 4096)
TORCH_SHAPES = [(256, 2048, 2048), LARGE]
SMALL_SHAPES = [(1, 8, 8), (8, 64, 64)]
THREADED_SHAPES = [(128, 1024, 1024), (256, 2048, 2048), LARGE]
DTYPES = ("float32", "float64")
OPS = ("linear_forward", "linear_fwd_bwd")


def _rows(results, **match):
    return [r for r in results if all(r.get(key) == value for key, value in match.items())]


def _shape(r):
    return tuple(r["shape"])


def _fmt_shape(shape):
    return "x".join(map(str, shape))


def checks(results):
    gemm = [r for r in results if r.get("suite") == "gemm"]
    out = []
    # 1. >= 1.0 against numpy from 32x128x128 up, one thread.
    for op in OPS:
        for dtype in DTYPES:
            rows = [r for r in _rows(gemm, name=op, dtype=dtype, threads=1)
                    if _shape(r)[0] * _shape(r)[1] * _shape(r)[2] >= 32 * 128 * 128]
            worst = min(rows, key=lambda r: r["ratios"]["numpy"]) if rows else None
            out.append(("1", "%s %s vs numpy, worst of %d shapes >= 32x128x128%s" % (
                op, dtype, len(rows), " (at %s)" % _fmt_shape(_shape(worst)) if worst else ""),
                worst["ratios"]["numpy"] if worst else None, 1.0,
                worst is not None and worst["ratios"]["numpy"] >= 1.0))
    # 2. >= 1.0 against torch, float32 forward.
    for shape in TORCH_SHAPES:
        rows = [r for r in _rows(gemm, name="linear_forward", dtype="float32", threads=1)
                if _shape(r) == shape and "torch" in r["ratios"]]
        value = rows[0]["ratios"]["torch"] if rows else None
        out.append(("2", "linear_forward float32 vs torch at %s" % _fmt_shape(shape), value, 1.0,
                    value is not None and value >= 1.0))
    # 3. >= 85% of the measured peak at the largest shape.
    for op in OPS:
        for dtype in DTYPES:
            rows = [r for r in _rows(gemm, name=op, dtype=dtype, threads=1) if _shape(r) == LARGE]
            value = rows[0]["percent_of_peak"] if rows else None
            out.append(("3", "%s %s %% of peak at %s" % (op, dtype, _fmt_shape(LARGE)), value, 85.0,
                        value is not None and value >= 85.0))
    # 4. two threads >= 1.85x one thread on the three largest shapes.
    for shape in THREADED_SHAPES:
        for op in OPS:
            for dtype in DTYPES:
                rows = [r for r in _rows(gemm, name=op, dtype=dtype, threads=2) if _shape(r) == shape]
                value = rows[0].get("speedup_2_threads") if rows else None
                out.append(("4", "%s %s 2-thread speed-up at %s" % (op, dtype, _fmt_shape(shape)), value,
                            1.85, value is not None and value >= 1.85))
    # 5. small shapes: ops.linear_forward vs numpy's x @ w.T + b.
    for shape in SMALL_SHAPES:
        for dtype in DTYPES:
            rows = [r for r in _rows(gemm, name="linear_forward", dtype=dtype, threads=1) if _shape(r) == shape]
            value = rows[0]["ratios"]["numpy"] if rows else None
            out.append(("5", "linear_forward %s vs numpy at %s" % (dtype, _fmt_shape(shape)), value, 1.0,
                        value is not None and value >= 1.0))
    return out


def format_check(check):
    target, what, value, goal, met = check
    shown = "not run" if value is None else ("%.1f%%" % value if goal == 85.0 else "%.2f" % value)
    verdict = "-" if value is None else ("met" if met else "SHORT")
    return target, what, shown, ("%.0f%%" % goal if goal == 85.0 else ">= %.2f" % goal), verdict
