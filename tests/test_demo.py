"""The demo (`make demo`, `make demo-cnn`): it learns, repeats itself under a
seed, and prints output that reads well in a terminal and in a log.

The kernels give the same bits for any thread count, so the runs here use one
thread (on a loaded 2-core machine OpenMP threads mostly wait on each other).
"""
import fcntl
import io
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios

import pytest

import cextend as cx
from cextend import demo
from cextend.demo import mlp, progress

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def run_demo(*argv):
    out = io.StringIO()
    status = demo.main(list(argv), stream=out)
    return status, out.getvalue()


def accuracy_of(output):
    return float(re.search(r"test accuracy: ([\d.]+)%", output).group(1))


def epoch_lines(output):
    """The per-epoch lines without their wall-clock times."""
    return [re.sub(r"\d+\.\d\d s", "", line) for line in output.splitlines()
            if re.search(r"training epoch +\d+/", line)]


def assert_short_lines(output, limit=80):
    assert "\r" not in output
    long = [line for line in output.splitlines() if len(line) >= limit]
    assert not long, long


def test_cnn_demo_reaches_97_percent_and_compares_with_torch():
    """The full default run of `python -m cextend.demo --model cnn`, one timing round."""
    status, output = run_demo("--model", "cnn", "--threads", "1", "--timing-rounds", "1")
    assert status == 0, output
    assert accuracy_of(output) >= 97.0, output
    assert len(epoch_lines(output)) == 12
    for name in ("conv2d", "batch_norm", "max_pool2d", "linear"):
        assert re.search(r"%s .*pass +pass" % name, output), output
    if HAVE_TORCH:
        assert re.search(r"torch/cextend = \d+\.\d\d  \(rounds: \d+\.\d\d to \d+\.\d\d\)", output), output
    else:
        assert "torch is not installed" in output
    assert_short_lines(output)


def test_cnn_demo_is_reproducible_for_any_thread_count():
    runs = [run_demo("--model", "cnn", "--epochs", "2", "--skip-checks", "--timing-rounds", "0",
                     "--min-accuracy", "50", "--threads", threads) for threads in ("1", "2", "1")]
    assert [status for status, _ in runs] == [0, 0, 0]
    lines = [epoch_lines(output) for _, output in runs]
    assert len(lines[0]) == 2 and lines[0] == lines[1] == lines[2]


def test_cnn_demo_fails_below_its_target_with_check():
    status, output = run_demo("--model", "cnn", "--epochs", "1", "--skip-checks", "--timing-rounds", "0",
                              "--threads", "1", "--batch-size", "512", "--check")
    assert status == 1 and "is below the target of 97.0%" in output, output


def test_a_short_run_prints_its_accuracy_and_passes_without_check():
    """`--epochs 3` is a quick look, not a failed demo: the accuracy and a note, status 0."""
    status, output = run_demo("--model", "cnn", "--epochs", "1", "--skip-checks", "--timing-rounds", "0",
                              "--threads", "1", "--batch-size", "512")
    assert status == 0, output
    assert accuracy_of(output) < 97.0
    assert "a short run: the 97.0% target takes 12 epochs (--check fails below it)" in output, output
    assert "is below the target" not in output
    assert_short_lines(output)


def test_a_full_length_run_fails_below_its_target_without_check(monkeypatch):
    """The default length (here made one epoch) is the demo's claim: below the target it fails."""
    monkeypatch.setitem(mlp.DEFAULTS, "epochs", 1)
    status, output = run_demo("--skip-checks", "--timing-rounds", "0", "--threads", "1", "--batch-size", "512")
    assert status == 1 and "is below the target of 96.0%" in output, output
    status, output = run_demo("--skip-checks", "--timing-rounds", "0", "--threads", "1", "--batch-size", "512",
                              "--min-accuracy", "1")
    assert status == 0, output


@pytest.mark.parametrize("torch_missing", [False, True], ids=["no-torch flag", "torch not installed"])
def test_cnn_demo_without_torch_says_why(torch_missing, monkeypatch):
    if torch_missing:
        monkeypatch.setitem(sys.modules, "torch", None)
    status, output = run_demo("--model", "cnn", "--epochs", "1", "--skip-checks", "--threads", "1",
                              "--min-accuracy", "0", *([] if torch_missing else ["--no-torch"]))
    assert status == 0, output
    why = "torch is not installed" if torch_missing else "--no-torch leaves torch out"
    assert "3. (%s: no epoch-time comparison)" % why in output, output


def test_mlp_demo_says_why_the_torch_row_is_missing(monkeypatch):
    status, output = run_demo("--epochs", "1", "--skip-checks", "--threads", "1", "--timing-rounds", "1",
                              "--no-torch")
    assert status == 0 and "(no torch row: --no-torch leaves torch out)" in output, output
    monkeypatch.setitem(sys.modules, "torch", None)
    status, output = run_demo("--epochs", "1", "--skip-checks", "--threads", "1", "--timing-rounds", "1")
    assert status == 0 and "(no torch row: torch is not installed)" in output, output
    assert "torch/cextend" not in output
    assert_short_lines(output)


