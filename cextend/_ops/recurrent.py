"""Recurrent cells as ops: a time step's pointwise math on the C kernels.

`_thnn_fused_lstm_cell` and `_thnn_fused_gru_cell` are torch's fused ops
(torch runs them on CUDA only): given a step's input gates
(x W_ih^T + b_ih) and hidden gates (h W_hh^T + b_hh), one C call
(src/rnn.c) computes the new state and a workspace of the activated gates,
and one C call its backward.  Under create_graph the backward is instead
the same derivative written in Tensor ops (torch's
_thnn_differentiable_*_cell_backward), so second derivatives exist.

The cells built on them, `lstm_cell`, `gru_cell`, `rnn_tanh_cell` and
`rnn_relu_cell` (torch.lstm_cell, ...), are a step of nn.LSTMCell and
kin: two GEMMs on the linear kernels, then the fused op.
"""
import numpy as np

from cextend import _backend, _dtype
from cextend._ops._kernels import Kernels
from cextend._ops._operands import require_tensor
from cextend._ops.joining import cat
from cextend._ops.linalg import linear
from cextend._ops.registry import Sample, register
from cextend.autograd import record as rec
from cextend.autograd.grad_mode import _state as _grad_state
from cextend.autograd.graph import FREED_MESSAGE
from cextend.ops import _checks
from cextend._errors import ArgumentError
from cextend._promotion import check_inplace_cast
from cextend.tensor import _wrap

# The CPU kernels are _backend's lstm_cell_forward, ..., gru_cell_backward.
LSTM_CELL = Kernels("_thnn_fused_lstm_cell", cpu=_backend)
GRU_CELL = Kernels("_thnn_fused_gru_cell", cpu=_backend)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_NDARRAY = np.ndarray


def _arrays(op, **tensors):
    """The operands' arrays, after checking they are Tensors of one float dtype."""
    try:                            # the common case, checked without building messages
        arrays = [None if t is None else t._data for t in tensors.values()]
        dtype = arrays[0].dtype
        if dtype in _FLOATS and all(a is None or (type(a) is _NDARRAY and a.dtype is dtype) for a in arrays):
            return arrays
    except AttributeError:
        pass
    arrays = {}
    for name, t in tensors.items():
        if t is not None:
            require_tensor(t, op, name)
        arrays[name] = None if t is None else t._data
    try:
        _checks.float_dtype(**arrays)
    except TypeError as error:
        raise type(error)("%s: %s" % (op, error)) from None
    return list(arrays.values())


