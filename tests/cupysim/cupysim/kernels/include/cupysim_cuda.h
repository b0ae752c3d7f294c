// CUDA C++ on the host: what NVRTC gives a kernel, for g++.
//
// Prepended to every kernel source cupysim compiles. Device code is ordinary C++;
// the built-in variables read the running CUDA thread's record (cupysim_cur, set
// by the scheduler), barriers and warp intrinsics call the scheduler
// (runtime/scheduler.cpp), atomics are GCC __atomic builtins (blocks of one launch
// run in parallel on host threads). The compiler driver (compiler.py) rewrites
// `extern __shared__` declarations and appends one Entry<&kernel> per kernel.
// References: CUDA C++ Programming Guide, sections "Built-in Variables",
// "Synchronization Functions", "Warp Shuffle Functions", "Warp Vote Functions",
// "Atomic Functions", "Mathematical Functions", "Vector Types".
#ifndef CUPYSIM_CUDA_H
#define CUPYSIM_CUDA_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dlfcn.h>

#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <math.h>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cupysim_abi.h"

// What NVRTC defines (CuPy compiles RawModule/RawKernel code with NVRTC, for an H100).
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __CUDA_ARCH__ 900
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 4
#define CUDART_VERSION 12040

// --- execution-space and storage qualifiers ---------------------------------------
#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __inline_hint__ inline
#define __constant__
#define __managed__
#define __grid_constant__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __cudart_builtin__
// One worker runs one block at a time: per-OS-thread storage is per-block storage.
// Sanitizer builds run blocks one at a time on one thread, so a plain static works
// (and AddressSanitizer puts redzones around it).
#if defined(CUPYSIM_SERIAL)
#define __shared__ static
#define CUPYSIM_DYNAMIC_SHARED static
#else
#define __shared__ static thread_local
#define CUPYSIM_DYNAMIC_SHARED static thread_local
#endif

// --- vector types -----------------------------------------------------------------
#define CUPYSIM_VEC1(name, T, A) \
  struct __attribute__((aligned(A))) name { T x; };
#define CUPYSIM_VEC2(name, T, A) \
  struct __attribute__((aligned(A))) name { T x, y; };
#define CUPYSIM_VEC3(name, T, A) \
  struct name { T x, y, z; };
#define CUPYSIM_VEC4(name, T, A) \
  struct __attribute__((aligned(A))) name { T x, y, z, w; };
#define CUPYSIM_VECS(base, T, A1, A2, A4)                                              \
  CUPYSIM_VEC1(base##1, T, A1) CUPYSIM_VEC2(base##2, T, A2) CUPYSIM_VEC3(base##3, T, A1) \
  CUPYSIM_VEC4(base##4, T, A4)                                                          \
  static __forceinline__ base##1 make_##base##1(T x) { return {x}; }                    \
  static __forceinline__ base##2 make_##base##2(T x, T y) { return {x, y}; }            \
  static __forceinline__ base##3 make_##base##3(T x, T y, T z) { return {x, y, z}; }    \
  static __forceinline__ base##4 make_##base##4(T x, T y, T z, T w) { return {x, y, z, w}; }
CUPYSIM_VECS(char, signed char, 1, 2, 4)
CUPYSIM_VECS(uchar, unsigned char, 1, 2, 4)
CUPYSIM_VECS(short, short, 2, 4, 8)
CUPYSIM_VECS(ushort, unsigned short, 2, 4, 8)
CUPYSIM_VECS(int, int, 4, 8, 16)
CUPYSIM_VECS(long, long, 8, 16, 16)
CUPYSIM_VECS(ulong, unsigned long, 8, 16, 16)
CUPYSIM_VECS(longlong, long long, 8, 16, 16)
CUPYSIM_VECS(ulonglong, unsigned long long, 8, 16, 16)
CUPYSIM_VECS(float, float, 4, 8, 16)
CUPYSIM_VECS(double, double, 8, 16, 16)
CUPYSIM_VEC1(uint1, unsigned int, 4)
CUPYSIM_VEC2(uint2, unsigned int, 8)
CUPYSIM_VEC4(uint4, unsigned int, 16)
static __forceinline__ uint1 make_uint1(unsigned x) { return {x}; }
static __forceinline__ uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
static __forceinline__ uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return {x, y, z, w};
}
struct uint3 {
  unsigned int x, y, z;
};
static __forceinline__ uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return {x, y, z}; }
};
#undef CUPYSIM_VEC1
#undef CUPYSIM_VEC2
#undef CUPYSIM_VEC3
#undef CUPYSIM_VEC4
#undef CUPYSIM_VECS

