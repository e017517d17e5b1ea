"""Training with the recurrent layers: a word-level LSTM language model
(embedding -> 2-layer LSTM -> Linear -> cross_entropy) with SGD, and a GRU
sequence classifier with Adam, on synthetic data for 20 steps.  Where
torch 2.13 is installed, with weights copied from torch and dropout 0,
the loss matches torch's step for step in float64 (1e-9 relative); the
loss decreases in any case.  Dropout between layers: the fraction zeroed
in training, and none in evaluation."""
import numpy as np
import pytest

import cextend
import cextend.nn.rnn as cx_rnn

try:
    import torch
except ImportError:     # the loss must still fall; the step-by-step comparison skips
    torch = None

VOCAB, STEPS = 40, 20


def _corpus(rng, steps=12, batch=6):
    """Token sequences that mostly follow t' = (3 t + 1) mod VOCAB: learnable."""
    start = rng.integers(0, VOCAB, batch)
    tokens = np.empty((steps + 1, batch), np.int64)
    tokens[0] = start
    for t in range(steps):
        noise = rng.random(batch) < 0.1
        tokens[t + 1] = np.where(noise, rng.integers(0, VOCAB, batch), (3 * tokens[t] + 1) % VOCAB)
    return tokens


class LanguageModel:
    def __init__(self, lib):
        lib.manual_seed(0)
        self.lib = lib
        self.embedding = lib.nn.Embedding(VOCAB, 8).double()
        self.lstm = lib.nn.LSTM(8, 16, num_layers=2).double()
        self.decoder = lib.nn.Linear(16, VOCAB).double()
        self.modules = [self.embedding, self.lstm, self.decoder]

    def parameters(self):
        return [p for m in self.modules for p in m.parameters()]

    def loss(self, tokens):
        x, y = tokens[:-1], tokens[1:]
        out, _ = self.lstm(self.embedding(x))
        logits = self.decoder(out)
        return self.lib.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))


class Classifier:
    def __init__(self, lib):
        lib.manual_seed(1)
        self.lib = lib
        self.gru = lib.nn.GRU(3, 10, batch_first=True, bidirectional=True).double()
        self.head = lib.nn.Linear(20, 2).double()
        self.modules = [self.gru, self.head]

    def parameters(self):
        return [p for m in self.modules for p in m.parameters()]

    def loss(self, data):
        x, y = data
        _, h = self.gru(x)
        features = self.lib.cat([h[0], h[1]], 1)
        return self.lib.nn.functional.cross_entropy(self.head(features), y)


def _copy_weights(ours, theirs):
    for a, b in zip(ours.modules, theirs.modules):
        a.load_state_dict({k: cextend.tensor(v.detach().numpy()) for k, v in b.state_dict().items()})


def _train(model, data, optimizer):
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = model.loss(data)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
    return np.array(losses)


def _lm_data(lib):
    return lib.tensor(_corpus(np.random.default_rng(0)))


def _classifier_data(lib):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 7, 3))
    y = (x[:, :, 0].sum(1) > 0).astype(np.int64)
    return lib.tensor(x), lib.tensor(y)


# (model, data, optimizer, the fraction of the first loss the last must be under)
CASES = {"lstm language model with SGD": (LanguageModel, _lm_data,
                                         lambda lib, p: lib.optim.SGD(p, lr=1.0, momentum=0.9), 0.9),
         "gru classifier with Adam": (Classifier, _classifier_data, lambda lib, p: lib.optim.Adam(p, lr=0.02), 0.1)}


@pytest.fixture
def torch_one_thread():
    """torch on one thread beside cextend's (as the differential tester runs it): no contention."""
    if torch is None:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_lowers_the_loss_and_matches_torch_step_for_step(case, torch_one_thread):
    make, data, optimizer, fraction = CASES[case]
    ours = make(cextend)
    if torch is not None:
        theirs = make(torch)
        _copy_weights(ours, theirs)
    losses = _train(ours, data(cextend), optimizer(cextend, ours.parameters()))
    assert losses[-1] < fraction * losses[0] and (np.diff(losses)[-5:] < 0).all(), losses
    if torch is not None:
        expected = _train(theirs, data(torch), optimizer(torch, theirs.parameters()))
        np.testing.assert_allclose(losses, expected, rtol=1e-9)


# -- dropout between layers -----------------------------------------------------------------

def _record_dropout(monkeypatch):
    calls = []
    dropout = cx_rnn.F.dropout

    def recording(input, p=0.5, training=True, inplace=False):
        out = dropout(input, p, training, inplace)
        calls.append((input.detach().numpy().copy(), out.detach().numpy().copy(), p, training))
        return out
    monkeypatch.setattr(cx_rnn.F, "dropout", recording)
    return calls


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_dropout_zeroes_its_fraction_between_layers_in_training_only(kind, monkeypatch):
    calls = _record_dropout(monkeypatch)
    p = 0.3
    module = getattr(cextend.nn, kind)(4, 50, num_layers=3, dropout=p, bidirectional=True).double()
    x = cextend.randn(20, 8, 4, dtype=cextend.float64)
    first, _ = module(x)
    assert len(calls) == 2 and all(c[2] == p and c[3] for c in calls)       # after every layer but the last
    for before, after, _, _ in calls:
        assert before.shape == (20, 8, 100)
        zeroed = (after == 0) & (before != 0)
        n = before.size
        assert abs(zeroed.mean() - p) < 4 * np.sqrt(p * (1 - p) / n)      # 16,000 draws: within 4 sigma
        kept = ~zeroed
        np.testing.assert_allclose(after[kept], before[kept] / (1 - p), rtol=1e-12)
    second, _ = module(x)
    assert not np.array_equal(first.detach().numpy(), second.detach().numpy())
    first.sum().backward()                                               # through the dropout masks
    calls.clear()
    module.eval()
    a, _ = module(x)
    b, _ = module(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert all(not c[3] or np.array_equal(c[0], c[1]) for c in calls)      # no dropout in eval


def test_dropout_one_leaves_the_upper_layer_only_its_biases():
    """p = 1 zeroes every input of layer 2: its output is the same for every sequence of the batch."""
    lstm = cextend.nn.LSTM(3, 5, num_layers=2, dropout=1.0).double()
    out, _ = lstm(cextend.randn(4, 6, 3, dtype=cextend.float64))
    values = out.detach().numpy()
    np.testing.assert_allclose(values, np.broadcast_to(values[:, :1], values.shape), rtol=0, atol=0)
