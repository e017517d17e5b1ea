"""cextend's main job (`make demo`): check the C kernels, then train on real data.

1. gradcheck and gradgradcheck every C-backed Function in float64;
2. train a multi-layer perceptron of cextend.nn.Linear layers on the UCI
   8x8 handwritten digits, with a held-out test split, and report its
   test accuracy;
3. time an epoch with cextend's C kernels against the same model written
   with plain numpy matmuls and a hand-written backward.

Same seed, same result: shuffling and initialisation are seeded and the
kernels are bitwise deterministic for any thread count.
"""
import argparse
import time

import numpy as np
from tqdm import tqdm

import cextend as cx
import cextend.nn as nn
from cextend.autograd import gradcheck, gradgradcheck
from cextend.datasets import load_digits, train_test_split
from cextend.functions import Add, GlobalMaxPool, LinearFunction, MulConstant


# -- 1. gradchecks --------------------------------------------------------------

def _leaf(rng, *shape):
    return cx.from_numpy(rng.standard_normal(shape)).requires_grad_()


def gradcheck_cases(rng):
    w_t = cx.from_numpy(np.ascontiguousarray(rng.standard_normal((6, 4))).T).requires_grad_()
    return [
        ("LinearFunction (x, W, b)", LinearFunction.apply, (_leaf(rng, 5, 6), _leaf(rng, 4, 6), _leaf(rng, 4))),
        ("LinearFunction (3-D x, transposed W)", LinearFunction.apply, (_leaf(rng, 2, 3, 6), w_t)),
        ("MulConstant (x, 2.5)", lambda t: MulConstant.apply(t, 2.5), (_leaf(rng, 3, 4),)),
        ("Add (a, b)", Add.apply, (_leaf(rng, 3, 4), _leaf(rng, 3, 4))),
        ("GlobalMaxPool values", lambda t: GlobalMaxPool.apply(t)[0], (_leaf(rng, 2, 3, 4, 4),)),
    ]


def check_functions(seed):
    rng = np.random.default_rng(seed)
    print("1. gradcheck / gradgradcheck of the C-backed Functions (float64)\n")
    print("   %-38s %-10s %-14s %s" % ("Function", "gradcheck", "gradgradcheck", "time"))
    all_ok = True
    for name, fn, inputs in gradcheck_cases(rng):
        start = time.perf_counter()
        first = gradcheck(fn, inputs, raise_exception=False)
        second = gradgradcheck(fn, inputs, raise_exception=False)
        all_ok &= first and second
        print("   %-38s %-10s %-14s %.0f ms" % (name, "pass" if first else "FAIL",
                                               "pass" if second else "FAIL",
                                               (time.perf_counter() - start) * 1e3))
    print()
    return all_ok


# -- 2. training --------------------------------------------------------------------

def build_model(hidden, dtype):
    return nn.Sequential(nn.Linear(64, hidden, dtype=dtype), nn.ReLU(),
                         nn.Linear(hidden, hidden, dtype=dtype), nn.ReLU(),
                         nn.Linear(hidden, 10, dtype=dtype))


def accuracy(model, images, labels):
    with cx.no_grad():
        predicted = model(cx.from_numpy(images)).argmax(1).numpy()
    return float((predicted == labels).mean())


def train(model, data, epochs, batch_size, lr, seed):
    """Adam on cross-entropy; returns per-epoch seconds."""
    x_train, y_train, x_test, y_test = data
    opt = cx.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)
    epoch_times = []
    bar = tqdm(range(1, epochs + 1), desc="   training", unit="epoch", ncols=100)
    for _ in bar:
        start = time.perf_counter()
        order = rng.permutation(len(y_train))
        total = 0.0
        for i in range(0, len(order), batch_size):
            batch = order[i:i + batch_size]
            opt.zero_grad()
            loss = loss_fn(model(cx.from_numpy(x_train[batch])), cx.from_numpy(y_train[batch]))
            loss.backward()
            opt.step()
            total += loss.item() * len(batch)
        epoch_times.append(time.perf_counter() - start)
        bar.set_postfix(loss="%.4f" % (total / len(order)),
                        train_acc="%.3f" % accuracy(model, x_train, y_train),
                        test_acc="%.3f" % accuracy(model, x_test, y_test))
    bar.close()
    return epoch_times


