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

from cextend.library import _samples
from cextend.utils import _jit_cache, jit
from cextend.utils._jit_record import recording

_ASAN_HEAD = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer): ([\w-]+)")
_FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (\S+) (\S+?):(\d+)(?::\d+)?\s*$")
_UBSAN = re.compile(r"^(\S+?):(\d+):(?:\d+:)? runtime error: (.*)$")
_CALL = re.compile(r"^cextend-replay: call (\d+) of (\d+): (.*)$")


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


def check_sanitize(op, args, kwargs, **_):
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    with recording() as record:
        _samples.run(op, positional, keyword_only)
    if not record.calls:
        raise RuntimeError("%s made no C calls through a cextend.utils.ffi.load()/load_inline() extension; "
                           "test_sanitize replays those calls, so build the op's C with load or load_inline"
                           % op._qualname)
    if record.problems:
        raise RuntimeError("test_sanitize cannot replay %s faithfully: %s" % (op._qualname, record.problems[0]))
    libraries, builds = {}, {}
    for call in record.calls:
        extension = call["extension"]
        if id(extension) not in builds:
            info = jit.build(extension.variant(sanitize=True))
            builds[id(extension)] = info
            libraries[len(libraries)] = (os.path.basename(info.library).split(".")[0], info.library)
    keys = {ident: k for k, ident in enumerate(builds)}
    job = {"libraries": libraries,
           "calls": [(keys[id(c["extension"])], c["symbol"], c["args"], c["description"]) for c in record.calls]}
    first = next(iter(builds.values()))
    log_path = os.path.join(first.folder, "sanitize-%s.log" % op._qualname.replace("::", "-"))
    with tempfile.TemporaryDirectory(prefix="cextend-sanitize-") as folder:
        job_path = os.path.join(folder, "job.pickle")
        with open(job_path, "wb") as f:
            pickle.dump(job, f)
        result = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "_replay.py"), job_path],
                                capture_output=True, text=True, env=_replay_env(), timeout=600)
    output = result.stdout + result.stderr
    with open(log_path, "w") as log:
        log.write(output)
    if result.returncode != 0:
        raise SanitizerError(describe_report(output, result.returncode, builds.values(), log_path))


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


def _user_files(builds):
    files = set()
    for info in builds:
        for path, name, _ in info.extension.headers + info.extension.sources:
            files.add(os.path.realpath(path) if path else os.path.join(os.path.realpath(info.folder), name))
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
