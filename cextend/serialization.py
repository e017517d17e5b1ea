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
"device"}.  Containers nest at most MAX_DEPTH deep (save refuses deeper
objects, load deeper files).

What is kept: values, dtype, shape, requires_grad, Parameter-ness (a saved
Parameter loads as a Parameter; a state_dict holds plain tensors, so they
load as plain tensors), the device, and object identity within one save
(the same Tensor saved twice loads as one Tensor).  What is not: storage
shared between different tensors (views, slices of one buffer) -- each
tensor is stored on its own and loads with its own contiguous storage --
strides (a transposed tensor loads C-contiguous), autograd history, and
`.grad`.

Saving to a path is atomic: the archive is written to a temporary file in
the same folder, synced, and renamed over the target, so a crash mid-save
leaves the previous file as it was.

Loading never runs code from the file: the manifest is JSON, .npy headers
are parsed without unpickling, and every member is checked against its
zip CRC and the manifest's SHA-256 before use.  Its memory is bounded by
the file: the zip's central directory is checked (members stored, within
the file, not overlapping, no name twice) before any member is read, and
a tensor's declared dtype and shape must account for exactly its member's
bytes before its array is allocated.  A file that is not ours (a
torch.save file, a pickle, random bytes), truncated, or altered raises
ValueError saying which.
"""
import contextlib
import hashlib
import io
import json
import math
import os
import re
import stat
import struct
import tempfile
import zipfile
import zlib
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
# Containers within containers.  State dicts and optimizer state nest 3 or 4
# deep; the cap keeps load's recursion (and json's) far from Python's limit,
# so a deep file is a clear ValueError, not a RecursionError.
MAX_DEPTH = 100
_DATE = (1980, 1, 1, 0, 0, 0)
_DTYPES = {d.name: d.numpy for d in _dtype._BY_NUMPY.values()}
# The dtype objects cextend's arrays carry: its kernels compare dtypes by identity, so a loaded
# array must have these, not an equal dtype that the .npy header produced.
_CANONICAL = {d: d for d in _DTYPES.values()}
_TENSOR_KEYS = {"$tensor", "dtype", "shape", "requires_grad", "parameter", "device", "ndarray"}
_SHA256_HEX = re.compile(r"[0-9a-f]{64}\Z")
_NPY_MAX_HEADER = 10000        # numpy's own limit for headers it parses without trusting the file
_CHUNK = 1 << 20


class _Writer:
    def __init__(self):
        self.arrays = []            # (member name, array)
        self.memo = {}              # id(tensor) -> encoded reference (identity within one save)
        self.keep_alive = []

    def encode(self, obj, path, depth=0):
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
        if isinstance(obj, np.ndarray) and obj.dtype in _CANONICAL:
            return self.ndarray(obj)
        if isinstance(obj, (tuple, list, set, frozenset, dict)) and depth >= MAX_DEPTH:
            # What save writes, load must read: load refuses files nested deeper than this.
            raise ValueError("cextend.save: the object nests containers more than %d deep (at %s); "
                             "cextend.load refuses deeper files (does a container hold itself?)"
                             % (MAX_DEPTH, path or "the top level"))
        inner = depth + 1
        if isinstance(obj, tuple):
            return {"$tuple": [self.encode(v, "%s[%d]" % (path, i), inner) for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(v, "%s[%d]" % (path, i), inner) for i, v in enumerate(obj)]
        if isinstance(obj, (set, frozenset)):
            return {"$set": [self.encode(v, path + "{...}", inner) for v in obj]}
        if isinstance(obj, dict):
            tag = "$counter" if isinstance(obj, Counter) else "$odict" if isinstance(obj, OrderedDict) else "$dict"
            return {tag: [[self.encode(k, path + ".key", inner), self.encode(v, "%s[%r]" % (path, k), inner)]
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

    def ndarray(self, array):
        """A numpy array, stored as a tensor's data is (.npy, no pickle) and loaded as an array."""
        if id(array) in self.memo:
            return self.memo[id(array)]
        self.arrays.append(("tensors/%d.npy" % len(self.arrays), np.array(array, order="C", copy=None)))
        ref = {"$tensor": len(self.arrays) - 1, "dtype": _dtype.from_numpy(array.dtype).name,
               "shape": list(array.shape), "ndarray": True}
        self.memo[id(array)] = ref
        self.keep_alive.append(array)
        return ref


