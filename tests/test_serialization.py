"""cextend.save / cextend.load: exact round trips of tensors (every dtype,
0-d, empty, non-contiguous), Parameters, state_dicts, optimizer state and
nested Python values; paths and file objects; and refusal, with a clear
error, of torch files, random bytes, truncated and altered archives --
without ever running code from the file."""
import copy
import io
import json
import math
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest

import cextend as cx
from cextend import serialization
from cextend.tensor import _wrap
from rng_isolation import keep_global_rng

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: torch files cannot be made")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out

DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 4), (13, 1, 3)]


def round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    cx.save(obj, buffer)
    buffer.seek(0)
    return cx.load(buffer, **load_kwargs)


def sample_array(dtype, shape, rng):
    values = np.asarray(rng.standard_normal(shape) * 100)
    if dtype == np.bool_:
        return np.asarray(values > 0)
    array = np.asarray(values.astype(dtype))
    if np.dtype(dtype).kind == "f" and array.size:
        array.reshape(-1)[0] = np.nan
        if array.size > 2:
            array.reshape(-1)[1] = -np.inf
            array.reshape(-1)[2] = -0.0
    return array


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_tensors_round_trip_exactly(dtype, shape):
    rng = np.random.default_rng(0)
    array = sample_array(dtype, shape, rng)
    t = cx.tensor(array)
    back = round_trip(t)
    assert type(back) is cx.Tensor and back.dtype == t.dtype and back.shape == t.shape
    assert back.numpy().tobytes() == array.tobytes()        # bit for bit (NaN, -0.0 included)
    assert back.numpy().flags.c_contiguous and back.numpy().flags.writeable


@pytest.mark.parametrize("make", [lambda a: a.t(), lambda a: a[::2, 1:], lambda a: _wrap(a.numpy()[:, ::-1]),
                                  lambda a: a.permute(1, 0)[1:3], lambda a: a[1]],
                         ids=["transposed", "strided", "negative-strides", "permuted-slice", "row"])
def test_non_contiguous_tensors_save_their_values(make):
    base = cx.tensor(np.arange(42, dtype=np.float64).reshape(6, 7))
    view = make(base)
    back = round_trip(view)
    np.testing.assert_array_equal(back.numpy(), view.numpy())
    assert back.numpy().flags.c_contiguous


def test_requires_grad_and_parameters_are_kept():
    p = cx.nn.Parameter(cx.randn(3))
    frozen = cx.nn.Parameter(cx.randn(2), requires_grad=False)
    leaf = cx.randn(2, requires_grad=True)
    derived = leaf * 2
    back = round_trip([p, frozen, leaf, derived, cx.ones(2)])
    assert isinstance(back[0], cx.nn.Parameter) and back[0].requires_grad
    assert isinstance(back[1], cx.nn.Parameter) and not back[1].requires_grad
    assert type(back[2]) is cx.Tensor and back[2].requires_grad and back[2].is_leaf
    assert back[3].requires_grad and back[3].is_leaf and back[3].grad_fn is None
    assert not back[4].requires_grad


