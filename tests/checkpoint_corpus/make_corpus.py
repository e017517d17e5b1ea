"""Regenerate the malformed checkpoints beside this script, byte for byte.

    .venv/bin/python tests/checkpoint_corpus/make_corpus.py

Each file starts from one valid cextend.save (VALID, deterministic: fixed
zip timestamps) and breaks one thing; CASES maps the file name to its
builder and to a fragment of the ValueError cextend.load must raise.
Where a malicious file would carry correct checksums (the manifest's
SHA-256, the zip CRCs), the builder recomputes them, so the case reaches
the check it is named for instead of stopping at the checksum.

Truncations at every member boundary and the memory bombs (a megabyte or
more) are built by tests/test_serialization_hardening.py itself.
"""
import hashlib
import io
import json
import pathlib
import pickle
import struct
import sys
import warnings
import zipfile
import zlib
from collections import OrderedDict

import numpy as np

import cextend as cx

HERE = pathlib.Path(__file__).resolve().parent
MANIFEST = "cextend_manifest.json"
DATE = (1980, 1, 1, 0, 0, 0)

# zip record layouts (APPNOTE 4.3.7 and 4.3.12): field offsets within a record
LOCAL_SIGNATURE, CENTRAL_SIGNATURE = b"PK\x03\x04", b"PK\x01\x02"
LOCAL_CRC, LOCAL_SIZES = 14, 18
CENTRAL_SIZES, CENTRAL_OFFSET = 20, 42


def valid():
    """The valid checkpoint every case starts from: two tensors and a scalar."""
    buffer = io.BytesIO()
    cx.save({"w": cx.tensor(np.arange(6.0).reshape(2, 3)), "b": cx.tensor(np.array([1, 2], np.int32)), "n": 1},
            buffer)
    return buffer.getvalue()


def members_of(raw):
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        return OrderedDict((name, archive.read(name)) for name in archive.namelist())


def zip_of(members, deflated=()):
    """A zip of (name, bytes) pairs (duplicates allowed) with fixed timestamps: the same bytes every time."""
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w") as archive:
        warnings.simplefilter("ignore", UserWarning)        # zipfile's "Duplicate name" is the point
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=DATE)
            info.compress_type = zipfile.ZIP_DEFLATED if name in deflated else zipfile.ZIP_STORED
            archive.writestr(info, data)
    return out.getvalue()


def with_manifest(change, members=None):
    """The valid checkpoint with change(manifest) applied, re-zipped with fresh CRCs."""
    members = members or members_of(valid())
    manifest = json.loads(members[MANIFEST])
    change(manifest)
    members[MANIFEST] = json.dumps(manifest).encode()
    return zip_of(members.items())


def with_member(name, data, change_manifest=lambda manifest: None):
    """The valid checkpoint with member `name` replaced by data, its SHA-256 in the manifest updated."""
    members = members_of(valid())
    members[name] = data

    def change(manifest):
        manifest["members"][name] = hashlib.sha256(data).hexdigest()
        change_manifest(manifest)
    return with_manifest(change, members)


def central_entry(raw, name):
    """Offset of `name`'s central-directory record."""
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        position = archive.start_dir
    while raw[position:position + 4] == CENTRAL_SIGNATURE:
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", raw, position + 28)
        if raw[position + 46:position + 46 + name_length] == name.encode():
            return position
        position += 46 + name_length + extra_length + comment_length
    raise KeyError(name)


def local_entry(raw, name):
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        return archive.getinfo(name).header_offset


# -- the cases --------------------------------------------------------------------------------

def local_record(name, size, crc):
    return struct.pack("<4sHHHHHIIIHH", LOCAL_SIGNATURE, 20, 0, 0, 0, 0x21, crc, size, size, len(name), 0) + name


