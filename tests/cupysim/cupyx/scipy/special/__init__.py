"""``cupyx.scipy.special`` (simulated): SciPy's functions as elementwise kernels."""

from __future__ import annotations

import scipy.special as _ss

from cupysim import wrap as _wrap

_NAMES = ['bdtr', 'bdtrc', 'bdtri', 'beta', 'betainc', 'betaincinv', 'betaln', 'binom', 'boxcox', 'boxcox1p', 'cbrt', 'chdtr', 'chdtrc', 'chdtri', 'cosdg', 'cosm1', 'cotdg', 'digamma', 'ellipeinc', 'ellipj', 'ellipk', 'ellipkinc', 'ellipkm1', 'entr', 'erf', 'erfc', 'erfcinv', 'erfcx', 'erfinv', 'exp1', 'exp10', 'exp2', 'expi', 'expit', 'expm1', 'expn', 'exprel', 'fdtr', 'fdtrc', 'fdtri', 'gamma', 'gammainc', 'gammaincc', 'gammainccinv', 'gammaincinv', 'gammaln', 'gammasgn', 'gdtr', 'gdtrc', 'huber', 'i0', 'i0e', 'i1', 'i1e', 'inv_boxcox', 'inv_boxcox1p', 'j0', 'j1', 'k0', 'k0e', 'k1', 'k1e', 'kl_div', 'lambertw', 'log1p', 'log_expit', 'log_ndtr', 'log_softmax', 'loggamma', 'logit', 'logsumexp', 'lpmv', 'multigammaln', 'nbdtr', 'nbdtrc', 'nbdtri', 'ndtr', 'ndtri', 'pdtr', 'pdtrc', 'pdtri', 'poch', 'polygamma', 'pseudo_huber', 'psi', 'radian', 'rel_entr', 'rgamma', 'round', 'shichi', 'sici', 'sinc', 'sindg', 'softmax', 'sph_harm_y', 'spherical_yn', 'tandg', 'wright_bessel', 'xlog1py', 'xlogy', 'y0', 'y1', 'yn', 'zeta', 'zetac']
for _n in _NAMES:
    globals()[_n] = _wrap.function(_n, getattr(_ss, _n))