// --- built-in variables -----------------------------------------------------------
#define threadIdx (reinterpret_cast<const ::uint3&>(cupysim_cur->thread_idx))
#define blockIdx (reinterpret_cast<const ::uint3&>(cupysim_cur->block_idx))
#define blockDim (reinterpret_cast<const ::dim3&>(cupysim_cur->block_dim))
#define gridDim (reinterpret_cast<const ::dim3&>(cupysim_cur->grid_dim))
static constexpr int warpSize = 32;

// --- synchronization --------------------------------------------------------------
#define __syncthreads() ((void)cupysim_syncthreads(0, 1, __FILE__, __LINE__))
#define __syncthreads_count(p) cupysim_syncthreads(1, (p) != 0, __FILE__, __LINE__)
#define __syncthreads_and(p) cupysim_syncthreads(2, (p) != 0, __FILE__, __LINE__)
#define __syncthreads_or(p) cupysim_syncthreads(3, (p) != 0, __FILE__, __LINE__)
#define __syncwarp(...) ::cupysim::syncwarp(__FILE__, __LINE__, ##__VA_ARGS__)
#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_block() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_system() __atomic_thread_fence(__ATOMIC_SEQ_CST)

// --- warp intrinsics --------------------------------------------------------------
namespace cupysim {

static __forceinline__ void syncwarp(const char* file, int line, unsigned mask = 0xffffffffu) {
  cupysim_warp(CUPYSIM_WARP_SYNC, mask, 0, 0, 32, file, line);
}

template <class T>
static __forceinline__ T shuffle(int op, const char* file, int line, unsigned mask, T var, int arg,
                                 int width) {
  static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = cupysim_warp(op, mask, bits, arg, width, file, line);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

// The overloads CUDA declares (so a short argument promotes to int, as on a GPU).
#define CUPYSIM_SHFL(T)                                                                     \
  static __forceinline__ T shfl(const char* f, int l, unsigned m, T v, int src, int w = 32) { \
    return shuffle<T>(CUPYSIM_WARP_SHFL_IDX, f, l, m, v, src, w);                           \
  }                                                                                         \
  static __forceinline__ T shfl_up(const char* f, int l, unsigned m, T v, unsigned d,         \
                                   int w = 32) {                                            \
    return shuffle<T>(CUPYSIM_WARP_SHFL_UP, f, l, m, v, static_cast<int>(d), w);            \
  }                                                                                         \
  static __forceinline__ T shfl_down(const char* f, int l, unsigned m, T v, unsigned d,       \
                                     int w = 32) {                                          \
    return shuffle<T>(CUPYSIM_WARP_SHFL_DOWN, f, l, m, v, static_cast<int>(d), w);          \
  }                                                                                         \
  static __forceinline__ T shfl_xor(const char* f, int l, unsigned m, T v, int lm, int w = 32) { \
    return shuffle<T>(CUPYSIM_WARP_SHFL_XOR, f, l, m, v, lm, w);                            \
  }                                                                                         \
  static __forceinline__ unsigned match_any(const char* f, int l, unsigned m, T v) {         \
    return static_cast<unsigned>(shuffle<uint64_t>(                                         \
        CUPYSIM_WARP_MATCH_ANY, f, l, m, static_cast<uint64_t>(v), 0, 32));                 \
  }
CUPYSIM_SHFL(int)
CUPYSIM_SHFL(unsigned int)
CUPYSIM_SHFL(long)
CUPYSIM_SHFL(unsigned long)
CUPYSIM_SHFL(long long)
CUPYSIM_SHFL(unsigned long long)
CUPYSIM_SHFL(float)
CUPYSIM_SHFL(double)
#undef CUPYSIM_SHFL

static __forceinline__ unsigned vote(int op, const char* f, int l, unsigned m, int pred) {
  return static_cast<unsigned>(cupysim_warp(op, m, pred != 0, 0, 32, f, l));
}
static __forceinline__ unsigned warp_reduce(int op, const char* f, int l, unsigned m, unsigned v) {
  return static_cast<unsigned>(cupysim_warp(op, m, v, 0, 32, f, l));
}
static __forceinline__ int warp_reduce(int op, const char* f, int l, unsigned m, int v) {
  return static_cast<int>(
      cupysim_warp(op, m, static_cast<uint32_t>(v), 1, 32, f, l));
}

}  // namespace cupysim

#define __shfl_sync(...) ::cupysim::shfl(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) ::cupysim::shfl_up(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) ::cupysim::shfl_down(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) ::cupysim::shfl_xor(__FILE__, __LINE__, __VA_ARGS__)
#define __match_any_sync(...) ::cupysim::match_any(__FILE__, __LINE__, __VA_ARGS__)
#define __ballot_sync(m, p) ::cupysim::vote(CUPYSIM_WARP_BALLOT, __FILE__, __LINE__, m, p)
#define __any_sync(m, p) \
  static_cast<int>(::cupysim::vote(CUPYSIM_WARP_ANY, __FILE__, __LINE__, m, p))
#define __all_sync(m, p) \
  static_cast<int>(::cupysim::vote(CUPYSIM_WARP_ALL, __FILE__, __LINE__, m, p))
#define __uni_sync(m, p) __all_sync(m, p)
#define __reduce_add_sync(m, v) \
  ::cupysim::warp_reduce(CUPYSIM_WARP_REDUCE_ADD, __FILE__, __LINE__, m, v)
#define __reduce_min_sync(m, v) \
  ::cupysim::warp_reduce(CUPYSIM_WARP_REDUCE_MIN, __FILE__, __LINE__, m, v)
#define __reduce_max_sync(m, v) \
  ::cupysim::warp_reduce(CUPYSIM_WARP_REDUCE_MAX, __FILE__, __LINE__, m, v)
#define __reduce_and_sync(m, v) \
  ::cupysim::warp_reduce(CUPYSIM_WARP_REDUCE_AND, __FILE__, __LINE__, m, v)
#define __reduce_or_sync(m, v) \
  ::cupysim::warp_reduce(CUPYSIM_WARP_REDUCE_OR, __FILE__, __LINE__, m, v)
#define __reduce_xor_sync(m, v) \
  ::cupysim::warp_reduce(CUPYSIM_WARP_REDUCE_XOR, __FILE__, __LINE__, m, v)
// The guide promises nothing about which lanes are converged at a given moment; the
// simulator answers with the calling lane alone, the most diverged warp possible.
static __forceinline__ unsigned __activemask() {
  const cupysim_thread_view* t = cupysim_cur;
  const unsigned linear = t->thread_idx.x + t->block_dim.x * (t->thread_idx.y + t->block_dim.y *
                                                                                  t->thread_idx.z);
  return 1u << (linear % 32u);
}

// --- atomics (all scopes are device-wide on the host) ------------------------------
#define CUPYSIM_ATOMIC_INT(T)                                                                    \
  static __forceinline__ T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); } \
  static __forceinline__ T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); } \
  static __forceinline__ T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); } \
  static __forceinline__ T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }   \
  static __forceinline__ T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); } \
  static __forceinline__ T atomicCAS(T* p, T expected, T desired) {                              \
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    return expected;                                                                             \
  }
