"""Where JIT-built extensions live, what their cache key covers, and the build lock.

The key is a SHA-256 over everything known before compiling that can change
the built library: the header and sources (text, and for files their paths,
since error messages and debug info name them), every local header they
include (followed through `#include "..."` and `#include <...>` in the
including file's folder, the -I/-iquote/-isystem/-idirafter folders and the
folders of $CPATH and its kin; -include files too), the compiler's path and
version, every flag, the environment variables the compiler and linker read,
the content of the files the link names (objects, static libraries, linker
scripts, -l libraries found through -L and $LIBRARY_PATH), cffi's version
(it writes the wrapper's C), cextend's version and the Python ABI.

What the key cannot see (a computed `#include MACRO`, a header found in a
folder the scan does not know) the compiler can: every build stores the
compiler's own list of the files it read (-MD), with their hashes, and a
cached build is reused only while they are unchanged (see jit.py).

The cache must be the user's alone: a library in it is loaded into the
process, so a folder another user can write is a way to run their code in
yours.  The root and each folder cextend uses in it must be owned by the
current user and writable by no one else (UnsafeCacheError otherwise); the
folders cextend creates are 0700 and the files it reads or writes there are
opened without following symlinks.

Builds of one key serialise on flock(2) of a file in the key's folder.
The kernel drops an flock when its holder dies, however it dies, so a
killed builder never leaves a lock that hangs anyone; whoever takes the
lock next removes the temporaries it left.
"""
import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
import time

try:
    import fcntl
except ImportError:                 # Windows: no flock; builds are not serialised there
    fcntl = None

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
_COMPILERS_FILE = "compilers.json"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

# Variables gcc and clang read that change what they produce (search paths,
# the tools they run, the linker's rpath, clang's extra options).
COMPILER_ENV_VARS = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH", "GCC_EXEC_PREFIX",
                     "COMPILER_PATH", "LIBRARY_PATH", "LD_RUN_PATH", "CCC_OVERRIDE_OPTIONS", "SDKROOT",
                     "MACOSX_DEPLOYMENT_TARGET")
