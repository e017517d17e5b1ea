"""Recurrent layers, as torch.nn's: RNN, LSTM, GRU and their cells.

A layer runs torch's CPU algorithm (aten/src/ATen/native/RNN.cpp): per
layer and direction, one GEMM projects the whole input (x W_ih^T + b_ih);
then each time step is a GEMM of the hidden state (h W_hh^T + b_hh) and
one fused C call for the pointwise math (cextend/_ops/recurrent.py,
src/rnn.c), so autograd records two nodes per step.  Layers stack, with
dropout between them in training; a bidirectional layer runs the reversed
sequence too and concatenates the two outputs.  A PackedSequence runs each
step on the sequences still going: as torch's, a finished sequence's
hidden state stays at its last step.

Parameters are named, shaped and initialised as torch's (weight_ih_l0,
weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse, weight_hr_l0 with
proj_size; uniform in +-1/sqrt(hidden_size)), so a torch state_dict loads.
The layers run on the CPU: on a CUDA tensor they raise, naming the layer
and the device.
"""
import math
import numbers
import warnings

from cextend import _factories
from cextend._ops.joining import cat, stack
from cextend._ops.linalg import linear
from cextend._ops.recurrent import fused_gru_cell, fused_lstm_cell, gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell
from cextend.nn import functional as F
from cextend.nn import init
from cextend.nn.module import Module
from cextend.nn.parameter import Parameter
from cextend.nn.utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


def _check_on_cpu(layer, **tensors):
    """The recurrent layers have no CUDA kernels: name the layer and the operand."""
    for name, t in tensors.items():
        if t is not None and getattr(t, "is_cuda", False):
            raise RuntimeError("%s has no CUDA kernels (cextend's recurrent layers run on the CPU): %s is on %s; "
                               "move the module and its inputs with .cpu()" % (layer, name, t.device))


# -- one step of each kind of cell, on a state (h, or (h, c) for LSTM) ------------------------

def _lstm_step(ig, state, w_hh, b_hh, w_hr):
    h, c = state
    hy, cy, _ = fused_lstm_cell(ig, linear(h, w_hh, b_hh), c, workspace=False)
    return (hy if w_hr is None else linear(hy, w_hr)), cy


def _gru_step(ig, h, w_hh, b_hh, w_hr):
    return fused_gru_cell(ig, linear(h, w_hh, b_hh), h, workspace=False)[0]


def _tanh_step(ig, h, w_hh, b_hh, w_hr):
    return (linear(h, w_hh, b_hh) + ig).tanh()


def _relu_step(ig, h, w_hh, b_hh, w_hr):
    return (linear(h, w_hh, b_hh) + ig).relu()


_STEPS = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN_TANH": _tanh_step, "RNN_RELU": _relu_step}


def _output_of(state):
    return state[0] if type(state) is tuple else state


def _narrow(state, start, end):
    if type(state) is tuple:
        return tuple(s.narrow(0, start, end - start) for s in state)
    return state.narrow(0, start, end - start)


def _concat(states):
    if type(states[0]) is tuple:
        return tuple(cat(list(parts), 0) for parts in zip(*states))
    return cat(list(states), 0)