CUPYSIM_ATOMIC_INT(int)
CUPYSIM_ATOMIC_INT(unsigned int)
CUPYSIM_ATOMIC_INT(unsigned long long)
#undef CUPYSIM_ATOMIC_INT
static __forceinline__ int atomicSub(int* p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
static __forceinline__ unsigned atomicSub(unsigned* p, unsigned v) {
  return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);
}
static __forceinline__ unsigned short atomicCAS(unsigned short* p, unsigned short e,
                                                unsigned short d) {
  __atomic_compare_exchange_n(p, &e, d, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return e;
}
namespace cupysim {
template <class T, class F>
static __forceinline__ T atomic_update(T* p, F f) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (!__atomic_compare_exchange_n(p, &old, f(old), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
template <class T, class U>
static __forceinline__ T atomic_update_bits(T* p, U (*f)(T, T), T v) {
  U* bits = reinterpret_cast<U*>(p);
  U old = __atomic_load_n(bits, __ATOMIC_SEQ_CST);
  for (;;) {
    T cur;
    std::memcpy(&cur, &old, sizeof(T));
    U next = f(cur, v);
    if (__atomic_compare_exchange_n(bits, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
      return cur;
    }
  }
}
template <class T, class U>
static U add_bits(T a, T b) {
  T s = a + b;
  U out;
  std::memcpy(&out, &s, sizeof(T));
  return out;
}
}  // namespace cupysim
static __forceinline__ float atomicAdd(float* p, float v) {
  return ::cupysim::atomic_update_bits<float, unsigned>(p, &::cupysim::add_bits<float, unsigned>, v);
}
static __forceinline__ double atomicAdd(double* p, double v) {
  return ::cupysim::atomic_update_bits<double, unsigned long long>(
      p, &::cupysim::add_bits<double, unsigned long long>, v);
}
static __forceinline__ float atomicExch(float* p, float v) {
  unsigned bits, old;
  std::memcpy(&bits, &v, 4);
  old = __atomic_exchange_n(reinterpret_cast<unsigned*>(p), bits, __ATOMIC_SEQ_CST);
  float out;
  std::memcpy(&out, &old, 4);
  return out;
}
#define CUPYSIM_ATOMIC_MINMAX(T)                                                            \
  static __forceinline__ T atomicMin(T* p, T v) {                                           \
    return ::cupysim::atomic_update(p, [v](T o) { return o < v ? o : v; });                 \
  }                                                                                         \
  static __forceinline__ T atomicMax(T* p, T v) {                                           \
    return ::cupysim::atomic_update(p, [v](T o) { return o > v ? o : v; });                 \
  }
CUPYSIM_ATOMIC_MINMAX(int)
CUPYSIM_ATOMIC_MINMAX(unsigned int)
CUPYSIM_ATOMIC_MINMAX(long long)
CUPYSIM_ATOMIC_MINMAX(unsigned long long)
#undef CUPYSIM_ATOMIC_MINMAX
static __forceinline__ unsigned atomicInc(unsigned* p, unsigned v) {
  return ::cupysim::atomic_update(p, [v](unsigned o) { return o >= v ? 0u : o + 1u; });
}
static __forceinline__ unsigned atomicDec(unsigned* p, unsigned v) {
  return ::cupysim::atomic_update(p, [v](unsigned o) { return (o == 0 || o > v) ? v : o - 1u; });
}
#define CUPYSIM_SCOPED(op) \
  template <class... A>    \
  static __forceinline__ auto op##_block(A... a) { return op(a...); } \
  template <class... A>    \
  static __forceinline__ auto op##_system(A... a) { return op(a...); }
CUPYSIM_SCOPED(atomicAdd)
CUPYSIM_SCOPED(atomicSub)
CUPYSIM_SCOPED(atomicExch)
CUPYSIM_SCOPED(atomicMin)
CUPYSIM_SCOPED(atomicMax)
CUPYSIM_SCOPED(atomicInc)
CUPYSIM_SCOPED(atomicDec)
CUPYSIM_SCOPED(atomicCAS)
CUPYSIM_SCOPED(atomicAnd)
CUPYSIM_SCOPED(atomicOr)
CUPYSIM_SCOPED(atomicXor)
#undef CUPYSIM_SCOPED

// --- integer and bit intrinsics -----------------------------------------------------
static __forceinline__ int __popc(unsigned x) { return __builtin_popcount(x); }
static __forceinline__ int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static __forceinline__ int __clz(int x) { return x ? __builtin_clz(static_cast<unsigned>(x)) : 32; }
static __forceinline__ int __clzll(long long x) {
  return x ? __builtin_clzll(static_cast<unsigned long long>(x)) : 64;
}
static __forceinline__ int __ffs(int x) { return __builtin_ffs(x); }
static __forceinline__ int __ffsll(long long x) { return __builtin_ffsll(x); }
static __forceinline__ unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
static __forceinline__ unsigned long long __brevll(unsigned long long x) {
  unsigned long long r = 0;
  for (int i = 0; i < 64; ++i) r |= ((x >> i) & 1ull) << (63 - i);
  return r;
}
static __forceinline__ unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= ((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return r;
}
static __forceinline__ int __mulhi(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) * b) >> 32);
}
static __forceinline__ unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
static __forceinline__ long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
static __forceinline__ unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
static __forceinline__ int __mul24(int a, int b) {
  return ((a << 8) >> 8) * ((b << 8) >> 8);
}
static __forceinline__ unsigned __umul24(unsigned a, unsigned b) {
  return (a & 0xffffffu) * (b & 0xffffffu);
}
static __forceinline__ int __hadd(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) + b) >> 1);
}
static __forceinline__ unsigned __uhadd(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) + b) >> 1);
}
static __forceinline__ int __rhadd(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) + b + 1) >> 1);
}
static __forceinline__ unsigned __urhadd(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) + b + 1) >> 1);
}
static __forceinline__ unsigned __sad(int x, int y, unsigned z) {
  return z + static_cast<unsigned>(x > y ? x - y : y - x);
}
static __forceinline__ unsigned __usad(unsigned x, unsigned y, unsigned z) {
  return z + (x > y ? x - y : y - x);
}
static __forceinline__ unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (s & 31u)) >> 32);
}
static __forceinline__ unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (s & 31u));
}