def _check_gates(op, chunks, ig, hg, prev, prev_name, ib, hb):
    """torch's checkSizes for the fused ops: 2-D gates of one shape, chunks
    gates per hidden unit, a (batch, hidden) state and gate-sized biases."""
    if ig.ndim != 2:
        raise ArgumentError("%s: expected 2-D input_gates (batch, %d * hidden), got shape %s"
                            % (op, chunks, list(ig.shape)))
    if hg.shape != ig.shape:
        raise ArgumentError("%s: expected hidden_gates of input_gates' shape %s, got %s"
                            % (op, list(ig.shape), list(hg.shape)))
    batch, width = ig.shape
    if width % chunks:
        raise ArgumentError("%s: the gates' size %d is not %d * hidden" % (op, width, chunks))
    if prev.shape != (batch, width // chunks):
        raise ArgumentError("%s: expected %s of shape %s (batch, hidden), got %s"
                            % (op, prev_name, [batch, width // chunks], list(prev.shape)))
    for name, b in (("input_bias", ib), ("hidden_bias", hb)):
        if b is not None and b.shape != (width,):
            raise ArgumentError("%s: expected %s of shape %s, got %s" % (op, name, [width], list(b.shape)))


def _bias_sum(grad, wanted):
    return grad.sum(0) if wanted else None


# -- what the nodes keep ----------------------------------------------------------------
#
# The C backward reads the forward's workspace (private to the node: the
# public ops hand out a copy) and, for LSTM, cx, which torch's cell saves
# too (its f * cx); cy it recomputes from them, so an in-place change to
# the returned cy or hy leaves the backward alone, as torch's CPU cell does.
# Only the Tensor-op backward that create_graph runs reads the inputs
# themselves: they are kept as saved tensors that only that path unpacks
# (and so checks against in-place changes).

class _FusedCellNode(rec.BuiltinNode):
    workspace = None
    formula_inputs = ()

    def _release(self):
        super()._release()
        self.workspace = self.cy = None
        self.formula_inputs = ()

    def _private(self):
        if self.workspace is None:
            raise RuntimeError(FREED_MESSAGE)
        return self.workspace

    def _formula_inputs(self):
        return [None if s is None else s.unpack(self) for s in self.formula_inputs]


def _keep(node, inputs, workspace):
    node.workspace = workspace
    node.formula_inputs = tuple(None if t is None else rec.save(t) for t in inputs)


# -- LSTM -------------------------------------------------------------------------------

def fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None, workspace=True):
    """(hy, cy, workspace): one LSTM step after its GEMMs (see the module
    docstring); workspace=False: not returned (None)."""
    op = "_thnn_fused_lstm_cell"
    kernels = LSTM_CELL.on(input_gates=input_gates, hidden_gates=hidden_gates, cx=cx, input_bias=input_bias,
                           hidden_bias=hidden_bias)
    ig, hg, c, ib, hb = _arrays(op, input_gates=input_gates, hidden_gates=hidden_gates, cx=cx,
                                input_bias=input_bias, hidden_bias=hidden_bias)
    _check_gates(op, 4, ig, hg, c, "cx", ib, hb)
    recording = rec.needs_grad(input_gates, hidden_gates, cx, input_bias, hidden_bias)
    hy, cy, ws = kernels.lstm_cell_forward(ig, hg, c, ib, hb, workspace=workspace or recording)
    hy, cy = _wrap(hy), _wrap(cy)
    out_ws = None if not workspace else _wrap(ws.copy() if recording else ws)
    if recording:
        inputs = (input_gates, hidden_gates, cx, input_bias, hidden_bias)
        node = rec.record(ThnnFusedLstmCellBackward0, inputs, (hy, cy))
        gates_wanted = node.needs(0) or node.needs(1) or node.needs(3) or node.needs(4)
        # torch's f * cx saves cx when the gates want gradients; otherwise a private cy
        node._saved = (rec.save(cx),) if gates_wanted else (None,)
        node.cy = None if gates_wanted else cy._data.copy()
        _keep(node, inputs, ws)
    return hy, cy, out_ws


def _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """torch._thnn_fused_lstm_cell: (hy, cy, workspace) from a step's input
    and hidden gates (batch, 4 * hidden; order i, f, g, o) and cx."""
    return fused_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias)


class ThnnFusedLstmCellBackward0(_FusedCellNode):
    multi_output = True
    cy = None

    def backward(self, grads, cx):
        grad_hy, grad_cy = grads
        need = [self.needs(i) for i in range(5)]
        ws = self._private()
        if _grad_state.enabled:     # create_graph: the derivative in Tensor ops
            ig, hg, cx, ib, hb = self._formula_inputs()
            grad_gates, grad_cx = _lstm_backward_formulas(grad_hy, grad_cy, ig, hg, cx, ib, hb)
        else:
            gates, cell = LSTM_CELL.on(grad_hy=grad_hy, grad_cy=grad_cy).lstm_cell_backward(
                None if grad_hy is None else grad_hy._data, None if grad_cy is None else grad_cy._data,
                self.formula_inputs[2].tensor._data if cx is None else cx._data, self.cy, ws,
                gates=need[0] or need[1] or need[3] or need[4], cell=need[2])
            grad_gates = None if gates is None else _wrap(gates)
            grad_cx = None if cell is None else _wrap(cell)
        return (grad_gates if need[0] else None, grad_gates if need[1] else None, grad_cx if need[2] else None,
                _bias_sum(grad_gates, need[3]), _bias_sum(grad_gates, need[4]))


def _gates_sum(ig, hg, ib, hb):
    gates = ig + hg
    if ib is not None:
        gates = gates + ib
    if hb is not None:
        gates = gates + hb
    return gates


def _lstm_backward_formulas(grad_hy, grad_cy, ig, hg, cx, ib, hb):
    """(grad_gates, grad_cx) of the fused LSTM step in Tensor ops, from its
    inputs (differentiable again); the C backward's arithmetic."""
    i, f, g, o = _gates_sum(ig, hg, ib, hb).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    dcy = grad_cy
    if grad_hy is not None:
        t = (f * cx + i * g).tanh()
        from_h = (grad_hy * o) * (1 - t * t)
        dcy = from_h if dcy is None else dcy + from_h
        grad_o = ((grad_hy * t) * (1 - o)) * o
    else:
        grad_o = o * 0
    grad_gates = cat([((dcy * g) * (1 - i)) * i, ((dcy * cx) * (1 - f)) * f, (dcy * i) * (1 - g * g), grad_o], 1)
    return grad_gates, dcy * f


# -- GRU --------------------------------------------------------------------------------

def fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None, workspace=True):
    """(hy, workspace): one GRU step after its GEMMs; workspace=False: not
    returned (None)."""
    op = "_thnn_fused_gru_cell"
    kernels = GRU_CELL.on(input_gates=input_gates, hidden_gates=hidden_gates, hx=hx, input_bias=input_bias,
                          hidden_bias=hidden_bias)
    ig, hg, h, ib, hb = _arrays(op, input_gates=input_gates, hidden_gates=hidden_gates, hx=hx,
                                input_bias=input_bias, hidden_bias=hidden_bias)
    _check_gates(op, 3, ig, hg, h, "hx", ib, hb)
    recording = rec.needs_grad(input_gates, hidden_gates, hx, input_bias, hidden_bias)
    hy, ws = kernels.gru_cell_forward(ig, hg, h, ib, hb, workspace=workspace or recording)
    hy = _wrap(hy)
    out_ws = None if not workspace else _wrap(ws.copy() if recording else ws)
    if recording:
        inputs = (input_gates, hidden_gates, hx, input_bias, hidden_bias)
        node = rec.record(ThnnFusedGruCellBackward0, inputs, hy)
        _keep(node, inputs, ws)
    return hy, out_ws


def _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """torch._thnn_fused_gru_cell: (hy, workspace) from a step's input and
    hidden gates (batch, 3 * hidden; order r, z, n) and hx."""
    return fused_gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias)


