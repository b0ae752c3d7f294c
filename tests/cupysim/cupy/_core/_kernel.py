"""``cupy.ElementwiseKernel``, executing on the host.

What ``cupy/_core/_kernel.pyx`` (CuPy 14) does, function by function, for the parts
user-defined elementwise kernels go through: parameter parsing (``T x, raw T y``), type
placeholders and their dtype dispatch, broadcasting, ``size=``, output
allocation on the current device, dimension reduction of contiguous operands,
and the CUDA code it generates -- which the simulator compiles with the host
compiler and runs (``cupysim.kernels``). Arrays enter kernels as ``CArray``
structs with their shape and strides, so non-contiguous and broadcast operands
are indexed by the generated code itself.
"""

from __future__ import annotations

import string
import struct
import threading
import warnings

import numpy as np
from cupysim import runtime as _runtime
from cupysim.kernels.module import compile_with_cache as _compile_with_cache

__all__ = ["ElementwiseKernel", "ParameterInfo"]

# cupy/_core/_scalar.pyx: _typenames_base
_TYPENAMES = {
    np.dtype("float64"): "double",
    np.dtype("float32"): "float",
    np.dtype("float16"): "float16",
    np.dtype("complex128"): "thrust::complex<double>",
    np.dtype("complex64"): "thrust::complex<float>",
    np.dtype("int64"): "long long",
    np.dtype("int32"): "int",
    np.dtype("int16"): "short",
    np.dtype("int8"): "signed char",
    np.dtype("uint64"): "unsigned long long",
    np.dtype("uint32"): "unsigned int",
    np.dtype("uint16"): "unsigned short",
    np.dtype("uint8"): "unsigned char",
    np.dtype("bool"): "bool",
}


def _get_typename(dtype) -> str:
    """``cupy/_core/_scalar.pyx: get_typename``."""
    if dtype is None:
        raise TypeError("dtype is None")
    name = _TYPENAMES.get(np.dtype(dtype))
    if name is None:
        raise ValueError(f"Unsupported dtype {dtype}")
    return name


def _memoize(fn):
    cache: dict = {}
    lock = threading.Lock()

    def wrapper(*args):
        with lock:
            if args in cache:
                return cache[args]
        out = fn(*args)
        with lock:
            return cache.setdefault(args, out)

    return wrapper


# --- kernel arguments -----------------------------------------------------------------
# What _preprocess_args and the broadcasting/dimension-reduction steps produce: array
# views (shape, strides of an operand), scalars and indexers, each knowing the bytes
# cupy/cuda/function.pyx hands the driver for it.


def _c_contiguity(shape, strides, itemsize) -> bool:
    """``cupy/_core/internal.pyx: get_c_contiguity``."""
    ndim = len(strides)
    if ndim == 0 or (ndim == 1 and strides[0] == itemsize):
        return True
    prev_i, index, st = -1, 0, 0
    for i in range(ndim):
        sh = shape[i]
        if sh == 0:
            return True
        if sh == 1:
            continue
        st = strides[i]
        if prev_i == -1 or strides[prev_i] != sh * st:
            index += 1
        prev_i = i
    return index == 0 or (index == 1 and st == itemsize)


class _View:
    """A view of a device array, as ``_ndarray_base._view`` builds in CuPy."""

    def __init__(self, array, ptr, shape, strides, dtype, c_contiguous, index_32_bits):
        self.array = array
        self.ptr = ptr
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.dtype = np.dtype(dtype)
        self.c_contiguous = c_contiguous
        self.index_32_bits = index_32_bits
        self.writes = False  # outputs are written, inputs read

    @classmethod
    def of(cls, array) -> _View:
        op = _runtime.operand(array)
        size = int(np.prod(op.shape, dtype=np.int64))
        c = size == 0 or _c_contiguity(op.shape, op.strides, op.dtype.itemsize)
        return cls(
            array,
            op.ptr,
            op.shape,
            op.strides,
            op.dtype,
            c,
            max(op.nbytes, size * op.dtype.itemsize) <= 2**31,
        )

    def view(self, shape, strides, update_c_contiguity: bool) -> _View:
        c = self.c_contiguous
        if update_c_contiguity:
            size = int(np.prod(shape, dtype=np.int64))
            c = size == 0 or _c_contiguity(shape, strides, self.dtype.itemsize)
        return _View(self.array, self.ptr, shape, strides, self.dtype, c, self.index_32_bits)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _cupysim_kernel_arg(self):
        """The CArray struct (``cupy/_core/_carray.pyx``), read or written by the kernel."""
        data = struct.pack(f"<Qq{2 * self.ndim}q", self.ptr, self.size, *self.shape, *self.strides)
        return data, self._what, self.array, self.writes

    def _what(self) -> str:  # for an error message only: a dtype's str costs ~29k instructions
        return f"{self.dtype} array"


