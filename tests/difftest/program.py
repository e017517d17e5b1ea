"""Statements and programs.

A statement is Python source (one line, or a `with` block) over the
program's names: values v0, v1, ..., hook handles h0, ..., the module
`torch`, `np`, `nan`, `inf`, and the custom Function classes it uses.
`family` says which part of the generator made it (for counting and for
grouping disagreements); `op` names the table op or feature it exercises.
"""
import re

from . import calls, functions

HEADER = ("import numpy as np\n"
          "import torch            # or: import cextend as torch\n"
          "nan, inf = float('nan'), float('inf')\n")

_NAME = re.compile(r"\b[A-Z][A-Za-z0-9]*\b")
_CALL = re.compile(r"\bcall_\w+\b")


class Stmt:
    __slots__ = ("code", "family", "op", "_compiled")

    def __init__(self, code, family, op=""):
        self.code = code
        self.family = family
        self.op = op or family
        self._compiled = None

    @property
    def compiled(self):
        if self._compiled is None:
            self._compiled = compile(self.code, "<difftest>", "exec")
        return self._compiled

    def __repr__(self):
        return "Stmt(%r, %r)" % (self.code, self.op)


def functions_used(stmts):
    """The custom Function classes the statements refer to, in library order."""
    names = set()
    for s in stmts:
        names.update(_NAME.findall(s.code))
    return [name for name in functions.SOURCES if name in names]


def calls_used(stmts):
    """The op table's call functions (calls.py) the statements use."""
    names = set()
    for s in stmts:
        names.update(_CALL.findall(s.code))
    return [name for name in calls.SOURCES if name in names]


def definitions(stmts):
    """The source a program needs above its statements."""
    return ([functions.SOURCES[n] for n in functions_used(stmts)]
            + [calls.SOURCES[n] for n in calls_used(stmts)])


def source(stmts, mark=None, notes=None):
    """The program as a runnable script; statement `mark` gets a comment,
    and notes[i] (if any) is printed after statement i."""
    lines = [HEADER]
    lines.extend(definitions(stmts))
    body = []
    for i, s in enumerate(stmts):
        text = s.code
        if i == mark:
            text += "    # <-- disagreement"
        body.append(text)
        if notes and notes.get(i):
            body.extend("# " + line for line in notes[i].splitlines())
    lines.append("\n".join(body) + "\n")
    return "\n".join(lines)
