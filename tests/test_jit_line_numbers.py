"""load_inline names the line the user wrote: in the .py file for a string literal, else in the string.

A source or header that is a string literal of the calling file is compiled
under `#line N "that file"`, so the compiler's first error, and the source
line shown under it, are the .py file's.  Text made at run time (or a
literal whose lines are not the file's lines: escaped newlines, a
backslash-continuation, an f-string) keeps the name NAME.c / NAME.h and the
line within the string.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from cextend.utils.ffi import ExtensionBuildError, HeaderError, load_inline

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THIS_FILE = os.path.abspath(__file__)


def line_in_this_file(needle, after=0):
    """The line of this file holding needle (the first after line `after`)."""
    with open(THIS_FILE) as f:
        return next(i for i, line in enumerate(f, 1) if i > after and needle in line)


def build_error(*args, **kwargs):
    with pytest.raises(ExtensionBuildError) as error:
        load_inline(*args, **kwargs)
    return str(error.value)


BROKEN_SOURCE = """
int broken_literal(int v)
{
    return v * undeclared_scale;
}
"""


def test_an_error_in_a_module_level_literal_names_this_file_and_line():
    message = build_error("broken_literal", "int broken_literal(int v);", BROKEN_SOURCE)
    line = line_in_this_file("return v * undeclared_scale;")
    assert "\n%s:%d: error: " % (THIS_FILE, line) in message and "undeclared_scale" in message
    assert "\n    return v * undeclared_scale;\n" in message          # the line itself, underneath


def test_an_error_in_a_literal_written_in_the_call_names_its_line():
    message = build_error("in_call", "int in_call(int v);", """int in_call(int v)
{
    int twice = 2 * v;
    return twice + missing_offset;
}""")
    line = line_in_this_file("return twice + missing_offset;")
    assert "\n%s:%d: error: " % (THIS_FILE, line) in message
    assert "return twice + missing_offset;" in message


def test_a_raw_literal_and_a_second_source_name_their_own_lines():
    message = build_error("two_sources", "int first(int v);\nint second(int v);",
                          ["int first(int v) { return v; }",
                           r"""
int second(int v)
{
    return v + "\n"[0] + not_declared_here;
}
"""])
    line = line_in_this_file("not_declared_here;", after=line_in_this_file("def test_a_raw_literal"))
    assert "\n%s:%d: error: " % (THIS_FILE, line) in message


HEADER_WITH_A_BROKEN_INLINE = """
static inline int header_twice(int v)
{
    return v + nothing_declared;
}
int uses_header(int v);
"""


def test_an_error_in_a_header_literal_names_this_file_and_line():
    message = build_error("header_literal", HEADER_WITH_A_BROKEN_INLINE,
                          "int uses_header(int v) { return header_twice(v); }")
    line = line_in_this_file("return v + nothing_declared;")
    assert "\n%s:%d: error: " % (THIS_FILE, line) in message
    assert "return v + nothing_declared;" in message


HEADER_DECLARING_TOO_MUCH = """
int defined_here(int v);
int never_defined(int v);
"""


def test_a_declared_but_undefined_function_names_the_header_literals_line():
    message = build_error("too_much", HEADER_DECLARING_TOO_MUCH, "int defined_here(int v) { return v; }")
    line = line_in_this_file("int never_defined(int v);")
    assert "%s:%d: 'never_defined' is declared but not defined" % (THIS_FILE, line) in message


HEADER_CFFI_CANNOT_READ = """
int fine(int v);
int sum(std::vector<int> v);
"""


def test_a_header_cffi_cannot_read_names_the_literals_line():
    with pytest.raises(HeaderError) as error:
        load_inline("cxx_literal", HEADER_CFFI_CANNOT_READ, "int fine(int v) { return v; }")
    line = line_in_this_file("int sum(std::vector<int> v);")
    assert str(error.value).startswith("%s:%d: cannot parse `int sum(std::vector<int> v);`" % (THIS_FILE, line))


def test_the_generated_source_points_at_the_literal(tmp_path):
    module = load_inline("pointing", "int pointing(int v);", POINTING_SOURCE, build_directory=str(tmp_path))
    assert module.pointing(20) == 21
    with open(os.path.join(module.__cextend__.folder, "pointing.c")) as f:
        # The literal opens with a newline: its first (empty) line is the line of the quotes.
        with open(THIS_FILE) as this:
            opening = next(i for i, line in enumerate(this, 1) if line.startswith("POINTING_SOURCE = "))
        assert '#line %d "%s"\n' % (opening, THIS_FILE) in f.read()


POINTING_SOURCE = """
int pointing(int v) { return v + 1; }
"""


# -- text that is not a literal of the calling file keeps its own name and lines ------------------

def test_text_made_at_run_time_is_named_by_its_own_name_and_line():
    source = "\n".join(["int made(int v)", "{", "    return v * made_up_%s;" % "name", "}"])
    message = build_error("made_at_run_time", "int made(int v);", source)
    assert "\nmade_at_run_time.c:3: error: " in message and "return v * made_up_name;" in message


def test_a_literal_with_escaped_newlines_is_named_by_its_own_name():
    message = build_error("escaped", "int escaped(int v);", "int escaped(int v)\n{\n    return v + nope;\n}")
    assert "\nescaped.c:3: error: " in message and "return v + nope;" in message


def test_a_literal_with_a_backslash_continuation_is_named_by_its_own_name():
    message = build_error("continued", "int continued(int v);", """int continued(int v) \
{
    return v + nope_again;
}""")
    assert "\ncontinued.c:2: error: " in message and "return v + nope_again;" in message


def test_a_dedented_literal_is_text_made_at_run_time():
    message = build_error("dedented", "int dedented(int v);", textwrap.dedent("""\
        int dedented(int v)
        {
            return v + dedent_nope;
        }
        """))
    assert "\ndedented.c:3: error: " in message and "return v + dedent_nope;" in message


SCRIPT = '''
from cextend.utils.ffi import load_inline
load_inline("broken", "int broken(const float *x, float *y, int64_t n);", """
int broken(const float *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] * scale;
    return 0;
}""")
'''


def test_a_script_run_by_python_reports_its_own_file_and_line(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text(SCRIPT)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 1
    # The literal opens on line 3 of the script; its fifth line is the script's seventh.
    assert "\n%s:7: error: " % script in result.stderr and "scale" in result.stderr
    assert "\n    y[i] = x[i] * scale;\n" in result.stderr
    assert len(result.stderr.splitlines()) < 40


def test_text_typed_into_python_without_a_file_keeps_its_own_name():
    code = ("from cextend.utils.ffi import load_inline\n"
            "load_inline('from_stdin', 'int f(int v);', '''int f(int v)\n{\n    return v + stdin_nope;\n}''')\n")
    result = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 1
    assert "\nfrom_stdin.c:3: error: " in result.stderr and "return v + stdin_nope;" in result.stderr
