"""The benchmark harness measures fairly: numpy on its full-speed kernel,
ratios as other_time / our_time, everything recorded.  (Speed itself is
never asserted: these run one tiny case to check the plumbing.)"""
import itertools
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


def test_interleaving_runs_every_order_so_each_candidate_follows_each_other():
    calls = []
    candidates = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    samples = registry.interleaved(candidates, repeats=6, target=0.0)
    assert {name: len(s) for name, s in samples.items()} == {"a": 6, "b": 6, "c": 6}
    rounds = [tuple(calls[i:i + 3]) for i in range(len(calls) - 18, len(calls), 3)]
    assert sorted(rounds) == sorted(itertools.permutations("abc"))
    followers = {(x, y) for r in rounds for x, y in zip(r, r[1:])}
    assert followers == {(x, y) for x in "abc" for y in "abc" if x != y}


class _KernelTimeSource:
    """getrusage's stand-in: "ours" spends 2 ms of system time per call,
    "other" none.  The kernel's own accounting is not asserted on: how much
    system time 64 MiB of fresh pages shows, and whether a thread's share
    is sampled on ticks at all, differs between machines (on one CI host a
    real fault-heavy call read 0.0 twice)."""

    def __init__(self):
        self.system = 0.0
        self.asked_for = set()

    def getrusage(self, who):
        self.asked_for.add(who)
        return resource_usage(self.system)

    def ours(self):
        self.system += 0.002


def resource_usage(system):
    return type("Usage", (), {"ru_stime": system})()


@pytest.mark.parametrize("clock, who", [("thread_cpu", "RUSAGE_THREAD"), ("wall", "RUSAGE_SELF")])
def test_interleaving_records_the_kernels_time_per_call(monkeypatch, clock, who):
    source = _KernelTimeSource()
    monkeypatch.setattr(registry.resource, "getrusage", source.getrusage)
    system, wall = {}, {}
    samples = registry.interleaved({"ours": source.ours, "other": lambda: None}, repeats=3, target=0.0,
                                   clock=clock, system_samples=system, wall_samples=wall)
    assert system == {"ours": [pytest.approx(0.002)] * 3, "other": [0.0] * 3}
    assert {name: len(s) for name, s in samples.items()} == {name: len(s) for name, s in wall.items()} \
        == {"ours": 3, "other": 3}
    assert source.asked_for == {getattr(registry.resource, who)}


def test_system_time_is_per_call_when_a_sample_makes_many_calls(monkeypatch):
    source = _KernelTimeSource()
    monkeypatch.setattr(registry.resource, "getrusage", source.getrusage)
    monkeypatch.setattr(registry, "calls_per_sample", lambda fn, target, clock: 5)
    system = {}
    registry.interleaved({"ours": source.ours}, repeats=2, target=0.0, clock="wall", system_samples=system)
    assert system == {"ours": [pytest.approx(0.002)] * 2}


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
    assert set(row["system_seconds"]) == set(row["seconds"])
    assert row["ratios"]["numpy"] == pytest.approx(row["seconds"]["numpy"]["median"] / row["seconds"]["ours"]["median"])
    assert row["load_average"] is None or len(row["load_average"]) == 3
    others = record["others_during_run"]
    if others is not None:      # /proc/stat exists: what other processes used, apart from this run
        assert others["cores"] >= 0 and 0 <= others["steal_share"] <= 1 and others["seconds"] > 0
        assert "other processes kept" in run.stdout
    assert record["load_average"]["settled"] is None        # not asked for
    blas = record["numpy"]["blas"]
    if blas:        # threadpoolctl installed: the kernel it reports is not the pinned one
        assert not environment.handicapped(blas)
        assert row["numpy_kernel"].endswith(":1")        # numpy's BLAS limited to the row's thread count
    table = subprocess.run([sys.executable, os.path.join(BENCH, "table.py"), str(out)],
                           capture_output=True, text=True, timeout=60)
    assert table.returncode == 0, table.stderr
    assert "## The performance issue's targets" in table.stdout
    assert "| linear_forward | 1x8x8 | float32 |" in table.stdout