def _npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save obj (Tensors, state_dicts, optimizer state_dicts, nested lists/tuples/dicts of
    tensors and Python scalars) to f, a path or a binary file object.

    A path is replaced atomically: a crash mid-save leaves the previous file
    intact.  See the module docstring for the format and what is (not)
    preserved.  `pickle_module` / `pickle_protocol` are torch's keywords;
    cextend never pickles, so pickle_module must be left unset.
    """
    if pickle_module is not None:
        raise ValueError("cextend.save does not pickle; leave pickle_module unset")
    # Everything that can go wrong with the object goes wrong here, before any file is touched.
    writer = _Writer()
    root = writer.encode(obj, "")
    members = OrderedDict((name, _npy_bytes(array)) for name, array in writer.arrays)
    manifest = {"format": FORMAT, "version": VERSION,
                "members": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()},
                "root": root}
    manifest_bytes = json.dumps(manifest, allow_nan=False, separators=(",", ":")).encode("utf-8")
    entries = [(MANIFEST, manifest_bytes)] + list(members.items())

    def write_archive(target):
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as archive:
            for name, data in entries:
                info = zipfile.ZipInfo(name, date_time=_DATE)
                info.external_attr = 0o644 << 16
                archive.writestr(info, data)

    if isinstance(f, (str, os.PathLike)):
        _replace_atomically(os.fspath(f), write_archive)
    else:
        write_archive(f)


def _replace_atomically(path, write):
    """Run write(handle) on a temporary file beside path, make it durable, then rename it over path."""
    if os.path.islink(path):
        path = os.path.realpath(path)           # replace what the link points to, keep the link
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(path).st_mode):
            # A device or a FIFO (/dev/null, a pipe): renaming over it would be wrong, and
            # there is no previous checkpoint to protect; write through it as open() would.
            with open(path, "wb") as handle:
                write(handle)
            return
    directory = os.path.dirname(os.path.abspath(path))
    mode = _mode_for_new_file(path)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)    # mkstemp makes 0600; give what open() would have
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _mode_for_new_file(path):
    """The permissions the saved file gets: the replaced file's, else what open(path, 'wb') would give."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~_current_umask()


def _current_umask():
    # Linux reports the umask without changing it; os.umask can only be read by setting it, which
    # would briefly apply to files other threads create.
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_directory(directory):
    """Make the rename durable.  Best effort: some systems and filesystems cannot sync a folder."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- loading ------------------------------------------------------------------------------------

def _bad(problem):
    return ValueError("cextend.load: %s" % problem)


_NEVER_UNPICKLES = ("cextend.load never unpickles, because unpickling can run code from the file. Load it "
                    "with torch and re-save the tensors with cextend.save")


@contextlib.contextmanager
def _opened(f):
    """f as a seekable binary file.  A path is read in place; a file object is read from where it stands."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            yield handle
        return
    if not hasattr(f, "read"):
        raise TypeError("cextend.load: f must be a path or a binary file object, got %s" % type(f).__name__)
    raw = f.read() if not isinstance(f, io.TextIOBase) else ""
    if isinstance(raw, str):
        raise TypeError("cextend.load: the file object must be opened in binary mode ('rb')")
    yield io.BytesIO(raw if raw is not None else b"")


class _Member:
    """One archive member, where its bytes lie in the file."""

    def __init__(self, info):
        self.name, self.raw_name = info.filename, info.orig_filename
        self.header_offset, self.size, self.crc = info.header_offset, info.file_size, info.CRC
        self.encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
        # Refined once the local header is read (its extra field may be longer than the directory's).
        self.data_offset = self.header_offset + 30 + len(self.raw_name.encode(self.encoding, errors="replace"))

    @property
    def end(self):
        return self.data_offset + self.size


