// The device-side array and indexer types CuPy's generated kernels and users' raw kernels
// are written against (cupy/_core/include/cupy/carray.cuh declares them). Only their
// interface and their data layout follow CuPy: the launcher packs arrays and indexers by
// value as cupy/_core/_carray.pyx does, so the members are, in order,
//   CArray<T, N, ...>: T* data; ptrdiff_t size; ptrdiff_t shape[N]; ptrdiff_t strides[N] (bytes)
//   CIndexer<N, ...>:  ptrdiff_t size; ptrdiff_t shape[N]; ptrdiff_t index[N]
// The bodies are the simulator's own.
#pragma once

namespace cupy {
namespace type_traits {
template <bool B, class T, class F>
struct conditional {
  typedef T type;
};
template <class T, class F>
struct conditional<false, T, F> {
  typedef F type;
};
template <bool B, class T = void>
struct enable_if {};
template <class T>
struct enable_if<true, T> {
  typedef T type;
};
template <typename T, typename U>
struct is_same {
  static const bool value = false;
};
template <typename T>
struct is_same<T, T> {
  static const bool value = true;
};
}  // namespace type_traits
}  // namespace cupy

// A grid-stride loop over [0, n): each thread starts at its global index and steps by the
// number of threads in the grid.
#define CUPY_FOR(i, n)                                                                   \
  for (ptrdiff_t i = static_cast<ptrdiff_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<ptrdiff_t>(gridDim.x) * blockDim.x)

namespace cupysim_detail {
// Byte offset of a C-order flat index into an array of the given shape and byte strides.
// The arithmetic type is I: 32-bit when CuPy's launcher chose 32-bit indexing, as on a GPU.
template <typename I, int N>
__device__ inline I flat_to_offset(I flat, const ptrdiff_t* shape, const ptrdiff_t* strides) {
  I offset = 0;
  for (int d = N - 1; d >= 1; --d) {
    const I extent = static_cast<I>(shape[d]);
    const I q = flat / extent;
    offset += static_cast<I>(strides[d]) * (flat - q * extent);
    flat = q;
  }
  return offset + static_cast<I>(strides[0]) * flat;
}
}  // namespace cupysim_detail

template <typename T, int _ndim, bool _c_contiguous = false, bool _use_32bit_indexing = false>
class CArray {
 public:
  static const int ndim = _ndim;
  static const bool c_contiguous = _c_contiguous;
  typedef typename cupy::type_traits::conditional<_use_32bit_indexing, int, ptrdiff_t>::type
      index_t;

 private:
  T* data_;
  ptrdiff_t size_;
  ptrdiff_t shape_[_ndim];
  ptrdiff_t strides_[_ndim];

  __device__ const T* at_bytes(index_t offset) const {
    return reinterpret_cast<const T*>(reinterpret_cast<const char*>(data_) + offset);
  }

 public:
  __device__ CArray() : data_(NULL), size_(1) {
    for (int d = 0; d < _ndim; ++d) shape_[d] = strides_[d] = 0;
  }
  template <typename Int1, typename Int2>
  __device__ CArray(T* data, const Int1* shape, const Int2* strides) : data_(data), size_(1) {
    for (int d = 0; d < _ndim; ++d) {
      shape_[d] = shape[d];
      strides_[d] = strides[d];
      size_ *= shape_[d];
    }
  }
  __device__ ptrdiff_t size() const { return size_; }
  __device__ const ptrdiff_t* shape() const { return shape_; }
  __device__ const ptrdiff_t* strides() const { return strides_; }

  // An N-d index: the sum of index times byte stride per axis.
  template <typename Int>
  __device__ const T& operator[](const Int (&idx)[_ndim]) const {
    index_t offset = 0;
    for (int d = 0; d < _ndim; ++d) offset += static_cast<index_t>(idx[d]) * static_cast<index_t>(strides_[d]);
    return *at_bytes(offset);
  }
  template <typename Int>
  __device__ T& operator[](const Int (&idx)[_ndim]) {
    return const_cast<T&>(static_cast<const CArray&>(*this)[idx]);
  }
  // A flat index in C order, unravelled against the shape (a plain element offset when the
  // array is known to be C-contiguous).
  __device__ const T& operator[](ptrdiff_t flat) const {
    if (_c_contiguous) return data_[flat];
    return *at_bytes(
        cupysim_detail::flat_to_offset<index_t, _ndim>(static_cast<index_t>(flat), shape_, strides_));
  }
  __device__ T& operator[](ptrdiff_t flat) {
    return const_cast<T&>(static_cast<const CArray&>(*this)[flat]);
  }
};