// --- reinterpretation and conversion --------------------------------------------------
namespace cupysim {
template <class To, class From>
static __forceinline__ To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between different sizes");
  To out;
  std::memcpy(&out, &v, sizeof(To));
  return out;
}
}  // namespace cupysim
static __forceinline__ float __int_as_float(int x) { return ::cupysim::bit_cast<float>(x); }
static __forceinline__ int __float_as_int(float x) { return ::cupysim::bit_cast<int>(x); }
static __forceinline__ float __uint_as_float(unsigned x) { return ::cupysim::bit_cast<float>(x); }
static __forceinline__ unsigned __float_as_uint(float x) { return ::cupysim::bit_cast<unsigned>(x); }
static __forceinline__ double __longlong_as_double(long long x) {
  return ::cupysim::bit_cast<double>(x);
}
static __forceinline__ long long __double_as_longlong(double x) {
  return ::cupysim::bit_cast<long long>(x);
}
static __forceinline__ int __double2hiint(double x) {
  return static_cast<int>(::cupysim::bit_cast<unsigned long long>(x) >> 32);
}
static __forceinline__ int __double2loint(double x) {
  return static_cast<int>(::cupysim::bit_cast<unsigned long long>(x) & 0xffffffffu);
}
static __forceinline__ double __hiloint2double(int hi, int lo) {
  return ::cupysim::bit_cast<double>((static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) |
                                     static_cast<unsigned>(lo));
}
static __forceinline__ int __float2int_rn(float x) { return static_cast<int>(nearbyintf(x)); }
static __forceinline__ int __float2int_rz(float x) { return static_cast<int>(x); }
static __forceinline__ int __float2int_ru(float x) { return static_cast<int>(ceilf(x)); }
static __forceinline__ int __float2int_rd(float x) { return static_cast<int>(floorf(x)); }
static __forceinline__ unsigned __float2uint_rn(float x) { return static_cast<unsigned>(nearbyintf(x)); }
static __forceinline__ unsigned __float2uint_rz(float x) { return static_cast<unsigned>(x); }
static __forceinline__ long long __float2ll_rn(float x) { return static_cast<long long>(nearbyintf(x)); }
static __forceinline__ long long __float2ll_rz(float x) { return static_cast<long long>(x); }
static __forceinline__ int __double2int_rn(double x) { return static_cast<int>(nearbyint(x)); }
static __forceinline__ int __double2int_rz(double x) { return static_cast<int>(x); }
static __forceinline__ long long __double2ll_rn(double x) { return static_cast<long long>(nearbyint(x)); }
static __forceinline__ long long __double2ll_rz(double x) { return static_cast<long long>(x); }
static __forceinline__ float __int2float_rn(int x) { return static_cast<float>(x); }
static __forceinline__ float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
static __forceinline__ float __ll2float_rn(long long x) { return static_cast<float>(x); }
static __forceinline__ double __int2double_rn(int x) { return static_cast<double>(x); }
static __forceinline__ double __ll2double_rn(long long x) { return static_cast<double>(x); }
static __forceinline__ float __double2float_rn(double x) { return static_cast<float>(x); }

