"""create_extension: build your own C code into an importable module, the
way torch.utils.ffi did (same signature), on cffi.

    # build.py
    from cextend.utils.ffi import create_extension
    ffi = create_extension('_ext.my_lib', headers=['src/my_lib.h'],
                           sources=['src/my_lib.c'], relative_to=__file__)
    if __name__ == '__main__':
        ffi.build()

    # anywhere after the build
    from _ext import my_lib
    my_lib.my_lib_add_forward(a, b, out, a.numel())   # Tensors or arrays

`ffi.build()` compiles the C into `<relative_to dir>/_ext/my_lib/` (a
package whose __init__ wraps every C function), or, with package=True,
the builder is a cffi_modules entry for setup.py (the wrapper goes into
the package, in `<relative_to dir>/src/` for a src layout).  Builds print
nothing unless verbose=True (torch's default was True).  Calls through the
wrapper convert cextend Tensors and numpy arrays passed where the header
declares `float *`, `double *` or `int64_t *` into pointers, checking that
the dtype matches, that the data is contiguous (inputs declared `const`
are copied if not) and that non-const (output) buffers are writable;
every other argument passes through unchanged.  cffi releases the GIL
around each call.
"""
import os
import shutil
import sys

from cffi import FFI

from cextend.utils import _th, _unbuilt
from cextend.utils._calls import _const_pointer_params, _wrap_function  # noqa: F401  (generated wrappers import _wrap_function from here)
from cextend.utils._jit_compile import _cuda_paths

# `from _ext import my_lib` before the build says how to build (see _unbuilt).
_unbuilt.install()

# With CUDA: the era code's `extern THCState *state;` is defined here.
_THC_SOURCE = ("#include <THC/THC.h>\n"
               "static THCState cextend_thc_state;\n"
               "THCState *state = &cextend_thc_state;\n")


def _read(paths, base):
    return "\n".join(open(os.path.join(base, p)).read() for p in paths)


def _strip_preprocessor(source):
    """The header as cffi's cdef reads it: no #include/#define/#if lines."""
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))


def _require_setuptools():
    """cffi compiles a create_extension build through setuptools (or, before
    Python 3.12, the standard library's distutils); cextend itself does not
    depend on it, so without it say how to get it rather than fail inside cffi."""
    try:
        import setuptools  # noqa: F401
        return
    except ImportError:
        pass
    if sys.version_info < (3, 12):
        try:
            import distutils.core  # noqa: F401
            return
        except ImportError:
            pass
    raise ModuleNotFoundError("create_extension builds C extensions with setuptools, which is not installed: "
                              "pip install 'cextend[ffi]' (or pip install setuptools)", name="setuptools")


def create_extension(name, headers, sources, verbose=False, with_cuda=False, package=False,
                     relative_to=".", **kwargs):
    """A cffi builder for a C extension named `name` ("pkg.sub.my_lib").

    headers/sources: paths relative to relative_to's directory (pass
    relative_to=__file__ from build.py).  with_cuda defines WITH_CUDA and
    adds the CUDA include and library paths (and cudart); extra kwargs
    (define_macros, include_dirs, extra_objects, extra_compile_args, ...)
    go to the compiler as in setuptools.  Returns the cffi FFI builder, with
    a `build()` method.  It needs setuptools (`pip install 'cextend[ffi]'`).
    """
    _require_setuptools()
    base = os.path.abspath(os.path.dirname(relative_to) if os.path.isfile(relative_to) or
                           relative_to.endswith(".py") else relative_to)
    if isinstance(headers, str):
        headers = [headers]
    parts = name.split(".")
    package_root = _package_root(base, parts[0]) if package else base
    module_dir = os.path.join(package_root, *parts)
    short = parts[-1]
    wrapper_module = (name + "._" + short) if package else "_" + short
    header_source = _read(headers, base)
    include_dirs = list(kwargs.pop("include_dirs", []))
    include_dirs += [os.path.dirname(os.path.join(base, h)) for h in headers]
    include_dirs += _extra_include_dirs()
    kwargs.setdefault("extra_compile_args", ["-std=c11", "-O2"])
    if with_cuda:
        cuda_include, cuda_lib = _cuda_paths()
        include_dirs.append(cuda_include)
        kwargs.setdefault("define_macros", []).append(("WITH_CUDA", None))
        kwargs.setdefault("library_dirs", []).append(cuda_lib)
        kwargs.setdefault("runtime_library_dirs", []).append(cuda_lib)
        kwargs.setdefault("libraries", []).append("cudart")
    # A TH function the shim lacks is a build-time error naming it, not an
    # undefined symbol at import (implicit declarations are errors too).
    _th.check_sources([os.path.join(base, p) for p in list(headers) + list(sources)], with_cuda)
    kwargs["extra_compile_args"] = list(kwargs["extra_compile_args"]) + ["-Werror=implicit-function-declaration"]
    ffi = FFI()
    cdef = _th.CDEF + (_th.THC_CDEF if with_cuda else "") + _strip_preprocessor(header_source)
    ffi.cdef(cdef)
    # As torch's did, the wrapper includes TH before the user's headers, so
    # headers written for torch.utils.ffi (TH types, no includes) compile;
    # it also defines the shim's error buffer and wrapping helpers, and a
    # setjmp point around each of the user's functions for THError.
    consts = _const_pointer_params(header_source)
    include_lines = _th.SOURCE + (_THC_SOURCE if with_cuda else "") + \
        "\n".join('#include "%s"' % os.path.basename(h) for h in headers) + "\n" + \
        _th.guarded_calls(cdef, sorted(consts))
    ffi.set_source(wrapper_module if package else wrapper_module, include_lines,
                   sources=[os.path.relpath(os.path.join(base, s), base) if package else
                            os.path.join(base, s) for s in sources],
                   include_dirs=include_dirs, **kwargs)

    def build():
        os.makedirs(module_dir, exist_ok=True)
        _write_package_inits(package_root, parts)
        _write_wrapper(module_dir, "_" + short, consts)
        built = ffi.compile(tmpdir=os.path.join(base, "build", "cffi_" + "_".join(parts)), verbose=verbose)
        target = os.path.join(module_dir, os.path.basename(built))
        shutil.copyfile(built, target)
        return target

    if package:
        # setup.py's cffi_modules builds the module; the wrapper package must exist first.
        os.makedirs(module_dir, exist_ok=True)
        _write_package_inits(package_root, parts)
        _write_wrapper(module_dir, "_" + short, consts)
    ffi.build = build
    return ffi


