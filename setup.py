"""setuptools entry point: the cffi module is built from ffi_build.py.

Metadata lives in pyproject.toml; this file wires in cffi_modules, which
pyproject.toml cannot express, the engine's CPython extension (from
ffi_build.engine_extension), and the optional CUDA library: with
CEXTEND_CUDA=1, nvcc builds cextend/libcextend_cuda.so into the package
(a missing nvcc is then a build error, not a silent CPU-only install).

An older Python stops here with one line: pip runs this file (to ask for the
build requirements) before it compares requires-python, and what it would
report otherwise is a resolution error about numpy.
"""
import os
import sys

if sys.version_info < (3, 9):
    sys.exit("cextend needs Python >= 3.9 (this is Python %d.%d)" % sys.version_info[:2])

from setuptools import setup  # noqa: E402  (after the version check)
from setuptools.command.build_py import build_py  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))      # ffi_build, cuda_build
from ffi_build import engine_extension  # noqa: E402


class BuildWithOptionalCuda(build_py):
    def run(self):
        if os.environ.get("CEXTEND_CUDA", "").strip().lower() in ("1", "yes", "true", "on"):
            from cuda_build import build_cuda_library
            build_cuda_library()
        super().run()


setup(cffi_modules=["ffi_build.py:ffibuilder"], ext_modules=[engine_extension()],
      cmdclass={"build_py": BuildWithOptionalCuda})
