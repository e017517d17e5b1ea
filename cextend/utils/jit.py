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
"""
import importlib.util
import json
import os
import re
import sys
import time
import types

from cextend.utils import _jit_cache as cache
from cextend.utils._cdef import cdef_text, explain_cdef_error
from cextend.utils._calls import _const_pointer_params, _wrap_function
from cextend.utils._jit_compile import ExtensionBuildError, _cuda_paths, build_shared_library, cuda_architectures
from cextend.utils._jit_record import recorded

# Bump when the build recipe changes in a way the key cannot see.
_RECIPE = 1
_WRAP_FILE = "wrap.json"


class Extension:
    """What to build: files as (path on disk or None, display name, text)."""

    def __init__(self, name, headers, sources, *, inline, extra_compile_args=None, extra_link_args=None,
                 include_dirs=None, build_directory=None, with_cuda=False, sanitize=False):
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

    def variant(self, **changes):
        """A copy with some settings changed (opcheck rebuilds with sanitize=True)."""
        other = Extension.__new__(Extension)
        other.__dict__.update(self.__dict__, **changes)
        return other


class ExtensionInfo:
    """What load()/load_inline() did: module.__cextend__."""

    def __init__(self, extension, key, folder, library, built, seconds):
        self.extension = extension
        self.key = key
        self.folder = folder
        self.library = library
        self.log = os.path.join(folder, "build.log")
        self.built = built              # False: loaded from the cache without compiling
        self.seconds = seconds

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
    so compiler messages and sanitizer reports give lines of your strings.
    """
    if isinstance(sources, str):
        sources = [sources]
    names = ["%s.c" % name] + ["%s_%d.c" % (name, i) for i in range(1, len(sources))]
    extension = Extension(name, [(None, "%s.h" % name, header)],
                          [(None, n, s) for n, s in zip(names, sources)], inline=True,
                          extra_compile_args=extra_compile_args, extra_link_args=extra_link_args,
                          include_dirs=include_dirs, build_directory=build_directory, with_cuda=with_cuda,
                          sanitize=sanitize)
    try:
        return _public(extension, verbose)
    except ExtensionBuildError as error:       # one short exception, not a traceback through the builder
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
    except ExtensionBuildError as error:
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
    """Make sure the shared library exists (building it under the lock); its ExtensionInfo."""
    start = time.perf_counter()
    plan = _plan(extension)
    if _complete(plan):
        return ExtensionInfo(extension, plan.key, plan.folder, plan.library, False,
                             time.perf_counter() - start)

    def waiting(pid):
        if verbose:
            print("cextend: waiting for process %s, which is building %s" % (pid, extension.name),
                  file=sys.stderr)

    with cache.build_lock(plan.folder, waiting):
        built = not _complete(plan)         # another process may have built it meanwhile
        if built:
            _write_sources(extension, plan)
            _emit_module_source(extension, plan)
            build_shared_library(plan, verbose)
            if not extension.sanitize:
                _check_loadable(extension, plan)
        return ExtensionInfo(extension, plan.key, plan.folder, plan.library, built,
                             time.perf_counter() - start)


def _complete(plan):
    """The library and its wrapper description are there (the library is written last)."""
    return os.path.exists(plan.library) and os.path.exists(os.path.join(plan.folder, _WRAP_FILE))


