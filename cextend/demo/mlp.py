"""`python -m cextend.demo` (--model mlp): a multi-layer perceptron of
cextend.nn.Linear layers, trained with Adam, timed against plain numpy (a
hand-written forward and backward) and against torch when it is installed."""
import numpy as np

import cextend as cx
import cextend.nn

from cextend.demo import timing
from cextend.demo.training import epoch_of, fit, library_step, load_torch, torch_twin

DEFAULTS = dict(epochs=25, batch_size=32, lr=2e-3, hidden=128)
TARGET = 96.0          # test accuracy (%) of a full-length run; below it the demo fails


def build_model(nn, hidden):
    """The network, written once for cextend.nn or torch.nn."""
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))


class NumpyMLP:
    """The same network and Adam with numpy matmuls and a hand-written
    backward: what the C kernels and the autograd engine are up against."""

    def __init__(self, model, lr, betas=(0.9, 0.999), eps=1e-8):
        self.params = [p.detach().numpy().copy() for p in model.parameters()]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.lr, self.betas, self.eps = lr, betas, eps
        self.step_count = 0

    def step(self, x, labels):
        w1, b1, w2, b2, w3, b3 = self.params
        h1 = np.maximum(x @ w1.T + b1, 0)
        h2 = np.maximum(h1 @ w2.T + b2, 0)
        logits = h2 @ w3.T + b3
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(labels)), labels] -= 1
        g3 = p / len(labels)
        g2 = (g3 @ w3) * (h2 > 0)
        g1 = (g2 @ w2) * (h1 > 0)
        grads = [g1.T @ x, g1.sum(0), g2.T @ h1, g2.sum(0), g3.T @ h2, g3.sum(0)]
        self.step_count += 1
        beta1, beta2 = self.betas
        for param, grad, m, v in zip(self.params, grads, self.m, self.v):
            m += (grad - m) * (1 - beta1)
            v *= beta2
            v += (1 - beta2) * grad * grad
            denom = np.sqrt(v) / np.sqrt(1 - beta2 ** self.step_count) + self.eps
            param -= self.lr / (1 - beta1 ** self.step_count) * (m / denom)


def run(args, data, stream=None):
    """Sections 2 and 3; returns the test accuracy."""
    hidden = args.hidden
    print("2. an MLP 64-%d-%d-10 (Linear, ReLU; Adam) on the 8x8 digits" % (hidden, hidden), file=stream)
    print("   %d train / %d test images, %s, batches of %d\n"
          % (len(data[1]), len(data[3]), args.dtype, args.batch_size), file=stream)
    cx.manual_seed(args.seed)
    model = build_model(cextend.nn, hidden)
    if args.dtype == "float64":
        model = model.double()
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    opt = cx.optim.Adam(model.parameters(), lr=args.lr)
    test_accuracy = fit(model, opt, data, args.epochs, args.batch_size, args.seed, stream=stream)
    print("\n   test accuracy: %.1f%%\n" % (100 * test_accuracy), file=stream)

    if args.timing_rounds > 0:
        model.load_state_dict(initial)
        time_epochs(args, model, data, stream)
    return test_accuracy


def time_epochs(args, model, data, stream):
    x, y = data[0], data[1]
    ours = cx.optim.Adam(model.parameters(), lr=args.lr)
    runners = {"cextend": epoch_of(library_step(cx, model, ours, None, x, y), len(y), args.batch_size, args.seed)}
    labels = {"cextend": "cextend (C kernels, autograd)"}
    baseline = NumpyMLP(model, args.lr)
    runners["numpy"] = epoch_of(lambda batch: baseline.step(x[batch], y[batch]), len(y), args.batch_size, args.seed)
    labels["numpy"] = "numpy (matmuls, manual backward)"
    torch, missing = load_torch(args.torch)
    notes = [] if torch is not None else ["no torch row: %s" % missing]
    if torch is not None:
        twin = torch_twin(torch, model, lambda nn: build_model(nn, args.hidden))
        theirs = torch.optim.Adam(twin.parameters(), lr=args.lr)
        runners["torch"] = epoch_of(library_step(torch, twin, theirs, None, x, y), len(y), args.batch_size,
                                    args.seed)
        labels["torch"] = "torch %s (autograd)" % torch.__version__
    return timing.compare(runners, labels, args.timing_rounds, args.timing_threads, torch, stream, notes)
