"""How a Tensor prints: torch 2.13's layout, character for character.

Users compare the printed output of tutorials line by line, so repr follows
torch's rules exactly (only `torch.` reads `cextend.` in dtype names):

- One element format for the whole tensor.  Floats choose among three
  modes from their nonzero finite values: "integer" (every value whole:
  `1.`, `-3.`), fixed (`0.1235`, `precision` digits) and scientific
  (`1.2346e+08`), the last when the largest / smallest magnitude exceeds
  1000, the largest exceeds 1e8 or the smallest is under 1e-4 (or as
  `sci_mode` forces).  The field width is the widest of those nonzero
  finite values only, so `inf`, `nan` and zeros never widen it.
- Tensors with more than `threshold` elements are summarised: each axis
  longer than 2 * `edgeitems` shows its first and last `edgeitems`
  entries around `...`.  Only the shown elements are gathered and
  formatted, and they alone decide the element format.
- Rows wrap at `linewidth`, continuation lines indented under the first
  element; nested brackets are separated by one blank line per level.
- Suffixes (device, size, dtype, grad_fn / requires_grad) follow the data,
  each moved to its own line when it would overrun `linewidth`.  A dtype
  suffix is measured as torch spells it (`torch.float64`), so lines break
  where torch's do even though `cextend.` is two characters longer.

`set_printoptions` / `get_printoptions` / `printoptions` are torch's.
"""
import contextlib
import math

import numpy as np

from cextend import _bfloat16, _dtype
from cextend._device import DeviceArray
from cextend.tensor import Tensor


class _Options:
    __slots__ = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")

    def __init__(self):
        self.precision, self.threshold, self.edgeitems, self.linewidth = _PROFILES["default"]
        self.sci_mode = None


