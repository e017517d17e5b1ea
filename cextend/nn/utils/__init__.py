"""nn.utils: gradient clipping (torch.nn.utils's clip_grad_norm_ / clip_grad_value_) and packed sequences (rnn)."""
from cextend.nn.utils.clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                                        get_total_norm)

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]
from cextend.nn.utils import rnn  # noqa: E402  (packed sequences: torch.nn.utils.rnn)

__all__ += ["rnn"]
