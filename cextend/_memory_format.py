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


def empty_as(like, dtype, fmt=None):
    """An uninitialised array shaped like the array `like`, laid out in
    memory format `fmt` (None: preserve_format, torch's default)."""
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
