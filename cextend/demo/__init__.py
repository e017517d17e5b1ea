"""cextend's main job (`make demo`, `make demo-cnn`): check the C kernels, then train on real data.

1. gradcheck and gradgradcheck the C-backed ops the model uses, in float64;
2. train a model on the UCI 8x8 handwritten digits (bundled with cextend)
   with a held-out test split, and report its test accuracy:
   --model mlp (default): Linear and ReLU layers, Adam;
   --model cnn: Conv2d, BatchNorm2d, ReLU, MaxPool2d, Flatten, Dropout and
   Linear, AdamW and a learning-rate schedule;
3. time training epochs against other implementations of the same model on
   the same batches (plain numpy for the MLP; torch for both when it is
   installed), interleaved, reporting medians and the spread.

Same seed, same result: the split, initialisation, dropout and shuffling are
seeded and the kernels are bitwise deterministic for any thread count.

A run of the full length (each model's default epochs) fails (status 1)
below the model's target accuracy; a shorter one prints its accuracy and
fails only with --check.  On a busy machine (the load average leaves fewer
idle cores than there are) the kernels run on the idle cores only, at least
one: OpenMP threads that wait for a core slow every step down.
"""
import argparse
import os
import sys

import numpy as np

import cextend as cx
from cextend.datasets import load_digits, train_test_split

from cextend.demo import checks, cnn, mlp

_MODELS = {"mlp": mlp, "cnn": cnn}


def _channels(text):
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError("expected two positive integers such as 16,32, got %r" % text)
    return tuple(int(p) for p in parts)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m cextend.demo", description=__doc__.splitlines()[0],
                                     epilog="Defaults: mlp %s; cnn %s." % (
                                         ", ".join("%s=%s" % kv for kv in mlp.DEFAULTS.items()),
                                         ", ".join("%s=%s" % kv for kv in cnn.DEFAULTS.items())))
    parser.add_argument("--model", choices=sorted(_MODELS), default="mlp", help="which network to train")
    parser.add_argument("--epochs", type=int, help="training epochs")
    parser.add_argument("--batch-size", type=int, help="minibatch size")
    parser.add_argument("--lr", type=float, help="learning rate (Adam for mlp, AdamW's peak for cnn)")
    parser.add_argument("--hidden", type=int, help="mlp: units in each of the two hidden layers")
    parser.add_argument("--channels", type=_channels, help="cnn: channels of the two convolutions, e.g. 16,32")
    parser.add_argument("--seed", type=int, default=0, help="seed for the split, init, dropout and shuffling")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="model dtype")
    parser.add_argument("--threads", type=int, default=None,
                        help="kernel threads (default: all cores; the idle ones on a busy machine)")
    parser.add_argument("--min-accuracy", type=float, default=None,
                        help="the target test accuracy in %% (mlp %g, cnn %g); giving it implies --check"
                             % (mlp.TARGET, cnn.TARGET))
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 below the target even when --epochs is shorter than the "
                             "default (a full-length run always checks)")
    parser.add_argument("--timing-rounds", type=int, default=5,
                        help="interleaved epochs per implementation in section 3 (0 skips it)")
    parser.add_argument("--timing-threads", type=int, default=1,
                        help="threads for every library in section 3 (the same count for all)")
    parser.add_argument("--no-torch", dest="torch", action="store_false",
                        help="leave torch out of section 3 even when it is installed")
    parser.add_argument("--skip-checks", action="store_true", help="skip the gradcheck table")
    args = parser.parse_args(argv)
    for key, value in _MODELS[args.model].DEFAULTS.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    if args.min_accuracy is None:
        args.min_accuracy = _MODELS[args.model].TARGET
    else:
        args.check = True
    args.full_length = args.epochs >= _MODELS[args.model].DEFAULTS["epochs"]
    return args


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _load_average():
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def busy_threads(threads, cores, load):
    """How many of `threads` kernel threads to use on `cores` cores under a
    one-minute load average of `load` (None: unknown): the idle cores, at
    least one; on an idle machine, all of them."""
    if load is None:
        return threads
    idle = int(cores - load + 0.5)
    return max(1, min(threads, idle))


def main(argv=None, stream=None):
    """Run the demo; returns its exit status (130 after Ctrl-C, with one line on stderr)."""
    args = parse_args(argv)
    stream = sys.stdout if stream is None else stream
    saved_threads = cx.get_num_threads()
    try:
        return _run(args, stream)
    except KeyboardInterrupt:
        print("cextend.demo: interrupted", file=sys.stderr, flush=True)
        return 130
    finally:
        cx.set_num_threads(saved_threads)


def _run(args, stream):
    hint = None
    if args.threads is not None:
        cx.set_num_threads(args.threads)
    elif "OMP_NUM_THREADS" not in os.environ:
        cores, load = _cores(), _load_average()
        threads = busy_threads(cx.get_num_threads(), cores, load)
        if threads < cx.get_num_threads():
            cx.set_num_threads(threads)
            hint = "(%d thread%s: the machine is busy, load %.1f on %d cores; --threads N overrides)" % (
                threads, "" if threads == 1 else "s", load, cores)
    model = _MODELS[args.model]

    print("cextend %s: C kernels on %s, %d thread(s)" % (cx.__version__, cx.get_isa(), cx.get_num_threads()),
          file=stream)
    if hint:
        print(hint, file=stream)
    print(file=stream)
    cases = checks.cnn_cases if args.model == "cnn" else checks.mlp_cases
    checks_ok = True if args.skip_checks else checks.check_functions(cases(np.random.default_rng(args.seed)), stream)

    images, labels = load_digits(np.dtype(args.dtype))
    train_idx, test_idx = train_test_split(len(labels), 0.2, args.seed)
    data = (images[train_idx], labels[train_idx], images[test_idx], labels[test_idx])
    test_accuracy = model.run(args, data, stream)
    reached = 100 * test_accuracy >= args.min_accuracy
    checked = args.check or args.full_length
    if not reached and checked:
        print("\n   test accuracy %.1f%% is below the target of %.1f%%" % (100 * test_accuracy, args.min_accuracy),
              file=stream)
    elif not reached:
        print("\n   a short run: the %.1f%% target takes %d epochs (--check fails below it)"
              % (args.min_accuracy, model.DEFAULTS["epochs"]), file=stream)
    return 0 if checks_ok and (reached or not checked) else 1
