"""Mutation fuzzing of cextend.load (runs its cases in a child process).

    python tests/fuzz_serialization.py --seed 1 --cases 300     # what make test runs
    python tests/fuzz_serialization.py --seed $(date +%s) --cases 5000   # make fuzz
    python tests/fuzz_serialization.py --seed 7 --case 1234     # replay one case

Starts from valid checkpoints (tensors of every dtype, 0-d and 0-size
ones, nested dicts/lists/tuples/sets, a model's and an optimizer's
state_dict) and mutates their bytes: flips, truncations, insertions,
deletions, splices from another checkpoint, zip fields overwritten with
edge values, and -- re-zipped with fresh CRCs and SHA-256s, as a
deliberate forger would -- edits of the manifest JSON and of .npy
headers.  Every load must raise ValueError or return an object: equal
to the original, or -- after a forged edit only -- well formed (only
what cextend.save writes).
Anything else fails, reported with its seed and case number: another
exception, a case over --case-seconds, the process's peak memory
growing by over --max-rss-mb, a crash (the child dies; the parent names
the case it was running).  Case n of a seed is the same every run.

Exit status: 0 when no case failed, 1 otherwise.
"""
import argparse
import collections
import hashlib
import io
import json
import math
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import time
import traceback
import zipfile
from collections import Counter, OrderedDict

import numpy as np

