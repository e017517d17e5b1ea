"""Compile and link a JIT extension, quietly, and turn a failure into one line.

The compiler runs as a subprocess with its output captured into the
folder's build.log; nothing reaches the terminal unless verbose=True.  A
failure raises ExtensionBuildError whose message is the compiler's first
error as `file:line: message` (the line of the user's source, shown
underneath) and the log's path: the compiler's own wall of context stays
in the log.
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from cextend.utils._jit_cache import compiler_env

SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
                  "-g", "-O1"]
# nvcc 13 accepts sm_75 and newer; compute_90 PTX lets newer GPUs JIT (as cuda_build.py).
_CUDA_ARCHITECTURES = ["75", "80", "86", "89", "90"]

_ERROR = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<column>\d+):)?\s*"
                    r"(?:fatal )?error:\s*(?P<message>.*)$")
_LINK_ERROR = re.compile(r"(undefined reference to|multiple definition of|cannot find -l)")


class ExtensionBuildError(RuntimeError):
    """Building a load()/load_inline() extension failed; .log_path has the full output."""

    __module__ = "cextend.utils.ffi"

    def __init__(self, message, log_path=None):
        super().__init__(message)
        self.log_path = log_path


def _python_includes():
    paths = sysconfig.get_paths()
    return sorted({paths["include"], paths.get("platinclude", paths["include"])})


def build_shared_library(plan, verbose=False):
    """Compile plan's sources into plan.library (atomically); raise on failure."""
    log_path = os.path.join(plan.folder, "build.log")
    with open(log_path, "w") as log:
        objects = [_compile_cuda(plan, source, log, verbose) for source in plan.cuda_sources]
        temporary = "%s.%d.tmp" % (plan.library, os.getpid())
        command = (plan.compiler + ["-fPIC"] + (SANITIZE_FLAGS if plan.sanitize else ["-O2"]) +
                   ["-I" + d for d in list(plan.include_dirs) + _python_includes()] +
                   ["-D%s" % d for d in plan.defines] + list(plan.compile_args) +
                   [plan.module_source] + list(plan.sources) + objects +
                   _shared_flags() + ["-o", temporary] + list(plan.link_args) +
                   (["-fsanitize=address,undefined"] if plan.sanitize else []))
        _run(command, plan, log, log_path, verbose)
    os.replace(temporary, plan.library)
    return plan.library


def _shared_flags():
    if sys.platform == "darwin":
        return ["-bundle", "-undefined", "dynamic_lookup"]
    return ["-shared"]


def _compile_cuda(plan, source, log, verbose):
    """nvcc -c for a .cu source of load(..., with_cuda=True); returns the object's path."""
    nvcc = os.environ.get("NVCC") or os.path.join(os.path.dirname(_cuda_paths()[0]), "bin", "nvcc")
    target = os.path.join(plan.folder, os.path.basename(source) + ".o")
    architectures = cuda_architectures()
    gencode = []
    for arch in architectures:
        gencode += ["-gencode", "arch=compute_%s,code=sm_%s" % (arch, arch)]
    gencode += ["-gencode", "arch=compute_%s,code=compute_%s" % (architectures[-1], architectures[-1])]
    command = ([nvcc, "-O2", "-Xcompiler", "-fPIC", "-c", source, "-o", target] + gencode +
               ["-I" + d for d in plan.include_dirs] + ["-D%s" % d for d in plan.defines])
    _run(command, plan, log, log.name, verbose)
    return target


def cuda_architectures():
    """SM versions for nvcc: $CEXTEND_CUDA_ARCH_LIST ("8.0;9.0" or "80 90", as TORCH_CUDA_ARCH_LIST),
    else sm_75 to sm_90; the newest also goes in as PTX for GPUs newer still."""
    text = os.environ.get("CEXTEND_CUDA_ARCH_LIST", "").replace(";", " ").replace(",", " ").split()
    return sorted({t.replace(".", "") for t in text}, key=int) or list(_CUDA_ARCHITECTURES)


def _run(command, plan, log, log_path, verbose):
    log.write("$ %s\n" % " ".join(command))
    log.flush()
    if verbose:
        print("cextend: building %s: %s" % (plan.name, " ".join(command)), file=sys.stderr)
    result = subprocess.run(command, cwd=plan.folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=compiler_env())
    log.write(result.stdout)
    log.flush()
    if verbose and result.stdout:
        sys.stderr.write(result.stdout)
    if result.returncode != 0:
        raise ExtensionBuildError(describe_failure(plan, result.stdout, result.returncode, log_path),
                                  log_path)


def describe_failure(plan, output, status, log_path):
    """`file:line: message` for the compiler's first error, its source line, the log's path."""
    lines = output.splitlines()
    first = None
    for line in lines:
        match = _ERROR.match(line.strip())
        if match:
            first = match
            break
    if first is not None:
        path = first.group("file")
        shown = _display_path(path, plan)
        text = "%s:%s: error: %s" % (shown, first.group("line"), first.group("message"))
        source_line = _source_line(path, plan, int(first.group("line")))
        if source_line is not None:
            text += "\n    " + source_line.strip()
        if os.path.basename(path) == os.path.basename(plan.module_source):
            text += ("\n(the error is in the cffi wrapper generated from the header: a declaration in "
                     "the header does not match what the sources define)")
    else:
        link = [line.strip() for line in lines if _LINK_ERROR.search(line)]
        text = link[0] if link else "\n".join(l.strip() for l in lines[-5:] if l.strip()) or \
            "the compiler exited with status %d" % status
    return "building extension '%s' failed:\n%s\nfull compiler output: %s" % (plan.name, text, log_path)


def _display_path(path, plan):
    """Sources written into the build folder (load_inline's) by their short name."""
    absolute = os.path.normpath(os.path.join(plan.folder, path))
    if os.path.dirname(absolute) == os.path.normpath(plan.folder):
        return os.path.basename(absolute)
    return path


def _source_line(path, plan, number):
    """Line `number` as the user wrote it (load_inline's text, or the file)."""
    name = os.path.basename(path)
    if name in plan.inline_texts and os.path.dirname(os.path.join(plan.folder, path)) == plan.folder:
        lines = plan.inline_texts[name].splitlines()
        return lines[number - 1] if 0 < number <= len(lines) else None
    try:
        with open(os.path.join(plan.folder, path), errors="replace") as f:
            for i, line in enumerate(f, 1):
                if i == number:
                    return line.rstrip("\n")
    except OSError:
        return None
    return None


def _cuda_paths():
    """(include_dir, library_dir) of the CUDA toolkit, or raise.

    The toolkit is the first candidate holding include/cuda_runtime.h:
    CUDA_HOME, CUDA_PATH, the directory above nvcc's (following links; nvcc
    may also be a wrapper script elsewhere), /usr/local/cuda, /opt/cuda.
    """
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    candidates += ["/usr/local/cuda", "/opt/cuda"]
    for home in filter(None, candidates):
        include = os.path.join(home, "include")
        if os.path.isfile(os.path.join(include, "cuda_runtime.h")):
            lib = os.path.join(home, "lib64")
            return include, lib if os.path.isdir(lib) else os.path.join(home, "lib")
    raise RuntimeError("with_cuda=True but no CUDA toolkit was found (set CUDA_HOME; looked in %s)"
                       % ", ".join(filter(None, candidates)))
