"""torch.backends.mps: Apple's Metal backend, which cextend does not have."""


def is_available():
    return False


def is_built():
    return False
