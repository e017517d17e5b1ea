"""load_inline / load: building, the cross-process cache, the build lock, and error reports.

Every test builds into the session's private CEXTEND_EXTENSIONS_DIR (conftest).
Processes are real subprocesses where the property is about processes: a
second process must compile nothing, a killed builder must not block the next.
"""
import fcntl
import glob
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import cextend
from cextend.utils import _jit_cache
from cextend.utils.ffi import ExtensionBuildError, HeaderError, load, load_inline
from cextend.utils._cdef import cdef_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

AXPY_HEADER = "int axpy(const double *x, double *y, int64_t n, double a);"
AXPY_SOURCE = """
int axpy(const double *x, double *y, int64_t n, double a)
{
    if (n < 0)
        return -3;
    for (int64_t i = 0; i < n; ++i)
        y[i] += a * x[i];
    return 0;
}
"""


@pytest.fixture(scope="module")
def axpy():
    return load_inline("axpy", AXPY_HEADER, AXPY_SOURCE)


def test_inline_extension_computes_with_tensors_and_arrays(axpy):
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 1000):
        x, y = rng.standard_normal(n), rng.standard_normal(n)
        expected = y + 2.5 * x
        out = cextend.from_numpy(y.copy())
        assert axpy.axpy(cextend.from_numpy(x), out, n, 2.5) == 0
        np.testing.assert_array_equal(out.numpy(), expected)
        y_array = y.copy()
        assert axpy.axpy(x, y_array, n, 2.5) == 0             # plain ndarrays too
        np.testing.assert_array_equal(y_array, expected)


def test_wrapper_checks_dtypes_and_copies_strided_inputs(axpy):
    with pytest.raises(TypeError, match="argument 1 must be float64 data"):
        axpy.axpy(np.zeros(3, np.float32), np.zeros(3), 3, 1.0)
    x = np.arange(10.0)[::2]                 # a const input: copied to contiguous, not misread
    y = np.zeros(5)
    axpy.axpy(x, y, 5, 1.0)
    np.testing.assert_array_equal(y, x)
    with pytest.raises(ValueError, match="argument 2 is written through and must be C-contiguous"):
        axpy.axpy(np.zeros(5), np.zeros(10)[::2], 5, 1.0)
    assert axpy.axpy(np.zeros(1), np.zeros(1), -1, 1.0) == -3


def test_the_module_reports_its_build(axpy):
    info = axpy.__cextend__
    assert info.library == axpy.__file__ and os.path.exists(info.library)
    assert info.folder.startswith(os.environ["CEXTEND_EXTENSIONS_DIR"])
    assert "axpy" in json.load(open(os.path.join(info.folder, "key.json")))["name"]
    again = load_inline("axpy", AXPY_HEADER, AXPY_SOURCE)
    assert again.__cextend__.built is False and again.__cextend__.library == info.library


def test_build_directory_replaces_the_cache_and_headers_may_come_with_the_sources(tmp_path):
    header = _write(tmp_path / "inc.h", "int inc(int v);\n")
    source = _write(tmp_path / "inc.c", '#include "inc.h"\nint inc(int v) { return v + 1; }\n')
    module = load("inc", sources=[source, header], build_directory=str(tmp_path / "builds"))
    assert module.inc(1) == 2
    assert module.__cextend__.folder.startswith(str(tmp_path / "builds") + os.sep)


def test_name_must_be_an_identifier():
    with pytest.raises(ValueError, match="ASCII identifier"):
        load_inline("my-op", AXPY_HEADER, AXPY_SOURCE)


# -- the cache across processes ---------------------------------------------------

@pytest.fixture
def compiler_wrapper(tmp_path):
    """A CC that logs every invocation and, when asked, sleeps before linking."""
    real = _jit_cache.compiler_command()
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(textwrap.dedent("""\
        #!/bin/sh
        echo "$*" >> "$CC_LOG"
        case "$*" in *-shared*)
            if [ -n "$CC_MARK" ]; then touch "$CC_MARK"; fi
            if [ -n "$CC_SLEEP" ]; then sleep "$CC_SLEEP"; fi;;
        esac
        exec %s "$@"
        """ % " ".join(real)))
    wrapper.chmod(0o755)
    log = tmp_path / "cc.log"
    log.write_text("")
    return {"CC": str(wrapper), "CC_LOG": str(log)}