def test_state_dict_tensors_load_as_plain_tensors():
    model = cx.nn.Sequential(cx.nn.Linear(4, 3), cx.nn.ReLU(), cx.nn.Linear(3, 2))
    back = round_trip(model.state_dict())
    assert type(back) is OrderedDict and list(back) == list(model.state_dict())
    assert all(type(v) is cx.Tensor and not v.requires_grad for v in back.values())
    other = cx.nn.Sequential(cx.nn.Linear(4, 3), cx.nn.ReLU(), cx.nn.Linear(3, 2))
    other.load_state_dict(back)
    x = cx.randn(5, 4)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_optimizer_checkpoint_resumes_exactly(name, tmp_path):
    rng = np.random.default_rng(1)
    data = [(cx.tensor(rng.standard_normal((8, 4))), cx.tensor(rng.standard_normal((8, 1)))) for _ in range(10)]

    def make():
        cx.manual_seed(0)
        model = cx.nn.Linear(4, 1, dtype=cx.float64)
        kwargs = dict(lr=0.01, momentum=0.9) if name == "SGD" else dict(lr=0.01)
        return model, getattr(cx.optim, name)(model.parameters(), **kwargs)

    def train(model, opt, batches):
        for x, y in batches:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

    straight, opt = make()
    train(straight, opt, data)
    first, opt1 = make()
    train(first, opt1, data[:4])
    path = tmp_path / "checkpoint.cx"
    cx.save({"model": first.state_dict(), "optimizer": opt1.state_dict(), "epoch": 4}, path)
    resumed, opt2 = make()
    checkpoint = cx.load(path)
    resumed.load_state_dict(checkpoint["model"])
    opt2.load_state_dict(checkpoint["optimizer"])
    assert checkpoint["epoch"] == 4
    train(resumed, opt2, data[4:])
    for a, b in zip(straight.parameters(), resumed.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_nested_python_values_round_trip_with_their_types():
    obj = {
        0: {"ints": [1, -2, 2 ** 70], "floats": (1.0, -0.0, 1e-300, math.inf, -math.inf), "nan": math.nan},
        "flags": [True, False, None],
        "text": "naïve ✓",
        ("tuple", "key"): OrderedDict([("b", 1), ("a", 2)]),
        "counter": Counter({3: 2, 7: 1}),
        "set": {1, 2, 3},
        "empty": [[], (), {}],
        "numpy scalars": [np.float32(0.5), np.int64(3), np.bool_(True)],
    }
    back = round_trip(obj)
    assert list(back) == list(obj)
    assert back[0]["ints"] == [1, -2, 2 ** 70]
    assert back[0]["floats"] == (1.0, -0.0, 1e-300, math.inf, -math.inf)
    assert math.copysign(1, back[0]["floats"][1]) == -1 and math.isnan(back[0]["nan"])
    assert back["flags"] == [True, False, None] and type(back["flags"][0]) is bool
    assert type(back[0]["ints"][0]) is int and type(back[0]["floats"][0]) is float
    assert back["text"] == "naïve ✓"
    od = back[("tuple", "key")]
    assert type(od) is OrderedDict and list(od.items()) == [("b", 1), ("a", 2)]
    assert type(back["counter"]) is Counter and back["counter"] == Counter({3: 2, 7: 1})
    assert back["set"] == {1, 2, 3}
    assert back["empty"] == [[], (), {}]
    assert back["numpy scalars"] == [0.5, 3, True]


def test_identity_within_one_save_is_kept_but_shared_storage_is_not():
    t = cx.arange(6.0)
    view = t[2:4]
    back = round_trip({"a": t, "b": t, "view": view})
    assert back["a"] is back["b"]
    with cx.no_grad():
        back["a"].fill_(0.0)
    assert back["view"].numpy().tolist() == [2.0, 3.0]      # documented: views are stored separately


def test_paths_and_file_objects(tmp_path):
    t = cx.randn(3, 2)
    for target in (str(tmp_path / "a.cx"), tmp_path / "b.cx"):
        cx.save(t, target)
        np.testing.assert_array_equal(cx.load(target).numpy(), t.numpy())
    with open(tmp_path / "c.cx", "wb") as f:
        cx.save([t], f)
    with open(tmp_path / "c.cx", "rb") as f:
        np.testing.assert_array_equal(cx.load(f)[0].numpy(), t.numpy())
    with open(tmp_path / "c.cx", "r") as f:
        with pytest.raises(TypeError, match="binary mode"):
            cx.load(f)
    with pytest.raises(TypeError, match="must be a path or a binary file object"):
        cx.load(3)


def test_the_same_object_always_gives_the_same_bytes():
    obj = {"w": cx.tensor(np.arange(5.0)), "n": 3}
    first, second = io.BytesIO(), io.BytesIO()
    cx.save(obj, first)
    cx.save(obj, second)
    assert first.getvalue() == second.getvalue()


def test_weights_only_and_map_location_are_accepted():
    t = cx.randn(2)
    for kwargs in (dict(weights_only=True), dict(weights_only=False), dict(map_location="cpu"),
                   dict(map_location=cx.device("cpu")), dict(map_location={"cuda:0": "cpu"})):
        np.testing.assert_array_equal(round_trip(t, **kwargs).numpy(), t.numpy())
    with pytest.raises(TypeError, match="map_location must be"):
        round_trip(t, map_location=lambda storage, loc: storage)
    with pytest.raises(ValueError, match="does not unpickle"):
        round_trip(t, pickle_module=object())
    if not cx.cuda.is_available():
        with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
            round_trip(t, map_location="cuda")


@pytest.mark.parametrize("obj,where", [(cx.nn.Linear(2, 2), "save module.state_dict()"),
                                       ({"a": [np.zeros(2, np.complex128)]}, "at \\['a'\\]\\[0\\]"),
                                       ([object()], "at \\[0\\]"), (b"bytes", "top level")])
def test_unsupported_objects_are_refused_naming_where(obj, where):
    with pytest.raises(TypeError, match="cextend.save: cannot save an object of type .*" + where):
        cx.save(obj, io.BytesIO())


# -- files that are not ours, or not intact ------------------------------------------------------

def saved_bytes(obj=None):
    buffer = io.BytesIO()
    cx.save({"w": cx.tensor(np.arange(6.0).reshape(2, 3)), "n": 1} if obj is None else obj, buffer)
    return buffer.getvalue()


def load_bytes(raw):
    return cx.load(io.BytesIO(raw))


def rewrite(raw, edit):
    """A copy of the archive with edit(members: dict name -> bytes) applied (valid zip, fresh CRCs)."""
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        members = OrderedDict((name, archive.read(name)) for name in archive.namelist())
    edit(members)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def edit_manifest(change):
    def edit(members):
        manifest = json.loads(members[serialization.MANIFEST])
        change(manifest)
        members[serialization.MANIFEST] = json.dumps(manifest).encode()
    return edit


@needs_torch
@pytest.mark.parametrize("zip_format", [True, False])
def test_torch_files_are_refused_without_unpickling(zip_format, tmp_path):
    path = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=zip_format)
    with pytest.raises(ValueError, match="torch.save|pickle") as info:
        cx.load(path)
    assert "never unpickles" in str(info.value)


