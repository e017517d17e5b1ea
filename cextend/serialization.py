"""cextend.save / cextend.load: tensors and plain containers, without pickle.

The file is a zip archive (members stored uncompressed, fixed timestamps,
so the same object always gives the same bytes):

    cextend_manifest.json   {"format": "cextend.save", "version": 1,
                             "members": {name: sha256}, "root": <object>}
    tensors/<i>.npy          one .npy array per tensor (numpy's format)

`root` encodes the saved object in JSON: strings, ints, bools and None as
themselves, lists as arrays, and tagged objects for the rest -- {"$float":
"nan"}, {"$tuple": [...]}, {"$dict": [[key, value], ...]} (keys of any
supported type, order kept), {"$odict": ...}, {"$counter": ...}, {"$set":
[...]}, {"$tensor": i, "dtype", "shape", "requires_grad", "parameter",
"device"}.

What is kept: values, dtype, shape, requires_grad, Parameter-ness (a saved
Parameter loads as a Parameter; a state_dict holds plain tensors, so they
load as plain tensors), the device, and object identity within one save
(the same Tensor saved twice loads as one Tensor).  What is not: storage
shared between different tensors (views, slices of one buffer) -- each
tensor is stored on its own and loads with its own contiguous storage --
strides (a transposed tensor loads C-contiguous), autograd history, and
`.grad`.

Loading never runs code from the file: the manifest is JSON, arrays are
read with np.load(allow_pickle=False), and every member is checked
against the manifest's SHA-256 before use.  A file that is not ours (a
torch.save file, random bytes), truncated, or altered raises ValueError
saying which.
"""
import hashlib
import io
import json
import math
import os
import zipfile
from collections import Counter, OrderedDict

import numpy as np

from cextend import _dtype
from cextend._device import DeviceArray
from cextend.tensor import Tensor, _wrap
from cextend import _device
from cextend.device import as_device
from cextend.nn.parameter import Parameter

FORMAT = "cextend.save"
VERSION = 1
MANIFEST = "cextend_manifest.json"
_DATE = (1980, 1, 1, 0, 0, 0)
_DTYPES = {d.name: d.numpy for d in _dtype._BY_NUMPY.values()}