class _CScalar:
    """``cupy/_core/_scalar.pyx: CScalar``: a scalar stored in its (weak or given) dtype."""

    def __init__(self, value):
        self.value = value
        typ = type(value)
        if typ is bool:
            self.dtype = np.dtype(np.bool_)
        elif typ is float:
            self.dtype = np.dtype(np.float64)
        elif typ is complex:
            self.dtype = np.dtype(np.complex128)
        elif typ is int:
            self.dtype = np.dtype(np.uint64 if value >= 0x8000000000000000 else np.int64)
        elif isinstance(value, np.generic):
            self.dtype = value.dtype
        else:
            raise TypeError(f"Unsupported type {type(value)}")
        self.data = np.array(value, dtype=self.dtype).tobytes()

    def apply_dtype(self, dtype) -> None:
        # Assignment logic (PyArray_Pack): nan -> int and out-of-bound ints are errors.
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return
        self.dtype = dtype
        self.data = np.array(self.value, dtype=dtype).tobytes()

    def _cupysim_kernel_arg(self):
        return self.data, self._what, None, False

    def _what(self) -> str:  # for an error message only, as the operand's
        return f"{self.dtype} scalar"


class _Indexer:
    """``cupy/_core/_carray.pyx: Indexer``: the loop's shape, passed as a CIndexer."""

    def __init__(self, shape) -> None:
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.index_32_bits = self.size <= 1 << 31

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _cupysim_kernel_arg(self):
        data = struct.pack(f"<q{2 * self.ndim}q", self.size, *self.shape, *([0] * self.ndim))
        return data, "indexer", None, False


def _is_ndarray(x) -> bool:
    import cupy

    return isinstance(x, cupy.ndarray)


def _preprocess_args(args) -> list:
    """``_preprocess_args``: arrays as views, Python/NumPy scalars as CScalars.

    The placement rule (``_check_peer_access``) is applied when the kernel launches
    (``cupysim.runtime.launch``).
    """
    out = []
    for a in args:
        if isinstance(a, _View | _CScalar):
            out.append(a)
        elif _is_ndarray(a):
            out.append(_View.of(a))
        else:
            out.append(_CScalar(a))
    return out


# --- parameters and types ---------------------------------------------------------------


class ParameterInfo:
    """One parameter of an elementwise/reduction kernel (``_kernel.pyx: ParameterInfo``)."""

    def __init__(self, param: str, is_const: bool):
        self.name = None
        self.dtype = None
        self.ctype = None
        self.raw = False
        self.is_const = is_const
        s = tuple(i for i in param.split() if len(i) != 0)
        if len(s) < 2:
            raise Exception(f"Syntax error: {param}")
        t, self.name = s[-2:]
        if t == "CIndexer":
            pass
        elif len(t) == 1:
            self.ctype = t
        else:
            self.dtype = np.dtype(t)
            self.ctype = _get_typename(self.dtype)
        for i in s[:-2]:
            if i == "raw":
                self.raw = True
            elif i == "_non_const":
                self.is_const = False
            else:
                raise Exception(f'Unknown keyword "{i}"')

    def _key(self):
        return (self.name, self.dtype, self.ctype, self.raw, self.is_const)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, ParameterInfo) and self._key() == other._key()

    def __repr__(self):
        return (
            f"<ParameterInfo(name={self.name!r} dtype={self.dtype!r} ctype={self.ctype!r} "
            f"raw={self.raw!r} is_const={self.is_const!r})>"
        )


@_memoize
def _get_param_info(s: str, is_const: bool) -> tuple:
    if len(s) == 0:
        return ()
    return tuple(ParameterInfo(i, is_const) for i in s.strip().split(","))


class _TypeMap:
    """Type placeholder -> dtype pairs, emitted as typedefs (``_kernel.pyx: _TypeMap``)."""

    def __init__(self, pairs: tuple) -> None:
        self._pairs = pairs

    def __hash__(self):
        return hash(self._pairs)

    def __eq__(self, other):
        return isinstance(other, _TypeMap) and self._pairs == other._pairs

    def get_typedef_code(self) -> str:
        return "".join(f"typedef {_get_typename(t)} {name};\n" for name, t in self._pairs)


