"""load_inline() and load(): your C, compiled on first use and cached.

    from cextend.utils.ffi import load_inline
    lib = load_inline("scale", header="int scale(const double *x, double *y, int64_t n, double a);",
                      sources='''
    #include <stdint.h>
    int scale(const double *x, double *y, int64_t n, double a) {
        for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];
        return 0;
    }''')
    lib.scale(x, y, x.numel(), 2.0)        # Tensors or ndarrays for the pointers

The result is a module whose functions take cextend Tensors or numpy arrays
for pointer parameters, as create_extension's do (dtype checked, const inputs
copied if not contiguous, outputs must be contiguous and writable).  The
build lives in $CEXTEND_EXTENSIONS_DIR (default ~/.cache/cextend/extensions)
under a key covering everything that can change it (see _jit_cache); a
later call, in this or any process, with nothing changed, compiles nothing.

A build's folder holds build.json, written last: the library's file name
and SHA-256, what the wrapper needs to know, and every file the compiler
read with its hash.  A build is reused only if all of these check out; a
library or record that does not (truncated, garbled, a header changed
behind the key's back) is rebuilt under the lock, into a library of a new
name, so no process that has the old one loaded sees it change.

A load_inline string that is a literal in the calling .py file is compiled
under `#line N "that file"`, so compiler errors, debug info and sanitizer
reports name the line in the .py file; other strings are named NAME.c
(NAME.h for the header) with lines counted within the string.
"""
import ast
import importlib.util
import io
import itertools
import json
import os
import re
import sys
import sysconfig
import time
import tokenize
import types

from cextend.utils import _jit_cache as cache
from cextend.utils._cdef import cdef_text, explain_cdef_error
from cextend.utils._calls import _const_pointer_params, _wrap_function
from cextend.utils._jit_compile import (ExtensionBuildError, _cuda_paths, _python_includes, build_shared_library,
                                        cuda_architectures)
from cextend.utils._jit_record import recorded

# Bump when the build recipe changes in a way the key cannot see.
_RECIPE = 2
_BUILD_FILE = "build.json"
_BUILD_FORMAT = 1


class Extension:
    """What to build: files as (path on disk or None, display name, text)."""

    def __init__(self, name, headers, sources, *, inline, extra_compile_args=None, extra_link_args=None,
                 include_dirs=None, build_directory=None, with_cuda=False, sanitize=False, origins=None):
        if not (isinstance(name, str) and name.isidentifier() and name.isascii()):
            raise ValueError("name must be an ASCII identifier (it names the built module), got %r" % (name,))
        self.name = name
        self.headers = headers
        self.sources = sources
        self.inline = inline
        self.compile_args = list(extra_compile_args or [])
        self.link_args = list(extra_link_args or [])
        if "-fopenmp" in self.compile_args and "-fopenmp" not in self.link_args:
            self.link_args.append("-fopenmp")        # OpenMP compiled in must be linked in
        self.include_dirs = [os.path.abspath(d) for d in include_dirs or []]
        self.build_directory = build_directory
        self.with_cuda = with_cuda
        self.sanitize = sanitize
        # load_inline's display name -> (.py file, line) of the literal its text is; see _literal_origin.
        self.origins = dict(origins or {})

    def variant(self, **changes):
        """A copy with some settings changed (opcheck rebuilds with sanitize=True)."""
        other = Extension.__new__(Extension)
        other.__dict__.update(self.__dict__, **changes)
        return other


class ExtensionInfo:
    """What load()/load_inline() did: module.__cextend__."""

    def __init__(self, extension, key, folder, library, built, seconds, const=None):
        self.extension = extension
        self.key = key
        self.folder = folder
        self.library = library
        self.log = os.path.join(folder, "build.log")
        self.built = built              # False: loaded from the cache without compiling
        self.seconds = seconds
        self._const = const             # which pointer parameters are const, for the wrapper

    def __repr__(self):
        return "<cextend extension %s: %s %s>" % (self.extension.name, "built" if self.built else "cached",
                                                  self.library)


class _Plan:
    """The concrete build: compiler, folder, flags, files (see _jit_compile)."""