BUILD_SCRIPT = """
import json, sys, time
start = time.perf_counter()
from cextend.utils.ffi import load_inline
module = load_inline(%r, %r, %r)
info = module.__cextend__
y = __import__("numpy").zeros(3)
module.axpy(__import__("numpy").ones(3), y, 3, 2.0)
print(json.dumps({"built": info.built, "library": info.library, "seconds": info.seconds,
                  "result": y.tolist()}))
"""


def build_in_new_process(tmp_path, name, env, source=AXPY_SOURCE, **popen):
    script = tmp_path / ("build_%s.py" % name)
    script.write_text(BUILD_SCRIPT % (name, AXPY_HEADER, source))
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=ROOT, **env), **popen)


def finished(process, timeout=120):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_second_load_in_a_new_process_compiles_nothing(tmp_path, compiler_wrapper):
    first = finished(build_in_new_process(tmp_path, "reused", compiler_wrapper))
    log = open(compiler_wrapper["CC_LOG"]).read().splitlines()
    assert first["built"] is True and first["result"] == [2.0, 2.0, 2.0]
    assert any("-shared" in line for line in log) and any("--version" in line for line in log)
    second = finished(build_in_new_process(tmp_path, "reused", compiler_wrapper))
    assert second["built"] is False and second["library"] == first["library"]
    assert second["result"] == [2.0, 2.0, 2.0]
    # Not one compiler process, not even `cc --version` (cached by path and mtime).
    assert open(compiler_wrapper["CC_LOG"]).read().splitlines() == log


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_any_change_rebuilds(tmp_path):
    """Header, source, a local header the source includes, and flags are all in the key."""
    header = _write(tmp_path / "scaled.h", "#include <stdint.h>\nint64_t scaled(int64_t v);\n")
    _write(tmp_path / "factor.h", "#define FACTOR 2\n")
    source = _write(tmp_path / "scaled.c", '#include "scaled.h"\n#include "factor.h"\n'
                                           "int64_t scaled(int64_t v) { return FACTOR * v; }\n")

    def build(**kwargs):
        module = load("scaled", sources=[source], headers=[header], **kwargs)
        return module.__cextend__, module.scaled(21)

    info, value = build()
    assert value == 42
    libraries = {info.library}
    again, _ = build()
    assert again.built is False and again.library == info.library
    changes = [
        ("local header", lambda: _write(tmp_path / "factor.h", "#define FACTOR 3\n"), 63, {}),
        ("source", lambda: _write(tmp_path / "scaled.c", open(source).read() + "/* edited */\n"), 63, {}),
        ("header", lambda: _write(tmp_path / "scaled.h", open(header).read() + "/* edited */\n"), 63, {}),
        ("flags", lambda: None, 63, {"extra_compile_args": ["-DUNUSED_FLAG=1"]}),
    ]
    for what, change, expected, kwargs in changes:
        change()
        info, value = build(**kwargs)
        assert info.built is True, what
        assert value == expected, what
        assert info.library not in libraries, what
        libraries.add(info.library)


def test_concurrent_builds_serialise_on_the_lock(tmp_path, compiler_wrapper):
    env = dict(compiler_wrapper, CC_SLEEP="1")
    processes = [build_in_new_process(tmp_path, "raced", env) for _ in range(2)]
    results = [finished(p) for p in processes]
    assert sorted(r["built"] for r in results) == [False, True]
    assert results[0]["library"] == results[1]["library"]
    links = [line for line in open(compiler_wrapper["CC_LOG"]) if "-shared" in line]
    assert len(links) == 1


def test_a_builder_killed_while_holding_the_lock_blocks_no_one(tmp_path, compiler_wrapper):
    mark = tmp_path / "linking"
    env = dict(compiler_wrapper, CC_MARK=str(mark), CC_SLEEP="300")
    builder = build_in_new_process(tmp_path, "killed", env, start_new_session=True)
    deadline = time.monotonic() + 120
    while not mark.exists():
        assert builder.poll() is None, builder.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the builder never reached the link step"
        time.sleep(0.05)
    lock_path, = glob.glob(os.path.join(os.environ["CEXTEND_EXTENSIONS_DIR"], "killed-*", ".lock"))
    with open(lock_path) as lock:          # the builder holds it right now
        with pytest.raises(BlockingIOError):
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.killpg(builder.pid, signal.SIGKILL)          # the builder and its sleeping compiler
    builder.communicate()
    result = finished(build_in_new_process(tmp_path, "killed", compiler_wrapper), timeout=120)
    assert result["built"] is True and result["result"] == [2.0, 2.0, 2.0]


