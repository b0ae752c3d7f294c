// cuda_fp16.h for kernels run on the host: the __half type of the CUDA Math API's "Half
// Precision Intrinsics" (conversions round to nearest even, as __float2half_rn), stored in
// 16 bits and converted with GCC's _Float16. Arithmetic goes through float, as CuPy's
// float16 (cupy/float16.cuh) does; the sm_53+ half instructions round the same way.
#pragma once

#include <cstring>
#include <type_traits>

struct __half_raw {
  unsigned short x;
};

struct __half {
  unsigned short __x;

  static unsigned short __bits(_Float16 v) {
    unsigned short b;
    memcpy(&b, &v, sizeof b);
    return b;
  }
  _Float16 __value() const {
    _Float16 v;
    memcpy(&v, &__x, sizeof v);
    return v;
  }

  __half() = default;
  __half(const __half_raw& r) : __x(r.x) {}
  template <class T, class = typename std::enable_if<std::is_arithmetic<T>::value>::type>
  __half(T v) : __x(__bits(static_cast<_Float16>(v))) {}
  __half& operator=(const __half_raw& r) {
    __x = r.x;
    return *this;
  }
  operator __half_raw() const { return __half_raw{__x}; }
  operator float() const { return static_cast<float>(__value()); }
};
typedef __half half;

static inline float __half2float(__half h) { return static_cast<float>(h); }
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline __half __double2half(double d) { return __half(d); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __ushort_as_half(unsigned short x) { return __half(__half_raw{x}); }

static inline __half operator+(__half a, __half b) { return __half(float(a) + float(b)); }
static inline __half operator-(__half a, __half b) { return __half(float(a) - float(b)); }
static inline __half operator*(__half a, __half b) { return __half(float(a) * float(b)); }
static inline __half operator/(__half a, __half b) { return __half(float(a) / float(b)); }
static inline __half operator-(__half a) { return __half_raw{static_cast<unsigned short>(a.__x ^ 0x8000u)}; }
static inline bool operator==(__half a, __half b) { return float(a) == float(b); }
static inline bool operator!=(__half a, __half b) { return float(a) != float(b); }
static inline bool operator<(__half a, __half b) { return float(a) < float(b); }
static inline bool operator<=(__half a, __half b) { return float(a) <= float(b); }
static inline bool operator>(__half a, __half b) { return float(a) > float(b); }
static inline bool operator>=(__half a, __half b) { return float(a) >= float(b); }