class ThnnFusedGruCellBackward0(_FusedCellNode):
    def backward(self, grad):
        need = [self.needs(i) for i in range(5)]
        ws = self._private()
        if _grad_state.enabled:     # create_graph: the derivative in Tensor ops
            grad_ig, grad_hg, grad_hx = _gru_backward_formulas(grad, *self._formula_inputs())
        else:
            arrays = GRU_CELL.on(grad=grad).gru_cell_backward(
                grad._data, ws, input_gates=need[0] or need[3], hidden_gates=need[1] or need[4], hx=need[2])
            grad_ig, grad_hg, grad_hx = (None if a is None else _wrap(a) for a in arrays)
        return (grad_ig if need[0] else None, grad_hg if need[1] else None, grad_hx if need[2] else None,
                _bias_sum(grad_ig, need[3]), _bias_sum(grad_hg, need[4]))


def _gru_backward_formulas(grad, ig, hg, hx, ib, hb):
    """(grad_input_gates, grad_hidden_gates, grad_hx) of the fused GRU step
    in Tensor ops, from its inputs (differentiable again)."""
    ir, iz, i_n = (ig if ib is None else ig + ib).chunk(3, 1)
    hr, hz, h_n = (hg if hb is None else hg + hb).chunk(3, 1)
    r, z = (hr + ir).sigmoid(), (hz + iz).sigmoid()
    n = (i_n + h_n * r).tanh()
    gz = grad * z
    dpn = (grad - gz) * (1 - n * n)
    dpr = ((dpn * h_n) * (1 - r)) * r
    dpz = ((grad * (hx - n)) * (1 - z)) * z
    return cat([dpr, dpz, dpn], 1), cat([dpr, dpz, dpn * r], 1), gz


# -- the cells: torch.lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell ---------------------