// --- math (CUDA Math API functions the host's libm lacks, and the intrinsics) -------------
static __forceinline__ float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static __forceinline__ double rsqrt(double x) { return 1.0 / sqrt(x); }
static __forceinline__ float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static __forceinline__ double rcbrt(double x) { return 1.0 / cbrt(x); }
static __forceinline__ float sinpif(float x) { return sinf(static_cast<float>(M_PI) * x); }
static __forceinline__ double sinpi(double x) { return sin(M_PI * x); }
static __forceinline__ float cospif(float x) { return cosf(static_cast<float>(M_PI) * x); }
static __forceinline__ double cospi(double x) { return cos(M_PI * x); }
static __forceinline__ void sincospif(float x, float* s, float* c) {
  *s = sinpif(x);
  *c = cospif(x);
}
static __forceinline__ void sincospi(double x, double* s, double* c) {
  *s = sinpi(x);
  *c = cospi(x);
}
static __forceinline__ float normcdff(float x) { return 0.5f * erfcf(-x * static_cast<float>(M_SQRT1_2)); }
static __forceinline__ double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
static __forceinline__ double erfinv(double y) {
  // Giles' single-precision start refined by Newton steps on erf (to double precision).
  if (y <= -1.0) return y == -1.0 ? -HUGE_VAL : NAN;
  if (y >= 1.0) return y == 1.0 ? HUGE_VAL : NAN;
  double w = -log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    x = 3.43273939e-07 + x * w;
    x = -3.5233877e-06 + x * w;
    x = -4.39150654e-06 + x * w;
    x = 0.00021858087 + x * w;
    x = -0.00125372503 + x * w;
    x = -0.00417768164 + x * w;
    x = 0.246640727 + x * w;
    x = 1.50140941 + x * w;
  } else {
    w = sqrt(w) - 3.0;
    x = -0.000200214257;
    x = 0.000100950558 + x * w;
    x = 0.00134934322 + x * w;
    x = -0.00367342844 + x * w;
    x = 0.00573950773 + x * w;
    x = -0.0076224613 + x * w;
    x = 0.00943887047 + x * w;
    x = 1.00167406 + x * w;
    x = 2.83297682 + x * w;
  }
  x *= y;
  for (int i = 0; i < 3; ++i) x -= (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
  return x;
}
static __forceinline__ float erfinvf(float y) { return static_cast<float>(erfinv(y)); }
static __forceinline__ double erfcinv(double y) { return erfinv(1.0 - y); }
static __forceinline__ float erfcinvf(float y) { return static_cast<float>(erfinv(1.0 - y)); }
static __forceinline__ double normcdfinv(double p) { return -M_SQRT2 * erfcinv(2.0 * p); }
static __forceinline__ float normcdfinvf(float p) { return static_cast<float>(normcdfinv(p)); }
static __forceinline__ float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x == x ? x : 0.0f)); }
static __forceinline__ float fdividef(float a, float b) { return a / b; }
static __forceinline__ float __fdividef(float a, float b) { return a / b; }
// glibc declares its own __expf & co. (the same functions): macros, not definitions.
#define __expf(x) expf(x)
#define __exp10f(x) exp10f(x)
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __sincosf(x, s, c) sincosf(x, s, c)
#define __powf(a, b) powf(a, b)
static __forceinline__ float __frcp_rn(float x) { return 1.0f / x; }
static __forceinline__ double __drcp_rn(double x) { return 1.0 / x; }
static __forceinline__ float __fsqrt_rn(float x) { return sqrtf(x); }
static __forceinline__ double __dsqrt_rn(double x) { return sqrt(x); }
static __forceinline__ float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
#define CUPYSIM_ROUNDED(T, s, suffix)                                                       \
  static __forceinline__ T __##s##add_##suffix(T a, T b) { return a + b; }               \
  static __forceinline__ T __##s##sub_##suffix(T a, T b) { return a - b; }               \
  static __forceinline__ T __##s##mul_##suffix(T a, T b) { return a * b; }               \
  static __forceinline__ T __##s##div_##suffix(T a, T b) { return a / b; }
