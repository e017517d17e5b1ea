"""Packed sequences (cextend.nn.utils.rnn) and the recurrent layers on
them: packing, padding and their gradients, torch's argument checks, and
RNN/LSTM/GRU on a PackedSequence against each sequence run on its own
(always) and against torch with every gradient (where installed), sorted
or not, batch-first or not, with given or default states."""
import numpy as np
import pytest

import cextend
from cextend.autograd import gradcheck
from cextend.nn.utils import rnn as rnn_utils

try:
    import torch
except ImportError:     # the stated answers still run; the torch comparisons skip
    torch = None

with_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: cross-check skipped")


def _padded(rng, lengths, batch_first, features=2):
    steps = max(lengths)
    x = rng.standard_normal((len(lengths), steps, features))
    for b, n in enumerate(lengths):
        x[b, n:] = 0
    return x if batch_first else x.transpose(1, 0, 2).copy()


def test_pack_padded_sequence_orders_steps_time_major():
    x = np.arange(4 * 3).reshape(4, 3, 1).astype(np.float64)      # (T, B, 1): x[t, b] = 3 t + b
    packed = rnn_utils.pack_padded_sequence(cextend.tensor(x), [4, 2, 1])
    assert isinstance(packed, rnn_utils.PackedSequence) and isinstance(packed, tuple)
    np.testing.assert_array_equal(packed.data.numpy()[:, 0], [0, 1, 2, 3, 4, 6, 9])
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), [3, 2, 1, 1])
    assert packed.batch_sizes.dtype == cextend.int64 and packed.sorted_indices is None
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert unsorted_indices is None and data is packed.data
    padded, lengths = rnn_utils.pad_packed_sequence(packed, padding_value=-1.0, total_length=5)
    expected = x.copy()
    expected[2:, 1] = expected[1:, 2] = -1
    np.testing.assert_array_equal(padded.numpy(), np.concatenate([expected, -np.ones((1, 3, 1))]))
    np.testing.assert_array_equal(lengths.numpy(), [4, 2, 1])


def test_unsorted_lengths_are_sorted_and_restored():
    rng = np.random.default_rng(1)
    lengths = [2, 5, 3, 5]
    x = _padded(rng, lengths, True)
    packed = rnn_utils.pack_padded_sequence(cextend.tensor(x), cextend.tensor(lengths), batch_first=True,
                                            enforce_sorted=False)
    np.testing.assert_array_equal(packed.sorted_indices.numpy(), [1, 3, 2, 0])     # a stable descending sort
    np.testing.assert_array_equal(packed.unsorted_indices.numpy(), [3, 0, 2, 1])
    padded, got_lengths = rnn_utils.pad_packed_sequence(packed, batch_first=True)
    np.testing.assert_array_equal(padded.numpy(), x)
    np.testing.assert_array_equal(got_lengths.numpy(), lengths)
    sequences = rnn_utils.unpack_sequence(packed)
    assert [s.shape[0] for s in sequences] == lengths
    for s, b in zip(sequences, range(4)):
        np.testing.assert_array_equal(s.numpy(), x[b, :lengths[b]])


def test_pad_sequence_and_its_inverses():
    seqs = [cextend.tensor(np.full((n, 2), float(n))) for n in (3, 1, 2)]
    right = rnn_utils.pad_sequence(seqs, batch_first=True, padding_value=9.0)
    left = rnn_utils.pad_sequence(seqs, padding_side="left")
    assert right.shape == (3, 3, 2) and left.shape == (3, 3, 2)
    np.testing.assert_array_equal(right.numpy()[1, :, 0], [1, 9, 9])
    np.testing.assert_array_equal(left.numpy()[:, 2, 0], [0, 2, 2])
    back = rnn_utils.unpad_sequence(right, cextend.tensor([3, 1, 2]), batch_first=True)
    assert [tuple(s.shape) for s in back] == [(3, 2), (1, 2), (2, 2)]
    packed = rnn_utils.pack_sequence(seqs, enforce_sorted=False)
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), [3, 2, 1])
    assert [s.shape[0] for s in rnn_utils.unpack_sequence(packed)] == [3, 1, 2]
    time_major = rnn_utils.pad_sequence(seqs)
    rnn_utils.unpad_sequence(time_major, cextend.tensor([3, 1, 2]))
    assert time_major.shape == (3, 3, 2)        # transposed in place, as torch's unpad_sequence does


