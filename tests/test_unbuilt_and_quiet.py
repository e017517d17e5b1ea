"""A newcomer's first stumbles (issue 16.6 and 16.10): importing something
that was never built says how to build it, and a normal build prints nothing."""
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from helpers import copy_sources

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python(code, cwd, extra_path=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*extra_path, ROOT]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=str(cwd), capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.fixture
def script(tmp_path):
    """A copy of examples/script, not built."""
    work = tmp_path / "script"
    copy_sources("examples/script", work)
    return work


def test_importing_a_never_built_extension_names_its_build_script(script):
    result = python("import cextend\nfrom _ext import my_lib", script)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: No module named '_ext': this C extension has not been built")
    assert "Build it with `python %s`" % (script / "build.py") in last
    # The example's own test (imports cextend first, then the op) says the same at collection.
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test.py"],
                            cwd=str(script), capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(script), ROOT])))
    assert result.returncode != 0 and "python %s" % (script / "build.py") in result.stdout


def test_a_wrapper_without_its_compiled_module_says_how_to_build(script):
    build = python("""
        from cextend.utils.ffi import create_extension
        create_extension('mylib', headers=['src/my_lib.h'], sources=['src/my_lib.c']).build()
        """, script)
    assert build.returncode == 0, build.stderr
    for name in os.listdir(str(script / "mylib")):
        if name.endswith(".so"):
            os.remove(str(script / "mylib" / name))
    result = python("import mylib", script.parent, extra_path=[str(script)])
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: No module named 'mylib._mylib': this C extension has not "
                           "been built"), result.stderr
    assert "python %s" % (script / "build.py") not in last    # that build.py builds '_ext.my_lib', not 'mylib'
    (script / "build.py").write_text("from cextend.utils.ffi import create_extension\n"
                                     "create_extension('mylib', headers=['src/my_lib.h'], sources=['src/my_lib.c'])\n")
    result = python("import mylib", script.parent, extra_path=[str(script)])
    assert "Build it with `python %s`" % (script / "build.py") in result.stderr


def test_an_unbuilt_package_points_at_pip_install(tmp_path):
    package = tmp_path / "package"
    copy_sources("examples/package", package)
    result = python("import cextend\nimport my_package._ext.my_lib", package, extra_path=[str(package / "src")])
    last = result.stderr.strip().splitlines()[-1]
    assert "this C extension has not been built" in last, result.stderr
    assert "pip install --no-build-isolation %s" % package in last


def test_the_finder_changes_nothing_else(script, tmp_path):
    """Other missing modules keep Python's message; later finders still get their turn."""
    result = python("import cextend\nimport not_a_module_anywhere", tmp_path)
    assert result.stderr.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'not_a_module_anywhere'"
    result = python("""
        import importlib.abc, importlib.machinery, sys
        import cextend
        class Late(importlib.abc.MetaPathFinder, importlib.abc.Loader):
            def find_spec(self, name, path=None, target=None):
                return importlib.machinery.ModuleSpec(name, self) if name == "_ext" else None
            def create_module(self, spec):
                return None
            def exec_module(self, module):
                module.found_late = True
        sys.meta_path.append(Late())
        import _ext
        print(_ext.found_late)
        """, tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr
    assert python("import cextend, sys\nsys.path.insert(0, '.')\nimport subprocess\n"
                  "subprocess.run([sys.executable, 'build.py'], check=True)\nfrom _ext import my_lib\n"
                  "print(my_lib.my_lib_add_forward)", script).returncode == 0


def test_an_unbuilt_cextend_copy_says_how_to_build(tmp_path):
    """The package imported from a source tree whose C extension is not built."""
    shutil.copytree(os.path.join(ROOT, "cextend"), str(tmp_path / "cextend"),
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    # -S: no site-packages processing, so an editable install of this checkout cannot take
    # precedence; numpy and cffi come from the plain path after the working directory.
    env = dict(os.environ, PYTHONPATH=sysconfig.get_paths()["purelib"])
    result = subprocess.run([sys.executable, "-S", "-c", "import cextend"], cwd=str(tmp_path), capture_output=True,
                            text=True, timeout=120, env=env)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "cextend's C extension (cextend._C) is not built in %s" % tmp_path in last
    assert "make build" in last


def test_create_extension_builds_quietly_unless_verbose(script):
    quiet = subprocess.run([sys.executable, "build.py"], cwd=str(script), capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert quiet.returncode == 0 and (quiet.stdout, quiet.stderr) == ("", ""), quiet.stdout + quiet.stderr
    shutil.rmtree(str(script / "build"))
    loud = python("""
        from cextend.utils.ffi import create_extension
        create_extension('_ext.my_lib', headers=['src/my_lib.h'], sources=['src/my_lib.c'], verbose=True).build()
        """, script)
    assert loud.returncode == 0 and "generating" in loud.stdout + loud.stderr


def test_create_extension_without_setuptools_says_how_to_get_it(script):
    """cextend does not depend on setuptools (only create_extension's builds
    need it): without it, create_extension names the extra that brings it.
    The interpreter is started with setuptools and distutils unimportable."""
    result = python("""
        import sys
        sys.modules["setuptools"] = sys.modules["distutils"] = sys.modules["distutils.core"] = None
        from cextend.utils.ffi import create_extension
        create_extension('_ext.my_lib', headers=['src/my_lib.h'], sources=['src/my_lib.c'])
        """, script)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == ("ModuleNotFoundError: create_extension builds C extensions with setuptools, which is not "
                    "installed: pip install 'cextend[ffi]' (or pip install setuptools)"), result.stderr
    assert not (script / "_ext").exists()


def test_cextend_runs_without_setuptools_tqdm_and_threadpoolctl(tmp_path):
    """numpy and cffi are the only runtime requirements: the package, its ops,
    autograd and nn work with the optional packages unimportable."""
    result = python("""
        import sys
        for name in ("setuptools", "distutils", "tqdm", "threadpoolctl", "torch"):
            sys.modules[name] = None
        import cextend, cextend.nn as nn
        from cextend.utils.ffi import load_inline  # noqa: F401  (the JIT path needs no setuptools)
        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        model(cextend.randn(5, 3)).sum().backward()
        print(model[0].weight.grad.shape)
        """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "cextend.Size([4, 3])"
