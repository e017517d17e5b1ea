"""Compile and link a JIT extension, quietly, and turn a failure into one line.

Each C source is compiled to an object (all at once, each with its list
of the files it read, -MD) and the objects are linked to a temporary that
is renamed over the library, so a reader never sees half a library.  The
compilers run as subprocesses with their output captured into the folder's
build.log; nothing reaches the terminal unless verbose=True.  A failure
raises ExtensionBuildError whose message is the compiler's first error as
`file:line: message` (the line of the user's source, shown underneath)
and the log's path: the compiler's own wall of context stays in the log.
"""
import functools
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from cextend.utils import _jit_cache as cache
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
    return list(_python_include_folders())


@functools.lru_cache(maxsize=None)          # sysconfig expands its paths each time: 0.1 ms a load
def _python_include_folders():
    paths = sysconfig.get_paths()
    return tuple(sorted({paths["include"], paths.get("platinclude", paths["include"])}))


def build_shared_library(plan, verbose=False):
    """Compile plan's sources and link them into plan.library (atomically); raise on failure.

    Each C source is compiled on its own (in parallel) with -MD, since one
    compile-and-link command would write every source's dependency list to
    the same file.  Returns the files the compiler read, from those lists.
    """
    log_path = os.path.join(plan.folder, "build.log")
    with cache.create_private(log_path) as log:      # a planted build.log symlink is replaced, not followed
        objects = [_compile_cuda(plan, source, log, verbose) for source in plan.cuda_sources]
        compiled = [_object_and_dependency_file(plan, i, source)
                    for i, source in enumerate([plan.module_source] + list(plan.sources))]
        _run_all([_compile_command(plan, source, target, dependencies)
                  for source, (target, dependencies) in zip([plan.module_source] + list(plan.sources), compiled)],
                 plan, log, log_path, verbose)
        temporary = cache.temporary_name(plan.library)
        command = (plan.compiler + ["-fPIC"] + (SANITIZE_FLAGS if plan.sanitize else ["-O2"]) +
                   _link_time_flags(plan.compile_args) + [target for target, _ in compiled] + objects +
                   _shared_flags() + ["-o", temporary] + list(plan.link_args) +
                   (["-fsanitize=address,undefined"] if plan.sanitize else []))
        try:
            _run_all([command], plan, log, log_path, verbose)
            os.replace(temporary, plan.library)
        finally:
            cache.remove(temporary)
    return _files_read(compiled, plan.folder)


def _object_and_dependency_file(plan, index, source):
    """Numbered, so two sources of one name (a/x.c, b/x.c) do not share an object."""
    target = os.path.join(plan.folder, "%s.%d.%s.o" % (plan.module_name, index, os.path.basename(source)))
    for output in (target, target + ".d"):
        cache.remove(output)            # the compiler writes through a symlink left there; never to one
    return target, target + ".d"


def _compile_command(plan, source, target, dependencies):
    return (plan.compiler + ["-fPIC"] + (SANITIZE_FLAGS if plan.sanitize else ["-O2"]) +
            ["-I" + d for d in list(plan.include_dirs) + _python_includes()] +
            ["-D%s" % d for d in plan.defines] + list(plan.compile_args) +
            ["-MD", "-MF", dependencies, "-c", source, "-o", target])


# Options of extra_compile_args that only compiling reads (the language -x would also make the
# linker read the objects as C); the others (-pthread, -flto, --coverage, -m32, ...) go to the link
# as well, as they did when one command compiled and linked.
_COMPILE_ONLY_OPTIONS = ("-I", "-D", "-U", "-include", "-imacros", "-iquote", "-isystem", "-idirafter", "-x",
                         "-Xpreprocessor")
_COMPILE_ONLY_PREFIXES = _COMPILE_ONLY_OPTIONS + ("-std=", "-M", "-Wp,")


def _link_time_flags(compile_args):
    flags, skip_value = [], False
    for flag in compile_args:
        if skip_value:
            skip_value = False
        elif flag in _COMPILE_ONLY_OPTIONS:
            skip_value = True
        elif not flag.startswith(_COMPILE_ONLY_PREFIXES):
            flags.append(flag)
    return flags


def _files_read(compiled, folder):
    files = []
    for _, dependencies in compiled:
        files += cache.dependencies_in(cache.read_private(dependencies).decode(errors="replace"), folder)
    return sorted(set(files))


def _shared_flags():
    if sys.platform == "darwin":
        return ["-bundle", "-undefined", "dynamic_lookup"]
    return ["-shared"]


def _compile_cuda(plan, source, log, verbose):
    """nvcc -c for a .cu source of load(..., with_cuda=True); returns the object's path."""
    nvcc = os.environ.get("NVCC") or os.path.join(os.path.dirname(_cuda_paths()[0]), "bin", "nvcc")
    target = os.path.join(plan.folder, os.path.basename(source) + ".o")
    cache.remove(target)
    architectures = cuda_architectures()
    gencode = []
    for arch in architectures:
        gencode += ["-gencode", "arch=compute_%s,code=sm_%s" % (arch, arch)]
    gencode += ["-gencode", "arch=compute_%s,code=compute_%s" % (architectures[-1], architectures[-1])]
    command = ([nvcc, "-O2", "-Xcompiler", "-fPIC", "-c", source, "-o", target] + gencode +
               ["-I" + d for d in plan.include_dirs] + ["-D%s" % d for d in plan.defines])
    _run(command, plan, log, os.path.join(plan.folder, "build.log"), verbose)
    return target


def cuda_architectures():
    """SM versions for nvcc: $CEXTEND_CUDA_ARCH_LIST ("8.0;9.0" or "80 90", as TORCH_CUDA_ARCH_LIST),
    else sm_75 to sm_90; the newest also goes in as PTX for GPUs newer still."""
    text = os.environ.get("CEXTEND_CUDA_ARCH_LIST", "").replace(";", " ").replace(",", " ").split()
    return sorted({t.replace(".", "") for t in text}, key=int) or list(_CUDA_ARCHITECTURES)


def _run(command, plan, log, log_path, verbose):
    _run_all([command], plan, log, log_path, verbose)


def _run_all(commands, plan, log, log_path, verbose):
    """Run the commands at once; log each one's output in order; raise for the first that failed."""
    processes = []
    for command in commands:
        if verbose:
            print("cextend: building %s: %s" % (plan.name, " ".join(command)), file=sys.stderr)
        processes.append(subprocess.Popen(command, cwd=plan.folder, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True, errors="replace",
                                          env=compiler_env()))
    failure = None
    for command, process in zip(commands, processes):
        output = process.communicate()[0]
        log.write("$ %s\n%s" % (" ".join(command), output))
        log.flush()
        if verbose and output:
            sys.stderr.write(output)
        if process.returncode != 0 and failure is None:
            failure = describe_failure(plan, output, process.returncode, log_path)
    if failure is not None:
        raise ExtensionBuildError(failure, log_path)


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
    """Line `number` of path as the user wrote it: load_inline's text (named by its own name, or by
    the .py file holding it as a literal), else the file."""
    absolute = os.path.normpath(os.path.join(plan.folder, path))
    for shown, first, text in plan.inline_lines:
        if os.path.normpath(os.path.join(plan.folder, shown)) == absolute:
            lines = text.split("\n")
            if first <= number < first + len(lines):
                return lines[number - first]
    try:
        with open(absolute, errors="replace") as f:
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