@pytest.mark.skipif("avx2" not in environment.cpu_flags(), reason="the AVX2 pairing needs an AVX2 CPU")
def test_avx2_pairing_runs_cextends_avx2_kernels_against_openblas_haswell(tmp_path):
    out = tmp_path / "results_avx2.json"
    run = subprocess.run(
        [sys.executable, os.path.join(BENCH, "bench.py"), "--pairing", "avx2", "--suite", "gemm", "--filter",
         "linear_forward 1x8x8 float32 1t", "--repeats", "2", "--sample-seconds", "0.001", "--no-peak",
         "--json", str(out)],
        env=dict(os.environ, OPENBLAS_L2_SIZE="1048576"), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "pairing: avx2" in run.stdout
    record = json.loads(out.read_text())
    assert record["pairing"] == "avx2" and record["ours"]["isa"] == "avx2"
    assert "avx2" in record["cpu_flags"]
    if record["numpy"]["blas"]:
        assert all(lib.get("architecture") == "Haswell" for lib in record["numpy"]["blas"]
                   if lib["internal_api"] == "openblas")


def test_training_targets_read_every_saved_run(tmp_path, monkeypatch):
    import training_targets
    gemm = {"ours": {"isa": "avx2"}, "results": [
        {"suite": "gemm", "name": "linear_forward", "dtype": "float32", "threads": 1, "shape": list(shape),
         "numpy_kernel": "Haswell:1", "ratios": {"numpy": ratio}}
        for shape, ratio in zip(training_targets.GEMM_SHAPES, (1.2, 0.95, 1.1, 1.0, 1.3))]}
    autograd = {"MLP epoch, 1 thread": {"ratio": 1.6}, "chain (per op)": {"ratio": 1.1},
                "memory": {"numpy_blocks": 6, "cextend_blocks": 60}}
    for name, record in (("results_avx2.json", gemm), ("autograd_results.json", autograd)):
        (tmp_path / name).write_text(json.dumps(record))
    monkeypatch.setattr(training_targets, "HERE", str(tmp_path))
    rows = {what.split(",")[0]: (value, goal) for _, what, value, goal in training_targets.checks()}
    assert rows["linear_forward float32"] == (0.95, 1.0)           # the worst shape decides
    full = {what: value for _, what, value, goal in training_targets.checks()}
    assert full["MLP epoch vs torch, 1 thread"] == 1.6 and full["MLP epoch vs torch, 2 threads"] is None
    assert rows["CNN demo epoch vs torch"] == (None, 1.2)           # not measured: said so
    assert rows["live blocks of a training step"] == (0.1, 0.5)
    assert "| 3 | elementwise chain" in training_targets.markdown(training_targets.checks())


def test_training_targets_leave_out_a_pairing_run_from_another_machine(tmp_path, monkeypatch):
    """results_avx2.json left by a run on an AVX-512 machine is not the AVX2-only machine's
    run: only results.json's rows count then."""
    import training_targets

    def record(processor, flags, ratio):
        return {"machine": {"processor": processor}, "cpu_flags": flags, "ours": {"isa": "avx2"}, "results": [
            {"suite": "gemm", "name": "linear_forward", "dtype": "float32", "threads": 1, "shape": list(shape),
             "numpy_kernel": "Haswell:1", "ratios": {"numpy": ratio}} for shape in training_targets.GEMM_SHAPES]}
    monkeypatch.setattr(training_targets, "HERE", str(tmp_path))
    (tmp_path / "results.json").write_text(json.dumps(record("Zen 2", ["avx2", "fma"], 0.9)))
    (tmp_path / "results_avx2.json").write_text(json.dumps(record("Zen 4", ["avx2", "fma", "avx512f"], 1.1)))
    assert [value for _, what, value, _ in training_targets.checks() if what.startswith("linear_")] == [0.9]
    (tmp_path / "results_avx2.json").write_text(json.dumps(record("Zen 2", ["avx2", "fma"], 1.1)))
    assert [value for _, what, value, _ in training_targets.checks() if what.startswith("linear_")] == [0.9, 1.1]


def test_other_processes_use_is_busy_time_less_this_process_and_steal(monkeypatch):
    # two readings 10 s apart on 2 cores: 12 s busy, of which 2 stolen and 7 this process's
    cores = environment.others_during((100.0, 5.0, 40.0), (112.0, 7.0, 47.0), 10.0)
    assert cores["cores"] == pytest.approx(0.3)          # (12 - 2 - 7) / 10
    assert cores["steal_share"] == pytest.approx(2.0 / (10.0 * (os.cpu_count() or 1)))
    assert environment.others_during(None, (1.0, 0.0, 0.0), 1.0) is None
    assert environment.others_during((1.0, 0.0, 0.0), (1.0, 0.0, 2.0), 1.0)["cores"] == 0.0   # never negative
    reading = environment.cpu_usage()
    if reading is not None:
        busy, steal, own = reading
        assert busy >= steal >= 0 and own > 0


def test_settle_waits_for_the_load_to_fall_and_gives_up_at_its_limit(monkeypatch):
    loads = iter([[1.2, 1, 1], [0.8, 1, 1], [0.4, 1, 1]])
    monkeypatch.setattr(environment, "load_average", lambda: next(loads))
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    assert environment.settle(60, poll=5) == ([0.4, 1, 1], 10.0)
    monkeypatch.setattr(environment, "load_average", lambda: [2.0, 2, 2])
    assert environment.settle(12, poll=5) == ([2.0, 2, 2], 15.0)      # gave up: the load stays high


def test_the_table_says_what_others_used_and_the_settled_load():
    import table

    record = {"date": "2026-12-07T06:00:00", "machine": {"processor": "x", "cores": 2, "peak_gflops_per_core": {}},
              "ours": {"version": "0", "isa": "avx2"}, "numpy": {"version": "2", "blas": []}, "torch": None,
              "load_average": {"start": [0.3, 0.2, 0.1], "end": [1.1, 0.6, 0.3],
                               "settled": {"load": [0.45, 0.5, 0.3], "after_s": 35.0}},
              "others_during_run": {"cores": 0.04, "steal_share": 0.002, "seconds": 600},
              "repeats": 11, "clock": "auto", "results": []}
    text = table.describe(record)
    assert "at end 1.10 / 0.60 / 0.30 (this run's own threads included), 0.45 / 0.50 / 0.30 35 s after it" in text
    assert "Other processes kept 0.04 cores busy on average during the run" in text
    record["load_average"]["waited_before_s"] = 30.0
    assert "at start 0.30 / 0.20 / 0.10 (after 30 s of waiting for it to settle), at end" in table.describe(record)
    assert "stole 0.2% of CPU time" in text
    assert ("A quiet run (1-minute load under 0.5 at its start and, once its own threads stopped, "
            "at its end; other processes under half a core during it): yes.") in text
    record["others_during_run"]["cores"] = 0.6               # busy during the run, idle after it
    assert "during it): no." in table.describe(record)
    record["others_during_run"]["cores"] = 0.04
    record["load_average"]["settled"]["load"][0] = 0.7
    assert "during it): no." in table.describe(record)
    record["load_average"]["settled"] = None                 # an older record, or no --settle: no verdict
    assert "A quiet run" not in table.describe(record)
