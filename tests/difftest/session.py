"""Running a program's statements in both libraries, comparing after each.

A Session holds two namespaces, one per library.  `step(stmt)` runs the
statement in torch's namespace, then in cextend's, and compares:
- whether it raised (in both or in neither); both raising with exceptions
  of different kinds is a soft finding (reported, not failed);
- every value the program has named (v0, v1, ...), after the statement:
  an in-place op may change values it did not name.
Where both raised, what a failed statement left half-done is not a
contract, with one exception: cextend changing its state where torch raised
and changed nothing is a failure (a check made after a write).
"""
import math
import re

import numpy as np

from . import calls, functions
from .outcome import Describer, caught_alike, compare, describe_error, error_category

VALUE_NAME = re.compile(r"^v\d+$")
_DEFINED = {}


def _functions(lib):
    if lib.__name__ not in _DEFINED:
        _DEFINED[lib.__name__] = functions.define(lib)
    return _DEFINED[lib.__name__]


def namespace(lib):
    ns = {"torch": lib, "np": np, "nan": math.nan, "inf": math.inf}
    ns.update(_functions(lib))
    ns.update(calls.CALLS)
    return ns


def value_names(ns):
    return sorted((k for k in ns if VALUE_NAME.match(k)), key=lambda k: int(k[1:]))


class Finding:
    """A statement at which the libraries disagree."""

    def __init__(self, index, stmt, kind, torch_error=None, cextend_error=None, differences=(), history=(),
                 value=None):
        self.index = index
        # value(expr): expr evaluated in cextend's namespace after the statement
        # (None where it fails), so allowlist predicates can look at operands
        self.value = value or (lambda expr: None)
        self.stmt = stmt
        self.history = history              # the statements before this one
        self.kind = kind                    # "error", "soft-error" or "state"
        self.torch_error = torch_error
        self.cextend_error = cextend_error
        self.differences = list(differences)

    @property
    def signature(self):
        """What kind of disagreement, for grouping (and for shrinking, which
        keeps it): an error raised in one library only is grouped by its
        message, whatever the op; a different state by the op and field."""
        if self.kind in ("soft-state", "state-after-error"):
            d = self.differences[0]
            what = "state after an error in both" if self.kind == "soft-state" else \
                "cextend changed its state raising where torch raised and changed nothing"
            return (what, "%s%s" % ("grad " if ".grad" in d.path else "", d.field))
        if self.kind == "soft-error":
            return ("%s in torch, %s in cextend" % (error_category(self.torch_error),
                                                   error_category(self.cextend_error)),
                    _message_shape(self.cextend_error))
        if self.kind == "error":
            side, error = (("torch", self.torch_error) if self.cextend_error is None
                           else ("cextend", self.cextend_error))
            return ("raises only in " + side, _message_shape(error))
        d = self.differences[0]
        where = "grad " if ".grad" in d.path else ""
        if d.field == "zero sign":
            return (_op_family(_plain_op(self.stmt.op)), where + d.field)
        return (_plain_op(self.stmt.op), where + d.field)

    def explain(self):
        lines = []
        if self.kind != "state":
            lines.append("torch:   " + ("no error" if self.torch_error is None else describe_error(self.torch_error)))
            lines.append("cextend: " + ("no error" if self.cextend_error is None
                                        else describe_error(self.cextend_error)))
        for d in self.differences[:6]:
            lines.append("%s %s:\n  torch:   %s\n  cextend: %s" % (d.path, d.field, d.torch, d.cextend))
        if len(self.differences) > 6:
            lines.append("... and %d more differences" % (len(self.differences) - 6))
        return "\n".join(lines)


def _plain_op(op):
    """The op without its grad-mode decoration ("mul_ [no_grad]" -> "mul_")."""
    return op.split(" [")[0]


def _message_shape(error):
    """An error message with its particulars (numbers, quoted names, shapes,
    the op's name in front) blanked."""
    text = describe_error(error)
    text = re.sub(r"\[[^\]]*\]", "[..]", text)
    text = re.sub(r"'[^']*'", "'..'", text)
    text = re.sub(r'"[^"]*"', '".."', text)
    text = re.sub(r"^(\w+: )\w+\(\): ", r"\1OP(): ", text)
    text = re.sub(r"\d+", "N", text)
    return text[:90]