CUPYSIM_ROUNDED(float, f, rn)
CUPYSIM_ROUNDED(float, f, rz)
CUPYSIM_ROUNDED(float, f, ru)
CUPYSIM_ROUNDED(float, f, rd)
CUPYSIM_ROUNDED(double, d, rn)
CUPYSIM_ROUNDED(double, d, rz)
CUPYSIM_ROUNDED(double, d, ru)
CUPYSIM_ROUNDED(double, d, rd)
#undef CUPYSIM_ROUNDED
static __forceinline__ float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static __forceinline__ double __fma_rn(double a, double b, double c) { return fma(a, b, c); }

// min/max: CUDA declares them for every arithmetic type (and mixed signedness).
#define CUPYSIM_MINMAX(T)                                                       \
  static __forceinline__ T min(T a, T b) { return a < b ? a : b; }             \
  static __forceinline__ T max(T a, T b) { return a > b ? a : b; }
CUPYSIM_MINMAX(int)
CUPYSIM_MINMAX(unsigned int)
CUPYSIM_MINMAX(long)
CUPYSIM_MINMAX(unsigned long)
CUPYSIM_MINMAX(long long)
CUPYSIM_MINMAX(unsigned long long)
#undef CUPYSIM_MINMAX
static __forceinline__ float min(float a, float b) { return fminf(a, b); }
static __forceinline__ float max(float a, float b) { return fmaxf(a, b); }
static __forceinline__ double min(double a, double b) { return fmin(a, b); }
static __forceinline__ double max(double a, double b) { return fmax(a, b); }
static __forceinline__ double min(float a, double b) { return fmin(a, b); }
static __forceinline__ double max(float a, double b) { return fmax(a, b); }
static __forceinline__ double min(double a, float b) { return fmin(a, b); }
static __forceinline__ double max(double a, float b) { return fmax(a, b); }
static __forceinline__ unsigned min(int a, unsigned b) { return min(static_cast<unsigned>(a), b); }
static __forceinline__ unsigned max(int a, unsigned b) { return max(static_cast<unsigned>(a), b); }
static __forceinline__ unsigned min(unsigned a, int b) { return min(a, static_cast<unsigned>(b)); }
static __forceinline__ unsigned max(unsigned a, int b) { return max(a, static_cast<unsigned>(b)); }
static __forceinline__ unsigned long long min(long long a, unsigned long long b) {
  return min(static_cast<unsigned long long>(a), b);
}
static __forceinline__ unsigned long long max(long long a, unsigned long long b) {
  return max(static_cast<unsigned long long>(a), b);
}
static __forceinline__ unsigned long long min(unsigned long long a, long long b) {
  return min(a, static_cast<unsigned long long>(b));
}
static __forceinline__ unsigned long long max(unsigned long long a, long long b) {
  return max(a, static_cast<unsigned long long>(b));
}

