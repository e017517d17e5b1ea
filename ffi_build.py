"""Build cextend's C kernels into the cffi extension module ``cextend._C``.

Out-of-line API mode: cffi compiles a real C extension that includes
``src/cextend.h`` and links every ``src/*.c``.  setup.py points
``cffi_modules`` here; ``python ffi_build.py`` builds the module in place
(next to ``cextend/__init__.py``) for development.

Beside it, ``cextend._engine`` (``src/python/engine.c``; ``version.c``,
tensors' version counters; ``quick_linear.c``, the Linear kernels' common
case called on arrays' buffers): the backward
engine's loop, a plain CPython extension because it holds Python objects,
which cffi's C side cannot.  setup.py lists it from :func:`engine_extension`;
``python ffi_build.py`` builds it in place too.

Build switches are read from the environment in one place,
:func:`build_options`:

    CEXTEND_DEBUG=1      -O0 -g, assertions on
    CEXTEND_SANITIZE=1   AddressSanitizer + UBSan, no recovery
"""
import glob
import os
import re
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join("src", "cextend.h")


def _flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "yes", "true", "on")


def build_options(openmp=True):
    """Compiler and linker flags for this build, from the CEXTEND_* switches.

    No -march=native: the module must run on any x86-64 (and non-x86), so
    ISA-specific code is selected at run time, not at build time.
    openmp: the kernels' threads (the engine module has none).
    """
    # -fno-math-errno: sqrt becomes the (correctly rounded) instruction, so loops that take a
    # square root vectorise; no kernel reads errno, and no result changes.
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden", "-fno-math-errno"]
    link_args = ["-lm"]
    if openmp:
        compile_args.append("-fopenmp")
        link_args.insert(0, "-fopenmp")
    if _flag("CEXTEND_DEBUG"):
        compile_args += ["-O0", "-g"]
    else:
        compile_args += ["-O3", "-DNDEBUG"]
    if _flag("CEXTEND_SANITIZE"):
        sanitize = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-fno-omit-frame-pointer", "-g"]
        compile_args += sanitize
        link_args += sanitize
    return {"extra_compile_args": compile_args, "extra_link_args": link_args}


def cdef_source(header_text):
    """The header as cffi's cdef can read it.

    cffi does not run the preprocessor, so drop the C++ guard block and
    every remaining preprocessor line; what is left is plain declarations.
    The CUDA section lives in a separate library (cextend.cuda loads it),
    so it is left out here.
    """
    text = re.sub(r"/\* CEXTEND_CUDA_API_BEGIN \*/.*?/\* CEXTEND_CUDA_API_END \*/", "", header_text, flags=re.S)
    text = re.sub(r"#ifdef __cplusplus.*?#endif", "", text, flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def cuda_cdef_source(header_text):
    """Only the CUDA section of the header, for cextend.cuda's ABI-mode ffi."""
    match = re.search(r"/\* CEXTEND_CUDA_API_BEGIN \*/(.*?)/\* CEXTEND_CUDA_API_END \*/", header_text, flags=re.S)
    return match.group(1) if match else ""


def _read(path):
    with open(os.path.join(HERE, path)) as f:
        return f.read()


def make_ffibuilder(root=""):
    """The cffi builder, with source paths under root.

    setuptools wants paths relative to setup.py's directory (root ""), while
    FFI.compile() runs the compiler from its tmpdir and needs absolute ones.
    """
    sources = sorted(glob.glob(os.path.join(HERE, "src", "*.c")) +
                     glob.glob(os.path.join(HERE, "src", "kernels", "*.c")))
    builder = FFI()
    builder.cdef(cdef_source(_read(HEADER)))
    builder.set_source(
        "cextend._C",
        '#include "cextend.h"',
        sources=[os.path.join(root, os.path.relpath(p, HERE)) for p in sources],
        include_dirs=[os.path.join(root, "src")],
        **build_options(),
    )
    return builder


ffibuilder = make_ffibuilder()

ENGINE_SOURCES = [os.path.join("src", "python", name) for name in ("engine.c", "version.c", "quick_linear.c")]


def engine_extension():
    """The setuptools Extension for cextend._engine (paths relative to this directory)."""
    from setuptools import Extension

    return Extension("cextend._engine", ENGINE_SOURCES, **build_options(openmp=False))


def build_engine_in_place():
    """Compile cextend/_engine*.so next to the package sources (setuptools' build_ext --inplace)."""
    from setuptools import Distribution

    previous = os.getcwd()
    os.chdir(HERE)          # build_ext --inplace finds the package directory from here
    try:
        dist = Distribution({"name": "cextend", "ext_modules": [engine_extension()]})
        command = dist.get_command_obj("build_ext")
        command.inplace = True
        command.force = True
        command.build_temp = os.path.join("build", "engine")
        dist.run_command("build_ext")
        return command.get_ext_fullpath("cextend._engine")
    finally:
        os.chdir(previous)


def build_in_place():
    """Compile cextend/_C*.so next to the package sources."""
    import shutil

    built = make_ffibuilder(HERE).compile(tmpdir=os.path.join(HERE, "build", "cffi"))
    package_dir = os.path.join(HERE, "cextend")
    # An editable install leaves _C.abi3.so; remove every other build so the
    # import system cannot pick a stale one.
    for stale in glob.glob(os.path.join(package_dir, "_C.*so")):
        os.remove(stale)
    target = os.path.join(package_dir, os.path.basename(built))
    shutil.copyfile(built, target)
    return target


if __name__ == "__main__":
    built = build_in_place()
    sys.stdout.write("built %s\n" % built)
    sys.stdout.write("built %s\n" % build_engine_in_place())
