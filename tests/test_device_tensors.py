"""Device tensors: the same tests on the CUDA runtime (with a GPU) and on a
host-emulated runtime (always), so the device layer is tested everywhere."""
import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
from cextend import _device
from cextend.autograd import gradcheck
from cextend.functions import Add, GlobalMaxPool, LinearFunction, MulConstant
from host_device import HostRuntime

RUNTIMES = ["emulated"] + (["cuda"] if cx.cuda.is_available() else [])


@pytest.fixture(params=RUNTIMES)
def device(request):
    previous = _device.use_runtime(HostRuntime() if request.param == "emulated" else None)
    yield request.param
    _device.use_runtime(previous)


def on_gpu(array, requires_grad=False):
    return cx.from_numpy(np.asarray(array)).cuda().requires_grad_(requires_grad)


def test_round_trip_and_metadata(device):
    host = np.arange(12.0).reshape(3, 4)
    t = cx.from_numpy(host).cuda()
    assert t.is_cuda and t.device == cx.device("cuda") and t.shape == (3, 4) and t.dtype is cx.float64
    assert "device='cuda:0'" in repr(t)
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    assert not t.cpu().is_cuda and t.cuda() is t
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        t.numpy()
    assert t.sum().item() == host.sum()
    with pytest.raises(TypeError, match="indexing is not supported on cuda tensors"):
        t[1, 2]
    z = cx.zeros(2, 3, device="cuda")
    assert z.is_cuda and z.cpu().numpy().sum() == 0
    r = cx.randn(5, dtype=cx.double, device="cuda", requires_grad=True)
    assert r.is_cuda and r.requires_grad


def test_op_set_matches_cpu(device):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    ga, gb = on_gpu(a), on_gpu(b)
    cases = {
        "add": (ga + gb, a + b), "sub": (ga - gb, a - b), "mul": (ga * gb, a * b),
        "scalar ops": (2.0 * ga - 1.5 + ga * 3, 2 * a - 1.5 + a * 3), "rsub": (1 - ga, 1 - a),
        "div by scalar": (ga / 4, a / 4), "neg": (-ga, -a), "relu": (ga.relu(), np.maximum(a, 0)),
        "sum": (ga.sum(), a.sum()), "sum dim 0": (ga.sum(0), a.sum(0)), "sum dim -1 keepdim": (ga.sum(-1, keepdim=True), a.sum(-1, keepdims=True)),
        "mean": (ga.mean(), a.mean()), "reshape": (ga.reshape(5, 4), a.reshape(5, 4)),
        "unsqueeze/squeeze": (ga.unsqueeze(0).squeeze(0), a), "clone": (ga.clone(), a),
        "float": (ga.float(), a.astype(np.float32)),
    }
    for name, (ours, ref) in cases.items():
        assert ours.is_cuda, name
        np.testing.assert_allclose(ours.cpu().numpy(), ref, rtol=1e-6, atol=1e-12, err_msg=name)
    t = on_gpu(a.copy())
    t.fill_(2.0)
    t.add_(on_gpu(b))
    t *= 2
    np.testing.assert_allclose(t.cpu().numpy(), (2 + b) * 2)
    t.zero_()
    assert t.cpu().numpy().sum() == 0
    t.copy_(on_gpu(b))
    np.testing.assert_array_equal(t.cpu().numpy(), b)


def test_unsupported_ops_and_mixed_devices_raise_clearly(device):
    g = on_gpu(np.ones((2, 2)))
    with pytest.raises(TypeError, match="numpy.exp is not supported on cuda tensors"):
        g.exp()
    with pytest.raises(TypeError, match="matmul is not supported on cuda tensors"):
        g @ g
    with pytest.raises(TypeError, match="broadcasting"):
        g + on_gpu(np.ones(2))
    with pytest.raises(TypeError, match="operands on different devices: cuda:0 and cpu"):
        g + cx.ones(2, 2, dtype=cx.double)
    with pytest.raises(RuntimeError, match="LinearFunction: operands on different devices: input on cuda.*weight on cpu"):
        LinearFunction.apply(g, cx.ones(3, 2, dtype=cx.double))
    with pytest.raises(RuntimeError, match="Add: operands on different devices"):
        Add.apply(g, cx.ones(2, 2, dtype=cx.double))