# -- errors --------------------------------------------------------------------------

COMPILE_ERROR_SCRIPT = """
from cextend.utils.ffi import load_inline
load_inline("broken", "int broken(const float *x, float *y, int64_t n);", '''
int broken(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] * scale;
    return 0;
}''')
"""


def test_a_compile_error_is_one_short_message_with_the_users_line(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text(COMPILE_ERROR_SCRIPT)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) < 40, result.stderr
    assert "ExtensionBuildError: building extension 'broken' failed:" in result.stderr
    # The line of broken.py that holds the error (the source is a literal there), the compiler's words,
    # the line itself.
    assert any(line.startswith("%s:7: error:" % script) and "scale" in line for line in lines), result.stderr
    assert "y[i] = x[i] * scale;" in result.stderr
    log = [line for line in lines if line.startswith("full compiler output: ")][0].split(": ", 1)[1]
    assert os.path.exists(log) and "scale" in open(log).read()


def test_load_reports_errors_in_the_users_file(tmp_path):
    header = _write(tmp_path / "oops.h", "int oops(int v);\n")
    source = _write(tmp_path / "oops.c", '#include "oops.h"\n\nint oops(int v)\n{\n    return v +;\n}\n')
    with pytest.raises(ExtensionBuildError) as error:
        load("oops", sources=[source], headers=[header])
    assert "%s:5: error:" % source in str(error.value) and "return v +;" in str(error.value)


def test_a_header_cffi_cannot_read_names_file_line_and_what_is_not_allowed():
    with pytest.raises(HeaderError) as error:
        load_inline("cxx_header", "int ok(int v);\nint sum(std::vector<int> v);\n", "int ok(int v) { return v; }")
    message = str(error.value)
    assert message.startswith("cxx_header.h:2: cannot parse `int sum(std::vector<int> v);`")
    assert "not allowed are C++" in message


def test_guards_extern_c_attributes_and_static_inline_are_accepted():
    header = textwrap.dedent("""\
        #ifndef GUARDED_H
        #define GUARDED_H
        #define GUARDED_VERSION 7
        #define GUARDED_API __attribute__((visibility("default")))
        #ifdef __cplusplus
        extern "C" {
        #endif

        static inline int twice(int v)
        {
            return 2 * v;
        }
        GUARDED_API int guarded(int v);

        #ifdef __cplusplus
        }
        #endif
        #endif
        """)
    module = load_inline("guarded", header, "int guarded(int v) { return twice(v) + GUARDED_VERSION; }")
    assert module.guarded(5) == 17 and module.twice(4) == 8 and module.GUARDED_VERSION == 7


def test_a_declared_but_undefined_function_fails_the_build_by_name():
    with pytest.raises(ExtensionBuildError) as error:
        load_inline("undefined_fn", "int defined_fn(int v);\nint missing_fn(int v);\n",
                    "int defined_fn(int v) { return v; }")
    assert "undefined_fn.h:2: 'missing_fn' is declared but not defined in any source" in str(error.value)
    # Nothing half-built stays in the cache: the next call reports the same, not an import error.
    with pytest.raises(ExtensionBuildError, match="missing_fn"):
        load_inline("undefined_fn", "int defined_fn(int v);\nint missing_fn(int v);\n",
                    "int defined_fn(int v) { return v; }")


def test_builds_are_quiet_unless_verbose(capfd):
    load_inline("quiet", "int quiet(int v);", "int quiet(int v) { return v; }")
    assert capfd.readouterr() == ("", "")
    load_inline("loud", "int loud(int v);", "int loud(int v) { return v; }", verbose=True)
    assert "cextend: building loud" in capfd.readouterr().err