# -- 3. the same model in plain numpy --------------------------------------------------

class NumpyMLP:
    """The same network, optimiser and batches, with numpy matmuls and a
    hand-written backward: the baseline for the epoch time."""

    def __init__(self, model):
        self.params = [p.detach().numpy().copy() for p in model.parameters()]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.step_count = 0

    def step(self, x, labels, lr, betas=(0.9, 0.999), eps=1e-8):
        w1, b1, w2, b2, w3, b3 = self.params
        h1 = np.maximum(x @ w1.T + b1, 0)
        h2 = np.maximum(h1 @ w2.T + b2, 0)
        logits = h2 @ w3.T + b3
        shifted = logits - logits.max(1, keepdims=True)
        p = np.exp(shifted)
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(labels)), labels] -= 1
        g3 = p / len(labels)
        g2 = (g3 @ w3) * (h2 > 0)
        g1 = (g2 @ w2) * (h1 > 0)
        grads = [g1.T @ x, g1.sum(0), g2.T @ h1, g2.sum(0), g3.T @ h2, g3.sum(0)]
        self.step_count += 1
        for param, grad, m, v in zip(self.params, grads, self.m, self.v):
            m += (grad - m) * (1 - betas[0])
            v *= betas[1]
            v += (1 - betas[1]) * grad * grad
            denom = np.sqrt(v) / np.sqrt(1 - betas[1] ** self.step_count) + eps
            param -= lr / (1 - betas[0] ** self.step_count) * (m / denom)


def numpy_epoch_seconds(model, x_train, y_train, batch_size, lr, seed, epochs=3):
    baseline = NumpyMLP(model)
    rng = np.random.default_rng(seed)
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        order = rng.permutation(len(y_train))
        for i in range(0, len(order), batch_size):
            batch = order[i:i + batch_size]
            baseline.step(x_train[batch], y_train[batch], lr)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cextend.demo", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=25, help="training epochs")
    parser.add_argument("--hidden", type=int, default=128, help="units in each of the two hidden layers")
    parser.add_argument("--batch-size", type=int, default=32, help="minibatch size")
    parser.add_argument("--lr", type=float, default=2e-3, help="Adam learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seed for the split, init and shuffling")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="model dtype")
    parser.add_argument("--threads", type=int, default=None, help="kernel threads (default: all cores)")
    parser.add_argument("--skip-checks", action="store_true", help="skip the gradcheck table")
    args = parser.parse_args(argv)
    if args.threads is not None:
        cx.set_num_threads(args.threads)

    print("cextend %s: C kernels on %s, %d thread(s)\n" % (cx.__version__, cx.get_isa(), cx.get_num_threads()))
    checks_ok = True if args.skip_checks else check_functions(args.seed)

    dtype = np.dtype(args.dtype)
    images, labels = load_digits(dtype)
    train_idx, test_idx = train_test_split(len(labels), 0.2, args.seed)
    data = (images[train_idx], labels[train_idx], images[test_idx], labels[test_idx])
    print("2. an MLP 64-%d-%d-10 (cextend.nn.Linear + ReLU, Adam) on the UCI 8x8 digits: "
          "%d train / %d test images, %s\n" % (args.hidden, args.hidden, len(train_idx), len(test_idx), args.dtype))
    cx.manual_seed(args.seed)
    model = build_model(args.hidden, dtype)
    initial = build_model(args.hidden, dtype)
    initial.load_state_dict(model.state_dict())
    start = time.perf_counter()
    epoch_times = train(model, data, args.epochs, args.batch_size, args.lr, args.seed)
    training_seconds = time.perf_counter() - start
    test_accuracy = accuracy(model, data[2], data[3])
    print("\n   test accuracy: %.1f%%  (training took %.1f s)\n" % (100 * test_accuracy, training_seconds))

    print("3. one epoch of the same model and batches")
    ours = float(np.median(epoch_times))
    theirs = numpy_epoch_seconds(initial, data[0], data[1], args.batch_size, args.lr, args.seed)
    print("   cextend (C kernels, autograd):          %7.1f ms" % (ours * 1e3))
    print("   plain numpy matmuls (manual backward):  %7.1f ms  (numpy/cextend = %.2f)"
          % (theirs * 1e3, theirs / ours))
    return 0 if checks_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
