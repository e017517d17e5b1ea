"""torch.backends.cudnn: cextend has no cuDNN; the flags are kept and change nothing."""
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
