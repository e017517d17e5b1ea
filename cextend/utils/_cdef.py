"""A C header as cffi's cdef() reads it, line for line.

cffi's cdef parser takes plain C declarations only.  Real headers carry
include guards, `#ifdef __cplusplus` / `extern "C"` blocks, attribute and
export macros, and `static inline` helpers with bodies.  cdef_text() removes
those constructs (evaluating #if/#ifdef the way a C compiler would, with
__cplusplus undefined) and turns inline definitions into prototypes (cffi's
API mode can then call them: the real header is compiled into the module).
Every removed line becomes an empty line, so a line number in cffi's error
is the line in the user's header; parse errors are reported that way.
"""
import re
import sys
import warnings

from cextend.utils._jit_compile import ExtensionBuildError

_NOT_ALLOWED = ("(cffi reads declarations only: functions, typedefs, structs, unions, enums and "
                "`#define NAME <integer>`.  cextend removes #include, include guards, #ifdef __cplusplus "
                "and extern \"C\" blocks, __attribute__/__declspec, and inline function bodies (they become "
                "prototypes); not allowed are C++ (classes, templates, references, namespaces), "
                "function-like macros used in declarations, and initialised variables.)")

_INTEGER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*\Z")
_DIRECTIVE = re.compile(r"\s*#\s*(\w*)\s*(.*)\Z", re.S)
_WORD = re.compile(r"[A-Za-z_]\w*")


class HeaderError(ExtensionBuildError):
    """A header cffi cannot read, with the file and line at fault."""

    __module__ = "cextend.utils.ffi"


def _predefined():
    macros = {"__STDC__": "1", "__STDC_VERSION__": "201710L", "__STDC_HOSTED__": "1"}
    if sys.platform.startswith("linux"):
        macros.update(__linux__="1", __unix__="1")
    elif sys.platform == "darwin":
        macros.update(__APPLE__="1")
    elif sys.platform == "win32":
        macros.update(_WIN32="1")
    return macros


def _blank_comments(text):
    """Comments become spaces (newlines kept); string literals are skipped over."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _join_continuations(lines):
    """Backslash-continued lines joined onto their first line; the rest left empty."""
    result, i = [], 0
    while i < len(lines):
        line, extra = lines[i], 0
        while line.endswith("\\") and i + extra + 1 < len(lines):
            extra += 1
            line = line[:-1] + " " + lines[i + extra]
        result.append(line.rstrip("\\"))
        result.extend([""] * extra)
        i += extra + 1
    return result


def _evaluate(expression, macros, where):
    """The value of an #if expression; undefined names are 0, as in C."""
    text = re.sub(r"\bdefined\s*\(\s*([A-Za-z_]\w*)\s*\)|\bdefined\s+([A-Za-z_]\w*)",
                  lambda m: " 1 " if (m.group(1) or m.group(2)) in macros else " 0 ", expression)
    for _ in range(16):     # expand object-like macros a few levels deep
        expanded = _WORD.sub(lambda m: " %s " % macros[m.group(0)] if m.group(0) in macros else m.group(0),
                             text)
        if expanded == text:
            break
        text = expanded
    text = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", text)
    text = _WORD.sub(" 0 ", text)
    text = text.replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    text = text.replace("/", "//")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # `0(1)` from a function-like macro: an error below
            return bool(eval(text, {"__builtins__": {}}, {}))  # only digits, operators and parentheses remain
    except Exception:
        raise HeaderError("%s: cannot evaluate `#if %s` for cffi's cdef. %s" % (where, expression.strip(),
                                                                                 _NOT_ALLOWED)) from None


def _preprocess(lines, filename):
    """Conditionals evaluated, directives removed, object-like macros expanded."""
    macros = _predefined()
    substitutions = {}          # object-like macros that are not integers: expanded in declarations
    stack = []                  # (parent_active, this_branch_active, a_branch_taken)
    active = True
    out = []
    for number, line in enumerate(lines, 1):
        where = "%s:%d" % (filename, number)
        match = _DIRECTIVE.match(line) if line.lstrip().startswith("#") else None
        if match is None:
            out.append(_substitute(line, substitutions) if active else "")
            continue
        name, rest = match.group(1), match.group(2).strip()
        out.append("")
        if name in ("if", "ifdef", "ifndef"):
            if name == "if":
                taken = active and _evaluate(rest, macros, where)
            else:
                symbol = rest.split()[0] if rest else ""
                taken = active and ((symbol in macros) == (name == "ifdef"))
            stack.append((active, taken, taken))
            active = taken
        elif name in ("elif", "else"):
            if not stack:
                raise HeaderError("%s: #%s without #if" % (where, name))
            parent, _, done = stack.pop()
            taken = parent and not done and (name == "else" or _evaluate(rest, macros, where))
            stack.append((parent, taken, done or taken))
            active = taken
        elif name == "endif":
            if not stack:
                raise HeaderError("%s: #endif without #if" % where)
            active = stack.pop()[0]
        elif not active:
            continue
        elif name == "define":
            define = re.match(r"([A-Za-z_]\w*)(\()?\s*(.*)\Z", rest, re.S)
            if define is None:
                raise HeaderError("%s: malformed #define" % where)
            symbol, function_like, body = define.group(1), define.group(2), define.group(3).strip()
            macros[symbol] = body if not function_like else "1"
            if function_like:
                continue
            if _INTEGER.match(body):
                out[-1] = "#define %s %s" % (symbol, body)       # cffi exposes it as lib.NAME
            else:
                substitutions[symbol] = body
        elif name == "undef":
            macros.pop(rest.split()[0] if rest else "", None)
            substitutions.pop(rest.split()[0] if rest else "", None)
        elif name == "error":
            raise HeaderError("%s: #error %s" % (where, rest))
        # include, pragma, line, warning and the null directive: nothing for cdef
    if stack:
        raise HeaderError("%s: #if without #endif (unterminated conditional)" % filename)
    return out