# profile -> (precision, threshold, edgeitems, linewidth)
_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}
_OPTIONS = _Options()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print, as torch.set_printoptions.

    profile ("default", "short" or "full") resets the four numeric options
    first; the others then override it.  As in torch, sci_mode is always
    assigned: leaving it out returns to the automatic choice.
    """
    if profile in _PROFILES:
        (_OPTIONS.precision, _OPTIONS.threshold,
         _OPTIONS.edgeitems, _OPTIONS.linewidth) = _PROFILES[profile]
    if precision is not None:
        _OPTIONS.precision = precision
    if threshold is not None:
        _OPTIONS.threshold = threshold
    if edgeitems is not None:
        _OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTIONS.linewidth = linewidth
    _OPTIONS.sci_mode = sci_mode


def get_printoptions():
    """The current options, as keywords that set_printoptions accepts."""
    return {name: getattr(_OPTIONS, name) for name in _Options.__slots__}


@contextlib.contextmanager
def printoptions(**kwargs):
    """Change the print options inside a with block only."""
    saved = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**saved)


# -- element strings -----------------------------------------------------------
def _float_strings(values, precision, sci_mode):
    """(unpadded strings of `values`, field width) for one floating tensor."""
    as_double = values.astype(np.float64, copy=False)
    shown = np.isfinite(as_double) & (as_double != 0)
    magnitudes = np.abs(as_double[shown])
    python_values = values.tolist()
    if magnitudes.size == 0:
        # Nothing sets a width or a mode: whole-number style, width 1.
        return [_whole(v) for v in python_values], 1

    if sci_mode is None:
        largest, smallest = magnitudes.max(), magnitudes.min()
        # (The ratio last: past the first two tests it cannot overflow.)
        sci_mode = largest > 1.0e8 or smallest < 1.0e-4 or largest / smallest > 1000.0
    if sci_mode:
        strings = ["%.*e" % (precision, v) for v in python_values]
    elif np.all(magnitudes == np.ceil(magnitudes)):
        strings = [_whole(v) for v in python_values]
    else:
        strings = ["%.*f" % (precision, v) for v in python_values]
    if shown.all():
        width = max(map(len, strings))
    else:
        width = max(len(s) for s, counts in zip(strings, shown.tolist()) if counts)
    return strings, max(width, 1)


def _whole(value):
    """A whole float as torch writes it: `3.`, and nonfinite ones bare."""
    text = "%.0f" % value
    return text + "." if math.isfinite(value) else text


def _element_strings(values):
    """Padded strings for a flat array of the elements to show, and their width."""
    if values.dtype.kind == "f":
        strings, width = _float_strings(values, _OPTIONS.precision, _OPTIONS.sci_mode)
    else:
        strings = [str(v) for v in values.tolist()]
        width = max(map(len, strings), default=1)
    return [s.rjust(width) for s in strings], width


# -- layout ---------------------------------------------------------------------
def _shown_indices(size, edge, cut):
    if not cut:
        return np.arange(size)
    return np.concatenate((np.arange(edge), np.arange(size - edge, size)))


def _gather(data, index):
    """data[np.ix_(*index)] as a numpy array, reading only those elements."""
    if type(data) is not DeviceArray:
        return np.asarray(data[np.ix_(*index)])
    shape = tuple(len(i) for i in index)
    out = np.empty(shape, data.dtype)
    for position in np.ndindex(*shape):
        out[position] = data[tuple(int(i[p]) for i, p in zip(index, position))]
    return out


def _body(data, indent):
    """The bracketed data of a non-empty tensor, starting at column `indent`."""
    opts = _OPTIONS
    edge = opts.edgeitems
    summarize = data.size > opts.threshold
    if data.ndim == 0:
        return _element_strings(np.asarray(data).reshape(1))[0][0]
    if summarize and not edge:
        return "[...]"

    cuts = [summarize and n > 2 * edge for n in data.shape]
    if any(cuts):
        shown = _gather(data, [_shown_indices(n, edge, cut) for n, cut in zip(data.shape, cuts)])
    else:
        shown = data.to_host() if type(data) is DeviceArray else data
    strings, width = _element_strings(shown.reshape(-1))
    shape, ndim = shown.shape, shown.ndim
    innermost_column = indent + ndim - 1
    per_line = max(1, (opts.linewidth - innermost_column) // (width + 2))

    def block(offset, axis):
        # Rows at depth `axis` open one column further right than their parent.
        column = indent + axis
        if axis == ndim - 1:
            items = strings[offset:offset + shape[axis]]
            if cuts[axis]:
                items.insert(edge, " ...")
            lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
            return "[" + (",\n" + " " * (column + 1)).join(lines) + "]"
        step = math.prod(shape[axis + 1:])
        rows = [block(offset + i * step, axis + 1) for i in range(shape[axis])]
        if cuts[axis]:
            rows.insert(edge, "...")
        return "[" + ("," + "\n" * (ndim - axis - 1) + " " * (column + 1)).join(rows) + "]"

    return block(0, 0)


def _with_suffixes(text, suffixes, indent):
    """`text` closed with its suffixes, wrapping those that overrun the line."""
    # torch's measure of the last line counts two columns more than it has.
    line_length = len(text) - text.rfind("\n") + 1
    parts = [text]
    for suffix in suffixes:
        # Measured as torch spells it, so that lines break where torch's do.
        length = len(suffix) - _LONGER_NAME * suffix.count("cextend.")
        if line_length + length + 2 > _OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line_length = indent + length
        else:
            parts.append(", " + suffix)
            line_length += length + 2
    parts.append(")")
    return "".join(parts)


# "dtype=cextend.float64" is two characters longer than torch's "dtype=torch.float64".
_LONGER_NAME = len("cextend.") - len("torch.")
def _prefix(tensor):
    """`tensor(`, or a subclass's own name (torch prints Parameter as plain:
    it says so with a class attribute of its own, _prints_as_tensor)."""
    kind = type(tensor)
    return "tensor(" if kind.__dict__.get("_prints_as_tensor") else kind.__name__ + "("


def format_tensor(tensor):
    """repr(tensor) exactly as torch 2.13 prints it (`cextend.` in dtype names)."""
    data = tensor._data
    if data.dtype.kind == "V":
        data = _bfloat16.to_float32(data)       # torch prints bfloat16 through float32 alike
    prefix = _prefix(tensor)
    indent = len(prefix)
    suffixes = []
    if type(data) is DeviceArray:
        suffixes.append("device='cuda:0'")
    dtype = tensor.dtype
    if data.size == 0:
        # No elements tell an int64 or bool tensor apart: name every dtype
        # but the default float, and the shape unless it is (0,).
        body = "[]"
        if data.ndim != 1:
            suffixes.append("size=%s" % (tuple(data.shape),))
        if dtype is not _dtype.DEFAULT_FLOAT:
            suffixes.append("dtype=%r" % dtype)
    else:
        body = _body(data, indent)
        if not _OPTIONS.edgeitems:
            suffixes.append("size=%s" % (tuple(data.shape),))
        if dtype is not _dtype.DEFAULT_FLOAT and dtype is not _dtype.int64 and dtype is not _dtype.bool:
            suffixes.append("dtype=%r" % dtype)
    try:
        grad_fn = tensor.grad_fn
        name = type(grad_fn).__name__ if grad_fn is not None else None     # as torch's repr
    except RuntimeError:
        # A view whose history cannot be rebuilt (made under no_grad, its
        # base changed in place since) still prints, as torch's does.
        name = "Invalid"
    if name is not None:
        suffixes.append("grad_fn=<%s>" % name)
    elif tensor.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)


Tensor.__repr__ = format_tensor      # torch's format lives here, with set_printoptions
