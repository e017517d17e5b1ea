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