def _run_direction(step, x, batch_sizes, params, state, reverse):
    """One layer in one direction: (output, final state).  x is (T, B, in)
    or, packed, (sum of batch sizes, in) with batch_sizes a list of ints."""
    w_ih, w_hh, b_ih, b_hh, w_hr = params
    steps = linear(x, w_ih, b_ih)
    if batch_sizes is None:
        steps = steps.unbind(0)
        outputs = [None] * len(steps)
        for t in (range(len(steps) - 1, -1, -1) if reverse else range(len(steps))):
            state = step(steps[t], state, w_hh, b_hh, w_hr)
            outputs[t] = _output_of(state)
        return stack(outputs, 0), state
    steps = steps.split(batch_sizes, 0)
    outputs = [None] * len(steps)
    if not reverse:
        # torch's PackedLayer: when sequences end, their states are set
        # aside as they are; the final state gathers them in batch order
        finished, last = [], batch_sizes[0]
        for t, size in enumerate(batch_sizes):
            if size < last:
                finished.append(_narrow(state, size, last))
                state = _narrow(state, 0, size)
            last = size
            state = step(steps[t], state, w_hh, b_hh, w_hr)
            outputs[t] = _output_of(state)
        finished.append(state)
        return cat(outputs, 0), _concat(finished[::-1])
    # ReversedPackedLayer: start with the sequences present at the last
    # step, adding each sequence's initial state where it begins
    initial, last = state, batch_sizes[-1]
    state = _narrow(initial, 0, last)
    for t in range(len(batch_sizes) - 1, -1, -1):
        size = batch_sizes[t]
        if size > last:
            state = _concat([state, _narrow(initial, last, size)])
        last = size
        state = step(steps[t], state, w_hh, b_hh, w_hr)
        outputs[t] = _output_of(state)
    return cat(outputs, 0), state


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters, their checks, and the
    layer stack (`mode` is 'LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU')."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          "expects num_layers greater than 1, but got dropout={} and num_layers={}"
                          .format(dropout, num_layers), stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError("bias should be of type bool, got: %s" % type(bias).__name__)
        if not isinstance(batch_first, bool):
            raise TypeError("batch_first should be of type bool, got: %s" % type(batch_first).__name__)
        if not isinstance(input_size, int):
            raise TypeError("input_size should be of type int, got: %s" % type(input_size).__name__)
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError("hidden_size should be of type int, got: %s" % type(hidden_size).__name__)
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                shapes = [(gate_size, layer_input_size), (gate_size, real_hidden_size)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes += [(proj_size, hidden_size)]
                    names += ["weight_hr_l{}{}"]
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(_factories.empty(*shape, dtype=dtype, device=device)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op, as torch's off cuDNN: the weights are used where they are."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # -- torch's argument checks, in its words ------------------------------------------
    def check_input(self, input, batch_sizes):
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError("RNN input dtype ({}) does not match weight dtype ({}). Convert input: input.to({}), "
                             "or convert model: model.to({})".format(input.dtype, weight_dtype, weight_dtype,
                                                                     input.dtype))
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError("input must have {} dimensions, got {}".format(expected_input_dim, input.dim()))
        if self.input_size != input.size(-1):
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected {}, got {}"
                               .format(self.input_size, input.size(-1)))

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # -- the layer stack (torch's _VF.lstm, _VF.gru, _VF.rnn_tanh, _VF.rnn_relu) -----------
    def _layer_params(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        names = ("weight_ih_l%d%s", "weight_hh_l%d%s", "bias_ih_l%d%s", "bias_hh_l%d%s", "weight_hr_l%d%s")
        return tuple(getattr(self, n % (layer, suffix), None) for n in names)

    def _run(self, input, batch_sizes, states):
        """input (T, B, in) or packed data; states: the initial state of each
        layer and direction.  (output, final states in the same order)."""
        if batch_sizes is None and input.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        num_directions = 2 if self.bidirectional else 1
        step = _STEPS[self.mode]
        sizes = None if batch_sizes is None else [int(b) for b in batch_sizes.tolist()]
        finals = []
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                index = layer * num_directions + direction
                output, final = _run_direction(step, layer_input, sizes, self._layer_params(layer, direction),
                                               states[index], direction == 1)
                outputs.append(output)
                finals.append(final)
            layer_input = outputs[0] if num_directions == 1 else cat(outputs, outputs[0].dim() - 1)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, finals

    def _check_device(self, input, hx):
        """Before anything runs: the layers have no CUDA kernels."""
        data = input.data if isinstance(input, PackedSequence) else input
        states = hx if isinstance(hx, (tuple, list)) else (hx,)
        _check_on_cpu(self._get_name(), input=data, hx=next((h for h in states if getattr(h, "is_cuda", False)), None),
                      **dict(zip(self._flat_weights_names, self._flat_weights)))

    def _zeros(self, input, batch, size):
        num_directions = 2 if self.bidirectional else 1
        return _factories.zeros(self.num_layers * num_directions, batch, size, dtype=input.dtype,
                                device=input.device)

    def _forward_single_state(self, input, hx):
        """RNN and GRU's forward: hx is one tensor (layers * directions, B, H)."""
        self._check_device(input, hx)
        orig_input = input
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = self._zeros(input, int(batch_sizes[0]), self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = sorted_indices = unsorted_indices = None
            if input.dim() not in (2, 3):
                raise ValueError("{}: Expected input to be 2D or 3D, got {}D {}".format(
                    name, input.dim(), "tensor instead" if name == "RNN" else "instead"))
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError("For unbatched 2-D input, hx should also be 2-D but got {}-D tensor"
                                           .format(hx.dim()))
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError("For batched 3-D input, hx should also be 3-D but got {}-D tensor"
                                   .format(hx.dim()))
            if hx is None:
                hx = self._zeros(input, input.size(0) if self.batch_first else input.size(1), self.hidden_size)
        self.check_forward_args(input, hx, batch_sizes)
        x = input.transpose(0, 1) if self.batch_first and batch_sizes is None else input
        output, finals = self._run(x, batch_sizes, hx.unbind(0))
        hidden = stack(finals, 0)
        if isinstance(orig_input, PackedSequence):
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError("Unknown nonlinearity '{}'. Select from 'tanh' or 'relu'.".format(self.nonlinearity))
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit layers (gate order r, z, n, as torch's)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx)


class LSTM(RNNBase):
    """Long short-term memory layers (gate order i, f, g, o, as torch's);
    hx and the returned state are (h, c).  proj_size > 0 projects each
    step's h to proj_size features (weight_hr_l*)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        self._check_device(input, hx)
        orig_input = input
        batch_sizes = None
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                batch = int(batch_sizes[0])
                hx = (self._zeros(input, batch, real_hidden_size), self._zeros(input, batch, self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            if input.dim() not in (2, 3):
                raise ValueError("LSTM: Expected input to be 2D or 3D, got {}D instead".format(input.dim()))
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            sorted_indices = unsorted_indices = None
            if hx is None:
                batch = input.size(0) if self.batch_first else input.size(1)
                hx = (self._zeros(input, batch, real_hidden_size), self._zeros(input, batch, self.hidden_size))
            elif is_batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got ({}-D, {}-D) "
                                       "tensors".format(hx[0].dim(), hx[1].dim()))
            else:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got ({}-D, "
                                       "{}-D) tensors".format(hx[0].dim(), hx[1].dim()))
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx, batch_sizes)
        x = input.transpose(0, 1) if self.batch_first and batch_sizes is None else input
        output, finals = self._run(x, batch_sizes, list(zip(hx[0].unbind(0), hx[1].unbind(0))))
        hidden = (stack([h for h, _ in finals], 0), stack([c for _, c in finals], 0))
        if isinstance(orig_input, PackedSequence):
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return output, hidden


# -- the cells -------------------------------------------------------------------------

class RNNCellBase(Module):
    """What RNNCell, LSTMCell and GRUCell share: weight_ih (chunks * hidden,
    input), weight_hh (chunks * hidden, hidden), bias_ih and bias_hh."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_factories.empty(num_chunks * hidden_size, input_size, dtype=dtype,
                                                    device=device))
        self.weight_hh = Parameter(_factories.empty(num_chunks * hidden_size, hidden_size, dtype=dtype,
                                                    device=device))
        if bias:
            self.bias_ih = Parameter(_factories.empty(num_chunks * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(_factories.empty(num_chunks * hidden_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check_device(self, input, *hx):
        _check_on_cpu(self._get_name(), input=input, hx=next((h for h in hx if getattr(h, "is_cuda", False)), None),
                      weight_ih=self.weight_ih, weight_hh=self.weight_hh)


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError("RNNCell: Expected input to be 1D or 2D, got {}D instead".format(input.dim()))
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError("RNNCell: Expected hidden to be 1D or 2D, got {}D instead".format(hx.dim()))
        self._check_device(input, hx)
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _factories.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx
        if self.nonlinearity == "tanh":
            ret = rnn_tanh_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == "relu":
            ret = rnn_relu_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            raise RuntimeError("Unknown nonlinearity: {}".format(self.nonlinearity))
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from x and (h, c)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError("LSTMCell: Expected input to be 1D or 2D, got {}D instead".format(input.dim()))
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError("LSTMCell: Expected hx[{}] to be 1D or 2D, got {}D instead"
                                     .format(idx, value.dim()))
        self._check_device(input, *(hx or ()))
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = _factories.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (zeros, zeros)
        else:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if not is_batched else hx
        ret = lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not is_batched:
            ret = (ret[0].squeeze(0), ret[1].squeeze(0))
        return ret


class GRUCell(RNNCellBase):
    """One GRU step: h' from x and h."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError("GRUCell: Expected input to be 1D or 2D, got {}D instead".format(input.dim()))
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError("GRUCell: Expected hidden to be 1D or 2D, got {}D instead".format(hx.dim()))
        self._check_device(input, hx)
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _factories.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx
        ret = gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)

