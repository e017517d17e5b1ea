"""A focused workload for valgrind memcheck (make valgrind): every kernel,
both dtypes, awkward shapes and layouts, the ISAs valgrind can run, and a
few autograd steps.  Exits non-zero if any result is wrong."""
import numpy as np

import cextend as cx
import cextend.nn as nn
from cextend import ops

rng = np.random.default_rng(0)
for isa in cx.available_isas():
    cx.set_isa(isa)
    for dtype in (np.float32, np.float64):
        for n, k, m in [(0, 3, 4), (1, 1, 1), (5, 7, 3), (17, 33, 9), (70, 300, 41)]:
            x = rng.standard_normal((n, k)).astype(dtype)
            w = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal(m).astype(dtype)
            dy = rng.standard_normal((n, m)).astype(dtype)
            for xv in (x, np.asfortranarray(x), x[::-1]):
                y = ops.linear_forward(xv, w, b)
                assert np.allclose(y, xv.astype(np.float64) @ w.T + b, rtol=1e-3, atol=1e-3)
            dx, dw, db = ops.linear_backward(dy, x, w)
            assert np.allclose(dw, dy.T.astype(np.float64) @ x, rtol=1e-3, atol=1e-3)
            a = rng.standard_normal((2, 3, 4, 5)).astype(dtype)
            values, indices = ops.global_max_pool_forward(a)
            grad = ops.global_max_pool_backward(values, indices, a.shape)
            assert grad.shape == a.shape
            assert np.array_equal(ops.add_forward(a, a), a + a)
            assert np.array_equal(ops.mul_constant_forward(a, 2.0), a * dtype(2))
            # the CNN kernels: small planes (one-vector patches), 2x2 pools (the run-of-pairs and
            # row-by-row paths), batch norm, against their float64 references where cheap
            for shape, cout in (((3, 4, 4, 4), 5), ((2, 3, 3, 5), 4), ((2, 2, 9, 7), 3)):
                xc = rng.standard_normal(shape).astype(dtype)
                wc = rng.standard_normal((cout, shape[1], 3, 3)).astype(dtype)
                y = ops.conv2d_forward(xc, wc, None, padding=1)
                grads = ops.conv2d_backward(np.ones_like(y), xc, wc, padding=1)
                assert y.shape == (shape[0], cout) + shape[2:] and grads[0].shape == xc.shape
                assert np.allclose(grads[2], np.full(cout, y[:, 0].size), rtol=1e-6)
                pooled, where = ops.max_pool2d_forward(xc, 2)
                assert np.array_equal(pooled, xc[:, :, :shape[2] // 2 * 2, :shape[3] // 2 * 2]
                                      .reshape(shape[0], shape[1], shape[2] // 2, 2, shape[3] // 2, 2).max(axis=(3, 5)))
                ops.max_pool2d_backward(pooled, where, xc.shape)
                mean, var = np.zeros(shape[1], dtype), np.ones(shape[1], dtype)
                yb, save_mean, save_invstd = ops.batch_norm_forward(xc, mean, var, training=True)
                ops.batch_norm_backward(np.ones_like(yb), xc, None, save_mean, save_invstd, training=True)
                assert np.allclose(save_mean, xc.astype(np.float64).mean(axis=(0, 2, 3)), atol=1e-5)
cx.set_isa("auto")
for threads in (1, 2):
    cx.set_num_threads(threads)
    model = nn.Sequential(nn.Linear(40, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = cx.optim.SGD(model.parameters(), lr=0.1)
    x, target = cx.randn(96, 40), cx.tensor(rng.integers(0, 10, 96))
    for _ in range(3):
        opt.zero_grad()
        nn.CrossEntropyLoss()(model(x), target).backward()
        opt.step()
print("valgrind subset: ok on", cx.available_isas())
