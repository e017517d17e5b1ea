"""The JIT build cache is the user's alone, and a cached build is reused only while it is sound.

Another local user is simulated with chmod (a folder group or others can
write) and, when the tests run as root, with chown to an unused uid.  Every
test builds into its own build_directory under tmp_path.  A library that
must not be mapped into this process (one that is truncated afterwards, or
a planted one) is built and loaded in subprocesses.
"""
import json
import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from cextend.utils import _jit_cache
from cextend.utils.ffi import load, load_inline

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UnsafeCacheError = _jit_cache.UnsafeCacheError
HEADER = "int value(void);"
OTHER_UID = 54321           # a uid no one here has


def value_source(v):
    return "int value(void) { return %d; }" % v


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def _record(info):
    return json.load(open(os.path.join(info.folder, "build.json")))


def _load(name, source, root):
    # Called here and from load_in_new_process: HEADER is a literal of this file, which names it
    # in the generated C (and so in the key), so both must call load_inline from this file.
    return load_inline(name, HEADER, source, build_directory=root)


def load_in_new_process(tmp_path, name, source, root):
    """_load in a fresh Python: the library is never mapped into the test's process."""
    code = ("import json, sys; sys.path.insert(0, %r); from test_jit_cache_security import _load; "
            "m = _load(%r, %r, %r); print(json.dumps({'built': m.__cextend__.built, "
            "'library': m.__cextend__.library, 'value': m.value()}))" % (
                os.path.dirname(os.path.abspath(__file__)), name, source, root))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# -- folders: created private, refused when someone else could write them ---------------------

def test_the_cache_and_its_parents_are_created_private(tmp_path):
    root = tmp_path / "made" / "by" / "cextend"
    module = load_inline("private_value", HEADER, value_source(1), build_directory=str(root))
    assert module.value() == 1
    for folder in (tmp_path / "made", tmp_path / "made" / "by", root, module.__cextend__.folder):
        assert _mode(folder) == 0o700, folder
    for name in ("build.json", "build.log", ".lock", "key.json", "private_value.c", "private_value.h"):
        assert _mode(os.path.join(module.__cextend__.folder, name)) & 0o077 == 0, name


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777, 0o722])
def test_a_cache_root_others_can_write_is_refused_with_how_to_fix_it(tmp_path, mode):
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(mode)
    with pytest.raises(UnsafeCacheError) as error:
        load_inline("shared_value", HEADER, value_source(1), build_directory=str(root))
    message = str(error.value)
    assert str(root) in message and "group or others can write to it (mode %03o)" % (mode & 0o777) in message
    assert "chmod go-w %s" % root in message and "CEXTEND_EXTENSIONS_DIR" in message
    assert os.listdir(root) == []               # not even the compiler table is written there
    assert isinstance(error.value, PermissionError)


def test_the_environment_variable_root_is_checked_too(tmp_path, monkeypatch):
    root = tmp_path / "env-root"
    root.mkdir()
    root.chmod(0o777)
    monkeypatch.setenv("CEXTEND_EXTENSIONS_DIR", str(root))
    with pytest.raises(UnsafeCacheError, match="chmod go-w"):
        load_inline("env_value", HEADER, value_source(1))


def test_a_private_root_inside_a_sticky_shared_folder_is_fine(tmp_path):
    shared = tmp_path / "tmp-like"
    shared.mkdir()
    shared.chmod(0o1777)                      # like /tmp: only the folders cextend uses are checked
    module = load_inline("sticky_value", HEADER, value_source(3), build_directory=str(shared / "mine"))
    assert module.value() == 3


def _plant(tmp_path, library, marker):
    """Replace library with one whose constructor touches marker, and fix build.json's hash to
    match, as a user who can write the folder could."""
    planted_c = _write(tmp_path / "planted.c", '#include <stdio.h>\n'
                       '__attribute__((constructor)) static void plant(void) {\n'
                       '    FILE *f = fopen("%s", "w"); if (f) fclose(f);\n}\n' % marker)
    subprocess.run(_jit_cache.compiler_command() + ["-shared", "-fPIC", planted_c, "-o", library], check=True)
    record_path = os.path.join(os.path.dirname(library), "build.json")
    record = json.load(open(record_path))
    record["sha256"] = _jit_cache.file_sha256(library)
    with open(record_path, "w") as f:
        json.dump(record, f)