@pytest.mark.parametrize("raw", [b"", b"hello", bytes(range(256)) * 4, b"PK\x03\x04junk"],
                         ids=["empty", "text", "bytes", "zip-magic"])
def test_random_bytes_are_refused(raw):
    with pytest.raises(ValueError, match="cextend.load: (not a cextend.save file|the zip archive is truncated)"):
        load_bytes(raw)


def test_truncated_files_are_refused_at_every_cut():
    raw = saved_bytes()
    for cut in range(0, len(raw), max(1, len(raw) // 40)):
        with pytest.raises(ValueError, match="cextend.load: "):
            load_bytes(raw[:cut])


def test_a_flipped_byte_in_any_member_is_caught():
    raw = saved_bytes()
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        spans = [(info.header_offset + 30 + len(info.filename.encode()) + len(info.extra), info.file_size)
                 for info in archive.infolist()]
    for start, size in spans:
        for position in (start, start + size // 2, start + size - 1):
            damaged = bytearray(raw)
            damaged[position] ^= 0x5A
            with pytest.raises(ValueError, match="cextend.load: member .* is damaged or truncated"):
                load_bytes(bytes(damaged))


def test_altered_members_with_valid_zip_checksums_are_caught():
    def change_values(members):
        name = "tensors/0.npy"
        array = np.load(io.BytesIO(members[name]))
        buffer = io.BytesIO()
        np.save(buffer, array + 1)
        members[name] = buffer.getvalue()

    with pytest.raises(ValueError, match="does not match its checksum in the manifest: the file was altered"):
        load_bytes(rewrite(saved_bytes(), change_values))


def test_an_object_array_smuggled_in_is_refused_and_never_unpickled():
    ran = []

    class Payload:
        def __reduce__(self):
            return (ran.append, ("code ran",))

    def smuggle(members):
        buffer = io.BytesIO()
        np.save(buffer, np.array([Payload()], dtype=object), allow_pickle=True)
        members["tensors/0.npy"] = buffer.getvalue()
        manifest = json.loads(members[serialization.MANIFEST])
        import hashlib
        manifest["members"]["tensors/0.npy"] = hashlib.sha256(buffer.getvalue()).hexdigest()
        members[serialization.MANIFEST] = json.dumps(manifest).encode()

    with pytest.raises(ValueError, match="is not a plain numeric .npy array"):
        load_bytes(rewrite(saved_bytes(), smuggle))
    assert ran == []


@pytest.mark.parametrize("change,message", [
    (lambda m: m["root"]["$dict"][0][1].update(shape=[3, 2]), "has shape \\[2, 3\\], but the manifest says \\[3, 2\\]"),
    (lambda m: m["root"]["$dict"][0][1].update(dtype="float32"), "holds float64, but the manifest says 'float32'"),
    (lambda m: m["root"]["$dict"][0][1].update(dtype="object"), "but the manifest says 'object'"),
    (lambda m: m["root"]["$dict"][0][1].update({"$tensor": 5}), "tensor 5 is missing from the archive"),
    (lambda m: m["root"]["$dict"][0][1].update({"$tensor": "0"}), "a tensor entry has a bad index"),
    (lambda m: m.update(root={"$pickle": "x"}), "unknown tag '\\$pickle'"),
    (lambda m: m.update(root={"$float": "1e5"}), "bad float value"),
    (lambda m: m.update(root={"$dict": [[[1], 2]]}), "unhashable"),
    (lambda m: m.update(version=2), "version 2 is not supported"),
    (lambda m: m.update(format="other"), "does not name the format"),
    (lambda m: m.pop("members"), "lacks its member list"),
    (lambda m: m["members"].update({"tensors/9.npy": "0" * 64}), "do not match its manifest"),
])
def test_altered_manifests_are_refused_naming_the_problem(change, message):
    with pytest.raises(ValueError, match=message):
        load_bytes(rewrite(saved_bytes(), edit_manifest(change)))


def test_structural_tampering_is_refused():
    raw = saved_bytes()
    with pytest.raises(ValueError, match="do not match its manifest"):
        load_bytes(rewrite(raw, lambda m: m.update({"extra.bin": b"x"})))
    with pytest.raises(ValueError, match="has no cextend_manifest.json"):
        load_bytes(rewrite(raw, lambda m: m.pop(serialization.MANIFEST)))
    with pytest.raises(ValueError, match="manifest is not valid JSON"):
        load_bytes(rewrite(raw, lambda m: m.update({serialization.MANIFEST: b"{not json"})))
    with pytest.raises(ValueError, match="manifest is not valid JSON"):
        load_bytes(rewrite(raw, lambda m: m.update({serialization.MANIFEST: b'{"format": NaN}'})))
    deep = b'{"format":"cextend.save","version":1,"members":{},"root":' + b"[" * 5000 + b"]" * 5000 + b"}"
    with pytest.raises(ValueError, match="manifest"):
        load_bytes(rewrite(raw, lambda m: (m.clear(), m.update({serialization.MANIFEST: deep}))))
    compressed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(compressed, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))
    with pytest.raises(ValueError, match="is compressed"):
        load_bytes(compressed.getvalue())


def test_deepcopy_and_save_agree():
    sd = cx.nn.Linear(3, 3).state_dict()
    back = round_trip(copy.deepcopy(sd))
    for k in sd:
        np.testing.assert_array_equal(back[k].numpy(), sd[k].numpy())


def test_scheduler_state_round_trips_and_resumes():
    def make():
        opt = cx.optim.SGD([cx.nn.Parameter(cx.ones(1))], lr=0.1)
        return opt, cx.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4, 4], gamma=0.5)

    opt, sched = make()
    for _ in range(3):
        opt.step()
        sched.step()
    back = round_trip({"scheduler": sched.state_dict(), "optimizer": opt.state_dict()})
    assert back["scheduler"]["milestones"] == Counter({2: 1, 4: 2})
    opt2, sched2 = make()
    opt2.load_state_dict(back["optimizer"])
    sched2.load_state_dict(back["scheduler"])
    for _ in range(3):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
    assert sched2.get_last_lr() == sched.get_last_lr() == [0.1 * 0.5 ** 3]