def test_busy_machine_runs_on_the_idle_cores():
    assert demo.busy_threads(2, 2, 0.2) == 2            # idle: every core
    assert demo.busy_threads(2, 2, 0.8) == 1            # another process on most of a core
    assert demo.busy_threads(2, 2, 3.0) == 1            # at least one
    assert demo.busy_threads(16, 16, 4.0) == 12
    assert demo.busy_threads(4, 16, 4.0) == 4           # never more than asked
    assert demo.busy_threads(8, 8, None) == 8           # no load average: all


def test_demo_on_a_busy_machine_uses_one_thread_and_says_so(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(demo, "_cores", lambda: 2)
    monkeypatch.setattr(demo, "_load_average", lambda: 1.7)
    before = cx.get_num_threads()
    cx.set_num_threads(2)
    try:
        status, output = run_demo("--epochs", "1", "--skip-checks", "--timing-rounds", "0")
        assert status == 0, output
        lines = output.splitlines()
        assert re.match(r"cextend \S+: C kernels on \w+, 1 thread\(s\)$", lines[0]), lines[:2]
        assert lines[1] == "(1 thread: the machine is busy, load 1.7 on 2 cores; --threads N overrides)"
        assert cx.get_num_threads() == 2                 # main() leaves the caller's count as it was
        status, output = run_demo("--epochs", "1", "--skip-checks", "--timing-rounds", "0", "--threads", "2")
        assert status == 0 and ", 2 thread(s)" in output and "busy" not in output, output
        monkeypatch.setattr(demo, "_load_average", lambda: 0.1)
        status, output = run_demo("--epochs", "1", "--skip-checks", "--timing-rounds", "0")
        assert status == 0 and ", 2 thread(s)" in output and "busy" not in output, output
    finally:
        cx.set_num_threads(before)


def test_ctrl_c_prints_one_line_and_no_traceback():
    # A shell's background job inherits SIGINT ignored, and Python then installs no handler for it:
    # the demo gets the default disposition back, as a terminal would give it.
    process = subprocess.Popen([sys.executable, "-m", "cextend.demo", "--epochs", "500", "--skip-checks",
                                "--threads", "1", "--timing-rounds", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for line in process.stdout:
            if "training epoch" in line:         # in the training loop
                break
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert err == "cextend.demo: interrupted\n", err


def test_without_tqdm_a_terminal_gets_plain_lines(monkeypatch):
    """tqdm comes with the demo extra; without it the demo still reports each epoch."""
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(progress, "tqdm", None)
    out = Terminal()
    bar = progress.EpochProgress(2, out)
    bar.update(1, 0.5, 1.25, 0.5, 0.25)
    bar.update(2, 0.5, 0.75, 0.75, 0.5)
    bar.close()
    assert out.getvalue().splitlines() == ["   training epoch 1/2   0.50 s  loss 1.2500  train  50.0%  test  25.0%",
                                           "   training epoch 2/2   0.50 s  loss 0.7500  train  75.0%  test  50.0%"]


def test_mlp_demo_learns_and_is_reproducible():
    runs = [run_demo("--epochs", "12", "--skip-checks", "--threads", "1", "--timing-rounds", "0")
            for _ in range(2)]
    assert [status for status, _ in runs] == [0, 0]
    assert accuracy_of(runs[0][1]) >= 95.0, runs[0][1]
    assert epoch_lines(runs[0][1]) == epoch_lines(runs[1][1]) and len(epoch_lines(runs[0][1])) == 12


def test_mlp_demo_times_numpy_and_torch_interleaved():
    status, output = run_demo("--epochs", "1", "--threads", "1", "--timing-rounds", "2")
    assert status == 0, output
    assert re.search(r"numpy/cextend = \d+\.\d\d  \(rounds: \d+\.\d\d to \d+\.\d\d\)", output), output
    assert ("torch/cextend = " in output) == HAVE_TORCH
    assert ("(no torch row: torch is not installed)" in output) == (not HAVE_TORCH)
    assert re.search(r"LinearFunction .*pass +pass", output)
    assert_short_lines(output)


def test_demo_in_a_pipe_prints_one_short_line_per_epoch():
    """`make demo | cat`, a CI log: no carriage returns, nothing 80 columns or wider."""
    result = subprocess.run([sys.executable, "-m", "cextend.demo", "--epochs", "3", "--threads", "1",
                             "--timing-rounds", "1"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    assert len(epoch_lines(result.stdout)) == 3
    assert_short_lines(result.stdout)


@pytest.mark.parametrize("columns", [80, 40])
def test_progress_bar_fits_the_terminal(columns):
    """In a terminal the bar redraws in place, never wider than the terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    process = subprocess.Popen([sys.executable, "-m", "cextend.demo", "--epochs", "4", "--skip-checks",
                                "--timing-rounds", "0", "--threads", "1"],
                               stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:          # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert process.wait(timeout=300) == 0
    text = b"".join(chunks).decode()
    bar = [segment for line in text.split("\n") for segment in line.split("\r") if "training:" in segment]
    assert len(bar) >= 2 and any("4/4" in segment for segment in bar), text
    assert max(len(segment) for segment in bar) <= columns, bar
    assert "training epoch" not in text


def test_make_has_a_cnn_demo_target():
    with open(os.path.join(ROOT, "Makefile")) as f:
        makefile = f.read()
    assert re.search(r"^demo-cnn: build\n\t\$\(PY\) -m cextend\.demo --model cnn$", makefile, re.M)