MANIFEST = "cextend_manifest.json"
INTERESTING_U32 = [0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
INTERESTING_JSON = [None, True, 0, -1, 2 ** 63, 10 ** 40, 1.5, "", "x", "$tensor", [], {}, [[]],
                    {"$tensor": 0}, {"$tensor": -1}, {"$tensor": True}, {"$tensor": 10 ** 30},
                    {"$set": [[1]]}, {"$set": [{"$tuple": [[]]}]}, {"$dict": [[[1], 2]]}, {"$dict": [[1]]},
                    {"$float": "1e5"}, {"$float": ["nan"]}, {"$odict": "x"}, {"$counter": [[1, "x"]]},
                    {"$pickle": "x"}, {"a": 1, "b": 2}, json.loads("[" * 300 + "]" * 300)]
NPY_HEADER_EDITS = [("(2, 3)", "(3, 2)"), ("(2, 3)", "(2, 3, 1)"), ("(2, 3)", "(-1, -6)"), ("(2, 3)", "()"),
                    ("(2, 3)", "(1099511627776, 8)"), ("'<f8'", "'<i8'"), ("'<f8'", "'>f8'"), ("'<f8'", "'|O'"),
                    ("'<f8'", "[('a', '<f4'), ('b', '<f4')]"), ("'<f8'", "('<f8', (2,))"),
                    ("'<f8'", "'<c16'"), ("False", "True"), ("False", "1"), ("'shape'", "'shapes'"),
                    ("{", "(" * 150), ("}", "}}")]


class CaseTimeout(BaseException):
    """Raised by SIGALRM inside a case that ran too long (BaseException: no except clause in the
    code under test may swallow it)."""


def valid_objects():
    """(label, object) pairs: the checkpoints mutated."""
    import cextend as cx
    rng = np.random.default_rng(0)
    objects = []
    for dtype in (np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_):
        for shape in ((), (0,), (3,), (2, 0, 3), (4, 5)):
            values = rng.standard_normal(shape) * 50
            objects.append(("%s%s" % (np.dtype(dtype).name, shape),
                            cx.tensor(np.asarray(values > 0 if dtype is np.bool_ else values.astype(dtype)))))
    shared = cx.arange(4.0)
    objects.append(("nested", {
        "ints": [1, -2, 2 ** 70], "floats": (0.5, -0.0, math.inf, math.nan), "text": "naïve ✓", "none": None,
        ("tuple", 3): OrderedDict([("b", 1), ("a", [True, False])]), "counter": Counter({3: 2, "x": 1}),
        "set": {1, "two", (3, 4)}, "empty": [[], (), {}, set()], "same": [shared, shared],
        "deep": [[[[{"k": (shared,)}]]]]}))
    cx.manual_seed(0)
    model = cx.nn.Sequential(cx.nn.Linear(3, 4), cx.nn.BatchNorm1d(4), cx.nn.Linear(4, 2))
    optimizer = cx.optim.Adam(model.parameters(), lr=0.01)
    model(cx.randn(5, 3)).sum().backward()
    optimizer.step()
    objects.append(("checkpoint", {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 1}))
    objects.append(("parameters", [cx.nn.Parameter(cx.randn(2, 2)), cx.randn(3, requires_grad=True),
                                   cx.nn.Parameter(cx.zeros(0), requires_grad=False)]))
    objects.append(("plain", {"lr": 0.1, "steps": list(range(20)), "name": "run"}))
    return objects


def saved(obj):
    import cextend as cx
    buffer = io.BytesIO()
    cx.save(obj, buffer)
    return buffer.getvalue()


# -- mutations: each takes (rng, data, bases) and returns (description, new data) -------------

def flip(rng, data, bases):
    if not data:
        return "flip (empty)", data
    position = rng.randrange(len(data))
    out = bytearray(data)
    out[position] ^= rng.randrange(1, 256)
    return "flip@%d" % position, bytes(out)


def truncate(rng, data, bases):
    cut = rng.randrange(len(data) + 1)
    return "truncate@%d" % cut, data[:cut]


def insert(rng, data, bases):
    position, count = rng.randrange(len(data) + 1), rng.choice([1, 2, 4, 16, 100])
    return "insert%d@%d" % (count, position), data[:position] + rng.randbytes(count) + data[position:]


def delete(rng, data, bases):
    position, count = rng.randrange(len(data) + 1), rng.choice([1, 2, 4, 16, 100])
    return "delete%d@%d" % (count, position), data[:position] + data[position + count:]


def splice(rng, data, bases):
    """A run of bytes from another checkpoint (zip headers, JSON, .npy) over or into this one."""
    other = rng.choice(bases)
    start = rng.randrange(len(other))
    chunk = other[start:start + rng.choice([4, 30, 46, 64, 256, 1024])]
    position = rng.randrange(len(data) + 1)
    if rng.random() < 0.5:
        return "splice-over@%d" % position, data[:position] + chunk + data[position + len(chunk):]
    return "splice-in@%d" % position, data[:position] + chunk + data[position:]


def zip_field(rng, data, bases):
    """A 2- or 4-byte field of a zip record (size, offset, count, length) set to an edge value."""
    records = [m for signature in (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06") for m in _find_all(data, signature)]
    if not records:
        return flip(rng, data, bases)
    record = rng.choice(records)
    offset = record + rng.randrange(4, 46, 2)
    if offset + 4 > len(data):
        return flip(rng, data, bases)
    width = rng.choice([2, 4])
    current = int.from_bytes(data[offset:offset + width], "little")
    value = rng.choice(INTERESTING_U32 + [current + rng.randint(-64, 64), len(data), current * 2])
    value %= 1 << (8 * width)
    out = bytearray(data)
    out[offset:offset + width] = value.to_bytes(width, "little")
    return "field%d@%d=%d" % (width, offset, value), bytes(out)


def _find_all(data, needle):
    found, position = [], data.find(needle)
    while position >= 0:
        found.append(position)
        position = data.find(needle, position + 1)
    return found


def _members(data):
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return OrderedDict((name, archive.read(name)) for name in archive.namelist())


def _rezip(members):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, payload in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), payload)
    return out.getvalue()


def manifest_json(rng, data, bases):
    """Replace one node of the manifest's JSON with an edge value; CRCs fresh, as a forger would."""
    members = _members(data)
    manifest = json.loads(members[MANIFEST])
    nodes = []

    def walk(node, parent, key, depth):
        nodes.append((parent, key))
        if depth < 60:
            children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            for k, child in children:
                walk(child, node, k, depth + 1)
    walk(manifest, None, None, 0)
    parent, key = rng.choice(nodes[1:])
    value = rng.choice(INTERESTING_JSON)
    if rng.random() < 0.2 and isinstance(parent, dict):
        parent.pop(key)
        description = "json-drop %r" % (key,)
    else:
        parent[key] = json.loads(json.dumps(value))
        description = "json %r=%s" % (key, json.dumps(value)[:40])
    members[MANIFEST] = json.dumps(manifest).encode()
    return description, _rezip(members)


def manifest_text(rng, data, bases):
    """A byte of the manifest's text changed, inserted or deleted; CRCs fresh."""
    members = _members(data)
    text = bytearray(members[MANIFEST])
    position = rng.randrange(len(text))
    byte = rng.choice(b'[]{}",:0-e.\\$ntf\xff')
    operation = rng.choice(["set", "insert", "delete"])
    if operation == "set":
        text[position] = byte
    elif operation == "insert":
        text.insert(position, byte)
    else:
        del text[position]
    members[MANIFEST] = bytes(text)
    return "text-%s@%d" % (operation, position), _rezip(members)


def npy_header(rng, data, bases):
    """An edit of a tensor's .npy header, its SHA-256 in the manifest and the CRCs made to match."""
    members = _members(data)
    tensors = [name for name in members if name.startswith("tensors/")]
    if not tensors:
        return manifest_json(rng, data, bases)
    name = rng.choice(tensors)
    payload = members[name]
    old, new = rng.choice(NPY_HEADER_EDITS)
    header_end = payload.find(b"\n") + 1
    header = payload[:header_end].decode("latin1")
    if old in header:
        header = header.replace(old, new, 1)
    else:
        header = header.replace("'shape': (", "'shape': (%d, " % rng.choice([0, 1, 2, 2 ** 40]), 1)
    padded = header.rstrip("\n").encode("latin1")
    members[name] = padded[:8] + struct.pack("<H", len(padded) - 10 + 1) + padded[10:] + b"\n" + payload[header_end:]
    manifest = json.loads(members[MANIFEST])
    manifest["members"][name] = hashlib.sha256(members[name]).hexdigest()
    members[MANIFEST] = json.dumps(manifest).encode()
    return "npy %s %s->%s" % (name, old, new), _rezip(members)


RAW = [flip, flip, truncate, insert, delete, splice, zip_field, zip_field]
FORGED = [manifest_json, manifest_text, npy_header]


# -- judging the outcome ------------------------------------------------------------------------

def same(a, b, tensors=None):
    """Whether b equals the original a: types, tensor bits and flags, and which tensors are one."""
    import cextend as cx
    tensors = {} if tensors is None else tensors      # id(original tensor) -> its loaded counterpart
    if type(a) is not type(b):
        return False
    if isinstance(a, cx.Tensor):
        if id(a) in tensors:
            return tensors[id(a)] is b
        tensors[id(a)] = b
        x, y = a.detach().numpy(), b.detach().numpy()
        return (x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
                and a.requires_grad == b.requires_grad)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, tensors) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k], tensors) for k in a)
    return a == b