def load_inline(name, header, sources, *, extra_compile_args=None, extra_link_args=None, include_dirs=None,
                build_directory=None, verbose=False, with_cuda=False, sanitize=False):
    """Build (or fetch from the cache) an extension from C text.

    header: C declarations (what Python may call); sources: a string or a
    list of strings of C.  Each source is compiled as NAME.c (NAME_1.c, ...)
    with the header (NAME.h, with <stdint.h> and <stddef.h>) included first,
    so compiler messages and sanitizer reports give lines of your strings:
    the lines of the .py file for a string written there as a literal.
    """
    if isinstance(sources, str):
        sources = [sources]
    names = ["%s.c" % name] + ["%s_%d.c" % (name, i) for i in range(1, len(sources))]
    origins = {}
    for display, text in [("%s.h" % name, header)] + list(zip(names, sources)):
        origin = _literal_origin(text)
        if origin is not None:
            origins[display] = origin
    extension = Extension(name, [(None, "%s.h" % name, header)],
                          [(None, n, s) for n, s in zip(names, sources)], inline=True,
                          extra_compile_args=extra_compile_args, extra_link_args=extra_link_args,
                          include_dirs=include_dirs, build_directory=build_directory, with_cuda=with_cuda,
                          sanitize=sanitize, origins=origins)
    try:
        return _public(extension, verbose)
    except (ExtensionBuildError, cache.UnsafeCacheError) as error:   # one short exception, not a traceback
        raise error.with_traceback(None) from None


def load(name, sources, headers=None, *, extra_compile_args=None, extra_link_args=None, include_dirs=None,
         build_directory=None, verbose=False, with_cuda=False, sanitize=False):
    """load_inline() for files: sources=[paths of .c (and, with CUDA, .cu)], headers=[paths].

    headers default to the .h files listed in sources.  The folders of the
    headers and sources are on the include path.
    """
    if isinstance(sources, str):
        sources = [sources]
    if headers is None:
        headers = [s for s in sources if s.endswith(".h")]
    elif isinstance(headers, str):
        headers = [headers]
    sources = [s for s in sources if not s.endswith(".h")]
    if not headers:
        raise ValueError("load(%r): give headers=[...], the declarations Python may call" % name)
    files = []
    for kind, paths in (("header", headers), ("source", sources)):
        loaded = []
        for path in paths:
            path = os.path.abspath(path)
            if not os.path.isfile(path):
                raise FileNotFoundError("load(%r): %s %s not found" % (name, kind, path))
            with open(path) as f:
                loaded.append((path, path, f.read()))
        files.append(loaded)
    dirs = list(include_dirs or [])
    for path, _, _ in files[0] + files[1]:
        if os.path.dirname(path) not in dirs:
            dirs.append(os.path.dirname(path))
    extension = Extension(name, files[0], files[1], inline=False, extra_compile_args=extra_compile_args,
                          extra_link_args=extra_link_args, include_dirs=dirs,
                          build_directory=build_directory, with_cuda=with_cuda, sanitize=sanitize)
    try:
        return _public(extension, verbose)
    except (ExtensionBuildError, cache.UnsafeCacheError) as error:
        raise error.with_traceback(None) from None


def _public(extension, verbose):
    if extension.sanitize and not _asan_loaded():
        raise RuntimeError(
            "sanitize=True builds with AddressSanitizer, whose runtime must be loaded first: run Python "
            "with LD_PRELOAD=$(cc -print-file-name=libasan.so), or use "
            "cextend.library.opcheck(..., sanitize=True), which replays your op's C calls in such a process")
    return load_extension(extension, verbose)


def _asan_loaded():
    try:
        with open("/proc/self/maps") as maps:
            return any("libasan" in line or "asan_rt" in line for line in maps)
    except OSError:
        return False


def load_extension(extension, verbose=False):
    """Build if needed, import, and wrap: the module."""
    start = time.perf_counter()
    info = build(extension, verbose)
    raw = _import(extension, info)
    info.seconds = time.perf_counter() - start
    return _wrap_module(extension, info, raw)


def build(extension, verbose=False):
    """Make sure a sound build exists (building it under the lock); its ExtensionInfo."""
    start = time.perf_counter()
    plan = _plan(extension)
    record, built = _sound_build(plan), False

    def waiting(pid):
        if verbose:
            print("cextend: waiting for process %s, which is building %s" % (pid, extension.name),
                  file=sys.stderr)

    if record is None:
        with cache.build_lock(plan.folder, waiting):
            record = _sound_build(plan)         # another process may have built it meanwhile
            if record is None:
                record, built = _build_now(extension, plan, verbose), True
    return ExtensionInfo(extension, plan.key, plan.folder, os.path.join(plan.folder, record["library"]), built,
                         time.perf_counter() - start, const=record["const"])


