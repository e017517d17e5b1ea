"""torch.backends.mha: the fast-path switch of nn.MultiheadAttention (cextend has one path)."""
_fastpath_enabled = True


def get_fastpath_enabled():
    return _fastpath_enabled


def set_fastpath_enabled(value):
    global _fastpath_enabled
    _fastpath_enabled = bool(value)
