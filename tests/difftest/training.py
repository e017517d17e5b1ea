"""Generated training loops, run eagerly and through cextend.capture.

    PYTHONPATH=tests python -m difftest --training-loops --seed S --programs N

Each program is a random small classifier (an optional convolutional block
with batch norm, pooling and channel dropout; depth, widths, activations,
optional batch norm and dropout), a loss scale, optional gradient clipping, an optimizer (SGD with or without momentum, Nesterov and
weight decay; Adam, AdamW, amsgrad), loss options (class weights,
ignore_index, mean or sum), dtype, batch size (a ragged last batch), an
optional learning-rate schedule and gradient accumulation over two steps.
It trains twice from the same parameters and random seed: calling the step
eagerly, and through cextend.capture.  The two must agree to the bit in
every loss, parameter, gradient and optimizer state, whether the step was
captured or ran eagerly because something in it cannot be replayed (then
the reason is tallied).
"""
import collections
import warnings

import numpy as np


def generate(rng):
    depth = int(rng.integers(1, 4))
    sizes = [int(rng.integers(1, 33)) for _ in range(depth)] + [int(rng.integers(1, 8))]
    return {
        "sizes": sizes,
        "activations": [str(rng.choice(["relu", "relu", "relu", "tanh", "sigmoid", "gelu", "silu", "leaky_relu",
                                         "elu", "none"])) for _ in range(depth - 1)],
        "dropout": float(rng.choice([0.0, 0.0, 0.0, 0.25, 0.5])),
        "dtype": str(rng.choice(["float32", "float64"])),
        "optimizer": str(rng.choice(["sgd", "momentum", "nesterov", "adam", "adamw", "amsgrad"])),
        "lr": float(rng.choice([1e-3, 1e-2, 0.1])),
        "weight_decay": float(rng.choice([0.0, 0.0, 1e-2])),
        "reduction": str(rng.choice(["mean", "sum"])),
        "class_weights": bool(rng.random() < 0.3),
        "ignored": float(rng.choice([0.0, 0.0, 0.2])),
        "samples": int(rng.integers(1, 80)),
        "batch": int(rng.integers(1, 24)),
        "epochs": int(rng.integers(1, 4)),
        "schedule": bool(rng.random() < 0.3),
        "accumulate": bool(rng.random() < 0.2),      # zero_grad every second step
        "loss_scale": float(rng.choice([1.0, 1.0, 1.0, 0.5])),
        "clip": bool(rng.random() < 0.15),           # clip_grad_norm_: an in-place change, run eagerly
        "batchnorm": bool(rng.random() < 0.2),       # BatchNorm1d after each hidden Linear
        "conv": _conv_config(rng) if rng.random() < 0.3 else None,
        "seed": int(rng.integers(0, 2 ** 31)),
    }


def _conv_config(rng):
    """A convolutional block in front of the classifier, on (1, height, width) images."""
    return {"height": int(rng.integers(4, 10)), "width": int(rng.integers(4, 10)),
            "channels": int(rng.integers(1, 7)), "kernel": int(rng.choice([1, 3])),
            "stride": int(rng.choice([1, 1, 2])), "batchnorm": bool(rng.random() < 0.5),
            "pool": str(rng.choice(["max", "avg", "adaptive", "none"])), "dropout2d": bool(rng.random() < 0.3)}


