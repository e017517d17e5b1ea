"""The benchmark harness measures fairly: numpy on its full-speed kernel,
ratios as other_time / our_time, everything recorded.  (Speed itself is
never asserted: these run one tiny case to check the plumbing.)"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)

import environment  # noqa: E402
import registry  # noqa: E402


def test_only_the_two_openblas_handicaps_are_removed():
    env = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "1048576", "OPENBLAS_NUM_THREADS": "1",
           "PATH": "/bin"}
    assert environment.without_handicaps(env) == {"OPENBLAS_NUM_THREADS": "1", "PATH": "/bin"}


def test_ratios_are_other_time_over_our_time():
    seconds, ratios = registry.summarise({"ours": [1.0, 2.0, 9.0], "numpy": [4.0, 4.0, 4.0],
                                          "torch": [1.0, 1.0, 1.0]})
    assert seconds["ours"] == {"median": 2.0, "min": 1.0, "max": 9.0}
    assert ratios == {"numpy": 2.0, "torch": 0.5}


def test_one_thread_rows_use_the_threads_cpu_clock_and_threaded_rows_wall_time():
    assert registry.clock_for(1) == "thread_cpu" and registry.clock_for(2) == "wall"
    assert registry.clock_for(1, "wall") == "wall"


def test_interleaving_rotates_the_order():
    calls = []
    candidates = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    samples = registry.interleaved(candidates, repeats=3, target=0.0)
    assert {name: len(s) for name, s in samples.items()} == {"a": 3, "b": 3, "c": 3}
    rounds = calls[-9:]                  # after calibration: three rounds of three
    assert rounds == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]


def test_bench_runs_numpy_without_the_handicaps_and_records_it(tmp_path):
    out = tmp_path / "results.json"
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell", OPENBLAS_L2_SIZE="1048576")
    run = subprocess.run(
        [sys.executable, os.path.join(BENCH, "bench.py"), "--suite", "gemm", "--filter",
         "linear_forward 1x8x8 float32 1t", "--repeats", "2", "--sample-seconds", "0.001",
         "--no-peak", "--json", str(out)],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "re-executed without OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=1048576" in run.stdout
    record = json.loads(out.read_text())
    assert record["numpy"]["removed_from_environment"] == "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=1048576"
    [row] = record["results"]
    assert row["shape"] == [1, 8, 8] and row["threads"] == 1 and row["dtype"] == "float32"
    assert row["clock"] == "thread_cpu" and set(row["wall_seconds"]) == set(row["seconds"])
    assert row["ratios"]["numpy"] == pytest.approx(row["seconds"]["numpy"]["median"] / row["seconds"]["ours"]["median"])
    assert row["load_average"] is None or len(row["load_average"]) == 3
    blas = record["numpy"]["blas"]
    if blas:        # threadpoolctl installed: the kernel it reports is not the pinned one
        assert not environment.handicapped(blas)
        assert row["numpy_kernel"].endswith(":1")        # numpy's BLAS limited to the row's thread count
    table = subprocess.run([sys.executable, os.path.join(BENCH, "table.py"), str(out)],
                           capture_output=True, text=True, timeout=60)
    assert table.returncode == 0, table.stderr
    assert "handicapped numpy" in table.stdout and "| linear_forward | 1x8x8 | float32 |" in table.stdout
