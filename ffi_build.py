"""Build cextend's C kernels into the cffi extension module ``cextend._C``.

Out-of-line API mode: cffi compiles a real C extension that includes
``src/cextend.h`` and links every ``src/*.c``.  setup.py points
``cffi_modules`` here; ``python ffi_build.py`` builds the module in place
(next to ``cextend/__init__.py``) for development.

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


def build_options():
    """Compiler and linker flags for this build, from the CEXTEND_* switches.

    No -march=native: the module must run on any x86-64 (and non-x86), so
    ISA-specific code is selected at run time, not at build time.
    """
    # -fno-math-errno: sqrt becomes the (correctly rounded) instruction, so loops that take a
    # square root vectorise; no kernel reads errno, and no result changes.
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden", "-fopenmp", "-fno-math-errno"]
    link_args = ["-fopenmp", "-lm"]
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