def test_packing_and_padding_pass_gradients():
    rng = np.random.default_rng(2)
    x = cextend.tensor(_padded(rng, [3, 2, 2], False)).requires_grad_()

    def round_trip(x):
        packed = rnn_utils.pack_padded_sequence(x, [3, 2, 2])
        return rnn_utils.pad_packed_sequence(packed, padding_value=0.5)[0] * 2
    assert gradcheck(round_trip, (x,))
    seqs = tuple(cextend.tensor(rng.standard_normal((n, 2))).requires_grad_() for n in (2, 3))
    assert gradcheck(lambda *s: rnn_utils.pad_sequence(list(s), padding_side="left"), seqs)


def test_packed_sequence_conversions():
    packed = rnn_utils.pack_sequence([cextend.ones(3, 2), cextend.ones(1, 2)])
    assert not packed.is_cuda
    double = packed.double()
    assert double.data.dtype == cextend.float64 and double.batch_sizes is packed.batch_sizes
    assert packed.to(cextend.float32) is packed
    assert rnn_utils.invert_permutation(None) is None
    np.testing.assert_array_equal(rnn_utils.invert_permutation(cextend.tensor([2, 0, 1])).numpy(), [1, 2, 0])


def _outcome(lib, program):
    try:
        program(lib)
    except Exception as error:          # the type and message are what is compared
        return type(error).__name__, str(error)
    return None


ERRORS = {
    "unsorted": (lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(4, 3, 2), [4, 2, 3]),
                 ("RuntimeError", "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                                  "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                                  "pack_sequence to sidestep this requirement if you do not need ONNX exportability.")),
    "zero length": (lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(4, 3, 2), [4, 2, 0]),
                    ("RuntimeError", "Length of all samples has to be greater than 0, but found an element in "
                                     "'lengths' that is <= 0")),
    "batch": (lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(4, 3, 2), [4, 2]),
              ("RuntimeError", "Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)")),
    "empty": (lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(0, 3, 2), [1, 1, 1]),
              ("RuntimeError", "Cannot pack empty tensors.")),
    "no sequences": (lambda lib: lib.nn.utils.rnn.pad_sequence([]),
                     ("RuntimeError", "received an empty list of sequences")),
    "padding_side": (lambda lib: lib.nn.utils.rnn.pad_sequence([lib.zeros(2)], padding_side="up"),
                     ("RuntimeError", "Expected padding_side to be one of left or right, but got up.")),
    "total_length": (lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
        lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(4, 2, 1), [4, 1]), total_length=3),
        ("ValueError", "Expected total_length to be at least the length of the longest sequence in input, but got "
                       "total_length=3 and max sequence length being 4")),
    "2-d lengths": (lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(4, 3, 2), lib.tensor([[4, 2, 1]])),
                    ("RuntimeError", "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor")),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_argument_checks_say_what_torch_says(case):
    program, expected = ERRORS[case]
    assert _outcome(cextend, program) == expected
    if torch is not None:
        assert _outcome(torch, program) == expected


def test_a_length_past_the_padding_raises_where_torch_reads_garbage():
    with pytest.raises(RuntimeError, match="a length of 5 is longer than the padded sequences"):
        rnn_utils.pack_padded_sequence(cextend.zeros(4, 2, 1), [5, 1])


# -- the layers on packed sequences ------------------------------------------------------------

PACKED = [("LSTM", 2, True, False, True), ("LSTM", 1, False, True, False), ("GRU", 2, True, True, True),
          ("GRU", 1, False, False, False), ("RNN", 2, True, False, False), ("LSTM", 2, False, False, True)]
LENGTHS = [3, 5, 1, 5, 2]


def _module(lib, kind, layers, bidirectional, batch_first, dtype):
    return getattr(lib.nn, kind)(2, 3, num_layers=layers, bidirectional=bidirectional,
                                 batch_first=batch_first).to(getattr(lib, dtype))