def _check_cell(op, input, hx, w_ih, w_hh, b_ih, b_hh, chunks):
    """torch's checks of a cell's operands (its words), then those of the weights' shapes."""
    require_tensor(input, op)
    for i, h in enumerate(hx):
        require_tensor(h, op, "hx")
    require_tensor(w_ih, op, "w_ih")
    require_tensor(w_hh, op, "w_hh")
    if input.dim() != 2 or w_ih.dim() != 2 or w_hh.dim() != 2:
        raise ArgumentError("%s: expected 2-D input and weights, got input %s, w_ih %s and w_hh %s"
                            % (op, list(input.shape), list(w_ih.shape), list(w_hh.shape)))
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError("input has inconsistent input_size: got %d expected %d" % (input.shape[1], w_ih.shape[1]))
    hidden = w_hh.shape[1]
    for i, h in enumerate(hx):
        if h.dim() != 2:
            raise ArgumentError("%s: expected a 2-D hidden state hx[%d], got shape %s" % (op, i, list(h.shape)))
        if input.shape[0] != h.shape[0]:
            raise RuntimeError("Input batch size %d doesn't match hidden%d batch size %d"
                               % (input.shape[0], i, h.shape[0]))
        if h.shape[1] != hidden:
            raise RuntimeError("hidden%d has inconsistent hidden_size: got %d, expected %d" % (i, h.shape[1], hidden))
    for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.shape[0] != chunks * hidden:
            raise RuntimeError("%s first dim must be %d * hidden_size = %d, but got %d"
                               % (name, chunks, chunks * hidden, w.shape[0]))
    for name, b in (("b_ih", b_ih), ("b_hh", b_hh)):
        if b is not None:
            require_tensor(b, op, name)
            if b.shape != (chunks * hidden,):      # torch's words, from its addmm's broadcast
                raise RuntimeError("The expanded size of the tensor (%d) must match the existing size (%s) at "
                                   "non-singleton dimension 1.  Target sizes: [%d, %d].  Tensor sizes: %s"
                                   % (chunks * hidden, b.shape[-1] if b.dim() else 1, input.shape[0],
                                      chunks * hidden, list(b.shape)))


def _hidden_plus_input(hg, ig, activated=False):
    """torch's hg.add_(ig): in hg's dtype whatever ig's (an integer hg refuses
    a float sum); activated: then sigmoid_() or tanh_() in place, which an
    integer hg refuses."""
    total = hg + ig
    if total._data.dtype != hg._data.dtype:
        check_inplace_cast(total._data.dtype, hg._data.dtype)
        total = total.to(hg.dtype)
    if activated and total._data.dtype.kind != "f":
        check_inplace_cast(_dtype.DEFAULT_FLOAT.numpy, total._data.dtype)
    return total


def _column_major(t):
    """torch's GRU cell writes hy in hx's layout: a transposed hx gives a transposed hy."""
    rows, cols = t._data.shape
    return rows > 1 and cols > 1 and t._data.strides[0] < t._data.strides[1]