def _decide_params_type_core(in_params, out_params, in_args_dtype, out_args_dtype):
    """``_kernel.pyx: _decide_params_type_core``: bind each placeholder to a dtype."""
    type_dict = {}
    if out_args_dtype:
        assert len(out_params) == len(out_args_dtype)
        for p, a in zip(out_params, out_args_dtype, strict=True):
            if a is None:
                raise TypeError("Output arguments must be cupy.ndarray")
            if p.dtype is not None:
                if np.dtype(a) != np.dtype(p.dtype):
                    raise TypeError(f"Type is mismatched. {p.name} {a} {p.dtype}")
            elif p.ctype in type_dict:
                t = type_dict[p.ctype]
                if np.dtype(t) != np.dtype(a):
                    raise TypeError(f"Type is mismatched. {p.name} {a} {t} {p.ctype}")
            else:
                type_dict[p.ctype] = a
    assert len(in_params) == len(in_args_dtype)
    for p, a in zip(in_params, in_args_dtype, strict=True):
        if a is None:
            continue
        if p.dtype is not None:
            if np.dtype(a) != np.dtype(p.dtype):
                raise TypeError(f"Type is mismatched. {p.name} {a} {p.dtype}")
        elif p.ctype in type_dict:
            t = type_dict[p.ctype]
            if np.dtype(t) != np.dtype(a):
                raise TypeError(f"Type is mismatched. {p.name} {a} {t} {p.ctype}")
        else:
            type_dict[p.ctype] = a
    in_types = tuple(type_dict[p.ctype] if p.dtype is None else p.dtype for p in in_params)
    out_types = tuple(type_dict[p.ctype] if p.dtype is None else p.dtype for p in out_params)
    type_map = _TypeMap(tuple(sorted(type_dict.items(), key=lambda kv: kv[0])))
    return in_types, out_types, type_map


@_memoize
def _decide_params_type(in_params, out_params, in_args_dtype, out_args_dtype):
    return _decide_params_type_core(in_params, out_params, in_args_dtype, out_args_dtype)


class _ArgInfo:
    """Kind, dtype, ndim and layout of one argument (``_kernel.pyx: _ArgInfo``); part of
    the compiled-kernel cache key."""

    NDARRAY, SCALAR, INDEXER = range(3)

    def __init__(self, kind, dtype, ndim, c_contiguous, index_32_bits):
        self.kind, self.dtype, self.ndim = kind, dtype, ndim
        self.c_contiguous, self.index_32_bits = c_contiguous, index_32_bits

    @classmethod
    def from_arg(cls, arg) -> _ArgInfo:
        if isinstance(arg, _View):
            return cls(cls.NDARRAY, arg.dtype, arg.ndim, arg.c_contiguous, arg.index_32_bits)
        if isinstance(arg, _CScalar):
            return cls(cls.SCALAR, arg.dtype, 0, True, True)
        if isinstance(arg, _Indexer):
            return cls(cls.INDEXER, None, arg.ndim, True, arg.index_32_bits)
        raise AssertionError(type(arg))

    def _key(self):
        return (self.kind, self.dtype, self.ndim, self.c_contiguous, self.index_32_bits)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _ArgInfo) and self._key() == other._key()

    def is_ndarray(self) -> bool:
        return self.kind == self.NDARRAY

    def get_c_type(self) -> str:
        if self.kind == self.NDARRAY:
            typename = _get_typename(self.dtype)
            return f"CArray<{typename}, {self.ndim}, {self.c_contiguous:d}, {self.index_32_bits:d}>"
        if self.kind == self.SCALAR:
            return _get_typename(self.dtype)
        return f"CIndexer<{self.ndim}, {self.index_32_bits:d}>"

    def get_param_c_type(self, p: ParameterInfo) -> str:
        ctyp = self.get_c_type()
        return "const " + ctyp if p.is_const else ctyp

    def get_c_var_name(self, p: ParameterInfo) -> str:
        if self.kind == self.NDARRAY and not p.raw:
            return "_raw_" + p.name
        return p.name


def _get_arginfos(args) -> tuple:
    return tuple(_ArgInfo.from_arg(a) for a in args)


def _get_kernel_params(params, arginfos) -> str:
    assert len(params) == len(arginfos)
    return ", ".join(
        f"{a.get_param_c_type(p)} {a.get_c_var_name(p)}"
        for p, a in zip(params, arginfos, strict=True)
    )


