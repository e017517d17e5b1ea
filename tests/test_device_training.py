"""Training utilities on device tensors (host-emulated runtime everywhere,
CUDA where a GPU answers): Module.cuda/to keep parameter identity, SGD
steps on the device equal the CPU's, save/load keeps or maps the device,
and what has no device kernel says so."""
import io

import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
from cextend import _device
from host_device import HostRuntime
from rng_isolation import keep_global_rng

RUNTIMES = ["emulated"] + (["cuda"] if cx.cuda.is_available() else [])
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)


@pytest.fixture(params=RUNTIMES)
def device(request):
    previous = _device.use_runtime(HostRuntime() if request.param == "emulated" else None)
    yield request.param
    _device.use_runtime(previous)


@pytest.mark.parametrize("move", [lambda m: m.cuda(), lambda m: m.cuda(0), lambda m: m.to("cuda"),
                                  lambda m: m.to(cx.device("cuda"))])
def test_moving_a_module_keeps_its_parameters(device, move):
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    model.register_buffer("counts", cx.zeros(2))
    weight = model[0].weight
    assert move(model) is model
    assert model[0].weight is weight and weight.is_cuda and model.counts.is_cuda
    model.cpu()
    assert model[0].weight is weight and not weight.is_cuda


def test_sgd_on_the_device_equals_the_cpu(device):
    rng = np.random.default_rng(0)
    init = rng.standard_normal((4, 3)).astype(np.float32)
    grads = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(5)]
    results = []
    for where in ("cpu", "cuda"):
        p = nn.Parameter(cx.from_numpy(init.copy()).to(where))
        opt = cx.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.01)
        for g in grads:
            p.grad = cx.from_numpy(g.copy()).to(where)
            opt.step()
        results.append(p.detach().cpu().numpy())
    # the device kernels round separately (no fused multiply-add), so allow float32 rounding
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def test_save_and_load_keep_or_map_the_device(device):
    t = cx.from_numpy(np.arange(6.0).reshape(2, 3)).cuda()
    buffer = io.BytesIO()
    cx.save({"t": t}, buffer)
    buffer.seek(0)
    back = cx.load(buffer)["t"]
    assert back.is_cuda
    np.testing.assert_array_equal(back.cpu().numpy(), np.arange(6.0).reshape(2, 3))
    buffer.seek(0)
    assert not cx.load(buffer, map_location="cpu")["t"].is_cuda


def test_adam_on_device_tensors_says_what_is_missing(device):
    p = nn.Parameter(cx.ones(3).cuda())
    p.grad = cx.ones(3).cuda()
    with pytest.raises(TypeError, match="sqrt"):
        cx.optim.Adam([p]).step()
