"""Storage: the memory tensors view, for untyped_storage(), storage_offset(),
pickling and deepcopy.

A tensor's data is a numpy array; its storage is the array at the root of
the array's `.base` chain (the allocation every view of it shares).  Two
tensors share storage exactly when their roots are the same object, and a
view is (root, byte offset, shape, strides).  deepcopy copies each root
once per deepcopy and rebuilds every view over the copy, so tensors that
shared memory before share it after, as torch's do.  Pickling copies each
tensor's values on their own (torch's pickle does not keep sharing either).

Tensor's methods for these are attached here, as the engine attaches
backward: tensor.py stays the data structure.
"""
import copy

import numpy as np

from cextend._device import DeviceArray
from cextend.nn.parameter import Parameter
from cextend.tensor import Tensor, _wrap


def root_of(array):
    """The array that owns the memory `array` views (itself if it owns it)."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root


def _address(array):
    return array.__array_interface__["data"][0]


def layout_over_root(array):
    """(root, byte offset, shape, byte strides) if array can be rebuilt as a view of a C-contiguous root,
    else None (a root that is itself strided, or memory numpy does not own)."""
    root = root_of(array)
    if root is array or not root.flags.c_contiguous or root.base is not None:
        return None
    return root, _address(array) - _address(root), array.shape, array.strides


def view_over(root, offset, shape, strides, dtype):
    return np.ndarray(shape, dtype=dtype, buffer=root, offset=offset, strides=strides)


class UntypedStorage:
    """torch.UntypedStorage as far as views need it: the bytes all views of one allocation share."""

    __slots__ = ("_root", "_device")

    def __init__(self, root, device):
        self._root = root
        self._device = device

    def data_ptr(self):
        if isinstance(self._root, np.ndarray):
            return _address(self._root)
        return self._root.data_ptr()

    def nbytes(self):
        return int(self._root.nbytes)

    size = nbytes

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        return 1

    @property
    def device(self):
        return self._device

    def __repr__(self):
        return "<cextend.UntypedStorage of %d bytes at 0x%x on %s>" % (self.nbytes(), self.data_ptr(), self._device)


def untyped_storage(tensor):
    data = tensor._data
    if isinstance(data, np.ndarray):
        return UntypedStorage(root_of(data), tensor.device)
    return UntypedStorage(data, tensor.device)


def copied_data(array, memo):
    """A copy of array for deepcopy: a view of the copy of its root when that root was copied
    already in this deepcopy (memo), so shared memory stays shared."""
    if not isinstance(array, np.ndarray):
        return array.copy() if isinstance(array, DeviceArray) else np.array(array)
    layout = layout_over_root(array)
    if layout is None:
        key = ("cextend-storage", id(array))
        if key not in memo:
            memo[key] = array.copy(order="K")
            memo.setdefault("cextend-storage-keep", []).append(array)
        return memo[key]
    root, offset, shape, strides = layout
    key = ("cextend-storage", id(root))
    if key not in memo:
        memo[key] = root.copy()
        memo.setdefault("cextend-storage-keep", []).append(root)   # id(root) stays unique while copying
    return view_over(memo[key], offset, shape, strides, array.dtype)


def storage_offset(tensor):
    """The tensor's first element's offset from its storage's start, in elements."""
    data = tensor._data
    if not isinstance(data, np.ndarray):
        return 0
    return (_address(data) - _address(root_of(data))) // data.itemsize


def _rebuild_tensor(array, on_device, requires_grad):
    tensor = _wrap(DeviceArray.from_host(array) if on_device else array)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def _reduce_tensor(self, protocol):
    """pickle: the values (in their own C-ordered copy), the device and requires_grad; a non-leaf
    comes back a leaf, as torch's does."""
    data = self._data
    on_device = not isinstance(data, np.ndarray)
    host = data.to_host() if on_device else np.array(data, order="K")
    return _rebuild_tensor, (host, on_device, self.requires_grad)


def _deepcopy_tensor(self, memo):
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the "
                           "deepcopy protocol at the moment.  If you were attempting to deepcopy a "
                           "module, this may be because of a torch.nn.utils.weight_norm usage, see "
                           "https://github.com/pytorch/pytorch/pull/103001")
    if id(self) in memo:
        return memo[id(self)]
    new = type(self).__new__(type(self))
    new._init(copied_data(self._data, memo), self._requires_grad)
    memo[id(self)] = new
    if self._grad is not None and not isinstance(self, Parameter):      # torch's Parameter drops it
        new._grad = copy.deepcopy(self._grad, memo)
    return new


Tensor.__deepcopy__ = _deepcopy_tensor
Tensor.untyped_storage = untyped_storage
Tensor.storage_offset = storage_offset
Tensor.__reduce_ex__ = _reduce_tensor
