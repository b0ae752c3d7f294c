// cupy/_core/include/cupy/math_constants.h: the constants CuPy bundles.
#ifndef CUPY_MATH_CONSTANTS_H
#define CUPY_MATH_CONSTANTS_H
#define CUDART_INF_F __int_as_float(0x7f800000)
#define CUDART_NAN_F __int_as_float(0x7fffffff)
#define CUDART_INF __longlong_as_double(0x7ff0000000000000ULL)
#define CUDART_NAN __longlong_as_double(0xfff8000000000000ULL)
#endif  // CUPY_MATH_CONSTANTS_H