def _substitute(line, substitutions):
    if not substitutions:
        return line
    for _ in range(8):
        new = _WORD.sub(lambda m: substitutions.get(m.group(0), m.group(0)), line)
        if new == line:
            break
        line = new
    return line


def _strip_balanced(text, keyword):
    """Remove `keyword(...)` (balanced parentheses), keeping newlines."""
    pattern = re.compile(r"\b%s\b\s*\(" % re.escape(keyword))
    while True:
        match = pattern.search(text)
        if match is None:
            return text
        depth, i = 1, match.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        text = text[:match.start()] + re.sub(r"[^\n]", " ", text[match.start():i]) + text[i:]


def _strip_extern_c_and_bodies(text):
    """extern "C" blocks unwrapped; function bodies replaced by `;`."""
    chars = list(text)
    extern_depths = []
    depth = 0
    i = 0
    n = len(text)
    extern = re.compile(r'extern\s*"C(?:\+\+)?"\s*')
    while i < n:
        match = extern.match(text, i) if text[i] == "e" else None
        if match and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = match.end()
            _blank(chars, i, end)
            if end < n and text[end] == "{":
                chars[end] = " "
                extern_depths.append(depth)
                i = end + 1
            else:
                i = end
            continue
        c = text[i]
        if c == "{":
            if _is_function_body(text, i):
                close = _matching_brace(text, i)
                _blank(chars, i, close + 1)
                chars[i] = ";"
                _drop_storage_words(chars, text, i)
                i = close + 1
                if i < n and text[i] == ";":
                    chars[i] = " "
                continue
            depth += 1
        elif c == "}":
            if extern_depths and extern_depths[-1] == depth:
                extern_depths.pop()
                chars[i] = " "
            else:
                depth -= 1
        i += 1
    return "".join(chars)


def _blank(chars, start, end):
    for k in range(start, end):
        if chars[k] != "\n":
            chars[k] = " "


def _is_function_body(text, brace):
    """A `{` right after a parameter list `)` opens a function body."""
    before = text[:brace].rstrip()
    return before.endswith(")")


def _matching_brace(text, start):
    depth = 0
    for k in range(start, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    raise HeaderError("unbalanced braces: the function body starting at line %d never closes"
                      % (text.count("\n", 0, start) + 1))


def _drop_storage_words(chars, text, brace):
    """`static inline int f(...)` -> `int f(...)`: the prototype cffi wraps."""
    start = max(text.rfind(";", 0, brace), text.rfind("}", 0, brace), text.rfind("{", 0, brace)) + 1
    for match in re.finditer(r"\b(static|inline|__inline__|__inline|extern)\b", text[start:brace]):
        _blank(chars, start + match.start(), start + match.end())


def cdef_text(source, filename="<header>"):
    """source (a C header) as text cffi's cdef accepts, with the same line count."""
    lines = _join_continuations(_blank_comments(source).split("\n"))
    text = "\n".join(_preprocess(lines, filename))
    for keyword in ("__attribute__", "__declspec", "__asm__", "__asm"):
        text = _strip_balanced(text, keyword)
    text = re.sub(r"\b(__extension__|_Noreturn|__restrict__|__restrict|__forceinline)\b", " ", text)
    return _strip_extern_c_and_bodies(text)


def explain_cdef_error(error, line_map):
    """A HeaderError naming the user's file and line for a cffi CDefError.

    line_map: [(first_line_in_cdef, filename, lines)] for the concatenated headers.
    """
    message = str(error)
    match = re.search(r"<cdef source string>:(\d+)", message)
    detail = re.sub(r"<cdef source string>:\d+(?::\d+)?:?\s*", "", message).strip()
    detail = re.sub(r'^cannot parse "(.*)"\n', r"cannot parse `\1`: ", detail).replace("\n", "; ")
    if match is None:
        return HeaderError("the header cannot be read by cffi: %s\n%s" % (detail, _NOT_ALLOWED))
    line = int(match.group(1))
    where = "header line %d" % line
    for first, filename, count in line_map:
        if first <= line < first + count:
            where = "%s:%d" % (filename, line - first + 1)
            break
    return HeaderError("%s: %s\n%s" % (where, detail, _NOT_ALLOWED))
