"""Shrinking a failing program to a short one that fails the same way.

Delta debugging over statements: drop chunks, then single statements,
keeping a candidate when replaying it still disagrees with the same
signature (the op and what differs) at its last statement.  Then simplify
what is left: leaves without requires_grad, float32 for float64.
Replays are cheap (a few ms), so the search is exhaustive to a fixpoint
within a budget.
"""
from .allowlist import excuse, unspecified
from .program import Stmt
from .session import Session


def replay(stmts, torch, cextend):
    """The first hard, unexcused Finding replaying stmts, or None."""
    session = Session(torch, cextend)
    for stmt in stmts:
        hard, soft = session.step(stmt)
        if soft is not None and soft.kind == "soft-state":
            return None
        if hard is not None:
            return None if excuse(hard) is not None or unspecified(hard) is not None else hard
    return None


def shrink(stmts, finding, torch, cextend, budget=400):
    """(statements, finding) of a minimal program with finding's signature."""
    target = finding.signature
    best = list(stmts[:finding.index + 1])
    state = {"budget": budget, "finding": finding}

    def fails(candidate):
        if state["budget"] <= 0:
            return None
        state["budget"] -= 1
        found = replay(candidate, torch, cextend)
        if found is not None and found.signature == target:
            state["finding"] = found
            return candidate[:found.index + 1]
        return None

    changed = True
    while changed and state["budget"] > 0:
        changed = False
        size = max(1, len(best) // 2)
        while size >= 1:
            start = 0
            while start < len(best) - 1:
                kept = fails(best[:start] + best[start + size:])
                if kept is not None:
                    best, changed = kept, True
                else:
                    start += size
            size //= 2
    for i, stmt in enumerate(best):
        for old, new in ((", requires_grad=True", ""), ("torch.float64", "torch.float32")):
            if old in stmt.code:
                candidate = best[:i] + [Stmt(stmt.code.replace(old, new), stmt.family, stmt.op)] + best[i + 1:]
                kept = fails(candidate)
                if kept is not None:
                    best = kept
                    stmt = best[i] if i < len(best) else stmt
    final = replay(best, torch, cextend)
    return best, final if final is not None else state["finding"]