@pytest.mark.parametrize("kind,layers,bidirectional,batch_first,given", PACKED)
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_layers_on_packed_sequences_match_each_sequence_run_alone(kind, layers, bidirectional, batch_first, given,
                                                                   enforce_sorted):
    rng = np.random.default_rng(layers * 3 + batch_first)
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    cextend.manual_seed(6)
    module = _module(cextend, kind, layers, bidirectional, batch_first, "float64")
    x = _padded(rng, lengths, batch_first)
    d = layers * (2 if bidirectional else 1)
    states = [rng.standard_normal((d, len(lengths), 3)) for _ in range(2 if kind == "LSTM" else 1)] if given else None
    hx = None if states is None else tuple(cextend.tensor(s) for s in states)
    packed = rnn_utils.pack_padded_sequence(cextend.tensor(x), lengths, batch_first=batch_first,
                                            enforce_sorted=enforce_sorted)
    out, final = module(packed, None if hx is None else hx if kind == "LSTM" else hx[0])
    assert isinstance(out, rnn_utils.PackedSequence) and out.batch_sizes is packed.batch_sizes
    padded, got_lengths = rnn_utils.pad_packed_sequence(out, batch_first=batch_first)
    padded = padded.detach()
    np.testing.assert_array_equal(got_lengths.numpy(), lengths)
    finals = final if kind == "LSTM" else (final,)
    for b, n in enumerate(lengths):
        seq = cextend.tensor(x[b, :n] if batch_first else x[:n, b])          # unbatched (n, 2)
        alone_hx = None if hx is None else tuple(h[:, b] for h in hx)
        alone, alone_final = module(seq, None if alone_hx is None else alone_hx if kind == "LSTM" else alone_hx[0])
        mine = padded.numpy()[b, :n] if batch_first else padded.numpy()[:n, b]
        np.testing.assert_allclose(mine, alone.detach().numpy(), rtol=1e-12, atol=1e-12)
        rest = padded.numpy()[b, n:] if batch_first else padded.numpy()[n:, b]
        assert (rest == 0).all()
        for f, a in zip(finals, alone_final if kind == "LSTM" else (alone_final,)):
            np.testing.assert_allclose(f.detach().numpy()[:, b], a.detach().numpy(), rtol=1e-12, atol=1e-12)


@with_torch
@pytest.mark.parametrize("kind,layers,bidirectional,batch_first,given", PACKED)
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_layers_on_packed_sequences_match_torch_with_every_gradient(kind, layers, bidirectional, batch_first, given,
                                                                     enforce_sorted):
    rng = np.random.default_rng(layers * 5 + bidirectional)
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    x = _padded(rng, lengths, batch_first)
    d = layers * (2 if bidirectional else 1)
    states = [rng.standard_normal((d, len(lengths), 3)) for _ in range(2 if kind == "LSTM" else 1)] if given else None
    torch.manual_seed(0)
    theirs = _module(torch, kind, layers, bidirectional, batch_first, "float64")
    ours = _module(cextend, kind, layers, bidirectional, batch_first, "float64")
    ours.load_state_dict({k: cextend.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    results = []
    for lib, module in ((cextend, ours), (torch, theirs)):
        xt = lib.tensor(x).requires_grad_()
        hx = None if states is None else tuple(lib.tensor(s).requires_grad_() for s in states)
        packed = lib.nn.utils.rnn.pack_padded_sequence(xt, lib.tensor(lengths), batch_first=batch_first,
                                                       enforce_sorted=enforce_sorted)
        out, final = module(packed, None if hx is None else hx if kind == "LSTM" else hx[0])
        finals = list(final) if kind == "LSTM" else [final]
        padded = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first, total_length=6)[0]
        loss = (padded * padded).sum() + sum((i + 0.5) * (f * f).sum() for i, f in enumerate(finals))
        loss.backward()
        arrays = [out.data, padded] + finals + [xt.grad] + ([] if hx is None else [h.grad for h in hx])
        arrays += [p.grad for p in module.parameters()]
        results.append([a.detach().numpy() for a in arrays])
        if out.sorted_indices is not None:
            results[-1] += [out.sorted_indices.numpy(), out.unsorted_indices.numpy()]
    assert len(results[0]) == len(results[1])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