def test_a_numpy_array_is_saved_as_data_and_loads_as_an_array(tmp_path):
    """issue 24 item 6: torch.save pickles a numpy array; cextend stores its values as a .npy member
    (no pickle) and gives back a numpy array of the same dtype, shape and values, shared once."""
    rng = np.random.default_rng(5)
    strided = rng.standard_normal((4, 6))[:, ::2].T
    saved = {"strided": strided, "ints": np.arange(7, dtype=np.int32), "flags": np.array([True, False]),
             "empty": np.zeros((0, 3), np.float32), "scalar": np.array(2.5), "twice": [strided, strided]}
    path = tmp_path / "arrays.cx"
    cx.save(saved, path)
    loaded = cx.load(path)
    for key in ("strided", "ints", "flags", "empty", "scalar"):
        assert type(loaded[key]) is np.ndarray
        assert loaded[key].dtype == saved[key].dtype and loaded[key].shape == saved[key].shape
        np.testing.assert_array_equal(loaded[key], saved[key])
    assert loaded["twice"][0] is loaded["twice"][1]
    with zipfile.ZipFile(path) as archive:
        assert not [n for n in archive.namelist() if n.endswith((".pkl", ".pickle"))]
    with pytest.raises(TypeError, match="cannot save an object of type ndarray"):
        cx.save(np.array(["text"]), tmp_path / "strings.cx")