def directory_of(records, directory_offset):
    """The central directory and end record for (name, size, crc, local header offset) records."""
    directory = b"".join(struct.pack("<4sHHHHHHIIIHHHHHII", CENTRAL_SIGNATURE, 20, 20, 0, 0, 0, 0x21, crc, size,
                                     size, len(name), 0, 0, 0, 0, 0, offset) + name
                         for name, size, crc, offset in records)
    return directory + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(records), len(records), len(directory),
                                   directory_offset, 0)


def bomb_names(entries):
    return [MANIFEST.encode()] + [b"tensors/%d.npy" % i for i in range(entries - 1)]


def overlapping_members(entries=20, kernel=4096):
    """Stored local headers back to back, each member's data running on to the end of one shared
    block of zeros: every member contains all the later ones, and reading them all reads
    entries * kernel bytes.  (At 1000 entries of 1 MB, cextend.load read 1 GB before it checked.)"""
    names = bomb_names(entries)
    offsets = [sum(30 + len(n) for n in names[:i]) for i in range(entries)]
    end = offsets[-1] + 30 + len(names[-1]) + kernel
    blob, records = bytearray(end), []
    for i in reversed(range(entries)):          # a member's CRC covers the later headers: write those first
        start = offsets[i] + 30 + len(names[i])
        size, crc = end - start, zlib.crc32(memoryview(blob)[start:end])
        blob[offsets[i]:start] = local_record(names[i], size, crc)
        records.insert(0, (names[i], size, crc, offsets[i]))
    return bytes(blob) + directory_of(records, len(blob))


def one_entry_many_records(entries=20, kernel=4096):
    """One stored local entry of zeros and many directory records, under other names, pointing at it."""
    names = bomb_names(entries)
    data = bytes(kernel)
    local = local_record(names[0], kernel, zlib.crc32(data)) + data
    return local + directory_of([(name, kernel, zlib.crc32(data), 0) for name in names], len(local))


def shared_local_entry():
    """Two directory records pointing at the same local entry (the second's own entry unused)."""
    raw = bytearray(valid())
    struct.pack_into("<I", raw, central_entry(bytes(raw), "tensors/1.npy") + CENTRAL_OFFSET,
                     local_entry(bytes(raw), "tensors/0.npy"))
    return bytes(raw)


def duplicate_names():
    members = members_of(valid())
    return zip_of(list(members.items()) + [("tensors/0.npy", members["tensors/0.npy"])])


def size_lies_in_directory():
    """The directory says tensors/0.npy holds 2 GiB (a 1 KB file)."""
    raw = bytearray(valid())
    struct.pack_into("<II", raw, central_entry(bytes(raw), "tensors/0.npy") + CENTRAL_SIZES, 1 << 31, 1 << 31)
    return bytes(raw)


def size_lies_in_local_header():
    """The local header and the directory disagree about tensors/0.npy's size."""
    raw = bytearray(valid())
    offset = local_entry(bytes(raw), "tensors/0.npy")
    size = struct.unpack_from("<I", raw, offset + LOCAL_SIZES)[0]
    struct.pack_into("<II", raw, offset + LOCAL_SIZES, size + 4096, size + 4096)
    return bytes(raw)


def npy(shape, descr="<f8", data=b""):
    """A .npy member with any header, as np.save would lay it out (magic, padded dict, data)."""
    header = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (descr, tuple(shape))
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data


def huge_declared_shape():
    """tensors/0.npy declares 8 TB of float64 (and the manifest agrees); it holds 48 bytes."""
    shape = [1 << 20, 1 << 20]

    def change(manifest):
        manifest["root"]["$dict"][0][1]["shape"] = shape
    return with_member("tensors/0.npy", npy(shape, data=bytes(48)), change)


def garbled_npy_header():
    return with_member("tensors/0.npy", b"\x93NUMPY\x01\x00\x20\x00{'descr': <<garbled>>\n" + bytes(48))


def deep_nesting(depth=900):
    return with_manifest(lambda manifest: manifest.update(root=json.loads("[" * depth + "]" * depth)))


def unhashable_set_entry():
    return with_manifest(lambda manifest: manifest.update(root={"$set": [[1, 2]]}))


