"""The training loop both demo models share, and the pieces section 3 times.

Training reads the data through cextend.utils.data (a shuffling DataLoader
seeded by --seed).  The timing in section 3 instead hands every
implementation the same fixed minibatches (index arrays drawn from one seed),
so all of them do exactly the same work and only the library differs.
"""
import time

import numpy as np

import cextend as cx
import cextend.nn as nn
from cextend.utils.data import DataLoader, TensorDataset

from cextend.demo.progress import EpochProgress


def accuracy(model, images, labels):
    """Fraction of `images` (an ndarray) classified as `labels`, in eval mode."""
    was_training = model.training
    model.eval()
    with cx.no_grad():
        predicted = model(cx.from_numpy(images)).argmax(1).numpy()
    model.train(was_training)
    return float((predicted == labels).mean())


def fit(model, optimizer, data, epochs, batch_size, seed, scheduler=None, stream=None):
    """Train on data = (x_train, y_train, x_test, y_test), one progress step per epoch.

    The scheduler, if any, steps once per minibatch.  Returns the final test accuracy.
    """
    x_train, y_train, x_test, y_test = data
    loader = DataLoader(TensorDataset(cx.from_numpy(x_train), cx.from_numpy(y_train)),
                        batch_size=batch_size, shuffle=True, generator=seed)
    loss_fn = nn.CrossEntropyLoss()
    progress = EpochProgress(epochs, stream)
    try:
        for epoch in range(1, epochs + 1):
            model.train()
            start = time.perf_counter()
            total = 0.0
            for images, labels in loader:
                optimizer.zero_grad()
                loss = loss_fn(model(images), labels)
                loss.backward()
                optimizer.step()
                if scheduler is not None:
                    scheduler.step()
                total += loss.item() * len(labels)
            seconds = time.perf_counter() - start
            progress.update(epoch, seconds, total / len(y_train), accuracy(model, x_train, y_train),
                            accuracy(model, x_test, y_test))
    finally:                # Ctrl-C too: the bar ends its line before the demo says it stopped
        progress.close()
    return accuracy(model, x_test, y_test)


def epoch_of(step, n, batch_size, seed):
    """A callable running one epoch of step(batch_indices) over n examples.

    Each call draws the next permutation from its own generator seeded by
    `seed`, so two implementations made with the same seed see the same
    minibatches in the same order, round after round.
    """
    rng = np.random.default_rng(seed)

    def run():
        order = rng.permutation(n)
        for i in range(0, n, batch_size):
            step(order[i:i + batch_size])
    return run


def library_step(lib, model, optimizer, scheduler, x, y):
    """One minibatch step of `model`, written the same for cextend and torch.

    lib is the cextend or torch module; x and y are the whole training set
    as ndarrays, indexed by the batch.
    """
    loss_fn = lib.nn.CrossEntropyLoss()

    def step(batch):
        optimizer.zero_grad()
        loss = loss_fn(model(lib.from_numpy(x[batch])), lib.from_numpy(y[batch]))
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    return step


def load_torch(wanted):
    """(torch, None) when wanted and installed (cextend itself never needs it);
    else (None, why not), for the line that says why a timing row is missing."""
    if not wanted:
        return None, "--no-torch leaves torch out"
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    return torch, None


def torch_twin(torch, model, build):
    """build(torch.nn) with `model`'s current parameters and buffers."""
    twin = build(torch.nn)
    if any(p.dtype == cx.float64 for p in model.parameters()):
        twin = twin.double()
    state = {name: torch.from_numpy(value.detach().numpy().copy()) for name, value in model.state_dict().items()}
    twin.load_state_dict(state)
    return twin
