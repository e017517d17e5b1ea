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
import struct
import subprocess
import sys
import termios

import pytest

from cextend import demo

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


def test_cnn_demo_fails_below_its_target():
    status, output = run_demo("--model", "cnn", "--epochs", "1", "--skip-checks", "--timing-rounds", "0",
                              "--threads", "1", "--batch-size", "512")
    assert status == 1 and "is below the target of 97.0%" in output, output


def test_cnn_demo_without_torch_says_so():
    status, output = run_demo("--model", "cnn", "--epochs", "1", "--skip-checks", "--threads", "1",
                              "--min-accuracy", "0", "--no-torch")
    assert status == 0, output
    assert "(torch is not installed: no epoch-time comparison)" in output


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