def _build_now(extension, plan, verbose):
    """Compile into a library of a new name, then write build.json (last: it makes the build count)."""
    _name_build(plan)
    _write_sources(extension, plan)
    const = _emit_module_source(extension, plan)
    files_read = build_shared_library(plan, verbose)
    if not extension.sanitize:
        _check_loadable(extension, plan)
    record = {"format": _BUILD_FORMAT, "library": os.path.basename(plan.library),
              "sha256": cache.file_sha256(plan.library, follow=False), "const": const,
              "dependencies": cache.describe_dependencies(files_read, plan.system_include_dirs,
                                                              plan.folder)}
    cache.write_atomically(os.path.join(plan.folder, _BUILD_FILE), json.dumps(record))
    return record


def _name_build(plan):
    """A library name not used before in the folder nor loaded in this process: dlopen and Python
    both return the module already loaded from a path, so a rebuild must not reuse one."""
    base = "_cextend_%s_%s" % (plan.name, plan.key[:12])
    for generation in itertools.count():
        name = base if generation == 0 else "%s_%d" % (base, generation)
        library = os.path.join(plan.folder, name + _EXT_SUFFIX)
        if not os.path.lexists(library) and library not in _IMPORTED:
            break
    plan.module_name, plan.library, plan.module_source = name, library, name + ".c"


def _sound_build(plan):
    """build.json of the folder if it, the library and every file the compiler read check out, else None."""
    record = cache.read_json(os.path.join(plan.folder, _BUILD_FILE))
    if not _well_formed(record, plan):
        return None
    if cache.file_sha256(os.path.join(plan.folder, record["library"]), follow=False) != record["sha256"]:
        return None
    if not cache.dependencies_unchanged(record["dependencies"]):
        return None
    return record


def _well_formed(record, plan):
    """Everything a cached load reads from build.json is there and of its shape (the library named
    as this key's, so a record cannot point elsewhere; dependencies as describe_dependencies writes)."""
    if not (isinstance(record, dict) and record.get("format") == _BUILD_FORMAT
            and isinstance(record.get("const"), dict) and isinstance(record.get("sha256"), str)):
        return False
    library = record.get("library")
    pattern = r"_cextend_%s_%s(_\d+)?%s" % (re.escape(plan.name), plan.key[:12], re.escape(_EXT_SUFFIX))
    if not (isinstance(library, str) and re.fullmatch(pattern, library)):
        return False
    dependencies = record.get("dependencies")
    return (isinstance(dependencies, dict) and isinstance(dependencies.get("files"), list)
            and all(isinstance(f, list) and len(f) == 2 for f in dependencies["files"])
            and isinstance(dependencies.get("system"), list)
            and all(isinstance(f, list) and len(f) == 3 and isinstance(f[2], list)
                    and all(isinstance(h, list) and len(h) == 3 for h in f[2]) for f in dependencies["system"]))


_EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def _plan(extension):
    root = cache.secure_root(cache.cache_root(extension.build_directory))
    compiler = cache.compiler_command()
    compiler_path, compiler_version, system_include_dirs = cache.compiler_identity(compiler, root)
    plan = _Plan()
    plan.name = extension.name
    plan.compiler = compiler
    plan.sanitize = extension.sanitize
    plan.compile_args = extension.compile_args
    plan.link_args = list(extension.link_args)
    plan.defines = []
    include_dirs, system_include_dirs = list(extension.include_dirs), list(system_include_dirs)
    if extension.with_cuda:
        cuda_include, cuda_lib = _cuda_paths()
        include_dirs.append(cuda_include)
        system_include_dirs.append(cuda_include)
        plan.defines.append("WITH_CUDA")
        plan.link_args += ["-L" + cuda_lib, "-Wl,-rpath," + cuda_lib, "-lcudart", "-lstdc++"]
    texts = [t for _, _, t in extension.headers + extension.sources]
    paths = [p for p, _, _ in extension.headers + extension.sources]
    quote_dirs, flag_dirs = cache.include_dirs_in(extension.compile_args)
    local = cache.local_headers(paths, texts, quote_dirs, include_dirs + flag_dirs,
                                cache.forced_includes_in(extension.compile_args))
    import cextend      # its version keys the cache; the package is complete by the time a build runs
    import cffi
    parts = {
        "recipe": _RECIPE, "name": extension.name, "inline": extension.inline,
        "headers": [(p or n, t.encode()) for p, n, t in extension.headers],
        "sources": [(p or n, t.encode()) for p, n, t in extension.sources],
        "origins": sorted(extension.origins.items()),
        "local_headers": local,
        "compiler": (compiler, compiler_path, compiler_version),
        "environment": cache.environment_inputs(extension.with_cuda),
        "flags": (extension.compile_args, plan.link_args, include_dirs, plan.defines, extension.sanitize,
                  cuda_architectures() if extension.with_cuda else None),
        "link_inputs": cache.link_inputs(plan.link_args),
        "cffi": cffi.__version__, "cextend": cextend.__version__, "python": cache.python_abi(),
    }
    plan.key = cache.cache_key(parts)
    plan.folder = cache.secure_folder(os.path.join(root, "%s-%s" % (extension.name, plan.key[:16])))
    plan.include_dirs = ([plan.folder] if extension.inline else []) + include_dirs
    plan.system_include_dirs = system_include_dirs + _python_includes()
    plan.sources = [n if p is None else p for p, n, _ in extension.sources if not n.endswith(".cu")]
    plan.cuda_sources = [p for p, n, _ in extension.sources if n.endswith(".cu")]
    if plan.cuda_sources and not extension.with_cuda:
        raise ValueError("load(%r): .cu sources need with_cuda=True" % extension.name)
    # (file the compiler names, its line of the text's first line, text) of each load_inline string
    plan.inline_lines = [extension.origins.get(n, (n, 1)) + (t,)
                         for p, n, t in extension.headers + extension.sources if p is None]
    plan.parts = parts
    return plan