// A 0-d (scalar) array: one element whatever the index.
template <typename T, bool _use_32bit_indexing>
class CArray<T, 0, true, _use_32bit_indexing> {
 private:
  T* data_;
  ptrdiff_t size_;

 public:
  static const int ndim = 0;
  __device__ CArray() : data_(NULL), size_(1) {}
  __device__ explicit CArray(T* data) : data_(data), size_(1) {}
  template <typename Int>
  __device__ CArray(T* data, Int size) : data_(data), size_(size) {}
  __device__ ptrdiff_t size() const { return size_; }
  __device__ const ptrdiff_t* shape() const { return NULL; }
  __device__ const ptrdiff_t* strides() const { return NULL; }
  template <typename U>
  __device__ T& operator[](const U&) { return *data_; }
  template <typename U>
  __device__ T operator[](const U&) const { return *data_; }
};

template <int _ndim, bool _use_32bit_indexing = false>
class CIndexer {
 public:
  static const int ndim = _ndim;

 private:
  typedef ptrdiff_t multi_index[_ndim];
  ptrdiff_t size_;
  ptrdiff_t shape_[_ndim];
  ptrdiff_t index_[_ndim];

  // Unravel a flat C-order index in the integer type I. Power-of-two extents use a mask
  // and a shift, others a division, as CuPy's indexer does on the device.
  template <typename I>
  __device__ void unravel(I flat) {
    for (int d = _ndim - 1; d >= 1; --d) {
      const I extent = static_cast<I>(shape_[d]);
      if ((extent & (extent - 1)) == 0) {
        index_[d] = flat & (extent - 1);
        flat >>= bits_below(extent);
      } else {
        const I q = flat / extent;
        index_[d] = flat - q * extent;
        flat = q;
      }
    }
    index_[0] = flat;
  }
  static __device__ unsigned int bits_below(unsigned int p) { return __popc(p - 1); }
  static __device__ unsigned long long bits_below(unsigned long long p) { return __popcll(p - 1); }

 public:
  __device__ CIndexer() : size_(1) {
    for (int d = 0; d < _ndim; ++d) shape_[d] = index_[d] = 0;
  }
  __device__ ptrdiff_t size() const { return size_; }
  __device__ const multi_index& get() const { return index_; }
  // Index arithmetic is 32-bit unless 64-bit indexing was asked for and the iteration space
  // is over 2**31 elements.
  __device__ void set(ptrdiff_t flat) {
    if (_ndim == 1) {
      index_[0] = flat;
    } else if (_use_32bit_indexing || size_ <= (1LL << 31)) {
      unravel(static_cast<unsigned int>(flat));
    } else {
      unravel(static_cast<unsigned long long>(flat));
    }
  }
};

template <bool _use_32bit_indexing>
class CIndexer<0, _use_32bit_indexing> {
 private:
  ptrdiff_t size_;

 public:
  static const int ndim = 0;
  __device__ CIndexer() : size_(1) {}
  __device__ ptrdiff_t size() const { return size_; }
  __device__ void set(ptrdiff_t) {}
  __device__ const ptrdiff_t* get() const { return NULL; }
};

// Python's floor division for CuPy's floor_divide ufunc: rounds toward minus infinity, and
// an integer division by zero gives 0 (CuPy's choice; NumPy warns and gives 0 too).
template <typename I>
__device__ inline I cupysim_floor_div_signed(I x, I y) {
  if (y == 0) return 0;
  const I q = x / y;
  const bool inexact = q * y != x;
  const bool opposite_signs = (x < 0) != (y < 0);
  return (inexact && opposite_signs) ? q - 1 : q;
}
__device__ int _floor_divide(int x, int y) { return cupysim_floor_div_signed(x, y); }
__device__ long long _floor_divide(long long x, long long y) { return cupysim_floor_div_signed(x, y); }
__device__ unsigned _floor_divide(unsigned x, unsigned y) { return y == 0 ? 0u : x / y; }
__device__ unsigned long long _floor_divide(unsigned long long x, unsigned long long y) {
  return y == 0 ? 0ull : x / y;
}
__device__ float _floor_divide(float x, float y) { return floor(x / y); }
__device__ double _floor_divide(double x, double y) { return floor(x / y); }

