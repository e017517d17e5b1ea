"""gradcheck and gradgradcheck of the CNN Functions in float64, on
contiguous and on non-contiguous (channel-sliced, transposed) inputs."""
import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as F
from cextend.autograd import gradcheck, gradgradcheck


def leaf(rng, *shape, layout="contiguous"):
    """A float64 leaf with standard normal values in the given layout."""
    values = rng.standard_normal(shape)
    if layout == "channel_sliced":
        wide = np.zeros((shape[0], shape[1] + 3) + shape[2:])
        wide[:, 1:1 + shape[1]] = values
        array = wide[:, 1:1 + shape[1]]
    elif layout == "channels_last":
        array = np.ascontiguousarray(np.moveaxis(values, 1, -1))
        array = np.moveaxis(array, -1, 1)
    else:
        array = values
    t = cx.from_numpy(array).requires_grad_()
    if shape[0] > 1:            # with one image a channel slice is still contiguous
        assert t.is_contiguous() == (layout == "contiguous")
    return t


LAYOUTS = ["contiguous", "channel_sliced", "channels_last"]


def both_checks(fn, inputs):
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("params", [dict(), dict(stride=2, padding=1), dict(stride=(2, 1), padding=(0, 2),
                                                                               dilation=(1, 2), groups=2)])
def test_conv2d(params, layout):
    rng = np.random.default_rng(0)
    x = leaf(rng, 2, 4, 5, 6, layout=layout)
    w = leaf(rng, 4, 4 // params.get("groups", 1), 3, 2, layout=layout)
    b = leaf(rng, 4)
    both_checks(lambda x, w, b: F.conv2d(x, w, b, **params), (x, w, b))


def test_conv2d_without_bias_and_same_padding():
    rng = np.random.default_rng(1)
    both_checks(lambda x, w: F.conv2d(x, w, padding="same"), (leaf(rng, 1, 2, 4, 5), leaf(rng, 3, 2, 2, 3)))


def test_conv2d_unbatched_input():
    rng = np.random.default_rng(2)
    both_checks(lambda x, w: F.conv2d(x, w, stride=2), (leaf(rng, 2, 5, 5), leaf(rng, 3, 2, 3, 3)))


@pytest.mark.parametrize("layout", ["contiguous", "channel_sliced"])
def test_conv1d(layout):
    rng = np.random.default_rng(3)
    x, w, b = leaf(rng, 2, 4, 9, layout=layout), leaf(rng, 6, 2, 3), leaf(rng, 6)
    both_checks(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2), (x, w, b))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_conv_transpose2d(layout):
    rng = np.random.default_rng(4)
    x, w, b = leaf(rng, 2, 4, 3, 4, layout=layout), leaf(rng, 4, 3, 3, 2, layout=layout), leaf(rng, 6)
    both_checks(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2,
                                                   dilation=(1, 2)), (x, w, b))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_max_pool2d(layout):
    rng = np.random.default_rng(5)
    both_checks(lambda x: F.max_pool2d(x, 3, 2, 1, dilation=1, ceil_mode=True), (leaf(rng, 2, 3, 7, 6, layout=layout),))
    both_checks(lambda x: F.max_pool2d(x, (2, 3), stride=1, dilation=(2, 1)), (leaf(rng, 1, 2, 5, 6, layout=layout),))


def test_max_pool2d_indices_are_not_differentiable():
    x = cx.randn(1, 1, 4, 4, dtype=cx.float64, requires_grad=True)
    values, indices = F.max_pool2d(x, 2, return_indices=True)
    assert values.requires_grad and not indices.requires_grad and indices.dtype is cx.int64
    values.sum().backward(retain_graph=True)
    assert x.grad.sum().item() == 4 and set(np.unique(x.grad.numpy())) == {0.0, 1.0}
    indices.zero_()          # torch saves the indices it returns: changing them makes backward raise
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        values.sum().backward()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("params", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                    dict(kernel_size=(2, 3), stride=1, divisor_override=4)])
def test_avg_pool2d(params, layout):
    rng = np.random.default_rng(6)
    both_checks(lambda x: F.avg_pool2d(x, **params), (leaf(rng, 2, 3, 7, 6, layout=layout),))


@pytest.mark.parametrize("output_size", [(3, 2), 1, (4, None), (9, 7)])
def test_adaptive_avg_pool2d(output_size):
    rng = np.random.default_rng(7)
    both_checks(lambda x: F.adaptive_avg_pool2d(x, output_size), (leaf(rng, 2, 3, 7, 6, layout="channel_sliced"),))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(training, layout):
    rng = np.random.default_rng(8)
    x = leaf(rng, 4, 3, 2, 3, layout=layout)
    w, b = leaf(rng, 3), leaf(rng, 3)
    rm = cx.from_numpy(rng.standard_normal(3))
    rv = cx.from_numpy(rng.uniform(0.5, 2, 3))
    both_checks(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.0), (x, w, b))


@pytest.mark.parametrize("shape", [(5, 3), (4, 2, 3)])
def test_batch_norm_without_affine_on_1d_inputs(shape):
    rng = np.random.default_rng(9)
    both_checks(lambda x: F.batch_norm(x, None, None, training=True), (leaf(rng, *shape),))


def test_a_small_cnn_end_to_end():
    rng = np.random.default_rng(10)
    x = leaf(rng, 2, 1, 6, 6)
    w1, w2 = leaf(rng, 3, 1, 3, 3), leaf(rng, 2, 3, 2, 2)
    bn_w, bn_b = leaf(rng, 3), leaf(rng, 3)

    def net(x, w1, w2, bn_w, bn_b):
        h = F.conv2d(x, w1, padding=1)
        h = F.batch_norm(h, None, None, bn_w, bn_b, training=True).tanh()
        h = F.max_pool2d(h, 2)
        return F.adaptive_avg_pool2d(F.conv2d(h, w2), 1)

    both_checks(net, (x, w1, w2, bn_w, bn_b))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv2d_padding_modes(mode):
    rng = np.random.default_rng(11)
    conv = cx.nn.Conv2d(2, 2, 3, padding=(2, 1), padding_mode=mode).double()
    both_checks(lambda x: conv(x), (leaf(rng, 2, 2, 4, 5, layout="channel_sliced"),))
