"""The convolution, pooling and batch norm C entry points called directly
through cffi with illegal arguments (the pattern of test_c_api.py): each
gives status -i for its 1-based position i, a message naming it, and no
output written."""
import pytest

from cextend._C import ffi, lib

SENTINEL = 7
CTYPES = {"f32": "float", "f64": "double"}
NULL = ffi.NULL
BIG = 2 ** 62


def buffer(ctype, count):
    return ffi.new("%s[]" % ctype, [SENTINEL] * count)


def data(ctype, count):
    return ffi.new("%s[]" % ctype, [i % 5 - 2.5 for i in range(count)])


def strides(*values):
    return ffi.new("int64_t[]", list(values))


# conv: n 2, c_in 4, 5 x 6 image, c_out 6, 3 x 2 kernel -> 3 x 5, groups 2
CONV = [2, 4, 5, 6, 6, 3, 2, 3, 5, 1, 1, 0, 0, 1, 1, 2]
X_STRIDES = (120, 30, 6, 1)
Y_COUNT, W_COUNT, X_COUNT = 2 * 6 * 15, 6 * 2 * 6, 240


def conv_forward(sfx):
    t = CTYPES[sfx]
    out = {"y": buffer(t, Y_COUNT)}
    args = CONV + [data(t, X_COUNT), strides(*X_STRIDES), data(t, W_COUNT), data(t, 6), out["y"]]
    return getattr(lib, "cextend_conv2d_forward_" + sfx), args, out


def conv_backward(sfx):
    t = CTYPES[sfx]
    out = {"dx": buffer(t, X_COUNT), "dw": buffer(t, W_COUNT), "db": buffer(t, 6)}
    args = CONV + [data(t, Y_COUNT), strides(90, 15, 5, 1), data(t, X_COUNT), strides(*X_STRIDES),
                   data(t, W_COUNT), out["dx"], out["dw"], out["db"]]
    return getattr(lib, "cextend_conv2d_backward_" + sfx), args, out


# pooling: n 2, c 3, 6 x 5 image -> 3 x 2, 2 x 2 window, stride 2, pad 0/1, dilation 1
POOL = [2, 3, 6, 5, 3, 3, 2, 2, 2, 2, 0, 1]
P_STRIDES = (90, 30, 5, 1)


def max_forward(sfx):
    t = CTYPES[sfx]
    out = {"y": buffer(t, 54), "indices": buffer("int64_t", 54)}
    args = POOL + [1, 1, data(t, 180), strides(*P_STRIDES), out["y"], out["indices"]]
    return getattr(lib, "cextend_max_pool2d_forward_" + sfx), args, out


def max_backward(sfx):
    t = CTYPES[sfx]
    out = {"dx": buffer(t, 180)}
    args = POOL[:6] + [data(t, 54), strides(27, 9, 3, 1), ffi.new("int64_t[]", [i % 30 for i in range(54)]),
                       out["dx"]]
    return getattr(lib, "cextend_max_pool2d_backward_" + sfx), args, out


def avg_forward(sfx):
    t = CTYPES[sfx]
    out = {"y": buffer(t, 54)}
    args = POOL + [1, 0, data(t, 180), strides(*P_STRIDES), out["y"]]
    return getattr(lib, "cextend_avg_pool2d_forward_" + sfx), args, out


def avg_backward(sfx):
    t = CTYPES[sfx]
    out = {"dx": buffer(t, 180)}
    args = POOL + [1, 0, data(t, 54), strides(27, 9, 3, 1), out["dx"]]
    return getattr(lib, "cextend_avg_pool2d_backward_" + sfx), args, out


def adaptive_forward(sfx):
    t = CTYPES[sfx]
    out = {"y": buffer(t, 24)}
    args = [2, 3, 6, 5, 2, 2, data(t, 180), strides(*P_STRIDES), out["y"]]
    return getattr(lib, "cextend_adaptive_avg_pool2d_forward_" + sfx), args, out


def adaptive_backward(sfx):
    t = CTYPES[sfx]
    out = {"dx": buffer(t, 180)}
    args = [2, 3, 6, 5, 2, 2, data(t, 24), strides(12, 4, 2, 1), out["dx"]]
    return getattr(lib, "cextend_adaptive_avg_pool2d_backward_" + sfx), args, out


# batch norm: n 2, c 3, s 4
def bn_forward(sfx):
    t = CTYPES[sfx]
    out = {"y": buffer(t, 24), "save_mean": buffer(t, 3), "save_invstd": buffer(t, 3),
           "running_mean": buffer(t, 3), "running_var": buffer(t, 3)}
    args = [2, 3, 4, data(t, 24), strides(12, 4, 1), data(t, 3), data(t, 3), out["running_mean"],
            out["running_var"], 1, 0.1, 1e-5, out["y"], out["save_mean"], out["save_invstd"]]
    return getattr(lib, "cextend_batch_norm_forward_" + sfx), args, out