def _one_dtype(*tensors):
    return len({t._data.dtype for t in tensors}) == 1


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.lstm_cell: one step of nn.LSTMCell, (hy, cy); hx is (h, c)."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell("lstm_cell", input, hx, w_ih, w_hh, b_ih, b_hh, 4)
    ig, hg = linear(input, w_ih, b_ih), linear(hx[0], w_hh, b_hh)
    if _one_dtype(ig, hg, hx[1]):
        hy, cy, _ = fused_lstm_cell(ig, hg, hx[1], workspace=False)
        return hy, cy
    # operands of several dtypes: torch's CPU cell, in its dtypes (its in-place adds keep hg's)
    i, f, g, o = _hidden_plus_input(hg, ig, activated=True).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * hx[1] + i * g
    return o * cy.tanh(), cy


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.gru_cell: one step of nn.GRUCell."""
    _check_cell("gru_cell", input, (hx,), w_ih, w_hh, b_ih, b_hh, 3)
    ig, hg = linear(input, w_ih, b_ih), linear(hx, w_hh, b_hh)
    if _one_dtype(ig, hg, hx) and not _column_major(hx):
        return fused_gru_cell(ig, hg, hx, workspace=False)[0]
    ir, iz, i_n = ig.chunk(3, 1)
    hr, hz, h_n = hg.chunk(3, 1)
    r, z = _hidden_plus_input(hr, ir, True).sigmoid(), _hidden_plus_input(hz, iz, True).sigmoid()
    n = (i_n + h_n * r).tanh()
    return (hx - n) * z + n


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_tanh_cell: tanh(h W_hh^T + b_hh + x W_ih^T + b_ih)."""
    _check_cell("rnn_tanh_cell", input, (hx,), w_ih, w_hh, b_ih, b_hh, 1)
    return _hidden_plus_input(linear(hx, w_hh, b_hh), linear(input, w_ih, b_ih)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_relu_cell: relu(h W_hh^T + b_hh + x W_ih^T + b_ih)."""
    _check_cell("rnn_relu_cell", input, (hx,), w_ih, w_hh, b_ih, b_hh, 1)
    return _hidden_plus_input(linear(hx, w_hh, b_hh), linear(input, w_ih, b_ih)).relu()


# -- the table's entries ------------------------------------------------------------------

def _fused_samples(chunks):
    def samples(rng):
        batch, hidden = 3, 2
        gates = chunks * hidden
        yield Sample(rng.standard_normal((batch, gates)), rng.standard_normal((batch, gates)),
                     rng.standard_normal((batch, hidden)))
        yield Sample(rng.standard_normal((2, gates)), rng.standard_normal((2, gates)),
                     rng.standard_normal((2, hidden)), rng.standard_normal(gates), rng.standard_normal(gates),
                     note="with biases")
    return samples


def _fused_lstm_call(lib, input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """cextend's op; torch's runs on CUDA only, so on the CPU its LSTMCell's
    pointwise math stands in, refusing what the CUDA op refuses."""
    if lib.__name__ != "torch":
        return lib._thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias)
    operands = [t for t in (input_gates, hidden_gates, cx, input_bias, hidden_bias) if t is not None]
    if not all(t.dtype.is_floating_point for t in operands):
        raise NotImplementedError("\"_thnn_fused_lstm_cell_cuda\" not implemented for an integer dtype")
    if len({t.dtype for t in operands}) > 1:
        raise RuntimeError("expected scalar type of input_gates for every operand")
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias
    if hidden_bias is not None:
        gates = gates + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = (f * cx + i * g).contiguous()         # the CUDA op's outputs are contiguous
    return (o * cy.tanh()).contiguous(), cy, lib.cat([i, f, g, o], 1).detach()


def _fused_gru_call(lib, input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """cextend's op; torch's runs on CUDA only, so on the CPU its GRUCell's
    pointwise math stands in, refusing what the CUDA op refuses."""
    if lib.__name__ != "torch":
        return lib._thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias)
    operands = [t for t in (input_gates, hidden_gates, hx, input_bias, hidden_bias) if t is not None]
    if not all(t.dtype.is_floating_point for t in operands):
        raise NotImplementedError("\"_thnn_fused_gru_cell_cuda\" not implemented for an integer dtype")
    if len({t.dtype for t in operands}) > 1:
        raise RuntimeError("expected scalar type of input_gates for every operand")
    ir, iz, i_n = (input_gates if input_bias is None else input_gates + input_bias).chunk(3, 1)
    hr, hz, h_n = (hidden_gates if hidden_bias is None else hidden_gates + hidden_bias).chunk(3, 1)
    r, z = (hr + ir).sigmoid(), (hz + iz).sigmoid()
    n = (i_n + h_n * r).tanh()
    return ((hx - n) * z + n).contiguous(), lib.cat([r, z, n, hx, h_n], 1).detach()


def _cell_samples(chunks, pair):
    def samples(rng):
        batch, size, hidden = 3, 4, 2
        states = [rng.standard_normal((batch, hidden)) for _ in range(2 if pair else 1)]
        yield Sample(rng.standard_normal((batch, size)), *states, rng.standard_normal((chunks * hidden, size)),
                     rng.standard_normal((chunks * hidden, hidden)), rng.standard_normal(chunks * hidden),
                     rng.standard_normal(chunks * hidden))
        states = [rng.standard_normal((1, 3)) for _ in range(2 if pair else 1)]
        yield Sample(rng.standard_normal((1, 2)), *states, rng.standard_normal((chunks * 3, 2)),
                     rng.standard_normal((chunks * 3, 3)), note="no biases")
    return samples


def _lstm_cell_call(lib, input, h, c, w_ih, w_hh, b_ih=None, b_hh=None):
    return lib.lstm_cell(input, (h, c), w_ih, w_hh, b_ih, b_hh)


for _name, _op, _chunks, _call in (("_thnn_fused_lstm_cell", _thnn_fused_lstm_cell, 4, _fused_lstm_call),
                                   ("_thnn_fused_gru_cell", _thnn_fused_gru_cell, 3, _fused_gru_call)):
    register(_name, _op, method=False, samples=_fused_samples(_chunks), family="nn", call=_call,
             kernels=LSTM_CELL if _chunks == 4 else GRU_CELL)
register("lstm_cell", lstm_cell, method=False, samples=_cell_samples(4, True), family="nn", call=_lstm_cell_call,
         kernels=LSTM_CELL)
for _name, _op, _chunks in (("gru_cell", gru_cell, 3), ("rnn_tanh_cell", rnn_tanh_cell, 1),
                            ("rnn_relu_cell", rnn_relu_cell, 1)):
    register(_name, _op, method=False, samples=_cell_samples(_chunks, False), family="nn",
             kernels=GRU_CELL if _chunks == 3 else None)