def _plan(extension):
    root = cache.cache_root(extension.build_directory)
    os.makedirs(root, exist_ok=True)
    compiler = cache.compiler_command()
    compiler_path, compiler_version = cache.compiler_identity(compiler, root)
    plan = _Plan()
    plan.name = extension.name
    plan.compiler = compiler
    plan.sanitize = extension.sanitize
    plan.compile_args = extension.compile_args
    plan.link_args = list(extension.link_args)
    plan.defines = []
    include_dirs = list(extension.include_dirs)
    if extension.with_cuda:
        cuda_include, cuda_lib = _cuda_paths()
        include_dirs.append(cuda_include)
        plan.defines.append("WITH_CUDA")
        plan.link_args += ["-L" + cuda_lib, "-Wl,-rpath," + cuda_lib, "-lcudart", "-lstdc++"]
    texts = [t for _, _, t in extension.headers + extension.sources]
    paths = [p for p, _, _ in extension.headers + extension.sources]
    local = cache.local_headers(paths, texts, include_dirs + cache.include_dirs_in(extension.compile_args))
    import cextend      # its version keys the cache; the package is complete by the time a build runs
    import cffi
    parts = {
        "recipe": _RECIPE, "name": extension.name, "inline": extension.inline,
        "headers": [(p or n, t.encode()) for p, n, t in extension.headers],
        "sources": [(p or n, t.encode()) for p, n, t in extension.sources],
        "local_headers": local,
        "compiler": (compiler, compiler_path, compiler_version),
        "flags": (extension.compile_args, plan.link_args, include_dirs, plan.defines, extension.sanitize,
                  cuda_architectures() if extension.with_cuda else None),
        "cffi": cffi.__version__, "cextend": cextend.__version__, "python": cache.python_abi(),
    }
    plan.key = cache.cache_key(parts)
    plan.folder = os.path.join(root, "%s-%s" % (extension.name, plan.key[:16]))
    plan.module_name = "_cextend_%s_%s" % (extension.name, plan.key[:12])
    import sysconfig
    plan.library = os.path.join(plan.folder, plan.module_name + sysconfig.get_config_var("EXT_SUFFIX"))
    plan.module_source = plan.module_name + ".c"
    plan.include_dirs = ([plan.folder] if extension.inline else []) + include_dirs
    plan.sources = [n if p is None else p for p, n, _ in extension.sources if not n.endswith(".cu")]
    plan.cuda_sources = [p for p, n, _ in extension.sources if n.endswith(".cu")]
    if plan.cuda_sources and not extension.with_cuda:
        raise ValueError("load(%r): .cu sources need with_cuda=True" % extension.name)
    plan.inline_texts = {n: t for p, n, t in extension.headers + extension.sources if p is None}
    plan.parts = parts
    return plan


_INLINE_HEADER = """#ifndef CEXTEND_INLINE_%(guard)s_H
#define CEXTEND_INLINE_%(guard)s_H
#include <stddef.h>
#include <stdint.h>
#line 1 "%(file)s"
%(text)s
#endif
"""


def _write_sources(extension, plan):
    """load_inline's strings as files, each line where the user wrote it."""
    if not extension.inline:
        return
    _, header_name, header = extension.headers[0]
    _write(os.path.join(plan.folder, header_name), _INLINE_HEADER % {
        "guard": plan.key[:12].upper(), "file": header_name, "text": header})
    for _, source_name, text in extension.sources:
        _write(os.path.join(plan.folder, source_name),
               '#include "%s"\n#line 1 "%s"\n%s\n' % (header_name, source_name, text))


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _emit_module_source(extension, plan):
    """The cffi wrapper's C (plan.module_source) and the wrapper's pointer constness."""
    from cffi import FFI, CDefError
    from cffi.error import FFIError
    from cffi.recompiler import make_c_source
    chunks, line_map, first = [], [], 1
    for path, display, text in extension.headers:
        shown = display if path is None else path
        chunk = cdef_text(text, shown)
        chunks.append(chunk)
        count = chunk.count("\n") + 1
        line_map.append((first, shown, count))
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
    make_c_source(ffi, plan.module_name, include, os.path.join(plan.folder, plan.module_source), verbose=False)
    with open(os.path.join(plan.folder, _WRAP_FILE), "w") as f:
        json.dump({"const": _const_pointer_params(cdef)}, f)
    with open(os.path.join(plan.folder, "key.json"), "w") as f:
        json.dump(_describe(plan.parts), f, indent=1)


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
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                return "%s:%d" % (display if path is None else path, number)
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
    with open(os.path.join(info.folder, _WRAP_FILE)) as f:
        const = json.load(f)["const"]
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
