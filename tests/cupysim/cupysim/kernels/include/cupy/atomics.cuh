// cupy/atomics.cuh adds atomicAdd overloads for float16 and complex types; the
// simulator supports the complex ones.
#pragma once
static __forceinline__ thrust::complex<float> atomicAdd(thrust::complex<float>* p,
                                                        thrust::complex<float> v) {
  float* f = reinterpret_cast<float*>(p);
  return thrust::complex<float>(atomicAdd(f, v.real()), atomicAdd(f + 1, v.imag()));
}
static __forceinline__ thrust::complex<double> atomicAdd(thrust::complex<double>* p,
                                                         thrust::complex<double> v) {
  double* f = reinterpret_cast<double*>(p);
  return thrust::complex<double>(atomicAdd(f, v.real()), atomicAdd(f + 1, v.imag()));
}