# --- shapes -----------------------------------------------------------------------------


def _broadcast(args: list, params: tuple, use_size: bool) -> tuple[list, tuple]:
    """``_kernel.pyx: _broadcast`` + ``internal.pyx: _broadcast_core``."""
    value = [
        a if (not p.raw and isinstance(a, _View)) else None
        for a, p in zip(args, params, strict=False)
    ]
    any_nonraw_array = any(v is not None for v in value)
    if use_size:
        if any_nonraw_array:
            raise ValueError("Specified 'size' can be used only if all of the ndarray are 'raw'.")
    elif not any_nonraw_array:
        raise ValueError("Loop size is undecided.")
    arrays = [v for v in value if v is not None]
    shape: list[int] = []
    if arrays:
        nd = max(a.ndim for a in arrays)
        for i in range(nd):
            s = 1
            for a in arrays:
                if i < nd - a.ndim:
                    continue
                a_sh = a.shape[i - (nd - a.ndim)]
                if a_sh == s or a_sh == 1:
                    continue
                if s == 1:
                    s = a_sh
                    continue
                raise ValueError(
                    "operands could not be broadcast together with shapes "
                    + " ".join(str(x.shape) if x is not None else "()" for x in value)
                )
            shape.append(s)
        for i, a in enumerate(value):
            if a is None or a.shape == tuple(shape):
                continue
            strides = [0] * nd
            for j in range(a.ndim):
                if a.shape[j] == shape[j + nd - a.ndim]:
                    strides[j + nd - a.ndim] = a.strides[j]
            v = a.view(shape, strides, True)
            if v.size * v.dtype.itemsize > 2**31:
                v.index_32_bits = False
            value[i] = v
    return [v if v is not None else a for v, a in zip(value, args, strict=True)], tuple(shape)


def _reduced_dims_of(shape, strides, itemsize):
    """``internal.pyx: get_reduced_dims``."""
    rshape, rstrides = [], []
    prev_st, index = 0, -1
    for sh, st in zip(shape, strides, strict=True):
        if sh == 0:
            return [0], [itemsize]
        if sh == 1:
            continue
        if index == -1 or prev_st != sh * st:
            rshape.append(sh)
            rstrides.append(st)
            index += 1
        else:
            rshape[index] *= sh
            rstrides[index] = st
        prev_st = st
    return rshape, rstrides


def _reduced_view(a: _View) -> _View:
    """``core.pyx: ndarray.reduced_view``."""
    if a.ndim <= 1:
        return a
    if a.c_contiguous:
        return a.view((a.size,), (a.dtype.itemsize,), False)
    shape, strides = _reduced_dims_of(a.shape, a.strides, a.dtype.itemsize)
    if a.ndim == len(shape):
        return a
    return a.view(shape, strides, False)


def _reduce_dims(args: list, params: tuple, shape: tuple) -> tuple:
    """``_kernel.pyx: _reduce_dims`` / ``_reduced_view_core``: merge axes that every
    array operand walks contiguously."""
    if len(shape) <= 1 or len(args) == 0:
        return shape
    if len(args) == 1:
        a = args[0]
        if params[0].raw or not isinstance(a, _View):
            return shape
        r = _reduced_view(a)
        if r is a:
            return shape
        args[0] = r
        return r.shape
    ndim = len(shape)
    array_indexes, strides_indexes = [], []
    for i, (a, p) in enumerate(zip(args, params, strict=False)):
        if p.raw or not isinstance(a, _View):
            continue
        array_indexes.append(i)
        if not a.c_contiguous:
            if ndim == 2:
                return shape
            strides_indexes.append(i)
    if not array_indexes:
        return shape
    if not strides_indexes:
        total = args[array_indexes[0]].size
        for i in array_indexes:
            args[i] = args[i].view((total,), (args[i].dtype.itemsize,), False)
        return (total,)
    vecshape = list(shape)
    axes = []
    last_ax = -1
    for ax in range(ndim):
        if vecshape[ax] == 1:
            continue
        if last_ax < 0:
            last_ax = ax
            continue
        for i in strides_indexes:
            arr = args[i]
            if arr.strides[ax] * vecshape[ax] != arr.strides[last_ax]:
                axes.append(last_ax)
                break
        else:
            vecshape[ax] *= vecshape[last_ax]
        last_ax = ax
    if last_ax >= 0:
        axes.append(last_ax)
    if len(axes) == ndim:
        return shape
    newshape = tuple(vecshape[ax] for ax in axes)
    for i in array_indexes:
        args[i] = args[i].view(newshape, [args[i].strides[ax] for ax in axes], False)
    return newshape


