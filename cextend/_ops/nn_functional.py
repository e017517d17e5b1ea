"""The nn family of the op table: what torch.nn.functional holds.

Activations (nn_activation), losses (nn_loss, nn_classification) and layers (nn_layers:
layer_norm, dropout, embedding, one_hot, normalize) register here; the
entries with method=False and module=False exist only in
torch.nn.functional and are exposed from cextend.nn.functional.
"""
from cextend._ops import nn_activation, nn_classification, nn_layers, nn_loss  # noqa: F401
