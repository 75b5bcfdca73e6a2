"""The work of ops that move data: copies, fills, padding, concatenation, indexing and the writes of a KV cache.
Operations: the copy kernels (copy, conversion, clone, fill, pad, cat) are elementwise kernels and count one per
element written, as the elementwise ops count theirs; the indexed moves (index_select, gather, embedding, KV-cache
writes) count none: they compute addresses, not data. Bytes: what they read (each stored element of a source once)
and what they write.

- `copy_(dst, src)`: src read, dst written, each at its own dtype. `_to_copy(src, dtype, ...)`: written at `dtype`
  (the c10 ScalarType code of Concrete Inputs) or src's. `clone`, `contiguous`: the same dtype out; `contiguous` of
  an already contiguous tensor (row-major strides recorded) copies nothing. `repeat`, `flip`, `roll`: the source read,
  the output (`repeat`: `prod(repeats)` times bigger) written.
- `fill_`, `zero_`: the tensor written, nothing read.
- `constant_pad_nd(x, pad, value)` (and `pad` with mode `constant`): x read, the padded output written; the pad list
  pairs (before, after) from the last dim backwards.
- `cat`, `stack` of a TensorList: each part read, the whole written; the profiler records a TensorList's type only
  as `TensorList`, so without the parts' dtypes there is no model.
- `index_select(x, dim, index)`, `gather(x, dim, index)`, `embedding(weight, indices)`: the indices read, one source
  element (of a row of `weight`) per output element read (no more than the source stores: a repeated index hits what
  was read already), the output written. `embedding_dense_backward(grad,
  indices, num_weights, ...)`: grad and indices read, the `[num_weights, D]` gradient written.
- KV-cache writes (`store_cache(k, v, k_cache, v_cache, loc)` of SGLang, `reshape_and_cache[_flash](key, value,
  key_cache, value_cache, slot_mapping, ...)` and `unified_kv_cache_update(key, value, ...)` of vLLM): the new keys,
  values and slots read, the same number of elements written into the cache at the key cache's dtype (key's where
  the cache is not an argument).
"""
from __future__ import annotations

import math
from typing import Optional

from .record import COPY, DTYPE_BYTES, Call, Tensor, Work, as_int, as_ints, scalar_type, tensor_list, vector_dtype


def _copy_work(read: int, elements: int, itemsize: int, like: list[Tensor], indexed: bool = False) -> Work:
    """`read` bytes read and `elements` written at `itemsize`, one operation each unless the move is `indexed`."""
    flops = 0.0 if indexed else float(elements)
    return Work(COPY, flops, float(read + elements * itemsize), vector_dtype(like))


def copy(call: Call) -> Optional[Work]:
    """`copy_(dst, src, non_blocking)`."""
    dst, src = call.arg(0), call.arg(1)
    if dst is None or src is None or not broadcast_fits(src.dims, dst.dims):
        return None
    return _copy_work(src.nbytes, dst.numel, dst.itemsize, [dst, src])


def broadcast_fits(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    """Whether `src` broadcasts to `dst` (copy_'s rule)."""
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(src[::-1], dst[::-1]))


def to_copy(call: Call) -> Optional[Work]:
    """`_to_copy(src, dtype, layout, device, pin_memory, non_blocking, memory_format)`, `clone(src)`."""
    src = call.arg(0)
    if src is None or (call.base == "_to_copy" and not call.recorded(1)):
        return None  # a conversion to a dtype not recorded
    dtype = (scalar_type(call.text(1)) if call.base == "_to_copy" else None) or src.dtype
    return _copy_work(src.nbytes, src.numel, DTYPE_BYTES[dtype], [src])


def contiguous(call: Call) -> Optional[Work]:
    """`contiguous(src, memory_format)`: a copy unless src is already row-major."""
    src = call.arg(0)
    if src is None:
        return None
    if src.strides is not None and call.text(1).strip() in ("", "0") and src.strides == row_major(src.dims):
        return Work(COPY, 0.0, 0.0, vector_dtype([src]))
    return _copy_work(src.nbytes, src.numel, src.itemsize, [src])


