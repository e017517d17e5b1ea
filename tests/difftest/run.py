"""Running many generated programs: counts, distinct disagreements, repros.

    PYTHONPATH=tests python -m difftest --programs 50000 --seed 7

Program i of a run with seed s is generated from numpy's RNG seeded with
(s, i), so any program can be regenerated alone (--only i).
"""
import argparse
import collections
import time
import traceback
import warnings

import numpy as np

from . import autograd_features as A
from . import features as F
from . import ops
from .allowlist import excuse, open_item, unspecified
from .generator import Gen
from .program import source
from .session import Session
from .shrink import shrink

FEATURES = {ops.op_call: 30, F.arith: 12, F.view: 12, F.inplace: 12, A.save_then_mutate: 5,
            A.index_then_mutate: 1, A.buffer_setitem: 4, A.custom_function: 6, A.no_grad: 5,
            A.autograd_misc: 8, A.backward: 6, A.at_specials: 4}


class ProgramResult:
    def __init__(self, stmts, finding, softs, excused):
        self.stmts = stmts
        self.finding = finding          # a hard Finding that no deviation excuses, or None
        self.softs = softs
        self.excused = excused          # the Deviation or Open item that ended the program, or None
        self.generator_error = None     # a traceback: the tester itself failed


def generate_and_run(seed, torch, cextend, max_features=8):
    """Generate program `seed` while running it in both libraries."""
    rng = np.random.default_rng(seed)
    session = Session(torch, cextend)
    gen = Gen(rng, session.torch_ns)

    def program():
        for _ in range(gen.integer(2, max_features)):
            yield from gen.weighted(FEATURES)(gen)
        yield from A.finale(gen)

    stmts, softs = [], []
    # The generator only reads torch's side, so it is deterministic; an
    # exception from it is a bug in the tester, reported with the program.
    try:
        for stmt in program():
            stmts.append(stmt)
            hard, soft = session.step(stmt)
            if soft is not None:
                softs.append(soft)
                if soft.kind == "soft-state":       # the two states diverged: nothing after compares
                    return ProgramResult(stmts, None, softs, None)
            if hard is not None:
                known = excuse(hard) or unspecified(hard) or open_item(hard)
                if known is not None:
                    return ProgramResult(stmts, None, softs, known)
                return ProgramResult(stmts, hard, softs, None)
    except Exception:       # noqa: BLE001 -- reported, not hidden: see Summary.generator_errors
        result = ProgramResult(stmts, None, softs, None)
        result.generator_error = traceback.format_exc()
        return result
    return ProgramResult(stmts, None, softs, None)


class Summary:
    def __init__(self):
        self.programs = 0
        self.statements = 0
        self.failed = 0
        self.excused = collections.Counter()
        self.groups = collections.OrderedDict()     # signature -> [count, first program, repro]
        self.soft = collections.OrderedDict()       # signature -> [count, example Finding, program]
        self.seconds = 0.0
        self.generator_errors = []      # (program, traceback, source so far)

    def report(self, repros=True):
        opened = sum(n for name, n in self.excused.items() if name.startswith("OPEN:"))
        lines = ["difftest: %d programs (%d statements) in %.1f s, %.0f programs/s; %d disagreed "
                 "(%d distinct); %d stopped at an allowed deviation or unspecified choice, %d at an "
                 "OPEN bug; %d soft findings (%d distinct)"
                 % (self.programs, self.statements, self.seconds, self.programs / max(self.seconds, 1e-9),
                    self.failed, len(self.groups), sum(self.excused.values()) - opened, opened,
                    sum(v[0] for v in self.soft.values()), len(self.soft))]
        for name, count in sorted(self.excused.items()):
            lines.append("  %5d x %s" % (count, name))
        if self.generator_errors:
            program, trace, text = self.generator_errors[0]
            lines.append("\n=== the generator failed in %d programs (a tester bug); first, program %d:\n%s\n%s"
                         % (len(self.generator_errors), program, text, trace))
        for k, (signature, (count, first, repro)) in enumerate(self.groups.items()):
            lines.append("\n=== disagreement %d: %s: %s  (%d programs, first: program %s)"
                         % (k + 1, signature[0], signature[1], count, first))
            if repros:
                lines.append(repro)
        if self.soft:
            lines.append("\n=== soft findings (both raised: exceptions of different kinds, or different states)")
            for signature, (count, example, program) in self.soft.items():
                lines.append("  %s: %s  (%d x, e.g. program %s: `%s`)\n      torch:   %s\n      cextend: %s"
                             % (signature[0], signature[1], count, program, example.stmt.code.splitlines()[-1].strip(),
                                _err(example.torch_error), _err(example.cextend_error)))
                for d in example.differences[:2]:
                    lines.append("      %s" % (d,))
        return "\n".join(lines)


def _err(e):
    from .outcome import describe_error
    return describe_error(e)


def run_many(torch, cextend, seed, programs, max_features=8, shrink_budget=400, log=None, time_limit=None):
    summary = Summary()
    start = time.perf_counter()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for i in range(programs):
            result = generate_and_run((seed, i), torch, cextend, max_features)
            summary.programs += 1
            summary.statements += len(result.stmts)
            if result.generator_error is not None:
                summary.generator_errors.append((i, result.generator_error, source(result.stmts)))
            if result.excused is not None:
                summary.excused[result.excused.name] += 1
            for soft in result.softs:
                entry = summary.soft.setdefault(soft.signature, [0, soft, i])
                entry[0] += 1
            if result.finding is not None:
                summary.failed += 1
                signature = result.finding.signature
                if signature in summary.groups:
                    summary.groups[signature][0] += 1
                else:
                    stmts, finding = shrink(result.stmts, result.finding, torch, cextend, shrink_budget)
                    repro = source(stmts, mark=finding.index) + "\n" + finding.explain()
                    summary.groups[signature] = [1, i, repro]
                    if log:
                        log("program %d: new disagreement %s" % (i, signature))
            if log and (i + 1) % 1000 == 0:
                log("%d programs, %d disagreed, %.0f programs/s"
                    % (i + 1, summary.failed, (i + 1) / (time.perf_counter() - start)))
            if time_limit is not None and time.perf_counter() - start > time_limit:
                break
    summary.seconds = time.perf_counter() - start
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description="cextend vs torch on generated programs")
    parser.add_argument("--programs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-features", type=int, default=8)
    parser.add_argument("--only", type=int, default=None, help="run just program ONLY and print it")
    parser.add_argument("--time-limit", type=float, default=None, help="stop after this many seconds")
    parser.add_argument("--training-loops", action="store_true",
                        help="run generated training loops eagerly and through cextend.capture instead")
    args = parser.parse_args(argv)
    if args.training_loops:
        import cextend
        from .training import report, run_training_loops
        summary = run_training_loops(cextend, args.seed, args.programs, log=lambda s: print(s, flush=True))
        print(report(summary))
        return 1 if summary["disagreements"] else 0
    import torch
    import cextend
    torch.set_num_threads(1)
    if args.only is not None:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = generate_and_run((args.seed, args.only), torch, cextend, args.max_features)
            mark = result.finding.index if result.finding else None
            print(source(result.stmts, mark=mark))
            if result.finding:
                print(result.finding.explain())
        return 1 if result.finding else 0
    summary = run_many(torch, cextend, args.seed, args.programs, args.max_features,
                       log=lambda s: print(s, flush=True), time_limit=args.time_limit)
    print(summary.report())
    return 1 if summary.failed or summary.generator_errors else 0