_INLINE_HEADER = """#ifndef CEXTEND_INLINE_%(guard)s_H
#define CEXTEND_INLINE_%(guard)s_H
#include <stddef.h>
#include <stdint.h>
%(line)s
%(text)s
#endif
"""


def _write_sources(extension, plan):
    """load_inline's strings as files, each line where the user wrote it."""
    if not extension.inline:
        return
    _, header_name, header = extension.headers[0]
    cache.write_atomically(os.path.join(plan.folder, header_name), _INLINE_HEADER % {
        "guard": plan.key[:12].upper(), "line": _line_directive(extension, header_name), "text": header})
    for _, source_name, text in extension.sources:
        cache.write_atomically(os.path.join(plan.folder, source_name), '#include "%s"\n%s\n%s\n' % (
            header_name, _line_directive(extension, source_name), text))


def _line_directive(extension, name):
    path, line = extension.origins.get(name, (name, 1))
    return '#line %d "%s"' % (line, path.replace("\\", "\\\\").replace('"', '\\"'))


# -- where a load_inline string was written -----------------------------------------------------

_PACKAGE_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")
_LITERALS = {}          # .py path -> ((mtime_ns, size), {literal's text: its first line})


def _literal_origin(text):
    """(absolute .py path, line) of the string literal in the calling file whose value is text, if
    its lines are the file's lines (no escaped newlines, no backslash-continuations); else None."""
    if not isinstance(text, str) or not text.strip():
        return None
    path = _calling_file()
    if path is None:
        return None
    line = _literal_lines(path).get(text)
    return None if line is None else (path, line)