@pytest.mark.skipif(bool(os.environ.get("CEXTEND_SANITIZED")), reason="the ASan runtime is loaded under make sanitize")
def test_sanitize_build_outside_an_asan_process_says_how():
    with pytest.raises(RuntimeError, match="LD_PRELOAD"):
        load_inline("asan_only", "int f(int v);", "int f(int v) { return v; }", sanitize=True)


# -- the header reader ------------------------------------------------------------------

def test_cdef_text_keeps_line_numbers_and_evaluates_conditionals():
    source = textwrap.dedent("""\
        /* a comment
           over two lines */
        #if defined(_WIN32) || !defined(__STDC__)
        int windows_only(void);
        #elif 2 * 3 == 6 && (1 || 0)
        int chosen(int a,
                   int b);
        #else
        int never(void);
        #endif
        #define LONG_MACRO(a, b) \\
            ((a) + (b))
        int after(void);
        """)
    text = cdef_text(source, "x.h")
    assert text.count("\n") == source.count("\n")
    lines = text.splitlines()
    assert "int chosen(int a," in lines[5] and "int after(void);" in lines[12]
    assert "windows_only" not in text and "never" not in text and "LONG_MACRO" not in text


def test_cdef_text_reports_unreadable_conditionals_with_their_line():
    with pytest.raises(HeaderError, match=r"x\.h:2: cannot evaluate `#if FOO\(1\)`"):
        cdef_text("int a(void);\n#if FOO(1)\n#endif\n", "x.h")
    with pytest.raises(HeaderError, match="unterminated"):
        cdef_text("#ifdef A\nint a(void);\n", "x.h")


def test_load_inline_needs_no_setuptools(tmp_path):
    """Python >= 3.12 ships no distutils: the JIT path calls the compiler itself."""
    script = tmp_path / "no_setuptools.py"
    script.write_text(textwrap.dedent("""
        import sys
        sys.modules["setuptools"] = sys.modules["distutils"] = None      # importing either now fails
        from cextend.utils.ffi import load_inline
        print(load_inline("no_setuptools", "int inc(int v);", "int inc(int v) { return v + 1; }").inc(41))
        """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 0 and result.stdout.strip() == "42", result.stderr[-2000:]


def test_an_unbuilt_cextend_says_how_to_build():
    """A source tree without its C extension (a fresh clone, or one shadowing an installed copy)."""
    result = subprocess.run([sys.executable, "-c", "import sys; sys.modules['cextend._C'] = None; import cextend"],
                            capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 1
    assert "cextend's C extension (cextend._C) is not built in %s" % ROOT in result.stderr
    assert "make build" in result.stderr and len(result.stderr.splitlines()) < 40


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None and not os.environ.get("CUDA_HOME"),
                    reason="no CUDA toolkit (nvcc) to compile .cu sources")
def test_load_compiles_cuda_sources_with_nvcc(tmp_path, monkeypatch):
    monkeypatch.setenv("CEXTEND_CUDA_ARCH_LIST", "9.0")        # one architecture: a quicker nvcc
    header = _write(tmp_path / "twice.h", "int twice_on_device(float *x, int n);\nint device_count(void);\n")
    _write(tmp_path / "twice.cu", textwrap.dedent("""\
        #include <cuda_runtime.h>
        __global__ void twice(float *x, int n)
        {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n)
                x[i] *= 2;
        }
        extern "C" int twice_on_device(float *x, int n)
        {
            twice<<<(n + 255) / 256, 256>>>(x, n);
            return (int)cudaGetLastError();
        }
        """))
    _write(tmp_path / "host.c", '#include <cuda_runtime_api.h>\n#include "twice.h"\n'
                                "int device_count(void)\n{\n    int n = 0;\n"
                                "    cudaError_t status = cudaGetDeviceCount(&n);\n"
                                "    return status == cudaSuccess ? n : -(int)status;\n}\n")
    module = load("cuda_twice", sources=[str(tmp_path / "host.c"), str(tmp_path / "twice.cu")],
                  headers=[header], with_cuda=True)
    count = module.device_count()              # a GPU count, or minus CUDA's error without one
    assert isinstance(count, int) and count != 0
    with pytest.raises(ValueError, match="need with_cuda=True"):
        load("cuda_twice", sources=[str(tmp_path / "host.c"), str(tmp_path / "twice.cu")], headers=[header])