class _Writer:
    def __init__(self):
        self.arrays = []            # (member name, array)
        self.memo = {}              # id(tensor) -> encoded reference (identity within one save)
        self.keep_alive = []

    def encode(self, obj, path):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            obj = float(obj)
            return obj if math.isfinite(obj) else {"$float": repr(obj)}
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, tuple):
            return {"$tuple": [self.encode(v, "%s[%d]" % (path, i)) for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(v, "%s[%d]" % (path, i)) for i, v in enumerate(obj)]
        if isinstance(obj, (set, frozenset)):
            return {"$set": [self.encode(v, path + "{...}") for v in obj]}
        if isinstance(obj, dict):
            tag = "$counter" if isinstance(obj, Counter) else "$odict" if isinstance(obj, OrderedDict) else "$dict"
            return {tag: [[self.encode(k, path + ".key"), self.encode(v, "%s[%r]" % (path, k))]
                          for k, v in obj.items()]}
        hint = " (save module.state_dict() instead of the Module)" if hasattr(obj, "state_dict") else ""
        raise TypeError("cextend.save: cannot save an object of type %s at %s%s; it stores Tensors, "
                        "numbers, strings, None and lists/tuples/dicts/sets of those"
                        % (type(obj).__name__, path or "the top level", hint))

    def tensor(self, t, path):
        if id(t) in self.memo:
            return self.memo[id(t)]
        data = t._data
        device = "cuda" if type(data) is DeviceArray else "cpu"
        host = data.to_host() if device == "cuda" else data
        name = "tensors/%d.npy" % len(self.arrays)
        self.arrays.append((name, np.array(host, order="C", copy=None)))   # keeps 0-d arrays 0-d
        ref = {"$tensor": len(self.arrays) - 1, "dtype": t.dtype.name, "shape": list(host.shape),
               "requires_grad": bool(t.requires_grad), "parameter": isinstance(t, Parameter), "device": device}
        self.memo[id(t)] = ref
        self.keep_alive.append(t)
        return ref


def _npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save obj (Tensors, state_dicts, optimizer state_dicts, nested lists/tuples/dicts of
    tensors and Python scalars) to f, a path or a binary file object.

    See the module docstring for the format and what is (not) preserved.
    `pickle_module` / `pickle_protocol` are torch's keywords; cextend never
    pickles, so pickle_module must be left unset.
    """
    if pickle_module is not None:
        raise ValueError("cextend.save does not pickle; leave pickle_module unset")
    writer = _Writer()
    root = writer.encode(obj, "")
    members = OrderedDict((name, _npy_bytes(array)) for name, array in writer.arrays)
    manifest = {"format": FORMAT, "version": VERSION,
                "members": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()},
                "root": root}
    manifest_bytes = json.dumps(manifest, allow_nan=False, separators=(",", ":")).encode("utf-8")
    target = os.fspath(f) if isinstance(f, (str, os.PathLike)) else f
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in [(MANIFEST, manifest_bytes)] + list(members.items()):
            info = zipfile.ZipInfo(name, date_time=_DATE)
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)


def _bad(problem):
    return ValueError("cextend.load: %s" % problem)


def _open_archive(f):
    """The zip archive in f, or a ValueError that says what f is instead."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            raw = handle.read()
    else:
        if not hasattr(f, "read"):
            raise TypeError("cextend.load: f must be a path or a binary file object, got %s" % type(f).__name__)
        raw = f.read() if not isinstance(f, io.TextIOBase) else ""
        if isinstance(raw, str):
            raise TypeError("cextend.load: the file object must be opened in binary mode ('rb')")
    if raw[:1] == b"\x80" and raw[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise _bad("this is a pickle file (torch.save's legacy format); cextend.load never unpickles, "
                   "because unpickling can run code from the file. Load it with torch and re-save the "
                   "tensors with cextend.save")
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        if raw[:4] == b"PK\x03\x04":
            raise _bad("the zip archive is truncated or damaged (%d bytes)" % len(raw)) from None
        raise _bad("not a cextend.save file: not a zip archive (%d bytes, starting %r)"
                   % (len(raw), raw[:8])) from None
    return archive


def _read_members(archive):
    names = archive.namelist()
    if MANIFEST not in names:
        if any(n.endswith("data.pkl") for n in names):
            raise _bad("this is a torch.save file (it holds a pickle, data.pkl); cextend.load never "
                       "unpickles, because unpickling can run code from the file. Load it with torch and "
                       "re-save the tensors with cextend.save")
        raise _bad("not a cextend.save file: the zip archive has no %s" % MANIFEST)
    contents = {}
    for info in archive.infolist():
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
            raise _bad("member %r is compressed; cextend.save never compresses, so the file was altered"
                       % info.filename)
        if info.filename in contents:
            raise _bad("member %r appears twice in the archive" % info.filename)
        try:
            contents[info.filename] = archive.read(info)
        except (zipfile.BadZipFile, EOFError, OSError) as error:
            raise _bad("member %r is damaged or truncated (%s)" % (info.filename, error)) from None
    return contents


def _parse_manifest(data):
    try:
        manifest = json.loads(data.decode("utf-8"), parse_constant=lambda c: _reject_constant(c))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise _bad("the manifest is not valid JSON (%s)" % error) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _bad("not a cextend.save file: the manifest does not name the format %r" % FORMAT)
    if manifest.get("version") != VERSION:
        raise _bad("file format version %r is not supported (this cextend reads version %d)"
                   % (manifest.get("version"), VERSION))
    members = manifest.get("members")
    if not isinstance(members, dict) or not all(isinstance(v, str) for v in members.values()) \
            or "root" not in manifest:
        raise _bad("the manifest lacks its member list or its root object")
    return manifest


def _reject_constant(name):
    raise json.JSONDecodeError("non-standard constant %s" % name, name, 0)


class _Reader:
    def __init__(self, manifest, contents, map_location):
        self.members = manifest["members"]
        self.contents = contents
        self.map_location = map_location
        self.tensors = {}

    def decode(self, obj, depth=0):
        if depth > 1000:
            raise _bad("the manifest nests objects more than 1000 deep")
        if obj is None or isinstance(obj, (bool, str, int, float)):
            return obj
        if isinstance(obj, list):
            return [self.decode(v, depth + 1) for v in obj]
        if not isinstance(obj, dict) or len(obj) == 0:
            raise _bad("the manifest holds an unknown entry %r" % (obj,))
        if "$tensor" in obj:
            return self.tensor(obj)
        if len(obj) != 1:
            raise _bad("the manifest holds an unknown entry with keys %s" % sorted(obj))
        (tag, value), = obj.items()
        if tag == "$float":
            if value not in ("nan", "inf", "-inf"):
                raise _bad("bad float value %r in the manifest" % (value,))
            return float(value)
        if tag not in ("$tuple", "$set", "$dict", "$odict", "$counter"):
            raise _bad("the manifest holds an unknown tag %r" % tag)
        if not isinstance(value, list):
            raise _bad("the manifest's %s entry is not a list" % tag)
        if tag == "$tuple":
            return tuple(self.decode(v, depth + 1) for v in value)
        if tag == "$set":
            return set(self.decode(v, depth + 1) for v in value)
        if tag in ("$dict", "$odict", "$counter"):
            pairs = []
            for pair in value:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise _bad("a dict entry in the manifest is not a [key, value] pair")
                key = self.decode(pair[0], depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise _bad("a dict key in the manifest is unhashable (%s)" % type(key).__name__) from None
                pairs.append((key, self.decode(pair[1], depth + 1)))
            return {"$dict": dict, "$odict": OrderedDict, "$counter": lambda p: Counter(dict(p))}[tag](pairs)
        raise _bad("the manifest holds an unknown tag %r" % tag)

    def tensor(self, ref):
        index = ref.get("$tensor")
        if not isinstance(index, int) or isinstance(index, bool):
            raise _bad("a tensor entry has a bad index %r" % (index,))
        if index in self.tensors:
            return self.tensors[index]
        name = "tensors/%d.npy" % index
        if name not in self.contents or name not in self.members:
            raise _bad("tensor %d is missing from the archive" % index)
        data = self.contents[name]
        if hashlib.sha256(data).hexdigest() != self.members[name]:
            raise _bad("%s does not match its checksum in the manifest: the file was altered" % name)
        try:
            array = np.load(io.BytesIO(data), allow_pickle=False)
        except ValueError as error:
            raise _bad("%s is not a plain numeric .npy array (%s)" % (name, error)) from None
        dtype = _DTYPES.get(ref.get("dtype"))
        if dtype is None or array.dtype.newbyteorder("=") != dtype:
            raise _bad("%s holds %s, but the manifest says %r" % (name, array.dtype, ref.get("dtype")))
        if list(array.shape) != ref.get("shape"):
            raise _bad("%s has shape %s, but the manifest says %s" % (name, list(array.shape), ref.get("shape")))
        array = np.array(array, dtype=dtype, order="C")          # a native-order, writable copy
        tensor = _wrap(array)
        if _map_device(ref.get("device", "cpu"), self.map_location) == "cuda":
            _require_cuda()
            tensor = _wrap(DeviceArray.from_host(array))
        requires_grad = bool(ref.get("requires_grad"))
        if ref.get("parameter"):
            tensor = Parameter(tensor, requires_grad=requires_grad)
        elif requires_grad:
            tensor.requires_grad_(True)
        self.tensors[index] = tensor
        return tensor


def _map_device(saved, map_location):
    """Where a tensor saved on `saved` goes: map_location None (where it was), a device/str, or a dict
    {saved: new}."""
    if map_location is None:
        target = saved
    elif isinstance(map_location, dict):
        target = map_location.get(saved, map_location.get(saved + ":0", saved))
    elif isinstance(map_location, str) or type(map_location).__name__ == "device":
        target = map_location
    else:
        raise TypeError("cextend.load: map_location must be None, a device, a string or a dict, not %s"
                        % type(map_location).__name__)
    return as_device(target).type


def _require_cuda():
    if not _device.available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but cextend.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use cextend.load with "
                           "map_location='cpu' to map your storages to the CPU. (%s)" % _device.unavailable_reason())


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what cextend.save wrote, from a path or a binary file object.

    map_location: None (tensors return to the device they were saved from),
    a device or string ("cpu"), or a dict {"cuda:0": "cpu"}.  weights_only
    is accepted for torch's sake and changes nothing: cextend.load only
    ever reads data, never code.  A file that is not a cextend.save file
    (a torch.save file, random bytes), truncated or altered raises
    ValueError naming the problem.
    """
    if pickle_module is not None or pickle_load_args:
        raise ValueError("cextend.load does not unpickle; pickle_module and pickle arguments are not accepted")
    if mmap:
        raise ValueError("cextend.load: mmap=True is not supported (arrays are read into memory)")
    archive = _open_archive(f)
    with archive:
        contents = _read_members(archive)
    manifest = _parse_manifest(contents[MANIFEST])
    expected = set(manifest["members"]) | {MANIFEST}
    if set(contents) != expected:
        extra, missing = sorted(set(contents) - expected), sorted(expected - set(contents))
        raise _bad("the archive's members do not match its manifest (unexpected: %s; missing: %s)"
                   % (extra or "none", missing or "none"))
    return _Reader(manifest, contents, map_location).decode(manifest["root"])
