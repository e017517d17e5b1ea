"""Say how to build a create_extension module that is imported before it exists.

`from _ext import my_lib` before `python build.py` used to end in Python's
bare "No module named '_ext'".  A finder placed last on sys.meta_path is
asked only after every real finder has failed; for names with an `_ext`
component (the convention create_extension inherited from torch.utils.ffi:
'_ext.my_lib', 'my_package._ext.my_lib') it raises ModuleNotFoundError
saying what to run, naming the build script when one that builds that
package sits in the importing program's folder.  It never finds a module, so a
built extension imports exactly as before.
"""
import importlib.abc
import os
import re
import sys

_SCRIPT_NAMES = ("build.py", "setup.py")


def _build_scripts(search, top):
    """Build scripts in `search` folders that build package `top` (paths, in order, no duplicates):
    a build.py calling create_extension, or a setup.py with cffi_modules, naming `top` in a string."""
    named = re.compile(r"""['"]%s[.'"]""" % re.escape(top))
    seen, found = set(), []
    for folder in search:
        folder = os.path.abspath(folder or os.getcwd())
        for name in _SCRIPT_NAMES:
            path = os.path.join(folder, name)
            if path in seen or not os.path.isfile(path):
                continue
            seen.add(path)
            try:
                with open(path, errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            builds = "create_extension" in text or name == "setup.py" and "cffi_modules" in text
            if builds and named.search(text):
                found.append(path)
    return found


def message(fullname, search=None, package_file=None, package=None):
    """The error for `fullname`; build scripts are looked for in `search`
    (default: the program's folder and the working directory), and first
    beside the top of `package` when its __init__ file is given."""
    search = list(sys.path[:1]) + [os.getcwd()] if search is None else list(search)
    if package_file is not None:
        root = os.path.dirname(os.path.abspath(package_file))
        for _ in package.split("."):
            root = os.path.dirname(root)
        search.insert(0, root)
    scripts = _build_scripts(search, fullname.split(".")[0])
    lines = ["No module named %r: this C extension has not been built (cextend.utils.ffi.create_extension "
             "writes it when its build runs)." % fullname]
    setups = [p for p in scripts if os.path.basename(p) == "setup.py"]
    if setups:
        lines.append("Install its package with `pip install --no-build-isolation %s`, then import it from "
                     "outside that folder." % os.path.dirname(setups[0]))
    elif scripts:
        lines.append("Build it with `python %s`, then import again." % scripts[0])
    else:
        lines.append("Run the build script that calls create_extension (e.g. `python build.py`), or "
                     "`pip install` the package that holds it, then import again.")
    return " ".join(lines)


class UnbuiltExtensionFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if "_ext" not in fullname.split("."):
            return None
        # Finders added after this one still get their turn before the error.
        later = sys.meta_path[sys.meta_path.index(self) + 1:] if self in sys.meta_path else []
        for finder in later:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                return spec
        raise ModuleNotFoundError(message(fullname), name=fullname)


def install():
    if not any(isinstance(finder, UnbuiltExtensionFinder) for finder in sys.meta_path):
        sys.meta_path.append(UnbuiltExtensionFinder())