@pytest.mark.parametrize("shared", ["root", "key folder"])
def test_a_library_planted_in_a_shared_cache_is_refused_not_loaded(tmp_path, shared):
    root = str(tmp_path / "cache")
    built = load_in_new_process(tmp_path, "planted", value_source(4), root)
    marker = tmp_path / "planted-code-ran"
    _plant(tmp_path, built["library"], marker)
    folder = os.path.dirname(built["library"])
    os.chmod(root if shared == "root" else folder, 0o777)       # someone else could have written it
    with pytest.raises(UnsafeCacheError) as error:
        _load("planted", value_source(4), root)
    assert (root if shared == "root" else folder) in str(error.value)
    assert "another user could put a library there that your process would load" in str(error.value)
    assert not marker.exists()


requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


@requires_root
def test_a_root_another_user_made_first_is_refused(tmp_path):
    root = tmp_path / "theirs"
    root.mkdir(mode=0o755)
    os.chown(root, OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafeCacheError, match=r"it belongs to uid %d, not to you" % OTHER_UID):
        load_inline("theirs_value", HEADER, value_source(1), build_directory=str(root))


@requires_root
def test_a_key_folder_another_user_made_first_is_refused(tmp_path):
    root = str(tmp_path / "cache")
    built = load_in_new_process(tmp_path, "squatted", value_source(5), root)
    folder = os.path.dirname(built["library"])
    os.chown(folder, OTHER_UID, OTHER_UID)       # as if they had made the folder of that name first
    with pytest.raises(UnsafeCacheError) as error:
        _load("squatted", value_source(5), root)
    assert folder in str(error.value) and "belongs to uid %d" % OTHER_UID in str(error.value)


