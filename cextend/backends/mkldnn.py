"""torch.backends.mkldnn: oneDNN, which cextend does not use (its kernels are its own)."""
enabled = True


def is_available():
    return False
