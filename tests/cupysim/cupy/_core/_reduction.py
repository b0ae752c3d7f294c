"""``cupy.ReductionKernel``, executing on the host.

What ``cupy/_core/_reduction.pyx`` (CuPy 14) does, function by function: ``axis``/
``keepdims``, placeholder types, broadcasting of the inputs, the axis permutation and
dimension reduction, the block shape (``_get_block_specs``) and a reduction kernel laid
out as CuPy's (a shared-memory tree reduction with ``__syncthreads``, in the simulator's
own source), compiled with the host compiler and run by the simulator's scheduler.

One difference: CuPy 14 first tries a CUB-based kernel for contiguous
reductions (``CUPY_ACCELERATORS=cub``, its default); the simulator always runs
the simple reduction kernel, which gives the same results up to the order of
the floating-point additions.
"""

from __future__ import annotations

import string
from collections import abc as _abc

import numpy as np
from cupysim.kernels.module import compile_with_cache as _compile_with_cache

from ._kernel import (
    _broadcast,
    _CScalar,
    _decide_params_type,
    _get_arginfos,
    _get_kernel_params,
    _get_out_args_with_params,
    _get_param_info,
    _Indexer,
    _is_valid_kernel_name,
    _memoize,
    _preprocess_args,
    _reduce_dims,
    _type_decls,
    _TypeMap,
    _View,
)

__all__ = ["ReductionKernel"]


def _create_reduction_function_code(
    name,
    block_size,
    reduce_type,
    params,
    arginfos,
    identity,
    pre_map_expr,
    reduce_expr,
    post_map_expr,
    type_map,
    input_expr,
    output_expr,
    preamble,
    options,
):
    """The reduction kernel's CUDA source, as ``_reduction.pyx``'s
    ``_create_reduction_function_code`` lays the work out (so the additions happen in
    CuPy's order): a block owns ``_block_stride`` consecutive outputs, the threads that
    share an output walk its inputs, and a shared-memory tree folds their partials. The
    names users' expressions may use are CuPy's: ``_in_ind``, ``_out_ind``, ``_raw_<x>``,
    ``_i`` (output), ``_j`` (input), ``_J``, ``_type_reduce``, ``a``/``b`` in the
    reduction and ``a`` in the post-map."""
    return string.Template("""
${type_decls}${type_preamble}
${preamble}
typedef ${reduce_type} _type_reduce;
#define REDUCE(a, b) (${reduce_expr})
#define POST_MAP(a) (${post_map_expr})

extern "C" __global__ void ${name}(${params}) {
  __shared__ char _partial_bytes[${block_size} * sizeof(_type_reduce)];
  _type_reduce* const _partial = reinterpret_cast<_type_reduce*>(_partial_bytes);
  const unsigned int _tid = threadIdx.x;
  // _block_stride is a power of two: thread _tid serves output _tid mod _block_stride of
  // the block's run, and is row _tid / _block_stride of the threads serving it.
  const unsigned int _lane = _tid & (_block_stride - 1);
  const IndexT _row = _tid / _block_stride;
  const IndexT _rows = ${block_size} / _block_stride;
  const ptrdiff_t _n_out = _out_ind.size();
  const ptrdiff_t _n_in = _in_ind.size();

  for (ptrdiff_t _run = (ptrdiff_t)blockIdx.x * _block_stride; _run < _n_out;
       _run += (ptrdiff_t)gridDim.x * _block_stride) {
    const ptrdiff_t _i = _run + _lane;
    _type_reduce _s = _type_reduce(${identity});
    IndexT _J = _row;
    for (ptrdiff_t _j = _i + (ptrdiff_t)_row * _n_out; _j < _n_in;
         _j += (ptrdiff_t)_rows * _n_out, _J += _rows) {
      _in_ind.set(_j);
      ${input_expr}
      _type_reduce _a = static_cast<_type_reduce>(${pre_map_expr});
      _s = REDUCE(_s, _a);
    }
    _partial[_tid] = _s;
    __syncthreads();
    for (unsigned int _half = ${block_size} / 2; _half >= _block_stride; _half /= 2) {
      if (_tid < _half) {
        _type_reduce _a = _partial[_tid], _b = _partial[_tid + _half];
        _partial[_tid] = REDUCE(_a, _b);
      }
      __syncthreads();
    }
    if (_tid < _block_stride && _i < _n_out) {
      _s = _partial[_tid];
      _out_ind.set(_i);
      ${output_expr}
      POST_MAP(_s);
    }
  }
}""").substitute(
        name=name,
        block_size=block_size,
        reduce_type=reduce_type,
        params=_get_kernel_params(params, arginfos),
        identity=identity,
        reduce_expr=reduce_expr,
        pre_map_expr=pre_map_expr,
        post_map_expr=post_map_expr,
        type_decls=_type_decls(type_map, arginfos),
        type_preamble=type_map.get_typedef_code(),
        input_expr=input_expr,
        output_expr=output_expr,
        preamble=preamble,
    )