def _new_array(shape, dtype):
    import cupy

    return cupy.empty(shape, dtype=dtype)


def _get_out_args_with_params(out_args, out_types, out_shape, out_params, is_size_specified):
    """``_kernel.pyx: _get_out_args_with_params``: allocate or check the outputs."""
    if not out_args:
        for p in out_params:
            if p.raw and not is_size_specified:
                raise ValueError("Output array size is Undecided")
        return [_new_array(out_shape, t) for t in out_types]
    for p, a in zip(out_params, out_args, strict=True):
        if not _is_ndarray(a):
            raise TypeError("Output arguments type must be cupy.ndarray")
        if not p.raw and tuple(a.shape) != tuple(out_shape):
            raise ValueError("Out shape is mismatched")
    return out_args


# --- code generation ---------------------------------------------------------------------


def _type_decls(type_map, arginfos) -> str:
    """``_scalar.pyx: get_typename(dtype, type_decls)``: the header a type needs
    (``cupy/float16.cuh`` for float16), before the typedefs that use it."""
    dtypes = {t for _, t in type_map._pairs} | {a.dtype for a in arginfos if a.dtype is not None}
    return '#include "cupy/float16.cuh"\n' if np.dtype(np.float16) in dtypes else ""


def _get_simple_elementwise_kernel_code(
    params, arginfos, operation, name, type_map, preamble, loop_prep="", after_loop=""
):
    """``_kernel.pyx: _get_simple_elementwise_kernel_code``."""
    return string.Template("""
    ${type_decls}${typedef_preamble}
    ${preamble}
    extern "C" __global__ void ${name}(${params}) {
      ${loop_prep};
      #pragma unroll 1
      CUPY_FOR(i, _ind.size()) {
        _ind.set(i);
        ${operation};
      }
      ${after_loop};
    }
    """).substitute(
        type_decls=_type_decls(type_map, arginfos),
        typedef_preamble=type_map.get_typedef_code(),
        params=_get_kernel_params(params, arginfos),
        operation=operation,
        name=name,
        preamble=preamble,
        loop_prep=loop_prep,
        after_loop=after_loop,
    )


@_memoize
def _get_elementwise_kernel_code(
    arginfos, type_map, params, operation, name, preamble, loop_prep="", after_loop="", options=()
):
    """``_kernel.pyx: _get_elementwise_kernel_code``: bind each non-raw array to a
    reference of its element at the loop index."""
    op = []
    for p, arginfo in zip(params, arginfos, strict=True):
        if arginfo.is_ndarray() and not p.raw:
            fmt = (
                "const {t} &{n} = _raw_{n}[_ind.get()];"
                if p.is_const
                else "{t} &{n} = _raw_{n}[_ind.get()];"
            )
            op.append(fmt.format(t=p.ctype, n=p.name))
    op.append(operation)
    return _get_simple_elementwise_kernel_code(
        params, arginfos, "\n".join(op), name, type_map, preamble, loop_prep, after_loop
    )


def _launch_kernel(
    code: str, name: str, options: tuple, args: list, size: int, block_size: int, stream
) -> None:
    kern = _compile_with_cache(code, tuple(options)).get_function(name)
    kern.linear_launch(
        size, args, shared_mem=0, block_max_size=block_size, stream=stream, kind="elementwise"
    )


def _is_valid_kernel_name(name) -> bool:
    from cupy.cuda import compiler

    return compiler.is_valid_kernel_name(name)