def row_major(dims: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a contiguous tensor of these dims."""
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def repeat(call: Call) -> Optional[Work]:
    """`repeat(src, repeats)`, `flip(src, dims)`, `roll(src, shifts, dims)`."""
    src = call.arg(0)
    if src is None:
        return None
    times = 1
    if call.base == "repeat":
        repeats = as_ints(call.text(1))
        if not repeats or len(repeats) < len(src.dims) or min(repeats) < 0:
            return None
        times = math.prod(repeats)
    return _copy_work(src.nbytes, src.numel * times, src.itemsize, [src])


def fill(call: Call) -> Optional[Work]:
    """`fill_(x, value)`, `zero_(x)`: x written."""
    x = call.arg(0)
    return _copy_work(0, x.numel, x.itemsize, [x]) if x is not None else None


def constant_pad(call: Call) -> Optional[Work]:
    """`constant_pad_nd(x, pad, value)`, `pad(x, pad, mode, value)` with mode `constant`."""
    x = call.arg(0)
    pad = as_ints(call.text(1))
    mode = call.text(2).strip().strip("'\"")
    if x is None or pad is None or len(pad) % 2 or len(pad) // 2 > len(x.dims) or \
            (call.base == "pad" and mode not in ("", "constant")):
        return None
    dims = list(x.dims)
    for i in range(len(pad) // 2):
        dims[-1 - i] += pad[2 * i] + pad[2 * i + 1]
    if min(dims, default=1) < 0:
        return None
    return _copy_work(x.nbytes, math.prod(dims), x.itemsize, [x])


def concatenate(call: Call) -> Optional[Work]:
    """`cat(tensors, dim)`, `stack(tensors, dim)`: where the parts' dtypes are recorded."""
    parts = tensor_list(call.dims, call.types, 0)
    if not parts:
        return None
    return _copy_work(sum(t.nbytes for t in parts), sum(t.numel for t in parts), DTYPE_BYTES[_widest(parts)], parts)


def _widest(parts: list[Tensor]) -> str:
    return max((t.dtype for t in parts), key=lambda d: DTYPE_BYTES[d])


def _gathered(src: Tensor, index: Tensor, out_numel: int) -> Work:
    """Indices read, one source element per output element read, the output written."""
    read = index.nbytes + min(out_numel, src.stored) * src.itemsize
    return _copy_work(read, out_numel, src.itemsize, [src], indexed=True)


def index_select(call: Call) -> Optional[Work]:
    """`index_select(x, dim, index)`: x's shape with `dim` the index's length."""
    x, index, dim = call.arg(0), call.arg(2), as_int(call.text(1))
    if x is None or index is None or dim is None or not -len(x.dims) <= dim < max(len(x.dims), 1):
        return None
    dims = list(x.dims) or [1]
    dims[dim] = index.numel
    return _gathered(x, index, math.prod(dims))


def gather(call: Call) -> Optional[Work]:
    """`gather(x, dim, index, sparse_grad)`: the output has the index's shape."""
    x, index = call.arg(0), call.arg(2)
    if x is None or index is None or len(index.dims) != len(x.dims):
        return None
    return _gathered(x, index, index.numel)


def embedding(call: Call) -> Optional[Work]:
    """`embedding(weight[V, D], indices, ...)`: the output is `indices.shape + [D]`."""
    weight, indices = call.arg(0), call.arg(1)
    if weight is None or indices is None or len(weight.dims) != 2:
        return None
    return _gathered(weight, indices, indices.numel * weight.dims[1])


def embedding_backward(call: Call) -> Optional[Work]:
    """`embedding_dense_backward(grad[..., D], indices, num_weights, padding_idx, scale_grad_by_freq)`."""
    grad, indices, rows = call.arg(0), call.arg(1), as_int(call.text(2))
    if grad is None or indices is None or not grad.dims or rows is None or rows < 0 or \
            grad.numel != indices.numel * grad.dims[-1]:
        return None
    return _copy_work(grad.nbytes + indices.nbytes, rows * grad.dims[-1], grad.itemsize, [grad], indexed=True)


def cache_write(call: Call) -> Optional[Work]:
    """A KV-cache write: `(key, value, [key_cache, value_cache,] slots, ...)`."""
    key, value = call.arg(0), call.arg(1)
    if key is None or value is None:
        return None
    cache = call.arg(2) if call.base != "unified_kv_cache_update" else None
    read = key.nbytes + value.nbytes + sum(t.nbytes for t in call.args[4:] if t is not None)
    itemsize = cache.itemsize if cache is not None else key.itemsize
    return _copy_work(read, key.numel + value.numel, itemsize, [key, value], indexed=True)


MODELS = {"copy": copy, "_to_copy": to_copy, "clone": to_copy, "contiguous": contiguous, "repeat": repeat,
          "flip": repeat, "roll": repeat, "fill": fill, "zero": fill, "constant_pad_nd": constant_pad,
          "pad": constant_pad, "cat": concatenate, "stack": concatenate, "index_select": index_select,
          "gather": gather, "embedding": embedding, "embedding_dense_backward": embedding_backward,
          "store_cache": cache_write, "reshape_and_cache": cache_write, "reshape_and_cache_flash": cache_write,
          "unified_kv_cache_update": cache_write}
