"""fork() waits for the process's other threads: cextend._threads_at_fork.

A child forked while another thread held an allocator's lock (gcc 12's
ASan runtime has no fork handler) waits on it forever; opcheck's isolated
child hung that way in CI.  These tests check the waits themselves with
threads whose state is known: blocked on an event (idle), or inside one
long GIL-free call (running: hashlib's pbkdf2_hmac releases the GIL).
"""
import hashlib
import os
import threading
import time

import pytest

from cextend import _backend
from cextend._threads_at_fork import wait_until_exited, wait_until_others_idle
from cextend.library import _isolate

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="the waits read /proc/self/task, which this system lacks")


def _iterations_for(seconds):
    """pbkdf2 iterations that take about `seconds` on this machine, now."""
    start = time.perf_counter()
    hashlib.pbkdf2_hmac("sha256", b"key", b"salt", 20000)
    per_iteration = max(time.perf_counter() - start, 1e-6) / 20000
    return max(20000, int(seconds / per_iteration))


class Busy(threading.Thread):
    """A thread that runs one GIL-free computation of about `seconds`, noting when it ran."""

    def __init__(self, seconds):
        super().__init__(daemon=True)
        self.iterations = _iterations_for(seconds)
        self.started = threading.Event()
        self.began = self.ended = None

    def run(self):
        self.began = time.monotonic()
        self.started.set()
        hashlib.pbkdf2_hmac("sha256", b"key", b"salt", self.iterations)
        self.ended = time.monotonic()

    def start_computing(self):
        self.start()
        self.started.wait()
        # Leave it the GIL to get into the call: a thread waiting for the GIL is rightly idle.
        time.sleep(0.05)


def _task_exists(native_id):
    return os.path.exists("/proc/self/task/%d" % native_id)


def test_idle_threads_are_not_waited_for():
    release = threading.Event()
    sleepers = [threading.Thread(target=release.wait, daemon=True) for _ in range(3)]
    for thread in sleepers:
        thread.start()
    time.sleep(0.05)        # each reaches its wait
    try:
        start = time.monotonic()
        wait_until_others_idle(limit=5.0)
        assert time.monotonic() - start < 2.5     # waiting for them would have taken the whole limit
    finally:
        release.set()
        for thread in sleepers:
            thread.join()


def test_a_running_thread_is_waited_for():
    busy = Busy(0.4)
    busy.start_computing()
    wait_until_others_idle(limit=30.0)
    returned = time.monotonic()
    busy.join()
    # Returning before the computation was most of the way through means it was not waited for.
    assert returned >= busy.began + 0.5 * (busy.ended - busy.began)


def test_a_thread_that_keeps_running_is_waited_for_at_most_the_limit():
    busy = Busy(1.5)
    busy.start_computing()
    start = time.monotonic()
    wait_until_others_idle(limit=0.2)
    waited = time.monotonic() - start
    busy.join()
    assert 0.2 <= waited < busy.ended - start


def test_wait_until_exited_returns_once_the_thread_has_left_the_process():
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    thread.start()
    timer = threading.Timer(0.2, release.set)
    start = time.monotonic()        # before the timer starts: the thread cannot leave before start + 0.2 s
    timer.start()
    wait_until_exited([thread.native_id], limit=30.0)
    assert time.monotonic() - start >= 0.19
    assert not _task_exists(thread.native_id)
    timer.join()
    thread.join()


def test_wait_until_exited_gives_up_after_its_limit():
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    thread.start()
    try:
        start = time.monotonic()
        wait_until_exited([thread.native_id], limit=0.1)
        waited = time.monotonic() - start
        assert 0.1 <= waited < 2.0
        assert _task_exists(thread.native_id)
    finally:
        release.set()
        thread.join()


def test_wait_until_exited_ignores_threads_already_gone_and_unknown_ids():
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    start = time.monotonic()
    wait_until_exited([None, thread.native_id], limit=5.0)     # None: a thread that never started
    assert time.monotonic() - start < 2.5
    assert not _task_exists(thread.native_id)


def test_set_num_threads_returns_after_its_probe_threads_have_left(monkeypatch):
    waited_for = []

    def recording_wait(native_ids, limit=1.0):
        waited_for.extend(native_ids)
        wait_until_exited(native_ids, limit)

    monkeypatch.setattr(_backend, "wait_until_exited", recording_wait)
    monkeypatch.setattr(_backend, "_threads_started", [1])     # as if no probe had run in this process
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    before = _backend.get_num_threads()
    try:
        _backend.set_num_threads(3)
    finally:
        _backend.set_num_threads(before)
    assert len(waited_for) == 2 and all(isinstance(n, int) for n in waited_for)
    assert not any(_task_exists(n) for n in waited_for)


@pytest.mark.skipif(not _isolate.fork_available(), reason="no fork on this platform")
def test_run_in_child_forks_only_after_a_running_thread_stops():
    busy = Busy(0.4)
    busy.start_computing()
    forked_at = _isolate.run_in_child(time.monotonic)      # CLOCK_MONOTONIC: one clock for parent and child
    busy.join()
    assert forked_at >= busy.began + 0.5 * (busy.ended - busy.began)