def test_a_root_that_links_to_a_private_folder_is_fine_one_that_links_to_a_shared_one_is_not(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(mine)
    module = load_inline("linked_value", HEADER, value_source(6), build_directory=str(tmp_path / "link"))
    assert module.value() == 6
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (tmp_path / "bad-link").symlink_to(shared)
    with pytest.raises(UnsafeCacheError, match="the folder .*bad-link points to"):
        load_inline("linked_value", HEADER, value_source(6), build_directory=str(tmp_path / "bad-link"))


@requires_root
def test_a_root_that_links_to_another_users_folder_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    (tmp_path / "link").symlink_to(theirs)
    with pytest.raises(UnsafeCacheError, match="belongs to uid %d" % OTHER_UID):
        load_inline("linked_value", HEADER, value_source(6), build_directory=str(tmp_path / "link"))


def test_a_key_folder_that_is_a_symlink_is_refused(tmp_path):
    root = tmp_path / "cache"
    module = load_inline("swapped", HEADER, value_source(7), build_directory=str(root))
    folder = module.__cextend__.folder
    os.rename(folder, str(tmp_path / "elsewhere"))
    os.symlink(str(tmp_path / "elsewhere"), folder)
    with pytest.raises(UnsafeCacheError, match="it is a symlink"):
        load_inline("swapped", HEADER, value_source(7), build_directory=str(root))


# -- files in the cache are never written or read through a symlink ------------------------

def _force_rebuild(info):
    with open(os.path.join(info.folder, "build.json"), "w") as f:
        f.write("{ garbled")


def test_a_planted_build_log_symlink_is_not_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("only its owner may read or change this\n")
    secret.chmod(0o600)
    module = load_inline("log_link", HEADER, value_source(8), build_directory=str(tmp_path / "cache"))
    info = module.__cextend__
    os.remove(info.log)
    os.symlink(str(secret), info.log)
    _force_rebuild(info)
    again = load_inline("log_link", HEADER, value_source(8), build_directory=str(tmp_path / "cache"))
    assert again.__cextend__.built is True and again.value() == 8
    assert secret.read_text() == "only its owner may read or change this\n"
    assert not os.path.islink(info.log) and "-shared" in open(info.log).read()


def test_a_build_json_symlink_is_not_read_and_is_replaced(tmp_path):
    module = load_inline("record_link", HEADER, value_source(9), build_directory=str(tmp_path / "cache"))
    info = module.__cextend__
    record_path = os.path.join(info.folder, "build.json")
    decoy = tmp_path / "decoy.json"
    decoy.write_text(open(record_path).read())
    os.remove(record_path)
    os.symlink(str(decoy), record_path)
    again = load_inline("record_link", HEADER, value_source(9), build_directory=str(tmp_path / "cache"))
    assert again.__cextend__.built is True and again.value() == 9
    assert not os.path.islink(record_path) and decoy.read_text() != ""


def test_a_lock_symlink_is_refused(tmp_path):
    module = load_inline("lock_link", HEADER, value_source(10), build_directory=str(tmp_path / "cache"))
    info = module.__cextend__
    lock = os.path.join(info.folder, ".lock")
    os.remove(lock)
    os.symlink(str(tmp_path / "elsewhere"), lock)
    _force_rebuild(info)
    with pytest.raises(UnsafeCacheError, match="is a symlink"):
        load_inline("lock_link", HEADER, value_source(10), build_directory=str(tmp_path / "cache"))
    assert not (tmp_path / "elsewhere").exists()


# -- a damaged build is rebuilt, never loaded -----------------------------------------------------

def test_a_truncated_library_is_rebuilt_not_loaded(tmp_path):
    root = str(tmp_path / "cache")
    first = load_in_new_process(tmp_path, "truncated", value_source(11), root)
    size = os.path.getsize(first["library"])
    with open(first["library"], "r+b") as f:
        f.truncate(size // 2)                    # loading this would SIGBUS
    second = load_in_new_process(tmp_path, "truncated", value_source(11), root)
    assert second["built"] is True and second["value"] == 11
    assert second["library"] != first["library"]
    third = _load("truncated", value_source(11), root)         # the sound rebuild may be mapped here
    assert third.__cextend__.built is False and third.__cextend__.library == second["library"]


@pytest.mark.parametrize("damage", ["garbled", "empty", "a list", "wrong hash", "missing field", "path"])
def test_damaged_build_metadata_rebuilds(tmp_path, damage):
    root = str(tmp_path / "cache")
    module = load_inline("damaged_%s" % damage.replace(" ", "_"), HEADER, value_source(12), build_directory=root)
    record_path = os.path.join(module.__cextend__.folder, "build.json")
    record = json.load(open(record_path))
    text = {
        "garbled": '{"format": 1, "libr',
        "empty": "",
        "a list": "[1, 2, 3]",
        "wrong hash": json.dumps(dict(record, sha256="0" * 64)),
        "missing field": json.dumps({k: v for k, v in record.items() if k != "const"}),
        "path": json.dumps(dict(record, library="../../elsewhere.so")),
    }[damage]
    with open(record_path, "w") as f:
        f.write(text)
    again = load_inline("damaged_%s" % damage.replace(" ", "_"), HEADER, value_source(12), build_directory=root)
    assert again.__cextend__.built is True and again.value() == 12
    assert json.load(open(record_path))["sha256"] == _jit_cache.file_sha256(again.__cextend__.library)


def test_a_garbled_compiler_table_is_asked_again(tmp_path):
    root = tmp_path / "cache"
    load_inline("table_value", HEADER, value_source(13), build_directory=str(root))
    (root / "compilers.json").write_text("{ not json")
    module = load_inline("table_value", HEADER, value_source(13), build_directory=str(root))
    assert module.__cextend__.built is False and module.value() == 13
    assert json.load(open(root / "compilers.json"))


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_temporaries_of_dead_builds_are_removed_when_the_lock_is_taken(tmp_path):
    module = load_inline("leftovers", HEADER, value_source(14), build_directory=str(tmp_path / "cache"))
    info = module.__cextend__
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead, alive = _dead_pid(), sleeper.pid
        paths = {
            "dead library": "%s.%d.tmp" % (info.library, dead),
            "dead json": "%s.%d.0a1b2c3d.tmp" % (os.path.join(info.folder, "build.json"), dead),
            "alive": "%s.%d.tmp" % (info.library, alive),
            "alive but old": "%s.%d.ffffffff.tmp" % (os.path.join(info.folder, "key.json"), alive),
        }
        for path in paths.values():
            open(path, "w").close()
        old = time.time() - 7 * 3600
        os.utime(paths["alive but old"], (old, old))
        _force_rebuild(info)
        again = load_inline("leftovers", HEADER, value_source(14), build_directory=str(tmp_path / "cache"))
        assert again.__cextend__.built is True
        assert {k for k, p in paths.items() if os.path.exists(p)} == {"alive"}
        assert not [n for n in os.listdir(info.folder) if n.endswith(".tmp") and str(alive) not in n]
    finally:
        sleeper.kill()
        sleeper.wait()


# -- inputs the key cannot see: every one rebuilds when it changes ------------------------------

def _builds_again_when_changed(write_input, build):
    """build() sees write_input(1)'s value, compiles nothing the second time, and after
    write_input(2) rebuilds into a new library with the new value."""
    write_input(1)
    first = build()
    assert first.value() == 1 and first.__cextend__.built is True
    cached = build()
    assert cached.__cextend__.built is False and cached.__cextend__.library == first.__cextend__.library
    write_input(2)
    second = build()
    assert second.__cextend__.built is True
    assert second.value() == 2
    assert second.__cextend__.library != first.__cextend__.library
    return first, second


def test_a_header_found_through_cpath_rebuilds(tmp_path, monkeypatch):
    monkeypatch.setenv("CPATH", str(tmp_path / "cpath"))
    _builds_again_when_changed(
        lambda v: _write(tmp_path / "cpath" / "cpath_setting.h", "#define VALUE %d\n" % v),
        lambda: load_inline("cpath_value", HEADER, '#include "cpath_setting.h"\nint value(void) { return VALUE; }',
                            build_directory=str(tmp_path / "cache")))


def test_a_header_found_through_c_include_path_rebuilds(tmp_path, monkeypatch):
    monkeypatch.setenv("C_INCLUDE_PATH", str(tmp_path / "system-like"))
    _builds_again_when_changed(
        lambda v: _write(tmp_path / "system-like" / "cip_setting.h", "#define VALUE %d\n" % v),
        lambda: load_inline("cip_value", HEADER, "#include <cip_setting.h>\nint value(void) { return VALUE; }",
                            build_directory=str(tmp_path / "cache")))


def test_the_compiler_environment_is_in_the_key(tmp_path, monkeypatch):
    build = lambda: load_inline("env_key", HEADER, value_source(1), build_directory=str(tmp_path / "cache"))  # noqa: E731
    first = build().__cextend__
    monkeypatch.setenv("CPATH", str(tmp_path / "nowhere"))
    second = build().__cextend__
    monkeypatch.setenv("LIBRARY_PATH", str(tmp_path / "nowhere"))
    third = build().__cextend__
    assert len({first.key, second.key, third.key}) == 3 and second.built and third.built
    assert json.load(open(os.path.join(third.folder, "key.json")))["environment"] == {
        "CPATH": str(tmp_path / "nowhere"), "LIBRARY_PATH": str(tmp_path / "nowhere")}


def test_a_forced_include_file_rebuilds(tmp_path):
    forced = str(tmp_path / "forced.h")
    _builds_again_when_changed(
        lambda v: _write(tmp_path / "forced.h", "#define VALUE %d\n" % v),
        lambda: load_inline("forced_value", HEADER, "int value(void) { return VALUE; }",
                            extra_compile_args=["-include", forced], build_directory=str(tmp_path / "cache")))


def test_a_header_in_an_iquote_folder_rebuilds(tmp_path):
    _builds_again_when_changed(
        lambda v: _write(tmp_path / "quoted" / "quoted_setting.h", "#define VALUE %d\n" % v),
        lambda: load_inline("quoted_value", HEADER, '#include "quoted_setting.h"\nint value(void) { return VALUE; }',
                            extra_compile_args=["-iquote", str(tmp_path / "quoted")],
                            build_directory=str(tmp_path / "cache")))


def test_a_computed_include_rebuilds(tmp_path):
    """`#include MACRO`: the key's scan cannot follow it; the compiler's dependency list does."""
    source = '#define VALUE_HEADER "macro_setting.h"\n#include VALUE_HEADER\nint value(void) { return VALUE; }'
    first, second = _builds_again_when_changed(
        lambda v: _write(tmp_path / "macro" / "macro_setting.h", "#define VALUE %d\n" % v),
        lambda: load_inline("macro_value", HEADER, source, include_dirs=[str(tmp_path / "macro")],
                            build_directory=str(tmp_path / "cache")))
    assert second.__cextend__.folder == first.__cextend__.folder       # same key: rebuilt in its folder
    assert str(tmp_path / "macro" / "macro_setting.h") in [f for f, _ in _record(second.__cextend__)["dependencies"]["files"]]


def test_a_dependency_the_compiler_listed_rebuilds(tmp_path):
    """A folder given in a spelling the key's scan does not parse: only -MD knows the header."""
    header = _write(tmp_path / "scaled.h", "int value(void);\n")
    source = _write(tmp_path / "scaled.c", '#include "scaled.h"\n#include "md_setting.h"\n'
                                           "int value(void) { return VALUE; }\n")
    _builds_again_when_changed(
        lambda v: _write(tmp_path / "hidden" / "md_setting.h", "#define VALUE %d\n" % v),
        lambda: load("md_value", sources=[source], headers=[header],
                     extra_compile_args=["--include-directory=%s" % (tmp_path / "hidden")],
                     build_directory=str(tmp_path / "cache")))


def _static_library(tmp_path, v, name="libvalue.a"):
    c = _write(tmp_path / "lib" / "library_value.c", "int library_value(void) { return %d; }\n" % v)
    obj = str(tmp_path / "lib" / "library_value.o")
    subprocess.run(_jit_cache.compiler_command() + ["-fPIC", "-c", c, "-o", obj], check=True)
    archive = str(tmp_path / "lib" / name)
    if os.path.exists(archive):
        os.remove(archive)
    subprocess.run(["ar", "rcs", archive, obj], check=True)
    return archive


LINKED_SOURCE = "int library_value(void);\nint value(void) { return library_value(); }"


@pytest.mark.skipif(__import__("shutil").which("ar") is None, reason="no ar to make a static library")
def test_a_static_library_named_in_the_link_args_rebuilds(tmp_path):
    archive = str(tmp_path / "lib" / "libvalue.a")
    _builds_again_when_changed(
        lambda v: _static_library(tmp_path, v),
        lambda: load_inline("static_value", HEADER, LINKED_SOURCE, extra_link_args=[archive],
                            build_directory=str(tmp_path / "cache")))


@pytest.mark.skipif(__import__("shutil").which("ar") is None, reason="no ar to make a static library")
def test_a_library_found_through_dash_l_rebuilds(tmp_path):
    _builds_again_when_changed(
        lambda v: _static_library(tmp_path, v),
        lambda: load_inline("dash_l_value", HEADER, LINKED_SOURCE,
                            extra_link_args=["-L", str(tmp_path / "lib"), "-lvalue"],
                            build_directory=str(tmp_path / "cache")))


def test_user_headers_are_hashed_and_system_headers_vouched_for_by_their_folder(tmp_path):
    header = _write(tmp_path / "deps.h", "#include <stdio.h>\nint value(void);\n")
    source = _write(tmp_path / "deps.c", '#include "deps.h"\nint value(void) { return 15; }\n')
    module = load("deps_value", sources=[source], headers=[header], build_directory=str(tmp_path / "cache"))
    dependencies = _record(module.__cextend__)["dependencies"]
    files = [path for path, _ in dependencies["files"]]
    assert header in files and source in files
    assert not [f for f in files if f.startswith(module.__cextend__.folder)]       # its own outputs
    system = [name for _, _, headers in dependencies["system"] for name, _, _ in headers]
    assert "stdio.h" in system and "Python.h" in system


def test_dependency_files_are_read_as_make_writes_them(tmp_path):
    text = textwrap.dedent("""\
        obj.o: /src/a\\ b.c /usr/include/stdio.h \\
         relative.h /x/$$dollar.h
        """)
    assert _jit_cache.dependencies_in(text, "/build") == [
        "/src/a b.c", "/usr/include/stdio.h", "/build/relative.h", "/x/$dollar.h"]
