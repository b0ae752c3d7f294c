// CArray and CIndexer as cupy/_core/include/cupy/carray.cuh defines them: the same
// members, layout (the launcher passes arrays and indexers by value with these
// bytes: cupy/_core/_carray.pyx) and indexing arithmetic.
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

#define CUPY_FOR(i, n)                                                                   \
  for (ptrdiff_t i = static_cast<ptrdiff_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<ptrdiff_t>(blockDim.x) * gridDim.x)

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
  ptrdiff_t shape_[ndim];
  ptrdiff_t strides_[ndim];

 public:
  template <typename Int1, typename Int2>
  __device__ CArray(T* data, const Int1* shape, const Int2* strides) : data_(data), size_(1) {
    for (int i = 0; i < _ndim; i++) {
      size_ *= shape[i];
      shape_[i] = shape[i];
      strides_[i] = strides[i];
    }
  }
  __device__ CArray() : data_(NULL), size_(1) {
    memset(shape_, 0, sizeof(shape_));
    memset(strides_, 0, sizeof(strides_));
  }
  __device__ ptrdiff_t size() const { return size_; }
  __device__ const ptrdiff_t* shape() const { return shape_; }
  __device__ const ptrdiff_t* strides() const { return strides_; }

  template <typename Int>
  __device__ T& operator[](const Int (&idx)[ndim]) {
    return const_cast<T&>(const_cast<const CArray&>(*this)[idx]);
  }
  template <typename Int>
  __device__ const T& operator[](const Int (&idx)[ndim]) const {
    index_t diff = 0;
    for (int dim = 0; dim < ndim; ++dim) {
      diff += static_cast<index_t>(strides_[dim]) * static_cast<index_t>(idx[dim]);
    }
    const char* ptr = reinterpret_cast<const char*>(data_);
    return *reinterpret_cast<const T*>(ptr + diff);
  }
  __device__ T& operator[](ptrdiff_t i) {
    return const_cast<T&>(const_cast<const CArray&>(*this)[i]);
  }
  __device__ const T& operator[](ptrdiff_t idx) const {
    if (c_contiguous) return data_[idx];
    index_t diff = 0;
    index_t i = static_cast<index_t>(idx);
    for (int dim = ndim; --dim > 0;) {
      index_t shape_dim = static_cast<index_t>(shape_[dim]);
      diff += static_cast<index_t>(strides_[dim]) * (i % shape_dim);
      i /= shape_dim;
    }
    diff += static_cast<index_t>(strides_[0]) * i;
    const char* ptr = reinterpret_cast<const char*>(data_);
    return *reinterpret_cast<const T*>(ptr + diff);
  }
};

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
  ptrdiff_t size_;
  ptrdiff_t shape_[ndim];
  ptrdiff_t index_[ndim];
  typedef ptrdiff_t index_t[ndim];

 public:
  __device__ CIndexer() : size_(1) {
    memset(shape_, 0, sizeof(shape_));
    memset(index_, 0, sizeof(index_));
  }
  __device__ ptrdiff_t size() const { return size_; }
  __device__ const index_t& get() const { return index_; }
  __device__ void set(ptrdiff_t i) {
    if (ndim == 1) {
      index_[0] = i;
    } else if (!_use_32bit_indexing && size_ > 1LL << 31) {
      _set(static_cast<unsigned long long int>(i));
    } else {
      _set(static_cast<unsigned int>(i));
    }
  }

 private:
  template <typename I>
  __device__ void _set(I i) {
    for (int dim = ndim; --dim > 0;) {
      I s = static_cast<I>(shape_[dim]);
      if (s & (s - 1)) {
        I t = i / s;
        index_[dim] = i - t * s;
        i = t;
      } else {
        index_[dim] = i & (s - 1);
        i >>= _log2(s);
      }
    }
    index_[0] = i;
  }
  static unsigned int __device__ _log2(unsigned int x) { return __popc(x - 1); }
  static unsigned long long int __device__ _log2(unsigned long long int x) {
    return __popcll(x - 1);
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

__device__ int _floor_divide(int x, int y) {
  if (y == 0) return 0;
  int q = x / y;
  return q - (((x < 0) != (y < 0)) && q * y != x);
}
__device__ long long _floor_divide(long long x, long long y) {
  if (y == 0) return 0;
  long long q = x / y;
  return q - (((x < 0) != (y < 0)) && q * y != x);
}
__device__ unsigned _floor_divide(unsigned x, unsigned y) {
  if (y == 0) return 0;
  return x / y;
}
__device__ unsigned long long _floor_divide(unsigned long long x, unsigned long long y) {
  if (y == 0) return 0;
  return x / y;
}
__device__ float _floor_divide(float x, float y) { return floor(x / y); }
__device__ double _floor_divide(double x, double y) { return floor(x / y); }