def compile_extension(name, header, sources=(), verbose=True, with_cuda=False, **kwargs):
    """torch.utils.ffi.compile_extension (torch 0.2 to 0.4): build `name`
    ("pkg.sub.lib") at once, into those package folders under the current
    directory, from one header and the sources (paths as given)."""
    ffi = create_extension(name, headers=[os.path.abspath(header)],
                           sources=[os.path.abspath(source) for source in sources], verbose=verbose,
                           with_cuda=with_cuda, relative_to=os.getcwd(), **kwargs)
    ffi.build()


def _package_root(base, top):
    """Where package `top` lives: base, or base/src in a src layout (base/src/top
    exists and base/top does not), so the wrapper lands inside the package."""
    in_src = os.path.join(base, "src", top)
    if not os.path.isdir(os.path.join(base, top)) and os.path.isfile(os.path.join(in_src, "__init__.py")):
        return os.path.join(base, "src")
    return base


def _extra_include_dirs():
    """cextend's own C headers (the TH shim, when present) for user sources."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")
    return [here] if os.path.isdir(here) else []


def _write_package_inits(base, parts):
    path = base
    for part in parts[:-1]:
        path = os.path.join(path, part)
        os.makedirs(path, exist_ok=True)
        init = os.path.join(path, "__init__.py")
        if not os.path.exists(init):
            open(init, "w").close()


_WRAPPER = '''"""Generated by cextend.utils.ffi.create_extension: the C functions of %(name)s,
taking cextend Tensors or numpy arrays for pointer arguments."""
from cextend.utils.ffi import _wrap_function
try:
    from .%(module)s import ffi as _ffi, lib as _lib
except ModuleNotFoundError as _error:
    if _error.name != __name__ + ".%(module)s":
        raise
    from cextend.utils._unbuilt import message as _message
    raise ModuleNotFoundError(_message(_error.name, package_file=__file__, package=__name__),
                              name=_error.name) from None

_CONST = %(consts)r
__all__ = []
for _symbol in dir(_lib):
    _value = getattr(_lib, _symbol)
    globals()[_symbol] = _wrap_function(_value, _ffi, _CONST.get(_symbol), _lib) if callable(_value) else _value
    __all__.append(_symbol)
'''


def _write_wrapper(module_dir, module, consts):
    with open(os.path.join(module_dir, "__init__.py"), "w") as f:
        f.write(_WRAPPER % {"name": os.path.basename(module_dir), "module": module, "consts": consts})


# The JIT path (load_inline / load): built on the wrappers above, cached by content.
from cextend.utils.jit import load, load_inline  # noqa: E402,F401
from cextend.utils._jit_compile import ExtensionBuildError  # noqa: E402,F401
from cextend.utils._jit_cache import UnsafeCacheError  # noqa: E402,F401
from cextend.utils._cdef import HeaderError  # noqa: E402,F401