def test_c_backed_functions_match_cpu(device):
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((3, 2, 7), (5, 7), (5,)))
        gx, gw, gb = on_gpu(x, True), on_gpu(w, True), on_gpu(b, True)
        y = LinearFunction.apply(gx, gw, gb)
        assert y.is_cuda and y.shape == (3, 2, 5)
        np.testing.assert_allclose(y.cpu().detach().numpy(), x @ w.T + b, rtol=1e-5, atol=1e-5)
        y.sum().backward()
        assert gw.grad.is_cuda
        np.testing.assert_allclose(gw.grad.cpu().numpy(), np.ones((6, 5)).T @ x.reshape(6, 7), rtol=1e-5)
        np.testing.assert_allclose(gb.grad.cpu().numpy(), np.full(5, 6.0), rtol=1e-6)
        np.testing.assert_allclose(gx.grad.cpu().numpy(), np.ones((3, 2, 5)) @ w, rtol=1e-5)
    m = on_gpu(np.arange(6.0), True)
    np.testing.assert_array_equal(MulConstant.apply(m, 2.5).cpu().detach().numpy(), np.arange(6.0) * 2.5)
    s = Add.apply(m, m)
    np.testing.assert_array_equal(s.cpu().detach().numpy(), np.arange(6.0) * 2)
    images = rng.standard_normal((2, 3, 4, 5))
    values, indices = GlobalMaxPool.apply(on_gpu(images))
    flat = images.reshape(2, 3, 20)
    np.testing.assert_array_equal(indices.cpu().numpy(), flat.argmax(-1))
    np.testing.assert_array_equal(values.cpu().numpy(), flat.max(-1))


def test_gradcheck_in_float64_on_device_tensors(device):
    rng = np.random.default_rng(2)
    x, w, b = on_gpu(rng.standard_normal((4, 3)), True), on_gpu(rng.standard_normal((2, 3)), True), \
        on_gpu(rng.standard_normal(2), True)
    assert gradcheck(LinearFunction.apply, (x, w, b))
    assert gradcheck(lambda t: MulConstant.apply(t, -1.5), (x,))
    assert gradcheck(Add.apply, (x, on_gpu(rng.standard_normal((4, 3)), True)))
    assert gradcheck(lambda t: GlobalMaxPool.apply(t)[0], (on_gpu(rng.standard_normal((2, 2, 3, 3)), True),))
    assert gradcheck(lambda a, c: ((a * c - 0.5 * a).relu() * a).sum(0), (x, on_gpu(rng.standard_normal((4, 3)), True)))


def test_mlp_trains_on_device_like_on_cpu(device):
    rng = np.random.default_rng(3)
    inputs = rng.standard_normal((32, 6)).astype(np.float32)
    targets = (inputs[:, :1] * 2 - inputs[:, 1:2]).astype(np.float32)
    losses = {}
    for where in ("cpu", "cuda"):
        cx.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
        if where == "cuda":
            model.cuda()
            assert all(p.is_cuda for p in model.parameters())
        opt = cx.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        x, t = cx.from_numpy(inputs).to(where), cx.from_numpy(targets).to(where)
        history = []
        for _ in range(40):
            opt.zero_grad()
            loss = nn.MSELoss()(model(x), t)
            loss.backward()
            opt.step()
            history.append(loss.item())
        losses[where] = history
    assert losses["cuda"][-1] < 0.1 * losses["cuda"][0]
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-4)
    model.cpu()
    assert not any(p.is_cuda for p in model.parameters())