def bn_backward(sfx):
    t = CTYPES[sfx]
    out = {"dx": buffer(t, 24), "dw": buffer(t, 3), "db": buffer(t, 3)}
    args = [2, 3, 4, data(t, 24), strides(12, 4, 1), data(t, 24), strides(12, 4, 1), data(t, 3),
            data(t, 3), ffi.new("%s[]" % t, [1.0, 2.0, 0.5]), 1, out["dx"], out["dw"], out["db"]]
    return getattr(lib, "cextend_batch_norm_backward_" + sfx), args, out


CONV_SIZES = [({1: -1}, -1, "n"), ({2: -1}, -2, "c_in"), ({3: -1}, -3, "h"), ({4: -1}, -4, "w"),
              ({5: -1}, -5, "c_out"), ({6: 0}, -6, "kh"), ({7: 0}, -7, "kw"), ({8: -1}, -8, "h_out"),
              ({9: -1}, -9, "w_out"), ({10: 0}, -10, "stride_h"), ({11: 0}, -11, "stride_w"),
              ({12: -1}, -12, "pad_h"), ({13: -1}, -13, "pad_w"), ({14: 0}, -14, "dilation_h"),
              ({15: 0}, -15, "dilation_w"), ({16: 0}, -16, "groups"), ({16: 3}, -16, "groups"),
              ({3: BIG, 4: BIG}, -3, "h"), ({8: BIG, 9: BIG}, -8, "h_out"),
              ({10: BIG}, -8, "h_out"), ({12: BIG}, -12, "pad_h"), ({6: BIG, 7: BIG}, -6, "kh")]
POOL_SIZES = [({1: -1}, -1, "n"), ({2: -1}, -2, "c"), ({3: -1}, -3, "h"), ({4: -1}, -4, "w"),
              ({5: -1}, -5, "h_out"), ({6: -1}, -6, "w_out"), ({7: 0}, -7, "kh"), ({8: 0}, -8, "kw"),
              ({9: 0}, -9, "stride_h"), ({10: 0}, -10, "stride_w"), ({11: -1}, -11, "pad_h"),
              ({12: -1}, -12, "pad_w"), ({3: BIG, 4: BIG}, -3, "h"), ({9: BIG}, -5, "h_out"),
              ({11: BIG}, -11, "pad_h")]

ILLEGAL = {
    conv_forward: CONV_SIZES + [
        ({17: NULL}, -17, "x"), ({18: NULL}, -18, "x_strides"), ({18: strides(120, -30, 6, 1)}, -18, "x_strides"),
        ({18: strides(BIG, 30, 6, 1)}, -18, "x_strides"), ({19: NULL}, -19, "weight"), ({21: NULL}, -21, "y")],
    conv_backward: CONV_SIZES + [
        ({17: NULL}, -17, "dy"), ({18: strides(-1, 15, 5, 1)}, -18, "dy_strides"), ({19: NULL}, -19, "x"),
        ({20: NULL}, -20, "x_strides"), ({21: NULL}, -21, "weight")],
    max_forward: POOL_SIZES + [
        ({13: 0}, -13, "dilation_h"), ({14: 0}, -14, "dilation_w"), ({15: NULL}, -15, "x"),
        ({16: NULL}, -16, "x_strides"), ({16: strides(90, 30, 5, -1)}, -16, "x_strides"), ({17: NULL}, -17, "y")],
    max_backward: [({1: -1}, -1, "n"), ({2: -1}, -2, "c"), ({3: -1}, -3, "h"), ({4: -1}, -4, "w"),
                   ({5: -1}, -5, "h_out"), ({6: -1}, -6, "w_out"), ({7: NULL}, -7, "dy"),
                   ({8: NULL}, -8, "dy_strides"), ({9: NULL}, -9, "indices"), ({10: NULL}, -10, "dx")],
    avg_forward: POOL_SIZES + [
        ({13: 2}, -13, "count_include_pad"), ({14: -1}, -14, "divisor_override"), ({15: NULL}, -15, "x"),
        ({16: NULL}, -16, "x_strides"), ({17: NULL}, -17, "y")],
    avg_backward: POOL_SIZES + [
        ({13: -1}, -13, "count_include_pad"), ({14: -3}, -14, "divisor_override"), ({15: NULL}, -15, "dy"),
        ({16: strides(27, 9, -3, 1)}, -16, "dy_strides"), ({17: NULL}, -17, "dx")],
    adaptive_forward: [({1: -1}, -1, "n"), ({4: -1}, -4, "w"), ({5: -1}, -5, "h_out"), ({6: -2}, -6, "w_out"),
                       ({3: 0}, -3, "h"), ({4: 0}, -4, "w"), ({5: BIG, 3: 8}, -5, "h_out"),
                       ({7: NULL}, -7, "x"), ({8: NULL}, -8, "x_strides"), ({9: NULL}, -9, "y")],
    adaptive_backward: [({2: -1}, -2, "c"), ({3: 0}, -3, "h"), ({7: NULL}, -7, "dy"),
                        ({8: strides(12, 4, 2, -1)}, -8, "dy_strides"), ({9: NULL}, -9, "dx")],
    bn_forward: [({1: -1}, -1, "n"), ({2: -1}, -2, "c"), ({3: -1}, -3, "s"), ({1: BIG, 3: BIG}, -3, "s"),
                 ({4: NULL}, -4, "x"), ({5: NULL}, -5, "x_strides"), ({5: strides(12, -4, 1)}, -5, "x_strides"),
                 ({8: NULL, 10: 0}, -8, "running_mean"), ({9: NULL, 10: 0}, -9, "running_var"),
                 ({10: 2}, -10, "training"), ({13: NULL}, -13, "y")],
    bn_backward: [({1: -1}, -1, "n"), ({2: -1}, -2, "c"), ({3: -1}, -3, "s"), ({4: NULL}, -4, "dy"),
                  ({5: NULL}, -5, "dy_strides"), ({6: NULL}, -6, "x"), ({7: strides(-12, 4, 1)}, -7, "x_strides"),
                  ({9: NULL}, -9, "save_mean"), ({10: NULL}, -10, "save_invstd"), ({11: 5}, -11, "training")],
}
CASES = [(entry, sfx, change, status, name)
         for entry, cases in ILLEGAL.items() for change, status, name in cases for sfx in CTYPES]


