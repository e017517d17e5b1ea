"""opcheck's test_sanitize: the op's C calls, replayed under ASan and UBSan.

Ops are often defined inside functions, so a subprocess cannot re-import
them.  Instead the sample runs once (forward and, if the op has autograd,
backward) while every call through a load()/load_inline() extension is
recorded (cextend.utils._jit_record); each extension it used is rebuilt
with -fsanitize=address,undefined (cached like any build); and _replay.py
re-issues the calls in a fresh Python with the ASan runtime preloaded,
every buffer malloc'ed at exactly its size.  The first sanitizer error is
reported as `kind at file:line in function` for the user's source line.
"""
import os
import pickle
import re
import subprocess
import sys
import tempfile

import numpy as np

from cextend.library import _samples
from cextend.library._isolate import TIME_LIMIT
from cextend.library._numeric_checks import has_floating_tensors, sample_as
from cextend.utils import _jit_cache, jit
from cextend.utils._jit_record import OutOfBoundsError, guarding, recording

_ASAN_HEAD = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer): ([\w-]+)")
_FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (\S+) (\S+?):(\d+)(?::\d+)?\s*$")
_UBSAN = re.compile(r"^(\S+?):(\d+):(?:\d+:)? runtime error: (.*)$")
_CALL = re.compile(r"^cextend-replay: call (\d+) of (\d+): (.*)$")
_FAULT = re.compile(r"^cextend-fault: (\w+) (READ|WRITE) at address 0x[0-9a-f]+ \((.*)\) by (.*)\+0x([0-9a-f]+)$")


class SanitizerError(RuntimeError):
    """A sanitizer found a memory or undefined-behaviour error in the op's C code."""

    __module__ = "cextend.library"


def sanitizer_runtimes(compiler):
    """Paths of libasan and libubsan for LD_PRELOAD, from the compiler that builds the extensions."""
    found = []
    for name in ("libasan.so", "libubsan.so"):
        result = subprocess.run(compiler + ["-print-file-name=%s" % name], capture_output=True, text=True,
                                env=_jit_cache.compiler_env())
        path = result.stdout.strip()
        if result.returncode == 0 and os.path.isabs(path) and os.path.exists(path):
            found.append(os.path.realpath(path))
    if not found or "asan" not in found[0]:
        raise RuntimeError("test_sanitize needs the AddressSanitizer runtime (libasan), which %s does not "
                           "provide; install gcc's libasan (e.g. apt install libasan8) or set CC" % compiler[0])
    return found


def record_sample(op, args, kwargs, stream=None):
    """Run the sample (forward and backward) under recording: as given, then with its floating
    tensors in the other float dtype, so both dtypes' kernels are replayed.  The converted run
    may fail (an op that refuses that dtype); the sample's own run may not."""
    with recording(stream) as record:
        positional, keyword_only = _samples.copy_args(op, args, kwargs)
        _samples.run(op, positional, keyword_only)
        if has_floating_tensors(op, args, kwargs):
            for dtype in (np.float32, np.float64):
                if not _sample_is(op, args, kwargs, dtype):
                    try:
                        _samples.run(op, *sample_as(op, args, kwargs, dtype))
                    except OutOfBoundsError:
                        raise
                    except Exception:
                        pass
    return record


def _sample_is(op, args, kwargs, dtype):
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    found = []
    for value in list(positional) + list(keyword_only.values()):
        _samples.map_tensors(value, lambda t, _n=None: found.append(_samples.host(t).dtype == dtype))
    return all(found)


def check_sanitize(op, args, kwargs, mode="asan", explicit=True, **_):
    """test_sanitize in this process: record the sample's calls (on guarded buffers), replay them."""
    with guarding():
        record = record_sample(op, args, kwargs)
    extensions, numbers, calls = {}, {}, []
    for call in record.calls:
        extension = call["extension"]
        if id(extension) not in numbers:
            numbers[id(extension)] = len(numbers)
            extensions[numbers[id(extension)]] = extension
        calls.append((numbers[id(extension)], call["symbol"], call["args"], call["description"],
                      call["problems"]))
    replay(op, extensions, calls, mode, explicit)