class ElementwiseKernel:
    """User-defined elementwise kernel (``cupy/_core/_kernel.pyx: ElementwiseKernel``).

    The kernel is compiled at the first call for each combination of argument
    dtypes, dimensions and layouts, on each device.
    """

    def __init__(
        self,
        in_params,
        out_params,
        operation,
        name="kernel",
        reduce_dims=True,
        preamble="",
        no_return=False,
        return_tuple=False,
        **kwargs,
    ):
        if not _is_valid_kernel_name(name):
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.in_params = _get_param_info(in_params, True)
        self.out_params = _get_param_info(out_params, False)
        self.nin = len(self.in_params)
        self.nout = len(self.out_params)
        self.nargs = self.nin + self.nout
        param_rest = _get_param_info("CIndexer _ind", False)
        self.params = self.in_params + self.out_params + param_rest
        self.operation = operation
        self.name = name
        self.reduce_dims = reduce_dims
        self.preamble = preamble
        self.no_return = no_return
        self.return_tuple = return_tuple
        self.kwargs = kwargs
        self._params_type_memo = {}
        self._cached_codes = {}
        names = [p.name for p in self.in_params + self.out_params]
        if "i" in names:
            raise ValueError("Can not use 'i' as a parameter name")
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        """Compiles and invokes the elementwise kernel.

        Keyword arguments: ``size`` (loop size when every array is ``raw``),
        ``block_size`` (threads per block, default 128), ``stream``.
        """
        size = kwargs.pop("size", -1)
        stream = kwargs.pop("stream", None)
        block_size = kwargs.pop("block_size", 128)
        if len(kwargs):
            raise TypeError(f"Wrong arguments {kwargs}")
        if block_size <= 0:
            raise ValueError("block_size must be greater than zero")
        n_args = len(args)
        if n_args != self.nin and n_args != self.nargs:
            raise TypeError(
                f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} "
                f"or {self.nargs} (with outputs), but given {n_args}."
            )
        for arg in args:
            if hasattr(arg, "__cupy_override_elementwise_kernel__"):
                return arg.__cupy_override_elementwise_kernel__(self, *args, **kwargs)
        arg_list = _preprocess_args(args)
        out_views = arg_list[self.nin :]
        broadcast, shape = _broadcast(arg_list, self.params, size != -1)
        in_args = broadcast[: self.nin]
        in_ndarray_types = tuple(a.dtype if isinstance(a, _View) else None for a in in_args)
        out_ndarray_types = tuple(a.dtype for a in out_views)
        in_types, out_types, type_map = self._decide_params_type(
            in_ndarray_types, out_ndarray_types
        )
        is_size_specified = False
        if size != -1:
            shape = (size,)
            is_size_specified = True
        out_arrays = _get_out_args_with_params(
            list(args[self.nin :]), out_types, shape, self.out_params, is_size_specified
        )
        if self.no_return:
            ret = None
        elif not self.return_tuple and self.nout == 1:
            ret = out_arrays[0]
        else:
            ret = tuple(out_arrays)
        if 0 in shape:
            return ret
        for i, x in enumerate(in_args):
            if isinstance(x, _CScalar):
                x.apply_dtype(in_types[i])
        out_args = [_View.of(a) for a in out_arrays]
        for v in out_args:
            v.writes = True
        inout_args = in_args + out_args
        if self.reduce_dims:
            shape = _reduce_dims(inout_args, self.params, shape)
        indexer = _Indexer(shape)
        inout_args.append(indexer)
        arginfos = _get_arginfos(inout_args)
        code = self._get_elementwise_kernel_code(arginfos, type_map)
        _launch_kernel(
            code,
            self.name,
            self.kwargs.get("options", ()),
            inout_args,
            indexer.size,
            block_size,
            stream,
        )
        return ret

    def _decide_params_type(self, in_args_dtype, out_args_dtype):
        key = (in_args_dtype, out_args_dtype)
        ret = self._params_type_memo.get(key)
        if ret is None:
            ret = _decide_params_type_core(
                self.in_params, self.out_params, in_args_dtype, out_args_dtype
            )
            self._params_type_memo[key] = ret
        return ret

    def _get_elementwise_kernel_code(self, arginfos, type_map) -> str:
        kw = {k: v for k, v in self.kwargs.items() if k in ("loop_prep", "after_loop")}
        code = _get_elementwise_kernel_code(
            arginfos,
            type_map,
            self.params,
            self.operation,
            self.name,
            self.preamble,
            kw.get("loop_prep", ""),
            kw.get("after_loop", ""),
        )
        in_types = tuple(a.dtype for a in arginfos if a.is_ndarray())
        self._cached_codes.setdefault(in_types, code)
        return code

    @property
    def cached_codes(self):
        """Input types -> generated code (for debugging, as in CuPy)."""
        if len(self._cached_codes) == 0:
            warnings.warn(
                "No codes are cached because compilation is deferred until the first "
                "function call.",
                stacklevel=2,
            )
        return dict(self._cached_codes.items())

    @property
    def cached_code(self):
        codes = self._cached_codes
        if len(codes) > 1:
            warnings.warn(
                "The input types of the kernel could not be inferred. Please use "
                "`.cached_codes` instead.",
                stacklevel=2,
            )
        return next(iter(codes.values()))