def _op_family(op):
    """The op of a statement, its spelling dropped: 'x.relu()', 'torch.relu(x)',
    'relu_' and 'relu' are all 'relu' (to group by cause, not by spelling)."""
    found = re.match(r"^(?:torch\.|[xy]\.)?([A-Za-z]\w*?)_?(?:\(.*)?$", op)
    return found.group(1) if found else op


class Session:
    def __init__(self, torch, cextend):
        self.libs = (torch, cextend)
        self.ns = (namespace(torch), namespace(cextend))
        self.describe = (Describer(torch), Describer(cextend))
        self.index = 0
        self.history = []
        self._described = ({}, {})      # each library's values after the last statement, by name

    @property
    def torch_ns(self):
        return self.ns[0]

    def step(self, stmt):
        """Run stmt in both; return (hard Finding or None, soft Finding or None)."""
        index = self.index
        self.index += 1
        history = tuple(self.history)
        self.history.append(stmt)
        before = self._described
        errors = [_execute(stmt, ns) for ns in self.ns]
        soft = None
        if (errors[0] is None) != (errors[1] is None):
            return Finding(index, stmt, "error", errors[0], errors[1], history=history,
                           value=self._evaluator(1)), None
        if errors[0] is not None and not caught_alike(errors[0], errors[1]):
            soft = Finding(index, stmt, "soft-error", errors[0], errors[1], history=history)
        differences = self.compare_state()
        if differences and errors[0] is not None:
            if self._changed(1, before) and not self._changed(0, before):
                # torch checked before it wrote; cextend wrote, then raised
                return Finding(index, stmt, "state-after-error", errors[0], errors[1], differences,
                               history), soft
            # Both raised: what a failed statement left half-done is not a
            # contract (torch itself may have written part of an in-place result).
            # The program stops there (run.py): both states would diverge.
            return None, Finding(index, stmt, "soft-state", errors[0], errors[1], differences, history)
        if differences:
            return Finding(index, stmt, "state", errors[0], errors[1], differences, history), soft
        return None, soft

    def _evaluator(self, side):
        namespace = self.ns[side]

        def value(expr):
            try:
                return eval(expr, namespace)
            except Exception:       # noqa: BLE001 -- an expression that fails has no value
                return None
        return value

    def _changed(self, side, before):
        """Whether library `side` (0 torch, 1 cextend) holds other values now than `before`."""
        now, then = self._described[side], before[side]
        if set(now) != set(then):
            return True
        return any(compare(name, then[name], now[name]) for name in now)

    def compare_state(self):
        t_ns, c_ns = self.ns
        t_names, c_names = value_names(t_ns), value_names(c_ns)
        dt, dc = self.describe
        self._described = ({name: dt(t_ns[name]) for name in t_names}, {name: dc(c_ns[name]) for name in c_names})
        if t_names != c_names:
            return [_missing(t_names, c_names)]
        out = []
        described = [(name, self._described[0][name], self._described[1][name]) for name in t_names]
        # float32 values flowing into float64 ones carry float32's error.
        loosest = "float32" if any(_holds_float32(t) for _, t, _ in described) else None
        for name, t, c in described:
            out.extend(compare(name, t, c, loosest=loosest))
        return out


def _holds_float32(d):
    """Whether d holds float32 data, or integers and bools (torch computes
    a float result from those in the default float32, even into a float64 out=)."""
    if d[0] == "tensor":
        return d[1]["dtype"] != "float64"
    if d[0] == "seq":
        return any(_holds_float32(x) for x in d[2])
    return False


def _missing(t_names, c_names):
    from .outcome import Difference
    return Difference("namespace", "names", sorted(set(t_names) - set(c_names)),
                      sorted(set(c_names) - set(t_names)))


def _execute(stmt, ns):
    try:
        exec(stmt.compiled, ns)
    except Exception as error:      # noqa: BLE001 -- any error is an outcome to compare
        return error
    return None