def replay(op, extensions, calls, mode, explicit):
    """Replay recorded calls in a fresh process: under ASan + UBSan (mode "asan"), with guard pages
    around every buffer ("guard"), or whichever this machine can ("auto").  Raises on a finding.

    calls: (extension number, symbol, args, description, problems).  A call that cannot be replayed
    faithfully (a raw pointer argument, say) fails an explicit request; by default it is left out
    (it ran on guarded buffers where it could)."""
    problems = ["%s: %s" % (c[3], p) for c in calls for p in c[4]]
    if problems and explicit:
        raise RuntimeError("test_sanitize cannot replay %s faithfully: %s" % (op._qualname, problems[0]))
    calls = [c[:4] for c in calls if not c[4]]
    if not calls:
        if explicit:
            raise RuntimeError("%s made no C calls through a cextend.utils.ffi.load()/load_inline() "
                               "extension; test_sanitize replays those calls, so build the op's C with load "
                               "or load_inline" % op._qualname)
        return
    if mode == "auto":
        mode = "asan" if _has_sanitizer_runtimes() else "guard"
    if mode == "asan":
        variants = {k: e.variant(sanitize=True) for k, e in extensions.items()}
        passes, env = ["asan"], _replay_env()
    else:
        # -g for addr2line's file:line; not a sanitizer build, so no runtime is needed.
        variants = {k: e.variant(compile_args=list(e.compile_args) + ["-g"]) for k, e in extensions.items()}
        passes, env = ["guard-end", "guard-start"], _jit_cache.compiler_env()
    used = {c[0] for c in calls}
    builds = {k: jit.build(v) for k, v in variants.items() if k in used}
    libraries = {k: (os.path.basename(info.library).split(".")[0], info.library) for k, info in builds.items()}
    first = builds[min(builds)]
    log_path = os.path.join(first.folder, "%s-%s.log" % ("sanitize" if mode == "asan" else "guard",
                                                         op._qualname.replace("::", "-")))
    outputs = []
    for replay_mode in passes:
        job = {"libraries": libraries, "calls": calls, "mode": replay_mode}
        with tempfile.TemporaryDirectory(prefix="cextend-replay-") as folder:
            job_path = os.path.join(folder, "job.pickle")
            with open(job_path, "wb") as f:
                pickle.dump(job, f)
            try:
                result = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "_replay.py"),
                                         job_path], capture_output=True, text=True, env=env, timeout=TIME_LIMIT)
            except subprocess.TimeoutExpired as expired:
                raise SanitizerError("the %s replay of %s's C calls ran past its time limit of %g s "
                                     "(CEXTEND_OPCHECK_TIME_LIMIT); its last output: %s" % (
                                         replay_mode, op._qualname, TIME_LIMIT,
                                         " | ".join(_text(expired.stderr).splitlines()[-2:]))) from None
        output = result.stdout + result.stderr
        outputs.append("== replay %s: status %d\n%s" % (replay_mode, result.returncode, output))
        with _jit_cache.create_private(log_path) as log:       # a symlink planted there is not followed
            log.write("\n".join(outputs))
        if result.returncode != 0:
            if mode == "asan":
                raise SanitizerError(describe_report(output, result.returncode, builds.values(), log_path))
            raise SanitizerError(describe_fault(output, result.returncode, builds.values(), log_path))


_runtimes_found = {}


def _text(output):
    return output.decode("utf-8", "replace") if isinstance(output, bytes) else (output or "")


def _has_sanitizer_runtimes():
    compiler = tuple(_jit_cache.compiler_command())
    if compiler not in _runtimes_found:
        try:
            sanitizer_runtimes(list(compiler))
            _runtimes_found[compiler] = True
        except (RuntimeError, OSError):
            _runtimes_found[compiler] = False
    return _runtimes_found[compiler]


