"""Packed sequences, as torch.nn.utils.rnn: a batch of sequences of
different lengths without padding, for the recurrent layers.

A PackedSequence holds the sequences' steps time-major in one tensor:
`data` (sum of lengths, *) is step 0 of every sequence, then step 1 of the
sequences that have one, ...; `batch_sizes[t]` says how many sequences
have a step t.  The sequences are sorted by decreasing length; when the
caller's order was not, `sorted_indices` says which sequence is where and
`unsorted_indices` undoes it.

Packing and padding are gathers (index_select) over the steps, so
gradients flow through them; torch names their nodes
PackPaddedSequenceBackward0 and IndexSelectBackward0 where cextend records
IndexSelectBackward0 for both.  Where torch reads past the padded tensor
(a length longer than it, which gives garbage), cextend raises.
"""
import collections
from collections.abc import Iterable

import numpy as np

from cextend import _factories
from cextend._dtype import float16, float32, float64, int64
from cextend._ops.joining import cat, stack
from cextend._promotion import _torch_name
from cextend.tensor import Tensor, _wrap

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(collections.namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices",
                                                                 "unsorted_indices"])):
    """(data, batch_sizes, sorted_indices, unsorted_indices); made by
    pack_padded_sequence and pack_sequence, not by hand."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if getattr(batch_sizes, "is_cuda", False):
                raise ValueError(
                    "batch_sizes should always be on CPU. Instances of PackedSequence should never be created "
                    "manually. They should be instantiated by functions like pack_sequence and "
                    "pack_padded_sequences in nn.utils.rnn. "
                    "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not (isinstance(data, (list, tuple)) and len(data) == 2):
            raise AssertionError("Expected data to be a list or tuple of length 2")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """data.to(...); the indices follow data's device, batch_sizes stays on the CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        device = data.device

        def call_to(t):
            return t.to(device)
        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, call_to),
                          _bind(self.unsorted_indices, call_to))

    def cuda(self, *args, **kwargs):
        if not args and "device" not in kwargs:
            kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to(*args, device="cpu", **kwargs)

    def double(self):
        return self.to(dtype=float64)

    def float(self):
        return self.to(dtype=float32)

    def half(self):
        return self.to(dtype=float16)

    def long(self):
        return self.to(dtype=int64)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    """The permutation that undoes `permutation` (None for None)."""
    if permutation is None:
        return None
    order = np.asarray(permutation.numpy(), dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size, dtype=np.int64)
    return _wrap(inverse).to(permutation.device)


def _lengths(lengths):
    """Sequence lengths as an int64 numpy vector (torch's rules for a list or a tensor)."""
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1 or lengths.is_cuda:
            raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got %dD %s %s tensor"
                               % (lengths.dim(), "cuda" if lengths.is_cuda else "cpu",
                                  _torch_name(np.dtype(lengths.dtype.name))))
        return np.asarray(lengths.numpy()).astype(np.int64)
    return np.asarray(lengths).astype(np.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """A PackedSequence from padded sequences: input (T, B, *) ((B, T, *) when
    batch_first) holding sequence b's steps in its first lengths[b] rows.
    enforce_sorted: lengths must decrease; else they are sorted here and
    the PackedSequence remembers the order."""
    length_array = _lengths(lengths)
    sorted_indices = None
    if not enforce_sorted:
        values, sorted_indices = _wrap(length_array).sort(descending=True)
        length_array = np.asarray(values.numpy())
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, length_array, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _pack_padded(input, lengths, batch_first):
    """torch's _pack_padded_sequence: (data, batch_sizes) of sorted sequences."""
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    if lengths.size != batch:
        raise RuntimeError("Expected `len(lengths)` to be equal to batch_size, but got %d (batch_size=%d)"
                           % (lengths.size, batch))
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if (np.diff(lengths) > 0).any():
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    if lengths[0] > steps:
        raise RuntimeError("pack_padded_sequence: a length of %d is longer than the padded sequences (%d steps)"
                           % (lengths[0], steps))
    batch_sizes = (lengths[None, :] > np.arange(lengths[0])[:, None]).sum(1).astype(np.int64)
    t_index = np.repeat(np.arange(batch_sizes.size), batch_sizes)
    b_index = np.concatenate([np.arange(n) for n in batch_sizes])
    rows = b_index * steps + t_index if batch_first else t_index * batch + b_index
    flat = input.reshape((steps * batch,) + tuple(input.shape[2:]))
    return flat.index_select(0, _wrap(rows.astype(np.int64))), _wrap(batch_sizes)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded, lengths): the inverse of pack_padded_sequence, padded with
    padding_value to total_length steps (default: the longest sequence),
    in the caller's original order."""
    sizes = np.asarray(sequence.batch_sizes.numpy()).astype(np.int64)
    max_seq_length = sizes.size
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             "but got total_length=%d and max sequence length being %d"
                             % (total_length, max_seq_length))
        max_seq_length = total_length
    data = sequence.data
    batch = int(sizes[0]) if sizes.size else 0
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    pad_row = offsets[-1]                 # the padding row appended to data
    t = np.arange(max_seq_length)[:, None]
    b = np.arange(batch)[None, :]
    live = b < np.concatenate([sizes, np.zeros(max_seq_length - sizes.size, np.int64)])[:, None]
    rows = np.where(live, offsets[np.minimum(t, sizes.size)] + b, pad_row)
    if batch_first:
        rows = rows.T
    padding = _factories.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    gathered = cat([data, padding], 0).index_select(0, _wrap(rows.reshape(-1).astype(np.int64)).to(data.device))
    padded = gathered.reshape(rows.shape + tuple(data.shape[1:]))
    lengths = live.sum(0).astype(np.int64)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        order = np.asarray(unsorted.cpu().numpy())
        return padded.index_select(0 if batch_first else 1, unsorted), _wrap(lengths[order])
    return padded, _wrap(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Sequences (L_i, *) stacked into (max L, B, *) ((B, max L, *) when
    batch_first), each padded with padding_value on padding_side."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    elif not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of type: %s"
                           % type(sequences))
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got %s." % padding_side)
    first = sequences[0]
    if first.dim() == 0:
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    trailing = tuple(first.shape[1:])
    longest = max(s.shape[0] if s.dim() else 0 for s in sequences)
    padded = []
    for s in sequences:
        s = s.to(first.dtype)
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError("pad_sequence: sequence of shape %s does not match the first's trailing "
                               "dimensions %s" % (list(s.shape), list(trailing)))
        missing = longest - s.shape[0]
        if missing:
            block = _factories.full((missing,) + trailing, padding_value, dtype=first.dtype, device=first.device)
            s = cat([s, block] if padding_side == "right" else [block, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences pad_sequence padded.  As torch's, it transposes
    padded_sequences in place when batch_first is False."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    max_length = padded_sequences.shape[1]
    idx = _factories.arange(max_length, device=lengths.device)
    return [seq[idx < length] for seq, length in zip(padded_sequences, lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """pack_padded_sequence of pad_sequence(sequences)."""
    lengths = [v.size(0) for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in the caller's order."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