def well_formed(obj, depth=0):
    """Why obj is not something cextend.save could have written, or None."""
    import cextend as cx
    from cextend.serialization import MAX_DEPTH, _DTYPES
    if depth > MAX_DEPTH + 1:
        return "nested %d deep" % depth
    if obj is None or type(obj) in (bool, int, float, str):
        return None
    if isinstance(obj, cx.Tensor):
        array = obj._data
        if type(array) is not np.ndarray:
            return "a tensor held in a %s" % type(array).__name__
        if not any(array.dtype is dtype for dtype in _DTYPES.values()):
            return "a tensor of dtype %s (not the dtype object cextend's kernels expect)" % array.dtype
        if not (array.flags.c_contiguous and array.flags.writeable):
            return "a tensor whose array is not C-contiguous and writable"
        if array.dtype == np.bool_ and array.size and array.view(np.uint8).max() > 1:
            return "a bool tensor holding bytes other than 0 and 1"
        return None
    if type(obj) in (list, tuple, set):
        for item in obj:
            problem = well_formed(item, depth + 1)
            if problem:
                return problem
        return None
    if type(obj) in (dict, OrderedDict, Counter):
        for key, value in obj.items():
            problem = well_formed(key, depth + 1) or well_formed(value, depth + 1)
            if problem:
                return problem
        return None
    return "an object of type %s" % type(obj).__name__