def _replay_env():
    env = _jit_cache.compiler_env()
    env.update(LD_PRELOAD=" ".join(sanitizer_runtimes(_jit_cache.compiler_command())),
               ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1", PYTHONMALLOC="malloc")
    return env


def describe_report(output, status, builds, log_path):
    """`kind at file:line in function`, the call being replayed, and the log's path."""
    lines = output.splitlines()
    calls = [m for m in map(_CALL.match, lines) if m]
    during = ("\nwhile replaying call %s of %s: %s" % calls[-1].groups()) if calls else ""
    folders = [info.folder for info in builds]
    sources = _user_files(builds)
    for i, line in enumerate(lines):
        ubsan = _UBSAN.match(line.strip())
        if ubsan:
            return ("UndefinedBehaviorSanitizer: %s at %s:%s%s\nsanitizer log: %s"
                    % (ubsan.group(3), _shown(ubsan.group(1), folders), ubsan.group(2), during, log_path))
        head = _ASAN_HEAD.search(line)
        if head:
            access = lines[i + 1].strip() if i + 1 < len(lines) and not lines[i + 1].lstrip().startswith("#") \
                else ""
            frame = _first_user_frame(lines[i + 1:], sources)
            where = " at %s:%s in %s" % (_shown(frame[1], folders), frame[2], frame[0]) if frame else ""
            access = re.sub(r"^==\d+==", "", access).split(" at 0x")[0].split(" thread")[0].strip()
            detail = " (%s)" % access if access else ""
            return "%s: %s%s%s%s\nsanitizer log: %s" % (head.group(1), head.group(2), where, detail, during,
                                                       log_path)
    return ("the sanitized replay failed with status %d and no sanitizer report%s\nlast output: %s\n"
            "sanitizer log: %s" % (status, during, " | ".join(lines[-3:]), log_path))


def describe_fault(output, status, builds, log_path):
    """A guard-page replay's fault as `READ/WRITE n bytes past ... at file:line in function`."""
    lines = output.splitlines()
    calls = [m for m in map(_CALL.match, lines) if m]
    during = ("\nwhile replaying call %s of %s: %s" % calls[-1].groups()) if calls else ""
    for line in lines:
        fault = _FAULT.match(line.strip())
        if fault:
            signal_name, access, buffer, library, offset = fault.groups()
            where = _addr2line(library, offset, [info.folder for info in builds])
            return ("memory error: %s %s%s (%s against a guard page)%s\nreplay log: %s"
                    % (access, buffer, where, signal_name, during, log_path))
    return ("the guarded replay failed with status %d%s\nlast output: %s\nreplay log: %s"
            % (status, during, " | ".join(lines[-3:]), log_path))


def _addr2line(library, offset, folders):
    """' at file:line in function' for an instruction of library, or '' without addr2line or -g."""
    try:
        result = subprocess.run(["addr2line", "-f", "-e", library, "0x" + offset], capture_output=True,
                                text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return " in %s+0x%s" % (os.path.basename(library), offset)
    found = result.stdout.split("\n")
    if result.returncode != 0 or len(found) < 2 or found[1].startswith("??"):
        return " in %s+0x%s" % (os.path.basename(library), offset)
    path, _, line = found[1].split(" ")[0].rpartition(":")
    return " at %s:%s in %s" % (_shown(path, folders), line, found[0])


def _user_files(builds):
    files = set()
    for info in builds:
        for path, name, _ in info.extension.headers + info.extension.sources:
            files.add(os.path.realpath(path) if path else os.path.join(os.path.realpath(info.folder), name))
        # load_inline's literals are compiled as lines of the .py file that holds them (#line)
        files.update(os.path.realpath(path) for path, _ in info.extension.origins.values())
    return files


def _first_user_frame(lines, sources):
    """(function, file, line) of the first stack frame in the user's sources (else any with a file)."""
    frames = []
    for line in lines:
        match = _FRAME.match(line)
        if match is None:
            if frames and not line.strip():
                break
            continue
        frames.append((match.group(2), match.group(3), match.group(4)))
    for frame in frames:
        if os.path.realpath(frame[1]) in sources:
            return frame
    for frame in frames:
        if "/" in frame[1] or frame[1].endswith((".c", ".h")):
            return frame
    return None


def _shown(path, folders):
    """load_inline's sources (in the build folder) by their short name; files as given."""
    real = os.path.realpath(path)
    for folder in folders:
        if os.path.dirname(real) == os.path.realpath(folder):
            return os.path.basename(real)
    return path
