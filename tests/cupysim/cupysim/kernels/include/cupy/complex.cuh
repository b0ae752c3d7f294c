// cupy/complex.cuh provides thrust::complex<T>; the host's std::complex has the same
// arithmetic, real()/imag() and math functions.
#pragma once
#include <complex>
namespace thrust {
template <typename T>
using complex = std::complex<T>;
using std::abs;
using std::arg;
using std::conj;
using std::exp;
using std::log;
using std::norm;
using std::polar;
using std::pow;
using std::sqrt;
}  // namespace thrust
