"""The coefficient tables of gpukit's host kernels (gpukit/_host/csrc/kernels.c), derived.

    python tools/host_kernel_coefficients.py

Prints, in 60-digit arithmetic (mpmath), each float64 table the C sources hold and what
its truncation leaves: the Chebyshev series of P(u) = log(erfc(a) / t) + a^2 (t = 2 /
(2 + a), u = a / (2 + a)) over u in [0.2, 1), the Taylor series of (Phi(z) - 1/2) / z
in z^2, and that of (tanh(x) - x) / x^3 in x^2. It also measures the float32 table
``ERFC32`` (a degree-12 least-squares fit of the same P over all of u in [0, 1)) against
the function. The C sources' comments quote these figures.
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 60

ERFC32 = (
    -3.9334602242036e-09, -1.2567570679667042, -0.3033042349169688, 0.16280129584977027,
    0.17910336951645417, 0.14080129095585073, -0.37670101697550235, 0.6608012189853869,
    -1.0872164078848905, 0.8224006250618722, -0.11235032762243785, -0.14986045900407224,
    0.0547696001863379,
)  # fmt: skip


def p_of_u(u):
    a = 2 * u / (1 - u)
    return mp.log(mp.erfc(a) * (2 + a) / 2) + a * a


def chebyshev(f, lo, hi, nodes, degree):
    """Coefficients of f's Chebyshev interpolant on [lo, hi] (c0 halved, Clenshaw's
    convention), and the largest coefficient past ``degree`` (the truncation)."""
    th = [mp.pi * (k + mp.mpf(1) / 2) / nodes for k in range(nodes)]
    fx = [f((hi - lo) / 2 * mp.cos(t) + (hi + lo) / 2) for t in th]
    c = [2 * mp.fsum(fx[k] * mp.cos(j * th[k]) for k in range(nodes)) / nodes for j in range(nodes)]
    c[0] /= 2
    return c[: degree + 1], max(abs(v) for v in c[degree + 1 :])


def main() -> None:
    coeffs, tail = chebyshev(p_of_u, mp.mpf("0.2"), mp.mpf(1), 48, 25)
    print("ERFC64 (Chebyshev in x = 2.5 u - 1.5):", ", ".join(repr(float(v)) for v in coeffs))
    print(f"  largest dropped coefficient: {mp.nstr(tail, 3)}")

    phi = [
        (-1) ** n / (mp.sqrt(2 * mp.pi) * 2**n * mp.factorial(n) * (2 * n + 1)) for n in range(15)
    ]
    print("PHI_SMALL64:", ", ".join(repr(float(v)) for v in phi[:14]))
    z = mp.sqrt(mp.mpf("0.5"))
    dropped = abs(phi[14]) * z**29 / mp.ncdf(-z)
    print(f"  first dropped term over Phi at |z| = sqrt(1/2): {mp.nstr(dropped, 3)}")

    def tanh_term(k):  # coefficient of x^(2k+1)
        n = k + 1
        return 2 ** (2 * n) * (2 ** (2 * n) - 1) * mp.bernoulli(2 * n) / mp.factorial(2 * n)

    x = mp.mpf("0.3")
    for name, terms in (("TANH_Q64", 12), ("TANH_Q32", 5)):
        print(f"{name}:", ", ".join(repr(float(tanh_term(k))) for k in range(1, terms + 1)))
        dropped = abs(tanh_term(terms + 1)) * x ** (2 * terms + 3) / mp.tanh(x)
        print(f"  first dropped term over tanh at |x| = 0.3: {mp.nstr(dropped, 3)}")

    grid = [mp.mpf(k) / 2000 for k in range(2000)]
    err = max(abs(mp.polyval(ERFC32[::-1], u) - p_of_u(u)) for u in grid)
    print(f"ERFC32 against P over u in [0, 1): {mp.nstr(err, 3)}")


if __name__ == "__main__":
    main()