def unhashable_tuple_in_set():
    return with_manifest(lambda manifest: manifest.update(root={"$set": [{"$tuple": [1, [2]]}]}))


def unhashable_counter_key():
    return with_manifest(lambda manifest: manifest.update(root={"$counter": [[{"$set": []}, 1]]}))


def unknown_device():
    return with_manifest(lambda manifest: manifest["root"]["$dict"][0][1].update(device="tpu"))


def garbled_manifest():
    members = members_of(valid())
    members[MANIFEST] = members[MANIFEST][:40] + b"\xff\xfe}{][" + members[MANIFEST][40:]
    return zip_of(members.items())


def compressed_member():
    """A deflated member that inflates 1 KB into 1 MB: cextend never compresses, so it is never inflated."""
    members = members_of(with_member("tensors/0.npy", npy([1 << 17], data=bytes(1 << 20)),
                                     lambda manifest: manifest["root"]["$dict"][0][1].update(shape=[1 << 17])))
    return zip_of(members.items(), deflated={"tensors/0.npy"})


def legacy_torch_pickle():
    """torch.save's pre-1.6 layout: a stream of protocol-2 pickles (magic number, version, sys info, ...)."""
    out = io.BytesIO()
    for part in (0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True},
                 {"w": [1.0, 2.0]}):
        pickle.dump(part, out, protocol=2)
    return out.getvalue()


def plain_pickle():
    return pickle.dumps({"w": [1.0, 2.0], "n": 1}, protocol=5)


def torch_zip():
    """torch.save's zip layout: archive/data.pkl beside the storages."""
    return zip_of([("archive/data.pkl", plain_pickle()), ("archive/version", b"3\n"),
                   ("archive/data/0", bytes(8))])


CASES = {
    "overlapping_members.cx": (overlapping_members, "overlap"),
    "one_entry_many_records.cx": (one_entry_many_records, "overlap"),
    "shared_local_entry.cx": (shared_local_entry, "members 'tensors/0.npy' and 'tensors/1.npy' overlap in the file"),
    "duplicate_names.cx": (duplicate_names, "member 'tensors/0.npy' appears twice in the archive"),
    "size_lies_in_directory.cx": (size_lies_in_directory, "member 'tensors/0.npy' declares 2147483648 bytes"),
    "size_lies_in_local_header.cx": (size_lies_in_local_header, "member 'tensors/0.npy' has sizes that lie"),
    "huge_declared_shape.cx": (huge_declared_shape,
                               "tensors/0.npy declares shape [1048576, 1048576] of float64 (8796093022208 bytes"),
    "garbled_npy_header.cx": (garbled_npy_header, "tensors/0.npy is not a plain numeric .npy array"),
    "deep_nesting.cx": (deep_nesting, "nests containers more than 100 deep"),
    "unhashable_set_entry.cx": (unhashable_set_entry, "a set entry in the manifest is unhashable (list)"),
    "unhashable_tuple_in_set.cx": (unhashable_tuple_in_set, "a set entry in the manifest is unhashable (tuple)"),
    "unhashable_counter_key.cx": (unhashable_counter_key, "a dict key in the manifest is unhashable (set)"),
    "unknown_device.cx": (unknown_device, "tensor 0 was saved on an unknown device 'tpu'"),
    "garbled_manifest.cx": (garbled_manifest, "the manifest is not valid JSON"),
    "compressed_member.cx": (compressed_member, "member 'tensors/0.npy' is compressed"),
    "legacy_torch_pickle.pt": (legacy_torch_pickle, "this is a pickle file"),
    "plain_pickle.pkl": (plain_pickle, "this is a pickle file"),
    "torch_zip.pt": (torch_zip, "this is a torch.save file (it holds a pickle, data.pkl)"),
}


def main():
    for name, (build, _) in CASES.items():
        (HERE / name).write_bytes(build())
    print("wrote %d files to %s" % (len(CASES), HERE), file=sys.stderr)


if __name__ == "__main__":
    main()
