"""The memory layout of an elementwise op's result, as torch chooses it.

It matters beyond speed: whether a later reshape() is a view or a copy (and
so whether writes through it reach the result) depends on the strides.
numpy's ufuncs keep a layout that all inputs agree on, as torch does, but
when inputs disagree numpy falls back to C order while torch lets the first
input that has an opinion decide (TensorIterator::reorder_dimensions).
`torch_layout` re-lays a result out in torch's order in that rare case.
"""
import numpy as np

from cextend._overlap import non_overlapping_and_dense


def _dim_order(shape, strides_list):
    """torch's permutation: perm[0] is the fastest-moving dim."""
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))

    def should_swap(dim0, dim1):
        for strides in strides_list:
            s0, s1 = strides[dim0], strides[dim1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[dim0] > shape[dim1]:
                return 1
        return 0

    for i in range(1, ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    return perm


def _broadcast_strides(array, shape):
    """An operand's strides over the result's shape (0 where it broadcasts)."""
    lead = len(shape) - array.ndim
    return (0,) * lead + tuple(0 if n == 1 and s != 1 else st
                               for n, s, st in zip(array.shape, shape[lead:], array.strides))


def torch_layout(result, arrays):
    """result (of the operands' arrays, in order), re-laid out in torch's dim
    order if numpy chose another."""
    if type(result) is not np.ndarray or result.ndim < 2:
        return result
    arrays = [a for a in arrays if type(a) is np.ndarray]
    if not arrays or all(a.flags.c_contiguous for a in arrays):
        return result
    shape = result.shape
    first = arrays[0]
    if all(a.shape == shape and a.strides == first.strides for a in arrays) and non_overlapping_and_dense(first):
        # the inputs agree on a dense layout: torch's result takes their strides
        # (numpy's ufuncs keep them too; a C kernel's contiguous result does not)
        if _order_matches(result, tuple(sorted(range(len(shape)), key=lambda d: -first.strides[d]))):
            return result
        laid_out = empty_like_preserve(first, result.dtype)
        laid_out[...] = result
        return laid_out
    perm = _dim_order(shape, [_broadcast_strides(a, shape) for a in arrays])
    wanted = tuple(reversed(perm))          # slowest to fastest
    if _order_matches(result, wanted):
        return result
    laid_out = np.empty([shape[d] for d in wanted], result.dtype).transpose(np.argsort(wanted))
    laid_out[...] = result
    return laid_out


def _order_matches(result, wanted):
    """Whether result's strides decrease along `wanted` (size-1 dims ignored)."""
    strides = [result.strides[d] for d in wanted if result.shape[d] != 1]
    return all(a >= b for a, b in zip(strides, strides[1:]))


def empty_like_preserve(array, dtype=None):
    """An uninitialised array shaped like `array`, laid out as torch's
    empty_like(preserve_format): a non-overlapping and dense tensor keeps its
    strides (a transposed one stays transposed); any other (sliced,
    expanded) gets dense strides in its own dim order (infer_dense_strides,
    which leaves stride-0 dims where C order puts them).  clone, flip and
    sort allocate this way."""
    dtype = array.dtype if dtype is None else np.dtype(dtype)
    if non_overlapping_and_dense(array):
        out = np.empty_like(array, dtype=dtype, order="K")
        if out.ndim > 1 and 1 in out.shape and min(array.strides) >= 0:
            # torch keeps the strides exactly, size-1 dims' too
            out = restrided(out, tuple(st // array.itemsize * out.itemsize for st in array.strides))
        return out
    if array.ndim < 2:
        return np.empty(array.shape, dtype)
    wanted = tuple(reversed(_dim_order(array.shape, [array.strides])))      # slowest to fastest
    return np.empty([array.shape[d] for d in wanted], dtype).transpose(np.argsort(wanted))


def restrided(array, strides):
    """array with these byte strides (which may differ only where a dim has
    size 1, so the elements are the same): torch's strides for size-1 dims,
    which numpy sets otherwise, decide its overlap checks and layouts."""
    if array.strides == tuple(strides):
        return array
    return np.lib.stride_tricks.as_strided(array, array.shape, strides, writeable=array.flags.writeable)


def unsqueeze_stride(array, dim):
    """torch's stride for a size-1 dim inserted at `dim` (unsqueeze, or None
    in an index): the size times the stride of the dim it goes before, 1
    element past the last dim."""
    if dim >= array.ndim:
        return array.itemsize
    return array.shape[dim] * array.strides[dim]


def none_index_strides(array, parts, result):
    """The strides torch gives result = array[parts] (ints, slices, None,
    Ellipsis): numpy's, except that each None dim gets unsqueeze's stride
    for the dim it lands before, as torch's applySlicing unsqueezes there
    (numpy gives such dims stride 0)."""
    strides = list(result.strides)
    consuming = sum(1 for p in parts if p is not None and p is not Ellipsis)
    source = 0          # the next dim of `array` not yet consumed
    out = 0             # the next dim of `result`
    for p in parts:
        if p is None:
            strides[out] = unsqueeze_stride(array, source)
            out += 1
        elif p is Ellipsis:
            skipped = array.ndim - consuming
            source += skipped
            out += skipped
        elif type(p) is slice:
            source += 1
            out += 1
        else:           # an int: the dim is consumed, none is produced
            source += 1
    return strides


def compute_stride(old_shape, old_strides, new_shape, itemsize):
    """torch's computeStride (byte strides): the strides of a view of
    old_shape/old_strides with new_shape, or None where no view exists.
    numpy's no-copy reshape agrees on where a view exists and on every
    stride except those of size-1 dims, which decide torch's overlap checks."""
    n = len(new_shape)
    if not old_shape:
        return (itemsize,) * n
    numel = 1
    for size in old_shape:
        numel *= size
    if numel == 0 and tuple(old_shape) == tuple(new_shape):
        return tuple(old_strides)
    strides = [0] * n
    if numel == 0:
        for d in range(n - 1, -1, -1):
            strides[d] = itemsize if d == n - 1 else max(new_shape[d + 1], 1) * strides[d + 1]
        return tuple(strides)
    view_d = n - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(strides)


def c_strides(shape, itemsize):
    """C-order byte strides, as torch's contiguous strides (size-1 dims included)."""
    strides = [itemsize] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(shape[d + 1], 1)
    return tuple(strides)


def with_number_layout(result, array):
    """result of array and a Python number, laid out as torch's: the number
    is a 0-d operand, so TensorIterator skips its fast setup and lays the
    output out densely in the dim order of array's strides (size-1 dims
    included, where numpy keeps other strides)."""
    if type(result) is not np.ndarray or result.ndim < 2 or result.shape != array.shape:
        return result
    if array.flags.c_contiguous and 1 not in array.shape and result.flags.c_contiguous:
        return result
    shape = result.shape
    perm = _dim_order(shape, [array.strides])
    strides = [0] * len(shape)
    step = result.itemsize
    for d in perm:
        strides[d] = step
        step *= shape[d]
    strides = tuple(strides)
    if result.strides == strides:
        return result
    if all(a == b or n == 1 for a, b, n in zip(result.strides, strides, shape)):
        return restrided(result, strides)
    laid_out = np.lib.stride_tricks.as_strided(np.empty(result.size, result.dtype), shape, strides)
    laid_out[...] = result
    return laid_out
