"""Names of the real CuPy 14.2 namespace that are NumPy's too (read from the installed
CuPy with ``dir()``): the simulator exposes exactly these from NumPy, wrapped.

``FUNCTIONS`` are wrapped (inputs unwrapped, placement checked, results on the current
device); ``TYPES`` and ``CONSTANTS`` are NumPy's objects, as in CuPy (``cupy.float32 is
numpy.float32``).
"""

FUNCTIONS = frozenset({
    'abs', 'absolute', 'acos', 'acosh', 'add', 'all', 'allclose', 'amax', 'amin', 'angle',
    'any', 'append', 'apply_along_axis', 'apply_over_axes', 'arange', 'arccos', 'arccosh',
    'arcsin', 'arcsinh', 'arctan', 'arctan2', 'arctanh', 'argmax', 'argmin', 'argpartition',
    'argsort', 'argwhere', 'around', 'array', 'array2string', 'array_equal', 'array_equiv',
    'array_repr', 'array_split', 'array_str', 'asanyarray', 'asarray', 'asarray_chkfinite',
    'ascontiguousarray', 'asfortranarray', 'asin', 'asinh', 'astype', 'atan', 'atan2', 'atanh',
    'atleast_1d', 'atleast_2d', 'atleast_3d', 'average', 'bartlett', 'base_repr', 'binary_repr',
    'bincount', 'bitwise_and', 'bitwise_count', 'bitwise_invert', 'bitwise_left_shift',
    'bitwise_not', 'bitwise_or', 'bitwise_right_shift', 'bitwise_xor', 'blackman',
    'broadcast_arrays', 'broadcast_shapes', 'broadcast_to', 'can_cast', 'cbrt', 'ceil',
    'choose', 'clip', 'column_stack', 'common_type', 'compress', 'concat', 'concatenate',
    'conj', 'conjugate', 'convolve', 'copy', 'copysign', 'copyto', 'corrcoef', 'correlate',
    'cos', 'cosh', 'count_nonzero', 'cov', 'cross', 'cumprod', 'cumsum', 'cumulative_prod',
    'cumulative_sum', 'deg2rad', 'degrees', 'delete', 'diag', 'diag_indices',
    'diag_indices_from', 'diagflat', 'diagonal', 'diff', 'digitize', 'divide', 'divmod', 'dot',
    'dsplit', 'dstack', 'ediff1d', 'einsum', 'empty', 'empty_like', 'equal', 'exp', 'exp2',
    'expand_dims', 'expm1', 'extract', 'eye', 'fabs', 'fill_diagonal', 'fix', 'flatnonzero',
    'flip', 'fliplr', 'flipud', 'float_power', 'floor', 'floor_divide', 'fmax', 'fmin', 'fmod',
    'format_float_positional', 'format_float_scientific', 'frexp', 'from_dlpack', 'frombuffer',
    'fromfile', 'fromfunction', 'fromiter', 'fromstring', 'full', 'full_like', 'gcd',
    'genfromtxt', 'get_printoptions', 'gradient', 'greater', 'greater_equal', 'hamming',
    'hanning', 'heaviside', 'histogram', 'histogram2d', 'histogramdd', 'hsplit', 'hstack',
    'hypot', 'i0', 'identity', 'imag', 'indices', 'inner', 'interp', 'intersect1d', 'invert',
    'isclose', 'iscomplex', 'iscomplexobj', 'isdtype', 'isfinite', 'isfortran', 'isin', 'isinf',
    'isnan', 'isneginf', 'isposinf', 'isreal', 'isrealobj', 'isscalar', 'issubdtype',
    'iterable', 'ix_', 'kaiser', 'kron', 'lcm', 'ldexp', 'left_shift', 'less', 'less_equal',
    'lexsort', 'linspace', 'load', 'loadtxt', 'log', 'log10', 'log1p', 'log2', 'logaddexp',
    'logaddexp2', 'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'logspace',
    'mask_indices', 'matmul', 'matrix_transpose', 'max', 'maximum', 'may_share_memory', 'mean',
    'median', 'meshgrid', 'min', 'min_scalar_type', 'minimum', 'mintypecode', 'mod', 'modf',
    'moveaxis', 'multiply', 'nan_to_num', 'nanargmax', 'nanargmin', 'nancumprod', 'nancumsum',
    'nanmax', 'nanmean', 'nanmedian', 'nanmin', 'nanprod', 'nanstd', 'nansum', 'nanvar', 'ndim',
    'negative', 'nextafter', 'nonzero', 'not_equal', 'ones', 'ones_like', 'outer', 'packbits',
    'pad', 'partition', 'percentile', 'permute_dims', 'piecewise', 'place', 'poly', 'polyadd',
    'polyfit', 'polymul', 'polysub', 'polyval', 'positive', 'pow', 'power', 'printoptions',
    'prod', 'promote_types', 'ptp', 'put', 'put_along_axis', 'putmask', 'quantile', 'rad2deg',
    'radians', 'ravel', 'ravel_multi_index', 'real', 'real_if_close', 'reciprocal', 'remainder',
    'repeat', 'require', 'reshape', 'resize', 'result_type', 'right_shift', 'rint', 'roll',
    'rollaxis', 'roots', 'rot90', 'round', 'row_stack', 'save', 'savetxt', 'savez',
    'savez_compressed', 'searchsorted', 'select', 'set_printoptions', 'setdiff1d', 'setxor1d',
    'shape', 'shares_memory', 'show_config', 'sign', 'signbit', 'sin', 'sinc', 'sinh', 'size',
    'sort', 'sort_complex', 'split', 'sqrt', 'square', 'squeeze', 'stack', 'std', 'subtract',
    'sum', 'swapaxes', 'take', 'take_along_axis', 'tan', 'tanh', 'tensordot', 'tile', 'trace',
    'transpose', 'trapezoid', 'tri', 'tril', 'tril_indices', 'tril_indices_from', 'trim_zeros',
    'triu', 'triu_indices', 'triu_indices_from', 'true_divide', 'trunc', 'typename', 'union1d',
    'unique', 'unique_all', 'unique_counts', 'unique_inverse', 'unique_values', 'unpackbits',
    'unravel_index', 'unwrap', 'vander', 'var', 'vdot', 'vsplit', 'vstack', 'where', 'zeros',
    'zeros_like'
})

