"""Functional forms of the layers (torch.nn.functional): linear, activations,
softmax, normalisation, dropout, embedding and the losses.

The ops themselves are entries of the op table (cextend/_ops/nn_*.py);
this module gives them torch.nn.functional's names and signatures.
"""
import warnings

from cextend import _torch_function as _tf
from cextend._ops.linalg import linear  # noqa: F401  (input (*, in) . weight^T + bias, on the C kernels)
from cextend._ops.nn_activation import (celu, celu_, elu, elu_, gelu, hardtanh, hardtanh_,  # noqa: F401
                                        leaky_relu, leaky_relu_, logsigmoid, mish, relu6, selu, selu_,
                                        silu, softplus)
from cextend._ops.nn_activation import log_softmax as _log_softmax
from cextend._ops.nn_activation import softmax as _softmax
from cextend._ops.nn_classification import cross_entropy, nll_loss  # noqa: F401
from cextend._ops.nn_layers import (dropout, dropout1d, dropout2d, dropout3d, embedding,  # noqa: F401
                                    layer_norm, normalize, one_hot)
from cextend._ops.nn_loss import (binary_cross_entropy, binary_cross_entropy_with_logits,  # noqa: F401
                                  huber_loss, kl_div, l1_loss, mse_loss, smooth_l1_loss)


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def relu_(input):
    return input.relu_()


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn("Implicit dimension choice for %s has been deprecated. Change the call to include "
                  "dim=X as an argument." % name, UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _dispatch(function, input, **kwargs):
    # The softmax family checks for overrides inline, not through a wrapper:
    # a wrapper's frame would move the warning that _stacklevel aims at the caller.
    return _tf.handle(function, _tf.overloaded_args((input,), None, tensors=True), (input,), kwargs,
                      "%s.%s" % (__name__, function.__name__), python_style=True)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim; dim=None picks one with torch's deprecation warning."""
    if type(input) is not _tf.Tensor and _tf.overloaded_args((input,), None):
        return _dispatch(softmax, input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along dim; dim=None picks one with torch's deprecation warning."""
    if type(input) is not _tf.Tensor and _tf.overloaded_args((input,), None):
        return _dispatch(log_softmax, input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim."""
    if type(input) is not _tf.Tensor and _tf.overloaded_args((input,), None):
        return _dispatch(softmin, input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return _softmax(-input, dim, dtype)


# Convolution, 2-D pooling and batch norm; 1-D pooling, adaptive max pooling,
# conv_transpose1d and the alpha dropouts, built on them.
from cextend.nn._functional_2d import (conv2d, conv1d, conv_transpose2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm)  # noqa: E402,F401
from cextend.nn.functional_1d import (adaptive_avg_pool1d, adaptive_max_pool1d, adaptive_max_pool2d,  # noqa: E402,F401
                                      alpha_dropout, avg_pool1d, conv_transpose1d, feature_alpha_dropout,
                                      max_pool1d)

# Attention (cextend/nn/_functional_attention.py): scaled_dot_product_attention, multi_head_attention_forward
# and the mask helpers torch's transformer layers call.
from cextend.nn._functional_attention import (_canonical_mask, _in_projection, _in_projection_packed,  # noqa: E402,F401
                                              _mha_shape_check, _none_or_dtype, multi_head_attention_forward,
                                              scaled_dot_product_attention)

# Group, instance and local response norm (cextend/_ops/nn_norms.py).
from cextend._ops.nn_norms import group_norm, instance_norm, local_response_norm  # noqa: E402,F401

# Spatial ops (cextend/_ops/spatial.py, cextend/_ops/spatial_resample.py): pad, interpolate and the upsample
# spellings, unfold/fold, grid_sample/affine_grid, pixel_shuffle/pixel_unshuffle, channel_shuffle.
from cextend._ops.spatial import (channel_shuffle, fold, pad, pixel_shuffle, pixel_unshuffle,  # noqa: E402,F401
                                  unfold)
from cextend._ops.spatial_resample import (affine_grid, grid_sample, interpolate, upsample,  # noqa: E402,F401
                                           upsample_bilinear, upsample_nearest)

# Distances and the triplet and CTC losses (cextend/_ops/distance.py, cextend/_ops/nn_ctc.py).
from cextend._ops.distance import (cosine_similarity, pairwise_distance, triplet_margin_loss,  # noqa: E402,F401
                                   triplet_margin_with_distance_loss)
from cextend._ops.nn_ctc import ctc_loss  # noqa: E402,F401

# Every public function here dispatches on __torch_function__ overrides, as
# torch.nn.functional's do; the softmax family checks inline (above).
_tf.wrap_namespace(globals(), __name__, python_style=True, skip=("softmax", "log_softmax", "softmin"))