// --- memory access hints, clocks, device-side failures -----------------------------
template <class T>
static __forceinline__ T __ldg(const T* p) { return *p; }
template <class T>
static __forceinline__ T __ldcg(const T* p) { return *p; }
template <class T>
static __forceinline__ T __ldca(const T* p) { return *p; }
template <class T>
static __forceinline__ T __ldcs(const T* p) { return *p; }
template <class T>
static __forceinline__ T __ldlu(const T* p) { return *p; }
template <class T>
static __forceinline__ T __ldcv(const T* p) { return *p; }
template <class T>
static __forceinline__ void __stwb(T* p, T v) { *p = v; }
template <class T>
static __forceinline__ void __stcg(T* p, T v) { *p = v; }
template <class T>
static __forceinline__ void __stcs(T* p, T v) { *p = v; }
template <class T>
static __forceinline__ void __stwt(T* p, T v) { *p = v; }
static __forceinline__ long long clock64() { return static_cast<long long>(__builtin_ia32_rdtsc()); }
// clock(): the CUDA C++ Programming Guide's "Time Function", a per-multiprocessor cycle
// counter; PTX's %clock is its low 32 bits (unsigned). <ctime> comes first so that its
// host clock() is declared before the macro and a kernel's own #include <ctime> is a no-op.
#include <ctime>
static __forceinline__ clock_t cupysim_clock() {
  return static_cast<clock_t>(static_cast<unsigned>(__builtin_ia32_rdtsc()));
}
#define clock() cupysim_clock()
static __forceinline__ void __nanosleep(unsigned) {}
#define __trap() cupysim_trap(__FILE__, __LINE__)
#define __brkpt() cupysim_trap(__FILE__, __LINE__)
// A failed assert() stops the launch with CUDA_ERROR_ASSERT, as the device runtime does.
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) \
  ((e) ? (void)0 : cupysim_assert_fail(#e, __FILE__, __LINE__, __PRETTY_FUNCTION__))
#endif

// --- kernel entries -----------------------------------------------------------------
namespace cupysim {

enum ParamKind { VALUE = 0, VALUE_INT, VALUE_UINT, VALUE_FLOAT, VALUE_BOOL, POINTER, CONST_POINTER };

struct ParamInfo {
  unsigned size, align, offset;
  int kind;
  const char* type;
};

struct KernelInfo {
  const void* fn;
  const char* symbol;  // the mangled (or extern "C") name, as NVRTC lowers it
  int nparams;
  const ParamInfo* params;
  unsigned param_bytes;
  int (*launch)(const cupysim_launch_cfg*, const void* params, char* err, size_t errlen);
  int max_threads;  // __launch_bounds__, else the device limit
};

template <class T>
constexpr int kind_of() {
  if constexpr (std::is_pointer_v<T>) {
    return std::is_const_v<std::remove_pointer_t<T>> ? CONST_POINTER : POINTER;
  } else if constexpr (std::is_same_v<T, bool>) {
    return VALUE_BOOL;
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    return std::is_signed_v<T> ? VALUE_INT : VALUE_UINT;
  } else if constexpr (std::is_floating_point_v<T>) {
    return VALUE_FLOAT;
  } else {
    return VALUE;
  }
}

// "const char* cupysim::type_name() [with T = const float*]" -> "const float*"
template <class T>
const char* type_name() {
  static char name[256];
  if (!name[0]) {
    const char* s = std::strstr(__PRETTY_FUNCTION__, "T = ");
    s = s ? s + 4 : __PRETTY_FUNCTION__;
    size_t n = std::strlen(s);
    while (n && (s[n - 1] == ']' || s[n - 1] == ' ')) --n;
    if (n >= sizeof name) n = sizeof name - 1;
    std::memcpy(name, s, n);
    name[n] = 0;
  }
  return name;
}

template <auto K>
struct Entry;

template <class... P, void (*K)(P...)>
struct Entry<K> {
  static_assert((std::is_trivially_copyable_v<P> && ...),
                "kernel parameters must be trivially copyable");
  using Tuple = std::tuple<P...>;
  static inline ParamInfo params[sizeof...(P) + 1];

  // One CUDA thread: the kernel with its own copy of the arguments.
  static void body(void* args) { std::apply(K, *static_cast<Tuple*>(args)); }

  template <size_t... I>
  static void unpack(Tuple& t, const char* buf, std::index_sequence<I...>) {
    (std::memcpy(static_cast<void*>(&std::get<I>(t)), buf + params[I].offset,
                 sizeof(std::tuple_element_t<I, Tuple>)),
     ...);
  }

  static int launch(const cupysim_launch_cfg* cfg, const void* buf, char* err, size_t errlen) {
    Tuple t;
    unpack(t, static_cast<const char*>(buf), std::index_sequence_for<P...>{});
    return cupysim_run(cfg, &body, &t, err, errlen);
  }

  // The parameter buffer's layout: each argument at its alignment, as cuLaunchKernel
  // lays out kernelParams.
  static KernelInfo info(int max_threads) {
    unsigned off = 0, i = 0;
    ((off = (off + alignof(P) - 1) / alignof(P) * alignof(P),
      params[i++] = ParamInfo{static_cast<unsigned>(sizeof(P)), static_cast<unsigned>(alignof(P)),
                              off, kind_of<P>(), type_name<P>()},
      off += sizeof(P)),
     ...);
    Dl_info where;
    const void* fn = reinterpret_cast<const void*>(K);
    const char* symbol = nullptr;
    if (dladdr(fn, &where) && where.dli_saddr == fn) symbol = where.dli_sname;
    return KernelInfo{fn,       symbol, static_cast<int>(sizeof...(P)), params, off, &launch,
                      max_threads};
  }
};

}  // namespace cupysim

#endif  // CUPYSIM_CUDA_H