@_memoize
def _reduction_kernel_code(
    nin,
    nout,
    params,
    arginfos,
    type_map,
    name,
    block_size,
    reduce_type,
    identity,
    map_expr,
    reduce_expr,
    post_map_expr,
    preamble,
    options,
):
    """``_reduction.pyx: _ReductionKernel_get_cached_function_code``."""
    in_arrays = [
        p for p, a in zip(params[:nin], arginfos[:nin], strict=True) if not p.raw and a.is_ndarray()
    ]
    out_arrays = [
        p
        for p, a in zip(params[nin : nin + nout], arginfos[nin : nin + nout], strict=True)
        if not p.raw and a.is_ndarray()
    ]
    input_expr = "\n".join(
        (("const {0} {1}" if p.is_const else "{0}& {1}") + " = _raw_{1}[_in_ind.get()];").format(
            p.ctype, p.name
        )
        for p in in_arrays
    )
    output_expr = "\n".join(
        f"{p.ctype} &{p.name} = _raw_{p.name}[_out_ind.get()];"
        for p in out_arrays
        if not p.is_const
    )
    return _create_reduction_function_code(
        name,
        block_size,
        reduce_type,
        params,
        arginfos,
        identity,
        map_expr,
        reduce_expr,
        post_map_expr,
        type_map,
        input_expr,
        output_expr,
        preamble,
        options,
    )


def _normalize_axis_index(axis: int, ndim: int) -> int:
    # cupy/_core/internal.pyx: _normalize_axis_index
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis + ndim if axis < 0 else axis


def _get_axis(axis, ndim: int) -> tuple[tuple, tuple]:
    """``_reduction.pyx: _get_axis``."""
    if axis is None:
        return tuple(range(ndim)), ()
    axis = tuple(axis) if isinstance(axis, _abc.Sequence) else (axis,)
    reduce_axis = tuple(sorted(_normalize_axis_index(dim, ndim) for dim in axis))
    out_axis = tuple(dim for dim in range(ndim) if dim not in reduce_axis)
    if len(reduce_axis) + len(out_axis) != ndim:
        raise ValueError("duplicate value in 'axis'")
    return reduce_axis, out_axis


def _get_out_shape(shape, reduce_axis, out_axis, keepdims) -> tuple:
    if keepdims:
        out = list(shape)
        for i in reduce_axis:
            out[i] = 1
        return tuple(out)
    return tuple(shape[i] for i in out_axis)


def _set_permuted_args(args: list, axis_permutes: tuple, shape: tuple, params: tuple) -> tuple:
    """``_reduction.pyx: _set_permuted_args``: reduced axes first."""
    if all(i == s for i, s in enumerate(axis_permutes)):
        return shape
    for p in params:
        if p.raw:
            raise NotImplementedError("Illegal conditions")
    for i, a in enumerate(args):
        if isinstance(a, _View):
            args[i] = a.view(
                [a.shape[k] for k in axis_permutes], [a.strides[k] for k in axis_permutes], True
            )
    return tuple(shape[i] for i in axis_permutes)


