// The `float16` type of ElementwiseKernel and ReductionKernel code, for kernels run on the
// host. It stands in for cupy/_core/include/cupy/float16.cuh (CuPy 14.2): the same names and
// behaviour that generated code relies on -- 16-bit storage as CUDA's __half (here the host
// cuda_fp16.h), conversions rounding to nearest even, arithmetic through float (an operand
// converts to float and the result rounds back when stored), the classification functions,
// copysign, nextafter, and min/max/fmin/fmax with CuPy's NaN rules.
#pragma once

#include <cmath>
#include <type_traits>

#include "cuda_fp16.h"
#include "cupy/carray.cuh"

class float16 {
 public:
  __half data_;

  float16() = default;
  float16(const __half& h) : data_(h) {}
  template <class T, class = typename std::enable_if<std::is_arithmetic<T>::value>::type>
  float16(T v) : data_(static_cast<float>(v)) {}

  operator float() const { return static_cast<float>(data_); }
  // __half_raw, not __half: __half's own operators would make float16 + float16
  // ambiguous with float's
  operator __half_raw() const { return static_cast<__half_raw>(data_); }

  template <class T, class = typename std::enable_if<std::is_arithmetic<T>::value>::type>
  float16& operator=(T v) {
    data_ = __half(static_cast<float>(v));
    return *this;
  }

  static float16 from_bits(unsigned short bits) {
    float16 h;
    h.data_ = __half(__half_raw{bits});
    return h;
  }
  unsigned short bits() const { return static_cast<__half_raw>(data_).x; }

  // 5 exponent bits, 10 mantissa bits
  int isnan() const { return (bits() & 0x7c00u) == 0x7c00u && (bits() & 0x03ffu) != 0; }
  int isinf() const { return (bits() & 0x7fffu) == 0x7c00u; }
  int isfinite() const { return (bits() & 0x7c00u) != 0x7c00u; }
  int iszero() const { return (bits() & 0x7fffu) == 0; }
  int signbit() const { return (bits() & 0x8000u) != 0; }

  float16 operator-() const { return from_bits(bits() ^ 0x8000u); }

  template <class T>
  float16& operator+=(const T& v) { return *this = float(*this) + float(v); }
  template <class T>
  float16& operator-=(const T& v) { return *this = float(*this) - float(v); }
  template <class T>
  float16& operator*=(const T& v) { return *this = float(*this) * float(v); }
  template <class T>
  float16& operator/=(const T& v) { return *this = float(*this) / float(v); }

  friend float16 copysign(float16 x, float16 y) {
    return from_bits((x.bits() & 0x7fffu) | (y.bits() & 0x8000u));
  }

  // The neighbour of x towards y, counted in representable halves (subnormals included).
  friend float16 nextafter(float16 x, float16 y) {
    if (x.isnan() || y.isnan()) return from_bits(0x7e00u);
    if (float(x) == float(y)) return y;
    if (x.iszero()) return from_bits((y.bits() & 0x8000u) | 1u);
    const bool away = (float(y) > float(x)) == !x.signbit();  // magnitude grows
    return from_bits(static_cast<unsigned short>(x.bits() + (away ? 1 : -1)));
  }
};

// min/max propagate NaN (NumPy's maximum/minimum); fmin/fmax prefer the number.
inline float16 min(float16 x, float16 y) {
  return x.isnan() || (!y.isnan() && float(x) <= float(y)) ? x : y;
}
inline float16 max(float16 x, float16 y) {
  return x.isnan() || (!y.isnan() && float(x) >= float(y)) ? x : y;
}
inline float16 fmin(float16 x, float16 y) {
  return y.isnan() || (!x.isnan() && float(x) <= float(y)) ? x : y;
}
inline float16 fmax(float16 x, float16 y) {
  return y.isnan() || (!x.isnan() && float(x) >= float(y)) ? x : y;
}
inline int iszero(float16 x) { return x.iszero(); }
inline int isnan(float16 x) { return x.isnan(); }
inline int isinf(float16 x) { return x.isinf(); }
inline int isfinite(float16 x) { return x.isfinite(); }
inline int signbit(float16 x) { return x.signbit(); }
