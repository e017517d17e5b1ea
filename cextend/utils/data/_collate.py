"""default_collate / default_convert: samples -> a batch, as torch's.

Tensors are stacked along a new first dimension; numpy arrays and numpy
scalars become tensors and are stacked; Python floats become a float64
tensor, ints an int64 tensor (bools a bool tensor); strings stay a list;
mappings collate per key; namedtuples per field; other sequences are
transposed and collated per position (a tuple sample gives a list, as in
torch).
"""
import collections.abc
import numbers

import numpy as np

from cextend._dtype import float64
from cextend._factories import tensor
from cextend._ops.joining import stack
from cextend.tensor import Tensor

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _stack(tensors):
    return stack(list(tensors), 0)


def _tensor(values, dtype=None):
    return tensor(values, dtype=dtype)


def default_collate(batch):
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return _stack(batch)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if isinstance(elem, np.ndarray):
            if elem.dtype.kind in "OSUV":
                raise TypeError(_ERR.format(elem.dtype))
            return default_collate([_tensor(b) for b in batch])
        if elem.shape == ():
            return _tensor(np.array(batch))
    if isinstance(elem, bool):
        return _tensor(batch)
    if isinstance(elem, float):
        return _tensor(batch, dtype=float64)
    if isinstance(elem, numbers.Integral):
        return _tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = elem.copy()
                clone.update({key: default_collate([d[key] for d in batch]) for key in elem})
                return clone
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = elem.copy()
                for i, samples in enumerate(transposed):
                    clone[i] = default_collate(samples)
                return clone
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERR.format(elem_type))


def default_convert(data):
    """Without batching: numpy arrays/scalars become tensors, containers are converted inside."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if isinstance(data, np.ndarray) and data.dtype.kind in "OSUV":
            return data
        return _tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