def run_case(seed, case, bases, originals, case_seconds):
    """(outcome, detail): outcome is 'refused', 'unchanged', 'changed' or 'FAIL'."""
    import cextend as cx
    rng = random.Random("%d/%d" % (seed, case))
    index = rng.randrange(len(bases))
    data, steps = bases[index], []
    kinds = FORGED if rng.random() < 0.3 else RAW
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        mutation = rng.choice(kinds)
        try:
            description, data = mutation(rng, data, bases)
        except (zipfile.BadZipFile, ValueError, KeyError, IndexError, TypeError):
            description = "(%s skipped: the data is no longer a readable zip)" % mutation.__name__
        steps.append(description)
    what = "%s: %s" % (originals[index][0], ", ".join(steps))
    signal.alarm(case_seconds)
    try:
        loaded = cx.load(io.BytesIO(data))
    except ValueError as error:
        if not str(error).startswith("cextend.load: "):
            return "FAIL", "%s -> ValueError not in cextend's words: %s" % (what, error)
        return "refused", "%s -> %s" % (what, error)
    except CaseTimeout:
        return "FAIL", "%s -> took over %d s" % (what, case_seconds)
    except Exception:
        return "FAIL", "%s -> %s" % (what, traceback.format_exc(limit=-3))
    finally:
        signal.alarm(0)
    if same(originals[index][1], loaded):
        return "unchanged", what
    if kinds is RAW:
        # Without fresh checksums a change that loads means a CRC or SHA-256 check was skipped --
        # unless a splice carried in a whole other checkpoint, which zip readers find past the junk
        # before it (the prefix of a self-extracting archive).
        if any(same(obj, loaded) for _, obj in originals):
            return "changed", what + " (another intact checkpoint spliced in)"
        return "FAIL", "%s -> loaded a different object from a file whose checksums no longer match" % what
    problem = well_formed(loaded)
    if problem:
        return "FAIL", "%s -> loaded %s" % (what, problem)
    return "changed", what


def _on_alarm(signum, frame):
    raise CaseTimeout()


def worker(args):
    """Run the cases in this process; print 'case N' before each so the parent can name a crash."""
    signal.signal(signal.SIGALRM, _on_alarm)
    originals = valid_objects()
    bases = [saved(obj) for _, obj in originals]
    numbers = [args.case] if args.case is not None else range(args.cases)
    tally, failures = collections.Counter(), 0
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    for case in numbers:
        print("case %d" % case, flush=True)
        outcome, detail = run_case(args.seed, case, bases, originals, args.case_seconds)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if (peak - baseline) / 1024 > args.max_rss_mb:
            outcome, detail = "FAIL", "peak memory grew %.0f MB (limit %d MB) in: %s" % (
                (peak - baseline) / 1024, args.max_rss_mb, detail)
            baseline = peak             # ru_maxrss only rises: report the next growth from here
        tally[outcome] += 1
        if outcome == "FAIL":
            failures += 1
            print("FAIL seed=%d case=%d: %s\n  replay: python tests/fuzz_serialization.py --seed %d --case %d"
                  % (args.seed, case, detail, args.seed, case), flush=True)
        elif args.case is not None:
            print("%s: %s" % (outcome, detail), flush=True)
    print("fuzz_serialization: seed %d, %d cases in %.1f s: %d refused with ValueError, %d loaded unchanged, "
          "%d loaded a different well-formed object, %d failures"
          % (args.seed, len(numbers), time.perf_counter() - started, tally["refused"], tally["unchanged"],
             tally["changed"], failures), flush=True)
    return 1 if failures else 0


def parent(args, argv):
    """Run the worker in a child process; a child killed by a signal is a failure of the case it ran."""
    command = [sys.executable, os.path.abspath(__file__), "--worker"] + argv
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    last_case = None
    for line in child.stdout:
        if line.startswith("case "):
            last_case = int(line.split()[1])
        else:
            sys.stdout.write(line)
            sys.stdout.flush()
    status = child.wait()
    if status < 0:
        print("FAIL seed=%d case=%s: the process died of signal %d (%s)\n  replay: python "
              "tests/fuzz_serialization.py --seed %d --case %s"
              % (args.seed, last_case, -status, signal.Signals(-status).name, args.seed, last_case), flush=True)
        return 1
    return status


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--case", type=int, help="run only this case (replay a failure)")
    parser.add_argument("--case-seconds", type=int, default=10, help="a case running longer fails")
    parser.add_argument("--max-rss-mb", type=int, default=64, help="peak-memory growth that fails a case")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    return parent(args, argv)


if __name__ == "__main__":
    sys.exit(main())
