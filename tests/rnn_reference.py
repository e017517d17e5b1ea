"""numpy float64 references for the recurrent cells and layers
(tests/test_rnn*.py): torch's formulas, written out plainly.  A plain
module, not a test file."""
import numpy as np

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _plus(*terms):
    total = terms[0]
    for t in terms[1:]:
        if t is not None:
            total = total + t
    return total


def lstm_cell(ig, hg, cx, ib=None, hb=None):
    """(hy, cy, workspace) of torch's _thnn_fused_lstm_cell."""
    i, f, g, o = np.split(_plus(ig, hg, ib, hb), 4, axis=1)
    i, f, g, o = sigmoid(i), sigmoid(f), np.tanh(g), sigmoid(o)
    cy = f * cx + i * g
    return o * np.tanh(cy), cy, np.concatenate([i, f, g, o], 1)


def lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace):
    """(grad_gates, grad_cx); grad_hy or grad_cy None: that path is absent."""
    i, f, g, o = np.split(workspace, 4, axis=1)
    t = np.tanh(cy)
    dcy = np.zeros_like(cy) if grad_cy is None else grad_cy.copy()
    do = np.zeros_like(cy)
    if grad_hy is not None:
        dcy = dcy + grad_hy * o * (1 - t * t)
        do = grad_hy * t
    grads = [dcy * g * i * (1 - i), dcy * cx * f * (1 - f), dcy * i * (1 - g * g), do * o * (1 - o)]
    return np.concatenate(grads, 1), dcy * f


def gru_cell(ig, hg, hx, ib=None, hb=None):
    """(hy, workspace) of torch's _thnn_fused_gru_cell."""
    ir, iz, i_n = np.split(_plus(ig, ib), 3, axis=1)
    hr, hz, h_n = np.split(_plus(hg, hb), 3, axis=1)
    r, z = sigmoid(ir + hr), sigmoid(iz + hz)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * hx, np.concatenate([r, z, n, hx, h_n], 1)


def gru_cell_backward(grad_hy, workspace):
    """(grad_input_gates, grad_hidden_gates, grad_hx) of the pointwise GRU step."""
    r, z, n, hx, h_n = np.split(workspace, 5, axis=1)
    dn = grad_hy * (1 - z) * (1 - n * n)
    dr = dn * h_n * r * (1 - r)
    dz = grad_hy * (hx - n) * z * (1 - z)
    return np.concatenate([dr, dz, dn], 1), np.concatenate([dr, dz, dn * r], 1), grad_hy * z


def _step(mode, x_t, state, w_ih, w_hh, b_ih, b_hh, w_hr):
    ig = x_t @ w_ih.T + (0 if b_ih is None else b_ih)
    if mode == "LSTM":
        h, c = state
        hy, cy, _ = lstm_cell(ig, h @ w_hh.T + (0 if b_hh is None else b_hh), c)
        return (hy if w_hr is None else hy @ w_hr.T), cy
    hg = state @ w_hh.T + (0 if b_hh is None else b_hh)
    if mode == "GRU":
        return gru_cell(ig, hg, state)[0]
    pre = ig + hg
    return np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0)


def layers(mode, weights, x, hx, num_layers, bidirectional):
    """A multi-layer (bidirectional) RNN/LSTM/GRU without dropout, time-major:
    x (T, B, in); hx (layers * directions, B, H) or, for LSTM, (h0, c0);
    weights by torch's names.  Returns (output, h_n) or (output, (h_n, c_n))."""
    directions = 2 if bidirectional else 1
    layer_input = x
    finals = []
    for layer in range(num_layers):
        outputs = []
        for d in range(directions):
            sfx = "_reverse" if d else ""

            def w(name, layer=layer, sfx=sfx):
                return weights.get("%s_l%d%s" % (name, layer, sfx))
            index = layer * directions + d
            state = (hx[0][index], hx[1][index]) if mode == "LSTM" else hx[index]
            steps = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
            out = [None] * x.shape[0]
            for t in steps:
                state = _step(mode, layer_input[t], state, w("weight_ih"), w("weight_hh"), w("bias_ih"),
                              w("bias_hh"), w("weight_hr"))
                out[t] = state[0] if mode == "LSTM" else state
            outputs.append(np.stack(out))
            finals.append(state)
        layer_input = np.concatenate(outputs, 2)
    if mode == "LSTM":
        return layer_input, (np.stack([s[0] for s in finals]), np.stack([s[1] for s in finals]))
    return layer_input, np.stack(finals)


def ulps(ours, exact, dtype):
    """|ours - exact| in units of the last place of exact rounded to dtype (exact in long double)."""
    spacing = np.spacing(np.abs(exact.astype(dtype))).astype(np.longdouble)
    return np.abs(ours.astype(np.longdouble) - exact) / spacing
