"""torch's memory formats (torch.contiguous_format, torch.channels_last, ...)
and allocation in them: clone(memory_format=...) and the *_like factories."""
import numpy as np


class memory_format:
    """One of torch's memory formats; compared by identity, printed as torch's."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

_CHANNELS_LAST_RANK = {channels_last: 4, channels_last_3d: 5}


def is_contiguous_in(array, fmt):
    """torch's is_contiguous(memory_format=fmt): channels_last checks the
    strides dim by dim in the order C, W, H, N (a size-1 dim's stride is
    free); contiguous_format and preserve_format mean C order."""
    if not isinstance(fmt, memory_format):
        raise TypeError("is_contiguous(): argument 'memory_format' must be torch.memory_format, not %s"
                        % type(fmt).__name__)
    rank = _CHANNELS_LAST_RANK.get(fmt)
    if rank is None:
        return array.flags.c_contiguous
    if array.ndim != rank:
        return False
    expected = array.itemsize
    for d in (1,) + tuple(range(rank - 1, 1, -1)) + (0,):
        if array.shape[d] != 1:
            if array.strides[d] != expected:
                return False
            expected *= array.shape[d]
    return True


def empty_as(like, dtype, fmt=None):
    """An uninitialised array shaped like the array `like`, laid out in
    memory format `fmt` (None: preserve_format, torch's default)."""
    # tensor.py imports this module, and the op layer imports tensor.py
    from cextend._ops._layout import empty_like_preserve
    if fmt is None or fmt is preserve_format:
        return empty_like_preserve(like, dtype)
    if fmt is contiguous_format:
        return np.empty(like.shape, dtype)
    rank = _CHANNELS_LAST_RANK.get(fmt)
    if rank is None:
        raise TypeError("memory_format must be a torch.memory_format (torch.contiguous_format, "
                        "torch.preserve_format, torch.channels_last or torch.channels_last_3d), got %r" % (fmt,))
    if like.ndim != rank:
        raise RuntimeError("required rank %d tensor to use %s format" % (rank, fmt._name))
    order = (0,) + tuple(range(2, rank)) + (1,)         # channels innermost
    return np.empty([like.shape[d] for d in order], dtype).transpose(np.argsort(order))


def suggests_channels_last(array):
    """torch's suggest_memory_format() == channels_last (channels_last_3d
    for 5-D) of a tensor with this array's shape and strides: channels
    innermost, then the spatial dims, then the batch (is_channels_last_strides_2d)."""
    if type(array) is not np.ndarray or array.ndim not in (4, 5):
        return False
    sizes = array.shape
    strides = [s // array.itemsize for s in array.strides]
    if strides[1] == 0:
        return False
    order = (1, 3, 2, 0) if array.ndim == 4 else (1, 4, 3, 2, 0)
    smallest = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < smallest:
            return False
        if d == 0 and smallest == strides[1]:
            return False
        smallest = strides[d] * (sizes[d] if sizes[d] > 1 else 1)
    return True


def like_input_format(result, batched_input):
    """result (a Tensor from a batched 4-D input) re-laid out channels last
    where the input is: torch's CPU pooling allocates its output in
    input.suggest_memory_format().  (An unbatched 3-D input never is.)"""
    if type(result._data) is np.ndarray and suggests_channels_last(batched_input._data):
        laid_out = empty_as(result._data, result._data.dtype, channels_last)
        laid_out[...] = result._data
        result._data = laid_out
    return result
