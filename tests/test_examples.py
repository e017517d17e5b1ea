"""The user's-own-extension paths, end to end: examples/script (a local _ext
built by build.py), examples/package (pip-installed with cffi_modules) and
an op scaffolded by cextend-new-op, each built and tested in a temp dir."""
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

from helpers import copy_sources

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args, cwd, extra_path=()):
    path = os.pathsep.join(list(extra_path) + [ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=path))
    assert result.returncode == 0, "%s failed:\n%s\n%s" % (" ".join(args), result.stdout[-3000:],
                                                           result.stderr[-3000:])
    return result.stdout


def pytest_in(directory, *files, extra_path=()):
    return run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files], directory,
               extra_path=[directory, *extra_path])


def test_script_example_builds_and_passes(tmp_path):
    work = tmp_path / "script"
    copy_sources("examples/script", work)
    run([sys.executable, "build.py"], work)
    assert any(name.startswith("_my_lib") for name in os.listdir(work / "_ext" / "my_lib"))
    assert "2 passed" in pytest_in(str(work), "test.py")


def fresh_venv(path):
    """A new virtual environment whose only packages are this checkout's cextend
    and its dependencies (the running environment's site-packages, added as a
    site directory after the venv's own), as after `pip install cextend`."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    python = str(path / "bin" / "python")
    own = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(own, "cextend_checkout.pth"), "w") as f:
        f.write("import site; site.addsitedir(%r)\n" % sysconfig.get_paths()["purelib"])
    return python


def documented_commands(marker):
    """The shell commands of the block that follows `marker` in README.md or
    docs/*.md (exactly one of them has it)."""
    documents = ["README.md"] + sorted(os.path.join("docs", name) for name in os.listdir(os.path.join(ROOT, "docs"))
                                       if name.endswith(".md"))
    found = []
    for document in documents:
        with open(os.path.join(ROOT, document)) as f:
            text = f.read()
        if marker in text:
            found.append(text)
    assert len(found) == 1, (marker, len(found))
    text = found[0]
    block = text[text.index(marker):].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_package_example_installs_and_passes_with_the_documented_commands(tmp_path):
    """docs/writing-c-ops.md: cd examples/package; python -m pip install --no-build-isolation .;
    python -m pytest test.py -- literally, in a fresh venv, from the package's folder."""
    commands = documented_commands("runs the package example's commands -->")
    assert commands == ["cd examples/package", "python -m pip install --no-build-isolation .",
                        "python -m pytest test.py"], commands
    checkout = tmp_path / "checkout"
    copy_sources("examples", checkout / "examples")
    python = fresh_venv(tmp_path / "venv")
    folder = checkout / commands[0].split()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    for command in commands[1:]:
        argv = [python] + command.split()[1:]
        result = subprocess.run(argv, cwd=str(folder), capture_output=True, text=True, timeout=300, env=env)
        assert result.returncode == 0, "%s failed:\n%s\n%s" % (command, result.stdout[-3000:],
                                                               result.stderr[-3000:])
    assert "1 passed" in result.stdout
    assert not (folder / "my_package").exists()         # the src layout: nothing shadows the install


def test_scaffolded_op_builds_and_passes_its_opcheck(tmp_path):
    """The documented flow (docs/writing-c-ops.md): cextend-new-op NAME && cd NAME && python build.py
    && python -m pytest."""
    assert documented_commands("tests/test_examples.py and CI run this flow -->") == [
        "pip install pytest", "cextend-new-op my_square", "cd my_square && python build.py && python -m pytest"]
    out = run([sys.executable, "-m", "cextend.utils.new_op", "my_square", "--dir", str(tmp_path)], tmp_path)
    op = tmp_path / "my_square"
    assert "created" in out and "pip install pytest" in out and (op / "my_square.c").exists()
    assert run([sys.executable, "build.py"], op).startswith("built ")
    assert run([sys.executable, "build.py"], op).startswith("cached ")      # build.py warms the cache
    assert "6 passed" in pytest_in(str(op))


@pytest.mark.parametrize("planted, report", [
    ("y[count] = 0;", "heap-buffer-overflow|just past the end"),
    ("y[-1] = 0;", "heap-buffer-overflow|before the start"),
])
def test_scaffolded_tests_catch_a_memory_bug_at_its_line(tmp_path, planted, report):
    """issue 25 item 1: an out-of-bounds write in the float64 forward passed every generated test,
    then killed pytest at exit; the generated opcheck now fails at the C line, and pytest exits 1."""
    from cextend.utils.new_op import scaffold
    op = scaffold("oob_op", str(tmp_path))
    source = os.path.join(op, "oob_op.c")
    with open(source) as f:
        lines = f.read().split("\n")
    forward = next(i for i, line in enumerate(lines) if line.startswith("int oob_op_forward_f64"))
    loop = next(i for i in range(forward, len(lines)) if "y[i] =" in lines[i])
    lines.insert(loop + 1, "    " + planted)
    with open(source, "w") as f:
        f.write("\n".join(lines))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "-k",
                             "opcheck"], cwd=op, capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join([op, ROOT])))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert "test_sanitize failed" in result.stdout and re.search(report, result.stdout)
    assert "oob_op.c:%d in oob_op_forward_f64" % (loop + 2) in result.stdout, result.stdout[-3000:]


def test_scaffolded_tests_catch_a_float32_only_gradient_bug(tmp_path):
    """issue 25 item 2: `3 * x[i] * grad_y[i]` in the float32 backward passed every generated test."""
    from cextend.utils.new_op import scaffold
    op = scaffold("f32_wrong", str(tmp_path))
    source = os.path.join(op, "f32_wrong.c")
    with open(source) as f:
        text = f.read()
    assert text.count("grad_x[i] = 2 * x[i] * grad_y[i];") == 2       # float32's first, float64's last
    with open(source, "w") as f:
        f.write(text.replace("grad_x[i] = 2 * x[i] * grad_y[i];", "grad_x[i] = 3 * x[i] * grad_y[i];", 1))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=op,
                            capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join([op, ROOT])))
    assert result.returncode == 1, result.stdout[-3000:]
    assert "test_float32 failed" in result.stdout
    assert "2 failed" in result.stdout or "failed" in result.stdout.splitlines()[-1]


def test_scaffolded_op_catches_a_wrong_backward(tmp_path):
    from cextend.utils.new_op import scaffold
    op = scaffold("half_wrong", str(tmp_path))
    source = os.path.join(op, "half_wrong.c")
    with open(source) as f:
        text = f.read()
    with open(source, "w") as f:        # the float64 gradient (the last one) forgets the factor 2
        f.write("grad_x[i] = x[i] * grad_y[i];".join(text.rsplit("grad_x[i] = 2 * x[i] * grad_y[i];", 1)))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "opcheck"],
                            cwd=op, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join([op, ROOT])))
    assert result.returncode == 1, result.stdout[-2000:]
    assert "test_gradcheck failed" in result.stdout and "Jacobian mismatch" in result.stdout


def test_scaffold_refuses_bad_names_and_existing_dirs(tmp_path):
    from cextend.utils.new_op import scaffold
    with pytest.raises(ValueError, match="lower-case C identifier"):
        scaffold("My-Op", str(tmp_path))
    for keyword in ("for", "class", "lambda", "double", "static"):
        with pytest.raises(ValueError, match="keyword"):
            scaffold(keyword, str(tmp_path))
    for taken in ("math", "json", "build", "numpy", "test_op"):
        with pytest.raises(ValueError, match="shadow"):
            scaffold(taken, str(tmp_path))
    assert os.listdir(str(tmp_path)) == []
    scaffold("ok_op", str(tmp_path))
    with pytest.raises(FileExistsError):
        scaffold("ok_op", str(tmp_path))


def test_scaffold_command_line_rejects_a_keyword(tmp_path):
    result = subprocess.run([sys.executable, "-m", "cextend.utils.new_op", "for", "--dir", str(tmp_path)],
                            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 2 and "Python or C keyword" in result.stderr
    assert os.listdir(str(tmp_path)) == []


def test_with_cuda_adds_the_cuda_build_settings(tmp_path):
    from cextend.utils import ffi as cffi_utils
    header = tmp_path / "k.h"
    header.write_text("int k(float *x, int64_t n);\n")
    if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        with pytest.raises(RuntimeError, match="no CUDA toolkit"):
            cffi_utils.create_extension("_ext.k", [str(header)], [], relative_to=str(tmp_path), with_cuda=True)
        return
    builder = cffi_utils.create_extension("_ext.k", ["k.h"], [], relative_to=str(tmp_path) + os.sep,
                                          with_cuda=True, extra_objects=["k_cuda.o"])
    kwargs = builder._assigned_source[3]
    assert ("WITH_CUDA", None) in kwargs["define_macros"]
    assert "cudart" in kwargs["libraries"] and kwargs["extra_objects"] == ["k_cuda.o"]
    assert any(d.endswith("include") and os.path.exists(os.path.join(d, "cuda_runtime.h"))
               for d in kwargs["include_dirs"])