class _Archive:
    """The members of a zip file, checked for sanity from its directory before any member is read."""

    def __init__(self, handle):
        self.handle = handle
        handle.seek(0, os.SEEK_END)
        self.file_size = handle.tell()
        handle.seek(0)
        start = handle.read(8)
        _refuse_pickle(start)
        infos, self.directory_offset = _read_central_directory(handle, start, self.file_size)
        _refuse_foreign_archives([info.filename for info in infos])
        self.members = _check_directory(infos, self.directory_offset)
        for member in sorted(self.members.values(), key=lambda m: m.header_offset):
            self._check_local_header(member)
        _refuse_overlaps(self.members.values(), self.directory_offset, "the local headers")

    def _check_local_header(self, member):
        self.handle.seek(member.header_offset)
        header = self.handle.read(30)
        if len(header) < 30:
            raise _bad("member %r's header lies past the end of the file: the file is truncated" % member.name)
        (signature, _, flags, method, _, _, crc, compressed, size,
         name_length, extra_length) = struct.unpack("<IHHHHHIIIHH", header)
        if signature != 0x04034B50:
            raise _bad("member %r is damaged or truncated (no zip header at offset %d)"
                       % (member.name, member.header_offset))
        name = self.handle.read(name_length).decode(member.encoding, errors="replace")
        if name != member.raw_name:
            raise _bad("member %r is named %r in its local header: the zip directory and the data disagree"
                       % (member.name, name))
        if method != zipfile.ZIP_STORED:
            raise _bad("member %r is compressed; cextend.save never compresses, so the file was altered"
                       % member.name)
        # Bit 3: sizes and CRC follow the data (a save to an unseekable stream); 0xFFFFFFFF: in zip64 extras.
        if not flags & 0x08 and 0xFFFFFFFF not in (compressed, size) \
                and (compressed, size, crc) != (member.size, member.size, member.crc):
            raise _bad("member %r has sizes that lie: its local header says %d bytes (CRC %08x), the zip "
                       "directory %d bytes (CRC %08x)" % (member.name, size, crc, member.size, member.crc))
        member.data_offset = member.header_offset + 30 + name_length + extra_length

    def read(self, member):
        """A member's bytes (the manifest: small next to the file), checked against the zip CRC."""
        self.handle.seek(member.data_offset)
        data = self.handle.read(member.size)
        if len(data) != member.size or zlib.crc32(data) != member.crc:
            raise _bad("member %r is damaged or truncated (Bad CRC-32)" % member.name)
        return data

    def read_head(self, member, limit):
        self.handle.seek(member.data_offset)
        return self.handle.read(min(member.size, limit))

    def read_into(self, member, offset, view):
        """Fill the byte view from the member's bytes at offset (no intermediate copy)."""
        self.handle.seek(member.data_offset + offset)
        filled = 0
        while filled < len(view):
            count = self.handle.readinto(view[filled:])
            if not count:
                raise _bad("member %r is damaged or truncated (it ends early)" % member.name)
            filled += count

    def digests(self, member):
        """(crc32, sha256 hex) of a member, read in chunks so any member fits in memory."""
        self.handle.seek(member.data_offset)
        crc, sha, left = 0, hashlib.sha256(), member.size
        while left:
            chunk = self.handle.read(min(left, _CHUNK))
            if not chunk:
                break
            crc, left = zlib.crc32(chunk, crc), left - len(chunk)
            sha.update(chunk)
        return (crc if not left else None), sha.hexdigest()