def _calling_file():
    """The file of the innermost frame outside cextend, if it is a file on disk."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_FOLDER):
        frame = frame.f_back
    if frame is None or frame.f_code.co_filename.startswith("<"):
        return None
    path = os.path.abspath(frame.f_code.co_filename)
    return path if "\n" not in path and os.path.isfile(path) else None


def _literal_lines(path):
    """{text: first line} of the file's string literals spelled line for line (parsed once per
    version of the file, so a second load_inline from it costs a stat)."""
    try:
        info = os.stat(path)
    except OSError:
        return {}
    stamp = (info.st_mtime_ns, info.st_size)
    cached = _LITERALS.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        with open(path, "rb") as f:
            source = importlib.util.decode_source(f.read())
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        lines = {}
    else:
        lines = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
                spelling = ast.get_source_segment(source, node)
                if spelling is not None and _spelled_line_for_line(spelling, node.value):
                    lines[node.value] = min(node.lineno, lines.get(node.value, node.lineno))
    _LITERALS[path] = (stamp, lines)
    return lines


_CONTINUATION = re.compile(r"(?<!\\)(?:\\\\)*\\\n")       # an odd run of backslashes ending a line


def _spelled_line_for_line(spelling, value):
    """Whether line k of value is on line k of the literal's spelling: one plain string literal
    (not an f-string, not several joined) in which every newline is a real one."""
    if spelling.count("\n") != value.count("\n"):
        return False
    if "\n" not in value:
        return True
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(spelling).readline)
                  if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER)]
    except (tokenize.TokenError, SyntaxError):
        return False
    if len(tokens) != 1 or tokens[0].type != tokenize.STRING:
        return False
    prefix = re.match(r"[A-Za-z]*", spelling).group().lower()
    if "f" in prefix or "b" in prefix:
        return False
    return "r" in prefix or not _CONTINUATION.search(spelling)


def _emit_module_source(extension, plan):
    """Write the cffi wrapper's C (plan.module_source) and key.json; the wrapper's pointer constness."""
    from cffi import FFI, CDefError
    from cffi.error import FFIError
    from cffi.recompiler import make_c_source
    chunks, line_map, first = [], [], 1
    for path, display, text in extension.headers:
        shown = display if path is None else path
        chunk = cdef_text(text, shown)
        chunks.append(chunk)
        count = chunk.count("\n") + 1
        origin, line = extension.origins.get(display, (shown, 1)) if path is None else (shown, 1)
        # explain_cdef_error counts from the entry's first line: start it line - 1 lines early.
        line_map.append((first - (line - 1), origin, count + line - 1))
        first += count
    cdef = "\n".join(chunks)
    ffi = FFI()
    try:
        ffi.cdef(cdef)
    except (CDefError, FFIError) as error:
        raise explain_cdef_error(error, line_map) from None
    if extension.inline:
        include = '#include "%s"\n' % extension.headers[0][1]
    else:
        include = "".join('#include "%s"\n' % path for path, _, _ in extension.headers)
    wrapper = io.StringIO()
    make_c_source(ffi, plan.module_name, include, wrapper, verbose=False)
    cache.write_atomically(os.path.join(plan.folder, plan.module_source), wrapper.getvalue())
    cache.write_atomically(os.path.join(plan.folder, "key.json"), json.dumps(_describe(plan.parts), indent=1))
    return json.loads(json.dumps(_const_pointer_params(cdef)))    # as a cached load will read it back


def _describe(parts):
    """key.json: what went into the key, readable (file contents by size)."""
    def readable(value):
        if isinstance(value, bytes):
            return "<%d bytes>" % len(value)
        if isinstance(value, (list, tuple)):
            return [readable(v) for v in value]
        if isinstance(value, dict):
            return {k: readable(v) for k, v in value.items()}
        return value
    return readable(parts)


_UNDEFINED = re.compile(r"undefined symbol: (\w+)")


def _check_loadable(extension, plan):
    """A declared function that no source defines fails here, at build time, by name."""
    try:
        _import_library(plan.module_name, plan.library)
    except ImportError as error:
        match = _UNDEFINED.search(str(error))
        os.remove(plan.library)
        if match is None:
            raise ExtensionBuildError("building extension '%s' failed: the built library does not load: %s"
                                      % (extension.name, error), os.path.join(plan.folder, "build.log"))
        symbol = match.group(1)
        where = _declared_where(extension, symbol)
        if where is None:
            raise ExtensionBuildError("building extension '%s' failed: the library needs '%s', which neither "
                                      "its sources nor its libraries define (a library missing from "
                                      "extra_link_args?)" % (extension.name, symbol),
                                      os.path.join(plan.folder, "build.log"))
        raise ExtensionBuildError("building extension '%s' failed:\n%s: '%s' is declared but not defined "
                                  "in any source" % (extension.name, where, symbol),
                                  os.path.join(plan.folder, "build.log"))


def _declared_where(extension, symbol):
    """file:line of the header declaration of symbol, or None if the headers do not declare it."""
    pattern = re.compile(r"\b%s\b" % re.escape(symbol))
    for path, display, text in extension.headers:
        shown, first = extension.origins.get(display, (display, 1)) if path is None else (path, 1)
        for number, line in enumerate(text.splitlines(), first):
            if pattern.search(line):
                return "%s:%d" % (shown, number)
    return None


_IMPORTED = {}


def _import_library(module_name, library):
    if library in _IMPORTED:
        return _IMPORTED[library]
    spec = importlib.util.spec_from_file_location(module_name, library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _IMPORTED[library] = module
    return module


def _import(extension, info):
    try:
        return _import_library(os.path.basename(info.library).split(".")[0], info.library)
    except ImportError as error:
        raise ExtensionBuildError("extension '%s' (%s) does not load: %s; delete %s to rebuild it"
                                  % (extension.name, info.library, error, info.folder), info.log) from None


def _wrap_module(extension, info, raw):
    """A module of Tensor-aware functions (as create_extension's) plus ffi, lib and __cextend__."""
    const = info._const or {}
    module = types.ModuleType(extension.name, "C extension %s built by cextend (%s)" % (
        extension.name, info.library))
    module.__file__ = info.library
    module.ffi, module.lib = raw.ffi, raw.lib
    module.__cextend__ = info
    for symbol in dir(raw.lib):
        value = getattr(raw.lib, symbol)
        if callable(value):
            value = recorded(_wrap_function(value, raw.ffi, const.get(symbol)), value, raw.ffi, extension,
                             symbol, const.get(symbol))
        setattr(module, symbol, value)
    return module