def untouched(out):
    return all(list(buf) == [SENTINEL] * len(buf) for buf in out.values())


@pytest.mark.parametrize("entry,sfx,change,status,name", CASES,
                         ids=["%s-%s-%s-%d" % (c[0].__name__, c[1], c[4], i) for i, c in enumerate(CASES)])
def test_illegal_argument_is_reported_and_writes_nothing(entry, sfx, change, status, name):
    fn, args, out = entry(sfx)
    for position, value in change.items():
        args[position - 1] = value
    assert fn(*args) == status, ffi.string(lib.cextend_last_error())
    message = ffi.string(lib.cextend_last_error()).decode()
    assert "argument %d (%s) is illegal" % (-status, name) in message, message
    assert message.startswith("cextend_")
    assert untouched(out)


@pytest.mark.parametrize("sfx", CTYPES)
@pytest.mark.parametrize("entry", list(ILLEGAL))
def test_valid_call_succeeds_and_writes_every_output(entry, sfx):
    fn, args, out = entry(sfx)
    poison = {name: buf for name, buf in out.items() if name not in ("running_mean", "running_var")}
    for buf in poison.values():
        is_index = ffi.typeof(buf).item.cname == "int64_t"
        for i in range(len(buf)):
            buf[i] = -7777 if is_index else float("nan")
    assert fn(*args) == 0, ffi.string(lib.cextend_last_error())
    for name, buf in poison.items():
        values = list(buf)
        assert -7777 not in values and all(v == v for v in values), name


@pytest.mark.parametrize("sfx", CTYPES)
def test_null_means_skip_where_documented(sfx):
    fn, args, out = conv_forward(sfx)
    args[19] = NULL                                      # no bias
    assert fn(*args) == 0
    fn, args, out = conv_backward(sfx)
    args[21] = args[22] = args[23] = NULL                # skip every gradient
    args[18] = args[19] = args[20] = NULL                # then neither x nor w is read
    assert fn(*args) == 0 and untouched(out)
    fn, args, out = max_forward(sfx)
    args[17] = NULL                                      # no indices
    assert fn(*args) == 0
    fn, args, out = bn_forward(sfx)
    args[5] = args[6] = args[7] = args[8] = args[13] = args[14] = NULL
    assert fn(*args) == 0
    fn, args, out = bn_backward(sfx)
    args[7] = args[11] = args[12] = args[13] = NULL
    assert fn(*args) == 0


@pytest.mark.parametrize("sfx", CTYPES)
def test_null_is_legal_for_empty_operands(sfx):
    conv = getattr(lib, "cextend_conv2d_forward_" + sfx)
    assert conv(0, 4, 5, 6, 6, 3, 2, 3, 5, 1, 1, 0, 0, 1, 1, 2, NULL, NULL, data(CTYPES[sfx], W_COUNT),
                NULL, NULL) == 0
    pool = getattr(lib, "cextend_max_pool2d_forward_" + sfx)
    assert pool(2, 0, 6, 5, 3, 3, 2, 2, 2, 2, 0, 1, 1, 1, NULL, NULL, NULL, NULL) == 0
    bn = getattr(lib, "cextend_batch_norm_forward_" + sfx)
    assert bn(2, 0, 4, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0.1, 1e-5, NULL, NULL, NULL) == 0
