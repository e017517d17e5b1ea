"""Build cextend's optional CUDA library (src/cuda/*.cu) with nvcc.

    python cuda_build.py            # what `make cuda` runs
    CEXTEND_CUDA=1 pip install .    # setup.py calls build_cuda_library()

The result, cextend/libcextend_cuda.so, holds the kernels plus the CPU
library's argument checks (status.c, validate.c compiled by the host
compiler), and is loaded by cextend.cuda through cffi; the default CPU
build never needs any of this.
"""
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = "libcextend_cuda.so"
CDEF = "_cuda_cdef.h"        # the CUDA section of src/cextend.h, for cextend.cuda's cffi
# nvcc 13 accepts sm_75 and newer; compute_90 PTX lets newer GPUs JIT.
ARCHITECTURES = ["75", "80", "86", "89", "90"]


class CudaBuildError(RuntimeError):
    pass


def find_nvcc():
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc")
    if nvcc is None:
        for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
                return os.path.join(home, "bin", "nvcc")
        raise CudaBuildError("CUDA was requested (make cuda / CEXTEND_CUDA=1) but nvcc was not found: "
                             "install the CUDA toolkit or set CUDA_HOME")
    return nvcc


def _run(command):
    # Compilers must not inherit a sanitizer runtime preloaded into the
    # caller (make sanitize): nvcc crashes with ASan loaded into it.
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise CudaBuildError("%s failed:\n%s%s" % (" ".join(command), result.stdout, result.stderr))


def build_cuda_library(output_dir=os.path.join(HERE, "cextend"), architectures=ARCHITECTURES, verbose=False):
    """Compile and link the CUDA library into output_dir; returns its path."""
    nvcc = find_nvcc()
    work = os.path.join(HERE, "build", "cuda")
    os.makedirs(work, exist_ok=True)
    src = os.path.join(HERE, "src")
    objects = []
    for name in ("status.c", "validate.c"):
        obj = os.path.join(work, name.replace(".c", ".o"))
        _run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-Wall",
              "-Wextra", "-I" + src, "-c", os.path.join(src, name), "-o", obj])
        objects.append(obj)
    gencode = []
    for arch in architectures:
        gencode += ["-gencode", "arch=compute_%s,code=sm_%s" % (arch, arch)]
    gencode += ["-gencode", "arch=compute_90,code=compute_90"]
    target = os.path.join(output_dir, LIBRARY)
    command = [nvcc, "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC,-Wall", "-I" + src, *gencode,
               *sorted(glob.glob(os.path.join(src, "cuda", "*.cu"))), *objects, "-o", target]
    if verbose:
        print(" ".join(command))
    _run(command)
    sys.path.insert(0, HERE)
    from ffi_build import cuda_cdef_source
    with open(os.path.join(src, "cextend.h")) as header, open(os.path.join(output_dir, CDEF), "w") as out:
        out.write(cuda_cdef_source(header.read()))
    return target


if __name__ == "__main__":
    try:
        print("built", build_cuda_library(verbose=True))
    except CudaBuildError as error:
        sys.exit(str(error))
