"""Where JIT-built extensions live, what their cache key covers, and the build lock.

The key is a SHA-256 over everything that can change the built library:
the header and sources (text, and for files their paths, since error
messages and debug info name them), every local header they include
(found by following `#include "..."` and `#include <...>` through the
including file's folder and the include dirs; system headers are covered
by the compiler's version), the compiler's path and version, every flag,
cffi's version (it writes the wrapper's C), cextend's version and the
Python ABI.  Any change gives a new key, hence a new folder: a rebuild
never overwrites a library another process may have loaded.

Builds of one key serialise on flock(2) of a file in the key's folder.
The kernel drops an flock when its holder dies, however it dies, so a
killed builder never leaves a lock that hangs anyone.
"""
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

try:
    import fcntl
except ImportError:                 # Windows: no flock; builds are not serialised there
    fcntl = None

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
_COMPILERS_FILE = "compilers.json"


def cache_root(build_directory=None):
    """$CEXTEND_EXTENSIONS_DIR, else ~/.cache/cextend/extensions (or build_directory)."""
    if build_directory:
        return os.path.abspath(build_directory)
    root = os.environ.get("CEXTEND_EXTENSIONS_DIR")
    return os.path.abspath(os.path.expanduser(root or os.path.join("~", ".cache", "cextend", "extensions")))


def compiler_command():
    """The C compiler as an argument list: $CC, else the one Python was built with, else cc."""
    command = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shlex.split(command)


def compiler_identity(command, root):
    """(resolved path, version text) of the compiler.

    The version is asked once per compiler binary and kept in
    root/compilers.json under the binary's path and mtime, so a cached load
    spawns no process.
    """
    path = shutil.which(command[0])
    if path is None:
        raise FileNotFoundError("C compiler %r not found: install gcc or clang, or set CC" % command[0])
    path = os.path.realpath(path)
    stamp = "%s:%d" % (path, os.stat(path).st_mtime_ns)
    table_path = os.path.join(root, _COMPILERS_FILE)
    try:
        with open(table_path) as f:
            table = json.load(f)
    except (OSError, ValueError):
        table = {}
    if stamp not in table:
        result = subprocess.run(command + ["--version"], capture_output=True, text=True, env=compiler_env())
        table[stamp] = (result.stdout or result.stderr).strip().splitlines()[0] if result.returncode == 0 \
            else "unknown"
        _write_json_atomically(table_path, table)
    return path, table[stamp]


def compiler_env():
    """The environment for compilers: without a sanitizer runtime preloaded
    into this process (make sanitize), which crashes some compilers."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}


def _write_json_atomically(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = "%s.%d.tmp" % (path, os.getpid())
    with open(temporary, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(temporary, path)


def local_headers(files, texts, include_dirs):
    """Every header reachable through #include from the given texts that is
    found in a local folder: [(path, bytes)], sorted, each once."""
    found = {}
    pending = [(os.path.dirname(os.path.abspath(f)) if f else None, t) for f, t in zip(files, texts)]
    while pending:
        folder, text = pending.pop()
        for quote, name in _INCLUDE.findall(text):
            search = ([folder] if quote == '"' and folder else []) + list(include_dirs)
            for directory in search:
                candidate = os.path.abspath(os.path.join(directory, name))
                if os.path.isfile(candidate):
                    if candidate not in found:
                        with open(candidate, "rb") as f:
                            found[candidate] = f.read()
                        pending.append((os.path.dirname(candidate),
                                        found[candidate].decode("utf-8", "replace")))
                    break
    return sorted(found.items())


def include_dirs_in(flags):
    """-I folders named inside extra_compile_args."""
    dirs, flags = [], list(flags)
    for i, flag in enumerate(flags):
        if flag == "-I" and i + 1 < len(flags):
            dirs.append(flags[i + 1])
        elif flag.startswith("-I") and len(flag) > 2:
            dirs.append(flag[2:])
    return dirs


def python_abi():
    return "%s %s %s" % (sys.implementation.cache_tag, sysconfig.get_config_var("EXT_SUFFIX"),
                         sysconfig.get_platform())


def cache_key(parts):
    """A hex digest of parts (a JSON-able description; bytes are hashed by content)."""
    digest = hashlib.sha256()

    def feed(value):
        if isinstance(value, bytes):
            digest.update(b"b%d:" % len(value) + value)
        elif isinstance(value, (list, tuple)):
            digest.update(b"[%d" % len(value))
            for item in value:
                feed(item)
            digest.update(b"]")
        elif isinstance(value, dict):
            feed(sorted(value.items()))
        else:
            text = repr(value).encode()
            digest.update(b"s%d:" % len(text) + text)
    feed(parts)
    return digest.hexdigest()


@contextlib.contextmanager
def build_lock(folder, on_wait=None):
    """Hold an exclusive flock on folder/.lock; on_wait(pid) is called if we must wait."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)       # not inherited by compilers (PEP 446)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    on_wait(_read_pid(fd))
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.ftruncate(fd, 0)
            os.pwrite(fd, b"%d\n" % os.getpid(), 0)
        yield
    finally:
        os.close(fd)                # closing the descriptor releases the flock


def _read_pid(fd):
    try:
        return int(os.pread(fd, 32, 0).split()[0])
    except (OSError, ValueError, IndexError):
        return None