TYPES = frozenset({
    'bool', 'bool_', 'broadcast', 'byte', 'cdouble', 'complex128', 'complex64',
    'complexfloating', 'csingle', 'double', 'dtype', 'finfo', 'flatiter', 'float16', 'float32',
    'float64', 'floating', 'generic', 'half', 'iinfo', 'inexact', 'int16', 'int32', 'int64',
    'int8', 'int_', 'intc', 'integer', 'intp', 'long', 'longlong', 'ndarray', 'ndindex',
    'number', 'poly1d', 'short', 'signedinteger', 'single', 'ubyte', 'ufunc', 'uint', 'uint16',
    'uint32', 'uint64', 'uint8', 'uintc', 'uintp', 'ulong', 'ulonglong', 'unsignedinteger',
    'ushort', 'vectorize'
})

CONSTANTS = frozenset({
    'c_', 'e', 'euler_gamma', 'index_exp', 'inf', 'mgrid', 'nan', 'newaxis', 'ogrid', 'pi',
    'r_', 's_'
})

LINALG = frozenset({
    'LinAlgError', 'annotations', 'cholesky', 'cond', 'cross', 'det', 'eig', 'eigh', 'eigvals',
    'eigvalsh', 'inv', 'lstsq', 'matmul', 'matrix_power', 'matrix_rank', 'matrix_transpose',
    'norm', 'pinv', 'qr', 'slogdet', 'solve', 'svd', 'tensorinv', 'tensorsolve'
})

FFT = frozenset({
    'config', 'fft', 'fft2', 'fftfreq', 'fftn', 'fftshift', 'hfft', 'ifft', 'ifft2', 'ifftn',
    'ifftshift', 'ihfft', 'irfft', 'irfft2', 'irfftn', 'rfft', 'rfft2', 'rfftfreq', 'rfftn'
})

RANDOM = frozenset({
    'BitGenerator', 'MRG32k3a', 'Philox4x3210', 'RandomState', 'XORWOW', 'annotations', 'beta',
    'binomial', 'bytes', 'chisquare', 'choice', 'default_rng', 'dirichlet', 'exponential', 'f',
    'gamma', 'geometric', 'get_random_state', 'gumbel', 'hypergeometric', 'laplace', 'logistic',
    'lognormal', 'logseries', 'multinomial', 'multivariate_normal', 'negative_binomial',
    'noncentral_chisquare', 'noncentral_f', 'normal', 'pareto', 'permutation', 'poisson',
    'power', 'rand', 'randint', 'randn', 'random', 'random_integers', 'random_sample', 'ranf',
    'rayleigh', 'reset_states', 'sample', 'seed', 'set_random_state', 'shuffle',
    'standard_cauchy', 'standard_exponential', 'standard_gamma', 'standard_normal',
    'standard_t', 'triangular', 'uniform', 'vonmises', 'wald', 'weibull', 'zipf'
})