def _get_contiguous_size(args, params, out_shape, ndim) -> int:
    """``_reduction.pyx: _get_contiguous_size``: contiguous run along the output axes."""
    out_ndim = len(out_shape)
    contiguous_size = 1
    for a, p in zip(args, params, strict=True):
        if not isinstance(a, _View) or p.raw:
            continue
        tmp, itemsize = 1, a.dtype.itemsize
        for j in range(out_ndim):
            if a.strides[ndim - j - 1] != tmp * itemsize:
                break
            tmp *= out_shape[out_ndim - j - 1]
        contiguous_size = max(contiguous_size, tmp)
    return contiguous_size


def _clp2(x: int) -> int:
    return 1 << (x - 1).bit_length() if x > 1 else 1


_DEFAULT_BLOCK_SIZE = 512  # CUDA (256 on HIP)


def _get_block_specs(in_size, out_size, contiguous_size, block_size=-1):
    """``_reduction.pyx: _get_block_specs``."""
    if block_size == -1:
        block_size = _DEFAULT_BLOCK_SIZE
    reduce_block_size = max(1, in_size // out_size)
    contiguous_size = min(contiguous_size, 32)
    block_stride = max(contiguous_size, block_size // reduce_block_size)
    block_stride = _clp2(block_stride // 2 + 1)
    out_block_num = (out_size + block_stride - 1) // block_stride
    return block_size, block_stride, out_block_num


def _sort_axis(axis, strides):
    return tuple(sorted(axis, key=lambda i: -abs(strides[i])))


class _Int32Scalar(_CScalar):
    """``CScalar.from_int32`` (the block stride argument)."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.dtype = np.dtype(np.int32)
        self.data = np.int32(value).tobytes()


class ReductionKernel:
    """User-defined reduction kernel (``cupy/_core/_reduction.pyx: ReductionKernel``).

    ``map_expr`` maps each input element, ``reduce_expr`` combines two values ``a``
    and ``b``, ``post_map_expr`` writes the reduced ``a`` to the outputs.
    """

    def __init__(
        self,
        in_params,
        out_params,
        map_expr,
        reduce_expr,
        post_map_expr,
        identity,
        name="reduce_kernel",
        reduce_type=None,
        reduce_dims=True,
        preamble="",
        options=(),
    ):
        for arg, value in (("in_params", in_params), ("out_params", out_params)):
            if not isinstance(value, str):
                raise TypeError(
                    f"Argument '{arg}' has incorrect type (expected str, got "
                    f"{type(value).__name__})"
                )
        if not _is_valid_kernel_name(name):
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.name = name
        self.identity = "" if identity is None else str(identity)
        self.in_params = _get_param_info(in_params, True)
        self.out_params = _get_param_info(out_params, False)
        self._params = (
            self.in_params
            + self.out_params
            + _get_param_info("CIndexer _in_ind, CIndexer _out_ind", False)
            + _get_param_info("int32 _block_stride", True)
        )
        self.__name__ = name
        self._cached_codes = {}
        self.nin = len(self.in_params)
        self.nout = len(self.out_params)
        self.nargs = self.nin + self.nout
        self.reduce_expr = reduce_expr
        self.map_expr = map_expr
        self.post_map_expr = post_map_expr
        self.options = options
        self.reduce_dims = reduce_dims
        self.reduce_type = self.out_params[0].ctype if reduce_type is None else reduce_type
        self.preamble = preamble

    def __call__(self, *args, **kwargs):
        """Compiles and invokes the reduction kernel.

        Keyword arguments: ``out``, ``axis``, ``keepdims``, ``stream``.
        """
        out = kwargs.pop("out", None)
        axis = kwargs.pop("axis", None)
        keepdims = kwargs.pop("keepdims", False)
        stream = kwargs.pop("stream", None)
        if kwargs:
            raise TypeError(f"Wrong arguments {kwargs}")
        n_args = len(args)
        if n_args != self.nin and n_args != self.nargs:
            raise TypeError(f"Wrong number of arguments for {self.name}")
        out_args = list(args[self.nin :])
        if out is not None:
            if self.nout != 1:
                raise NotImplementedError("")
            if len(out_args) != 0:
                raise ValueError("cannot specify 'out' as both a positional and keyword argument")
            out_args = [out]
        in_args = _preprocess_args(args[: self.nin])
        out_args = _preprocess_args(out_args)
        in_args, broad_shape = _broadcast(in_args, self.in_params, False)
        return self._call(in_args, out_args, broad_shape, axis, keepdims, stream)

    def _call(self, in_args, out_args, a_shape, axis, keepdims, stream):
        """``_AbstractReductionKernel._call`` (without the CUB and optimizer paths)."""
        in_types, out_types, type_map = _decide_params_type(
            self.in_params,
            self.out_params,
            tuple(a.dtype.type if isinstance(a, _View) else None for a in in_args),
            tuple(a.dtype.type if isinstance(a, _View) else None for a in out_args),
        )
        reduce_axis, out_axis = _get_axis(axis, len(a_shape))
        if len(in_args) == 1 and len(out_axis) <= 1 and not in_args[0].c_contiguous:
            strides = in_args[0].strides
            reduce_axis = _sort_axis(reduce_axis, strides)
            out_axis = _sort_axis(out_axis, strides)
        out_shape = _get_out_shape(a_shape, reduce_axis, out_axis, keepdims)
        out_arrays = _get_out_args_with_params(
            [v.array if isinstance(v, _View) else v for v in out_args],
            out_types,
            out_shape,
            self.out_params,
            False,
        )
        ret = out_arrays[0]
        if ret.size == 0:
            return ret
        if self.identity == "" and 0 in a_shape:
            raise ValueError(
                f"zero-size array to reduction operation {self.name} which has no identity"
            )
        a_size = int(np.prod(a_shape, dtype=np.int64))
        o_size = int(np.prod(out_shape, dtype=np.int64))
        index_type = ("IndexT", "int64") if a_size / o_size > 0x7FFFFFFF else ("IndexT", "int32")
        type_map = _TypeMap((*type_map._pairs, index_type))
        for x, t in zip(in_args, in_types, strict=True):
            if isinstance(x, _CScalar):
                x.apply_dtype(t)
        out_views = [_View.of(a) for a in out_arrays]
        for v in out_views:
            v.writes = True
        axis_permutes = reduce_axis + out_axis
        in_args = list(in_args)
        in_shape = _set_permuted_args(in_args, axis_permutes, a_shape, self.in_params)
        if self.reduce_dims:
            in_shape = _reduce_dims(in_args, self.in_params, in_shape)
            out_shape = _reduce_dims(out_views, self.out_params, out_shape)
        contiguous_size = _get_contiguous_size(
            in_args, self.in_params, list(out_shape), len(in_shape)
        )
        block_size, block_stride, out_block_num = _get_block_specs(
            int(np.prod(in_shape, dtype=np.int64)),
            int(np.prod(out_shape, dtype=np.int64)),
            contiguous_size,
        )
        inout_args = [
            *in_args,
            *out_views,
            _Indexer(in_shape),
            _Indexer(out_shape),
            _Int32Scalar(block_stride),
        ]
        arginfos = _get_arginfos(inout_args)
        code = _reduction_kernel_code(
            self.nin,
            self.nout,
            self._params,
            arginfos,
            type_map,
            self.name,
            block_size,
            self.reduce_type,
            self.identity,
            self.map_expr,
            self.reduce_expr,
            self.post_map_expr,
            self.preamble,
            self.options,
        )
        in_types_key = tuple(a.dtype.char for a in arginfos if a.is_ndarray())
        self._cached_codes.setdefault(in_types_key, code)
        func = _compile_with_cache(code, tuple(self.options)).get_function(self.name)
        func.linear_launch(
            out_block_num * block_size, inout_args, 0, block_size, stream, kind="reduction"
        )
        return ret

    @property
    def cached_codes(self):
        """Input types -> generated code (for debugging, as in CuPy)."""
        return dict(self._cached_codes.items())