def _conv_block(nn, conv, dtype):
    """(the layers, the number of features they flatten to)."""
    k, s = conv["kernel"], conv["stride"]
    h, w = ((size + 2 * (k // 2) - k) // s + 1 for size in (conv["height"], conv["width"]))
    layers = [nn.Conv2d(1, conv["channels"], k, stride=s, padding=k // 2, dtype=dtype)]
    if conv["batchnorm"]:
        layers.append(nn.BatchNorm2d(conv["channels"], dtype=dtype))
    layers.append(nn.ReLU())
    if conv["pool"] == "max":
        layers.append(nn.MaxPool2d(2))
        h, w = h // 2, w // 2
    elif conv["pool"] == "avg":
        layers.append(nn.AvgPool2d(2))
        h, w = h // 2, w // 2
    elif conv["pool"] == "adaptive":
        layers.append(nn.AdaptiveAvgPool2d(2))
        h, w = 2, 2
    if conv["dropout2d"]:
        layers.append(nn.Dropout2d(0.25))
    layers.append(nn.Flatten())
    return layers, conv["channels"] * h * w


def _model(cx, config):
    nn = cx.nn
    dtype = getattr(cx, config["dtype"])
    sizes = config["sizes"]
    layers = []
    if config.get("conv"):
        layers, features = _conv_block(nn, config["conv"], dtype)
        sizes = [features] + sizes[1:]
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b, dtype=dtype))
        if i < len(sizes) - 2 and config.get("batchnorm"):
            layers.append(nn.BatchNorm1d(b, dtype=dtype))
        if i < len(sizes) - 2:
            act = config["activations"][i]
            if act != "none":
                layers.append(_ACTIVATIONS[act](nn))
            if config["dropout"]:
                layers.append(nn.Dropout(config["dropout"]))
    return nn.Sequential(*layers)


_ACTIVATIONS = {"relu": lambda nn: nn.ReLU(), "tanh": lambda nn: nn.Tanh(), "sigmoid": lambda nn: nn.Sigmoid(),
                "gelu": lambda nn: nn.GELU(), "silu": lambda nn: nn.SiLU(),
                "leaky_relu": lambda nn: nn.LeakyReLU(0.1), "elu": lambda nn: nn.ELU()}


def _optimizer(cx, config, params):
    kind, lr, decay = config["optimizer"], config["lr"], config["weight_decay"]
    if kind == "sgd":
        return cx.optim.SGD(params, lr=lr, weight_decay=decay)
    if kind == "momentum":
        return cx.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=decay)
    if kind == "nesterov":
        return cx.optim.SGD(params, lr=lr, momentum=0.8, nesterov=True, weight_decay=decay)
    if kind == "adam":
        return cx.optim.Adam(params, lr=lr, weight_decay=decay)
    if kind == "amsgrad":
        return cx.optim.Adam(params, lr=lr, amsgrad=True)
    return cx.optim.AdamW(params, lr=lr, weight_decay=decay or 1e-2)


def train(cx, config, capture):
    """(losses, parameters, gradients, optimizer state arrays, the capture's reason)."""
    rng = np.random.default_rng(config["seed"])
    sizes, dtype = config["sizes"], np.dtype(config["dtype"])
    if config.get("batchnorm") or (config.get("conv") or {}).get("batchnorm"):
        # batch norm in training takes batches of 2 or more (BatchNorm2d: more than one value)
        config = dict(config, batch=max(2, config["batch"]))
        config["samples"] += config["samples"] % config["batch"] == 1
    conv = config.get("conv")
    features = (1, conv["height"], conv["width"]) if conv else (sizes[0],)
    x = rng.standard_normal((config["samples"],) + features).astype(dtype)
    y = rng.integers(0, sizes[-1], config["samples"])
    y[rng.random(len(y)) < config["ignored"]] = -100
    weight = cx.from_numpy(rng.uniform(0.5, 2.0, sizes[-1]).astype(dtype)) if config["class_weights"] else None
    cx.manual_seed(config["seed"])
    model = _model(cx, config)
    opt = _optimizer(cx, config, model.parameters())
    scheduler = cx.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7) if config["schedule"] else None
    loss_fn = cx.nn.CrossEntropyLoss(weight=weight, reduction=config["reduction"])
    counter = [0]

    def step(xb, yb, zero):
        if zero:
            opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        if config["loss_scale"] != 1.0:
            loss = loss * config["loss_scale"]
        loss.backward()
        if config["clip"]:
            cx.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    run = cx.capture(step) if capture else step
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(config["epochs"]):
            for start in range(0, len(x), config["batch"]):
                zero = not config["accumulate"] or counter[0] % 2 == 0
                counter[0] += 1
                loss = run(cx.from_numpy(x[start:start + config["batch"]]),
                           cx.from_numpy(y[start:start + config["batch"]]), zero)
                losses.append(loss.detach().numpy().copy())
            if scheduler is not None:
                scheduler.step()
    params = [p.detach().numpy().copy() for p in model.parameters()]
    grads = [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]
    states = []
    for state in opt.state.values():
        for key in sorted(state):
            value = state[key]
            states.append(value.numpy().copy() if isinstance(value, cx.Tensor) else value)
    return losses, params, grads, states, getattr(run, "reason", None)


def _same(a, b):
    if a is None or b is None:
        return a is b
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b


def difference(cx, config):
    """None when the eager and the captured loop agree to the bit, else what differs; and the
    captured loop's reason for running eagerly (None: it was captured)."""
    eager = train(cx, config, False)
    captured = train(cx, config, True)
    for name, i in (("loss", 0), ("parameter", 1), ("gradient", 2), ("optimizer state", 3)):
        if len(eager[i]) != len(captured[i]):
            return "%d eager %ss, %d captured" % (len(eager[i]), name, len(captured[i])), captured[4]
        for k, (a, b) in enumerate(zip(eager[i], captured[i])):
            if not _same(a, b):
                return "%s %d differs" % (name, k), captured[4]
    return None, captured[4]


def run_training_loops(cx, seed, programs, log=None):
    """{"programs", "captured", "eager" (reason -> count), "disagreements" [(i, config, what)]}."""
    rng = np.random.default_rng(seed)
    summary = {"programs": 0, "captured": 0, "eager": collections.Counter(), "disagreements": []}
    for i in range(programs):
        config = generate(rng)
        with np.errstate(all="ignore"):
            what, reason = difference(cx, config)
        summary["programs"] += 1
        if reason is None:
            summary["captured"] += 1
        else:
            summary["eager"][reason] += 1
        if what is not None:
            summary["disagreements"].append((i, config, what))
            if log:
                log("program %d: %s (%s)" % (i, what, config))
    return summary


def report(summary):
    lines = ["difftest --training-loops: %d programs, %d captured, %d disagreed"
             % (summary["programs"], summary["captured"], len(summary["disagreements"]))]
    for reason, count in summary["eager"].most_common():
        lines.append("  ran eagerly (%d): %s" % (count, reason))
    for i, config, what in summary["disagreements"][:10]:
        lines.append("  program %d: %s\n    %s" % (i, what, config))
    return "\n".join(lines)