def _refuse_pickle(start):
    # Protocol 2 and later start with PROTO (0x80) and the protocol number; torch's legacy format
    # is a protocol-2 pickle, and so is any pickle.dump / torch.save(..., zip=False) made since 2.x.
    if start[:1] == b"\x80" and start[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise _bad("this is a pickle file (torch.save's legacy format, or pickle.dump's); " + _NEVER_UNPICKLES)


def _read_central_directory(handle, start, file_size):
    handle.seek(0)
    try:
        with zipfile.ZipFile(handle) as archive:
            return archive.infolist(), archive.start_dir
    # zipfile parses the untrusted directory with struct, slicing and decoding, and documents only
    # BadZipFile; whatever it raises, the file is not an archive we can read.
    except Exception as error:
        if start[:4] == b"PK\x03\x04":
            raise _bad("the zip archive is truncated or damaged (%d bytes; %s)" % (file_size, error)) from None
        raise _bad("not a cextend.save file: not a zip archive (%d bytes, starting %r)"
                   % (file_size, start)) from None


def _refuse_foreign_archives(names):
    if MANIFEST in names:
        return
    if any(n.endswith("data.pkl") for n in names):
        raise _bad("this is a torch.save file (it holds a pickle, data.pkl); " + _NEVER_UNPICKLES)
    raise _bad("not a cextend.save file: the zip archive has no %s" % MANIFEST)


def _check_directory(infos, directory_offset):
    """The members as the zip directory declares them, refused unless they fit the file one after another."""
    members = {}
    for info in infos:
        name = info.filename
        if name in members:
            raise _bad("member %r appears twice in the archive" % name)
        if info.flag_bits & 0x01:
            raise _bad("member %r is encrypted; cextend.save never encrypts, so the file was altered" % name)
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
            raise _bad("member %r is compressed; cextend.save never compresses, so the file was altered" % name)
        members[name] = member = _Member(info)
        # A stored member is its own bytes: it cannot hold more than the file does.
        if member.header_offset < 0 or member.end > directory_offset:
            raise _bad("member %r declares %d bytes at offset %d, past the %d bytes of member data the file "
                       "holds: its size lies or the file is truncated"
                       % (name, member.size, member.header_offset, directory_offset))
    declared = sum(m.end - m.header_offset for m in members.values())
    if declared > directory_offset:
        raise _bad("the members declare %d bytes in all, more than the %d bytes of member data the file holds: "
                   "members overlap or their sizes lie" % (declared, directory_offset))
    _refuse_overlaps(members.values(), directory_offset, "the zip directory")
    return members


def _refuse_overlaps(members, directory_offset, measure):
    # Overlapping stored members are how a small zip expands into gigabytes when read.
    previous = None
    for member in sorted(members, key=lambda m: m.header_offset):
        if previous is not None and member.header_offset < previous.end:
            raise _bad("members %r and %r overlap in the file (judging by %s): a zip bomb or a damaged file"
                       % (previous.name, member.name, measure))
        if member.end > directory_offset:
            raise _bad("member %r runs into the zip directory: its size lies or the file is damaged" % member.name)
        previous = member


def _parse_manifest(data):
    try:
        manifest = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        raise _bad("the manifest nests objects more than %d deep, cextend.load's limit" % MAX_DEPTH) from None
    except ValueError as error:     # JSONDecodeError, UnicodeDecodeError, an int of too many digits
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
    for name, digest in members.items():
        if not _SHA256_HEX.match(digest):
            raise _bad("the manifest's checksum for %r is not a SHA-256 hex digest" % name)
    return manifest


def _reject_constant(name):
    raise json.JSONDecodeError("non-standard constant %s" % name, name, 0)


def _hashable(value, what):
    try:
        hash(value)
    except TypeError:
        raise _bad("%s in the manifest is unhashable (%s)" % (what, type(value).__name__)) from None
    return value


class _NpyHeader:
    """The dtype, shape and layout a .npy member declares, and how many bytes its header takes."""

    def __init__(self, name, head):
        fp = io.BytesIO(head)
        # numpy's parser (ast.literal_eval, its tokenizer fallback, np.dtype) meets arbitrary text
        # here and raises whatever that text provokes; any failure means the header is not one
        # np.save wrote.
        try:
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(fp, _NPY_MAX_HEADER)
            elif version == (2, 0):
                shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(fp, _NPY_MAX_HEADER)
            else:
                raise ValueError("version %d.%d, which np.save uses only for dtypes cextend has not" % version)
        except Exception as error:
            raise _bad("%s is not a plain numeric .npy array (its header: %s)" % (name, error)) from None
        self.header_size, self.shape, self.fortran_order, self.dtype = fp.tell(), list(shape), fortran_order, dtype
        self.native = _CANONICAL.get(dtype.newbyteorder("="))    # np.save writes either byte order
        if self.native is None:
            raise _bad("%s is not a plain numeric .npy array (it holds %s)" % (name, dtype))
        if any(d < 0 for d in shape):
            raise _bad("%s declares a negative dimension in shape %s" % (name, self.shape))
        self.data_size = math.prod(shape) * dtype.itemsize

    def check_against(self, member, ref):
        name = member.name
        if self.header_size + self.data_size != member.size:
            raise _bad("%s declares shape %s of %s (%d bytes of data), but the member holds %d bytes after its "
                       "header" % (name, self.shape, self.native, self.data_size, member.size - self.header_size))
        declared = ref.get("dtype")
        # (np.dtype compares None as float64, so an unknown name must not reach the comparison.)
        if not isinstance(declared, str) or declared not in _DTYPES or _DTYPES[declared] != self.native:
            raise _bad("%s holds %s, but the manifest says %r" % (name, self.native, declared))
        if self.shape != ref.get("shape"):
            raise _bad("%s has shape %s, but the manifest says %s" % (name, self.shape, ref.get("shape")))


def _inner(depth):
    """The depth of a container's items, refused past MAX_DEPTH as save refuses it."""
    if depth >= MAX_DEPTH:
        raise _bad("the manifest nests containers more than %d deep, cextend.load's limit" % MAX_DEPTH)
    return depth + 1


class _Reader:
    def __init__(self, manifest, archive, map_location):
        self.digests = manifest["members"]
        self.archive = archive
        self.map_location = map_location
        self.tensors = {}           # index -> (ref, tensor): identity within one save

    def decode(self, obj, depth=0):
        if obj is None or isinstance(obj, (bool, str, int, float)):
            return obj
        if isinstance(obj, list):
            inner = _inner(depth)
            return [self.decode(v, inner) for v in obj]
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
        inner = _inner(depth)
        if tag == "$tuple":
            return tuple([self.decode(v, inner) for v in value])
        if tag == "$set":
            return {_hashable(self.decode(v, inner), "a set entry") for v in value}
        pairs = []
        for pair in value:
            if not isinstance(pair, list) or len(pair) != 2:
                raise _bad("a dict entry in the manifest is not a [key, value] pair")
            key = _hashable(self.decode(pair[0], inner), "a dict key")
            pairs.append((key, self.decode(pair[1], inner)))
        return {"$dict": dict, "$odict": OrderedDict, "$counter": lambda p: Counter(dict(p))}[tag](pairs)

    def tensor(self, ref):
        index = ref.get("$tensor")
        if not isinstance(index, int) or isinstance(index, bool):
            raise _bad("a tensor entry has a bad index %r" % (index,))
        if not set(ref) <= _TENSOR_KEYS:
            raise _bad("tensor %d's entry has unknown keys %s" % (index, sorted(set(ref) - _TENSOR_KEYS)))
        if index in self.tensors:
            first, tensor = self.tensors[index]
            if ref != first:
                raise _bad("tensor %d is described two different ways in the manifest" % index)
            return tensor
        name = "tensors/%d.npy" % index
        if name not in self.archive.members or name not in self.digests:
            raise _bad("tensor %d is missing from the archive" % index)
        device = ref.get("device", "cpu")
        if device not in ("cpu", "cuda"):
            raise _bad("tensor %d was saved on an unknown device %r" % (index, device))
        for flag in ("requires_grad", "parameter", "ndarray"):
            if not isinstance(ref.get(flag, False), bool):
                raise _bad("tensor %d's %s is %r, not true or false" % (index, flag, ref[flag]))
        if ref.get("ndarray", False) and (ref.get("requires_grad") or ref.get("parameter") or device != "cpu"):
            raise _bad("tensor %d is a numpy array, which cannot require gradients, be a Parameter or live on "
                       "a device" % index)
        array = self.read_array(name, ref)
        if ref.get("ndarray", False):
            self.tensors[index] = (ref, array)
            return array
        if ref.get("requires_grad", False) and array.dtype.kind not in "fV":     # V: bfloat16
            raise _bad("tensor %d is %s and cannot require gradients, but the manifest says it does"
                       % (index, array.dtype))
        tensor = _wrap(array)
        if _map_device(device, self.map_location) == "cuda":
            _require_cuda()
            tensor = _wrap(DeviceArray.from_host(array))
        requires_grad = ref.get("requires_grad", False)
        if ref.get("parameter", False):
            tensor = Parameter(tensor, requires_grad=requires_grad)
        elif requires_grad:
            tensor.requires_grad_(True)
        self.tensors[index] = (ref, tensor)
        return tensor

    def read_array(self, name, ref):
        """The member's array, allocated only once its header accounts for exactly the member's bytes."""
        member = self.archive.members[name]
        head = self.archive.read_head(member, 12 + _NPY_MAX_HEADER)
        try:
            header = _NpyHeader(name, head)
            header.check_against(member, ref)
            problem = None
        except ValueError as error:
            problem = error
        if problem is not None:
            self.verify(member)          # a damaged or altered member says so, before what it claims
            raise problem
        stored = header.native if header.dtype == header.native else header.dtype
        array = np.empty(header.shape[::-1] if header.fortran_order else header.shape, dtype=stored)
        header_bytes = head[:header.header_size]
        crc, sha = zlib.crc32(header_bytes), hashlib.sha256(header_bytes)
        if array.nbytes:
            view = memoryview(array).cast("B")
            self.archive.read_into(member, header.header_size, view)
            crc = zlib.crc32(view, crc)
            sha.update(view)
        if crc != member.crc:
            raise _bad("member %r is damaged or truncated (Bad CRC-32)" % name)
        if sha.hexdigest() != self.digests[name]:
            raise _bad("%s does not match its checksum in the manifest: the file was altered" % name)
        if header.native == np.bool_:
            array = array.view(np.uint8) != 0    # only 0 and 1 are bools; a crafted byte must not slip through
        if header.fortran_order:
            array = array.T
        return np.array(array, dtype=header.native, order="C", copy=None)   # no copy unless byte order or layout differ

    def verify(self, member):
        crc, digest = self.archive.digests(member)
        if crc != member.crc:
            raise _bad("member %r is damaged or truncated (Bad CRC-32)" % member.name)
        if digest != self.digests[member.name]:
            raise _bad("%s does not match its checksum in the manifest: the file was altered" % member.name)

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
    (a torch.save file, a pickle, random bytes), truncated, altered, or
    built to exhaust memory raises ValueError naming the problem.
    """
    if pickle_module is not None or pickle_load_args:
        raise ValueError("cextend.load does not unpickle; pickle_module and pickle arguments are not accepted")
    if mmap:
        raise ValueError("cextend.load: mmap=True is not supported (arrays are read into memory)")
    with _opened(f) as handle:
        archive = _Archive(handle)
        manifest = _parse_manifest(archive.read(archive.members[MANIFEST]))
        expected = set(manifest["members"]) | {MANIFEST}
        if set(archive.members) != expected:
            extra, missing = sorted(set(archive.members) - expected), sorted(expected - set(archive.members))
            raise _bad("the archive's members do not match its manifest (unexpected: %s; missing: %s)"
                       % (extra or "none", missing or "none"))
        return _Reader(manifest, archive, map_location).decode(manifest["root"])