NVCC_ENV_VARS = ("NVCC", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN")
# A temporary left by a process that is alive but has not finished it in this long is abandoned.
_STALE_TEMPORARY_SECONDS = 6 * 3600
_TEMPORARY = re.compile(r"\.(\d+)(?:\.[0-9a-f]+)?\.tmp$")


class UnsafeCacheError(PermissionError):
    """The extension cache (or a folder in it) could be written by another user."""


def cache_root(build_directory=None):
    """$CEXTEND_EXTENSIONS_DIR, else ~/.cache/cextend/extensions (or build_directory)."""
    if build_directory:
        return os.path.abspath(build_directory)
    root = os.environ.get("CEXTEND_EXTENSIONS_DIR")
    return os.path.abspath(os.path.expanduser(root or os.path.join("~", ".cache", "cextend", "extensions")))


# -- the cache belongs to this user ---------------------------------------------------------

def secure_root(root):
    """Create root (0700, and any missing parents) and refuse it unless only this user can write it.

    Only the root is checked, not its parents: /tmp or a shared /scratch may
    hold a private root.  A root that is a symlink must itself be this user's
    (or root's) and point at a folder of this user's.
    """
    _make_private_folders(root)
    info = os.lstat(root)
    if stat.S_ISLNK(info.st_mode):
        if hasattr(os, "geteuid") and info.st_uid not in (os.geteuid(), 0):
            raise UnsafeCacheError(_unsafe_message(root, "it is a symlink made by %s" % _user(info.st_uid)))
        target = os.path.realpath(root)
        _check_private_folder(target, os.stat(target), shown="%s (the folder %s points to)" % (target, root))
    else:
        _check_private_folder(root, info)
    return root


def secure_folder(path):
    """Create path (0700) in a secured root, or refuse the folder found there unless it is this user's."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeCacheError(_unsafe_message(path, "it is a symlink, and cextend never makes one there"))
    _check_private_folder(path, info)
    return path


def _make_private_folders(path):
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):       # another process made it: checked after
            os.mkdir(folder, 0o700)


def _check_private_folder(path, info, shown=None):
    """Refuse the folder at path (described as shown in the message) unless only this user can write it."""
    shown = shown or path
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeCacheError("cextend cannot use %s as an extension cache folder: it is not a folder; choose "
                               "another with CEXTEND_EXTENSIONS_DIR (or build_directory=)" % shown)
    if not hasattr(os, "geteuid"):      # Windows: no uid or mode bits to go by (its ACLs are another story)
        return
    if info.st_uid != os.geteuid():
        raise UnsafeCacheError(_unsafe_message(shown, "it belongs to %s, not to you (%s)" % (
            _user(info.st_uid), _user(os.geteuid()))))
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeCacheError(_unsafe_message(shown, "group or others can write to it (mode %03o)" % (
            info.st_mode & 0o777), chmod=path))


def _unsafe_message(shown, why, chmod=None):
    advice = "run `chmod go-w %s`, or " % shlex.quote(chmod) if chmod else ""
    return ("cextend will not use the extension cache folder %s: %s, so another user could put a library "
            "there that your process would load. To fix it, %schoose a folder of your own with "
            "CEXTEND_EXTENSIONS_DIR (or build_directory=)" % (shown, why, advice))


def _user(uid):
    try:
        import pwd
        return "%s (uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except (ImportError, KeyError):
        return "uid %d" % uid


# -- files in the cache: never through a symlink --------------------------------------------

def read_private(path):
    """The bytes of a file in the cache; OSError (ELOOP) if it is a symlink."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def read_json(path):
    """A JSON file in the cache, or None if it is missing, unreadable, a symlink or not JSON."""
    try:
        return json.loads(read_private(path))
    except (OSError, ValueError):
        return None


def write_atomically(path, data):
    """Write bytes (or str) to path through a private temporary renamed over it: a reader sees the
    old file or the new one, never a part, and a symlink planted at path is replaced, not followed."""
    if isinstance(data, str):
        data = data.encode()
    temporary = temporary_name(path)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def remove(path):
    """Unlink path if it is there (a symlink itself, never what it points to)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def create_private(path):
    """A new, empty file at path for writing (a file or symlink already there is removed first)."""
    remove(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    return os.fdopen(fd, "w")


def temporary_name(path):
    """path.PID.RANDOM.tmp: unique across threads, and its pid says whether its writer is alive."""
    return "%s.%d.%s.tmp" % (path, os.getpid(), secrets.token_hex(4))


def remove_stale_temporaries(folder):
    """Remove the *.tmp files a killed build left in folder (the caller holds folder's lock).

    A temporary is stale when its writer (the pid in its name) is dead, or
    it is this process's (we hold the lock, so none of our threads is
    writing it), or it is older than some hours (a pid reused, or another
    machine's process on a shared file system).
    """
    now = time.time()
    for entry in os.scandir(folder):
        match = _TEMPORARY.search(entry.name)
        if match is None:
            continue
        pid = int(match.group(1))
        try:
            old = now - entry.stat(follow_symlinks=False).st_mtime > _STALE_TEMPORARY_SECONDS
        except FileNotFoundError:
            continue
        if pid == os.getpid() or old or not _alive(pid):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:         # someone else's process
        return True
    return True


# -- the compiler ----------------------------------------------------------------------------

def compiler_command():
    """The C compiler as an argument list: $CC, else the one Python was built with, else cc."""
    command = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shlex.split(command)


def compiler_identity(command, root):
    """(resolved path, version text, its built-in system include folders) of the compiler.

    Asked once per compiler binary and kept in root/compilers.json under the
    binary's path and mtime, so a cached load spawns no process.
    """
    path = shutil.which(command[0])
    if path is None:
        raise FileNotFoundError("C compiler %r not found: install gcc or clang, or set CC" % command[0])
    path = os.path.realpath(path)
    stamp = "%s:%d" % (path, os.stat(path).st_mtime_ns)
    table_path = os.path.join(root, _COMPILERS_FILE)
    table = read_json(table_path)
    if not isinstance(table, dict):
        table = {}
    entry = table.get(stamp)
    if not (isinstance(entry, dict) and isinstance(entry.get("version"), str)
            and isinstance(entry.get("system_include_dirs"), list)):
        entry = {"version": _compiler_version(command), "system_include_dirs": _system_include_dirs(command)}
        table[stamp] = entry
        write_atomically(table_path, json.dumps(table, indent=1, sort_keys=True))
    return path, entry["version"], entry["system_include_dirs"]


def _compiler_version(command):
    result = subprocess.run(command + ["--version"], capture_output=True, text=True, env=compiler_env())
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0] if result.returncode == 0 and lines else "unknown"


def _system_include_dirs(command):
    """The compiler's built-in <...> folders (`cc -E -v`), without those the environment adds."""
    env = {k: v for k, v in compiler_env().items() if k not in COMPILER_ENV_VARS}
    result = subprocess.run(command + ["-E", "-v", "-x", "c", os.devnull], capture_output=True, text=True,
                            env=env)
    dirs, inside = [], False
    for line in result.stderr.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
        elif line.startswith("End of search list"):
            break
        elif inside and line.startswith(" "):
            dirs.append(os.path.realpath(line.strip().replace(" (framework directory)", "")))
    return dirs


def compiler_env():
    """The environment for compilers: without a sanitizer runtime preloaded
    into this process (make sanitize), which crashes some compilers."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}


def environment_inputs(with_cuda=False):
    """The compiler-read environment variables that are set: {name: value}."""
    names = COMPILER_ENV_VARS + (NVCC_ENV_VARS if with_cuda else ())
    return {name: os.environ[name] for name in names if name in os.environ}


# -- what the key covers ---------------------------------------------------------------------

def local_headers(files, texts, quote_dirs, include_dirs, forced=()):
    """Every header reachable through #include from the given texts (and the forced -include files)
    that is found in a local folder: [(path, bytes)], sorted, each once."""
    found = {}
    pending = [(os.path.dirname(os.path.abspath(f)) if f else None, t) for f, t in zip(files, texts)]
    for name in forced:
        path = next((p for p in (os.path.abspath(os.path.join(d, name)) for d in
                                 [os.getcwd()] + list(quote_dirs) + list(include_dirs)) if os.path.isfile(p)), None)
        if path is not None and path not in found:
            found[path] = _read(path)
            pending.append((os.path.dirname(path), found[path].decode("utf-8", "replace")))
    while pending:
        folder, text = pending.pop()
        for quote, name in _INCLUDE.findall(text):
            search = (([folder] if folder else []) + list(quote_dirs) if quote == '"' else []) + list(include_dirs)
            for directory in search:
                candidate = os.path.abspath(os.path.join(directory, name))
                if os.path.isfile(candidate):
                    if candidate not in found:
                        found[candidate] = _read(candidate)
                        pending.append((os.path.dirname(candidate),
                                        found[candidate].decode("utf-8", "replace")))
                    break
    return sorted(found.items())


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _option_values(flags, options):
    """Values of the given options in flags, spelled `-opt value` or `-optvalue`: [(option, value)]."""
    values, flags = [], list(flags)
    for i, flag in enumerate(flags):
        for option in options:
            if flag == option and i + 1 < len(flags):
                values.append((option, flags[i + 1]))
            elif flag.startswith(option) and len(flag) > len(option) and not any(
                    flag.startswith(longer) for longer in options if len(longer) > len(option)):
                values.append((option, flag[len(option):]))
    return values


def include_dirs_in(flags):
    """(quote-only folders, folders for both kinds) that extra_compile_args and the environment add,
    in the compiler's order: -iquote; then -I, $CPATH, -isystem, $C_INCLUDE_PATH, -idirafter."""
    values = _option_values(flags, ("-I", "-iquote", "-isystem", "-idirafter"))
    quote = [os.path.abspath(v) for o, v in values if o == "-iquote"]
    both = [os.path.abspath(v) for o, v in values if o == "-I"]
    both += _path_list("CPATH")
    both += [os.path.abspath(v) for o, v in values if o == "-isystem"]
    both += _path_list("C_INCLUDE_PATH")
    both += [os.path.abspath(v) for o, v in values if o == "-idirafter"]
    return quote, both


def forced_includes_in(flags):
    """Files extra_compile_args include before the source (-include, -imacros), as spelled there."""
    return [v for _, v in _option_values(flags, ("-include", "-imacros"))]


def _path_list(name):
    return [os.path.abspath(d or ".") for d in os.environ.get(name, "").split(os.pathsep)] \
        if os.environ.get(name) else []


def link_inputs(link_args):
    """[(path, sha256)] of the files the link reads that the user named: objects, static and shared
    libraries, linker scripts (also inside -Wl,), and -l libraries found in -L folders or $LIBRARY_PATH.
    A -l library found only in the system's folders is left out: it is linked dynamically, and its
    ABI is what the build depends on."""
    args = list(link_args)
    named, libraries = [], []
    for i, arg in enumerate(args):
        if arg.startswith("-Wl,"):
            named += [item.split("=", 1)[-1] for item in arg[4:].split(",")]
        elif arg == "-Xlinker" and i + 1 < len(args):
            named.append(args[i + 1].split("=", 1)[-1])
        elif arg.startswith("-l") and len(arg) > 2:
            libraries.append(arg[2:])
        elif arg == "-l" and i + 1 < len(args):
            libraries.append(args[i + 1])
        elif not arg.startswith("-"):
            named.append(arg)
    search = [os.path.abspath(v) for _, v in _option_values(args, ("-L",))] + _path_list("LIBRARY_PATH")
    found = [os.path.abspath(p) for p in named if p and not p.startswith("-") and os.path.isfile(p)]
    for library in libraries:
        candidates = [library[1:]] if library.startswith(":") else ["lib%s.so" % library, "lib%s.a" % library]
        path = next((os.path.join(d, c) for d in search for c in candidates
                     if os.path.isfile(os.path.join(d, c))), None)
        if path is not None:
            found.append(path)
    return [(path, file_sha256(path)) for path in sorted(set(found))]


def file_sha256(path, follow=True):
    """Hex SHA-256 of a file's content, or None if it cannot be read."""
    digest = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | _CLOEXEC | (0 if follow else _NOFOLLOW))
        with os.fdopen(fd, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


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


# -- what the compiler read ------------------------------------------------------------------

_MAKE_WORD = re.compile(r"(?:\\.|[^\s\\])+")


def dependencies_in(makefile_text, folder):
    """The prerequisites of a `-MD` dependency file (make syntax), as absolute paths."""
    words = _MAKE_WORD.findall(makefile_text.replace("\\\n", " "))
    for i, word in enumerate(words):
        if word.endswith(":"):
            words = words[i + 1:]
            break
    else:
        return []
    paths = [re.sub(r"\\(.)", r"\1", w).replace("$$", "$") for w in words]
    return [os.path.normpath(os.path.join(folder, p)) for p in paths]


def describe_dependencies(paths, system_dirs, outputs):
    """What dependencies_unchanged needs to know of the files the compiler read, leaving out those in
    the outputs folder (cextend wrote them from what the key covers):
    {"files": [[path, sha256]], "system": [[folder, mtime_ns, [[name, size, mtime_ns]]]]}."""
    system = tuple(os.path.join(d, "") for d in system_dirs)
    outputs = os.path.join(outputs, "")
    files, folders = [], {}
    for path in sorted(set(paths)):
        if path.startswith(outputs) or not os.path.isfile(path):
            continue
        if not os.path.realpath(path).startswith(system):
            files.append([path, file_sha256(path)])
            continue
        info, folder = os.stat(path), os.path.dirname(path)
        if folder not in folders:
            folders[folder] = [folder, os.stat(folder).st_mtime_ns, []]
        folders[folder][2].append([os.path.basename(path), info.st_size, info.st_mtime_ns])
    return {"files": files, "system": list(folders.values())}


def dependencies_unchanged(described):
    """Whether every file the compiler read is as it was.

    The user's files are re-hashed every time: editors, `cp -p`, tar and
    rsync can change a file and keep its size and mtime.  The compiler's,
    the C library's and Python's own headers (two hundred, through Python.h)
    change when a package is installed, which writes each new file beside
    the old and renames it into place, changing its folder's mtime: a folder
    whose mtime is as recorded vouches for its headers, and only in a folder
    that changed are the headers' sizes and mtimes compared (a header
    reinstalled unchanged then costs one needless rebuild).  So a cached
    load costs a stat per system folder, not per header.
    """
    for path, sha256 in described["files"]:
        if file_sha256(path) != sha256:
            return False
    for folder, folder_mtime_ns, headers in described["system"]:
        try:
            if os.stat(folder).st_mtime_ns == folder_mtime_ns:
                continue
        except OSError:
            return False
        for name, size, mtime_ns in headers:
            try:
                info = os.stat(os.path.join(folder, name))
            except OSError:
                return False
            if (info.st_size, info.st_mtime_ns) != (size, mtime_ns):
                return False
    return True


# -- the build lock --------------------------------------------------------------------------

@contextlib.contextmanager
def build_lock(folder, on_wait=None):
    """Hold an exclusive flock on folder/.lock; on_wait(pid) is called if we must wait.
    Once it is held, the temporaries of builds that died are removed."""
    path = os.path.join(folder, ".lock")
    try:        # not inherited by compilers (PEP 446); a symlink there fails rather than being written through
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise UnsafeCacheError("cextend will not take the build lock %s: it is a symlink, which cextend never "
                               "makes; delete it (rm %s)" % (path, shlex.quote(path))) from None
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
            remove_stale_temporaries(folder)
        yield
    finally:
        os.close(fd)                # closing the descriptor releases the flock


def _read_pid(fd):
    try:
        return int(os.pread(fd, 32, 0).split()[0])
    except (OSError, ValueError, IndexError):
        return None
