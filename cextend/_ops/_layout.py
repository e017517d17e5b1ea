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
    if all(a.shape == shape and a.strides == arrays[0].strides for a in arrays):
        return result       # the inputs agree: numpy already kept their order
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
        return np.empty_like(array, dtype=dtype, order="K")
    if array.ndim < 2:
        return np.empty(array.shape, dtype)
    wanted = tuple(reversed(_dim_order(array.shape, [array.strides])))      # slowest to fastest
    return np.empty([array.shape[d] for d in wanted], dtype).transpose(np.argsort(wanted))
