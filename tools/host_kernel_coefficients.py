"""The coefficient tables of gpukit's host kernels (gpukit/_host/csrc/kernels.c), derived.

    python tools/host_kernel_coefficients.py

Prints each table the C sources hold and what it leaves: for float64 (60-digit arithmetic,
mpmath) P(u) = log(erfc(a) / t) + a^2 (t = 2 / (2 + a), u = a / (2 + a)) over all of u in
[0, 1) as a polynomial in x = 2 u - 1 (its Chebyshev series truncated at degree 27, then
rewritten in powers of x, for Horner's rule: the powers' coefficients stay below 1 in
magnitude, so Horner's rounding is that of a short sum), measured with its coefficients
rounded to float64, the degree-9 Chebyshev fit of q(r) = (exp(r) - 1 - r) / r^2 on
[-ln2/2, ln2/2] (exp(r) = 1 + r + r^2 q(r)), measured in relative terms with its
coefficients rounded to float64, and the Taylor series of (tanh(x) - x) / x^3 in x^2;
for float32 the
degree-9 least-squares fit of the same P over all of u in [0, 1) and the degree-6 fit of
exp(r) on [-ln2/2, ln2/2] (relative error), each measured with its coefficients rounded to
float32. The C sources' comments quote these figures.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np

mp.mp.dps = 60


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


def chebyshev_to_powers(c):
    """The coefficients of x^0 .. x^n of sum c_k T_k(x) (``c`` as :func:`chebyshev` gives
    them), exactly: T_0 = 1, T_1 = x, T_k+1 = 2 x T_k - T_k-1."""
    powers = [mp.mpf(0)] * len(c)
    prev, cur = [], [mp.mpf(1)]
    for k, ck in enumerate(c):
        for j, v in enumerate(cur):
            powers[j] += ck * v
        nxt = [mp.mpf(0), *(2 * v for v in cur)] if k else [mp.mpf(0), mp.mpf(1)]
        for j, v in enumerate(prev):
            nxt[j] -= v
        prev, cur = cur, nxt
    return powers


def main() -> None:
    coeffs, _ = chebyshev(p_of_u, mp.mpf(0), mp.mpf(1), 72, 27)
    powers = [float(v) for v in chebyshev_to_powers(coeffs)]
    print("ERFC64 (powers of x = 2 u - 1):", ", ".join(repr(v) for v in powers))
    grid = [mp.mpf(k) / 4000 for k in range(4000)]
    err = max(abs(mp.polyval(powers[::-1], 2 * u - 1) - p_of_u(u)) for u in grid)
    print(f"  against P over u in [0, 1), coefficients in float64: {mp.nstr(err, 3)}")
    print(f"  sum of the coefficients' magnitudes: {sum(abs(v) for v in powers):.3f}")

    half = mp.log(2) / 2
    q = mp.chebyfit(lambda r: (mp.exp(r) - 1 - r) / r**2 if r else mp.mpf(1) / 2, [-half, half], 10)
    exp64 = [1.0, 1.0, *(float(v) for v in q[::-1])]
    print("EXP64 (r^0 .. r^11):", ", ".join(repr(v) for v in exp64))
    rt = [half * (2 * mp.mpf(k) / 4000 - 1) for k in range(4001)]
    err = max(abs(mp.polyval([mp.mpf(v) for v in exp64[::-1]], x) / mp.exp(x) - 1) for x in rt)
    print(f"  relative error, coefficients in float64: {mp.nstr(err, 3)}")

    def tanh_term(k):  # coefficient of x^(2k+1)
        n = k + 1
        return 2 ** (2 * n) * (2 ** (2 * n) - 1) * mp.bernoulli(2 * n) / mp.factorial(2 * n)

    x = mp.mpf("0.3")
    for name, terms in (("TANH_Q64", 12), ("TANH_Q32", 5)):
        print(f"{name}:", ", ".join(repr(float(tanh_term(k))) for k in range(1, terms + 1)))
        dropped = abs(tanh_term(terms + 1)) * x ** (2 * terms + 3) / mp.tanh(x)
        print(f"  first dropped term over tanh at |x| = 0.3: {mp.nstr(dropped, 3)}")

    nodes = (np.cos(np.pi * (np.arange(600) + 0.5) / 600) + 1) / 2
    fit = np.polynomial.polynomial.polyfit(nodes, [float(p_of_u(mp.mpf(u))) for u in nodes], 9)
    grid = [mp.mpf(k) / 4000 for k in range(4000)]
    as32 = [mp.mpf(float(np.float32(c))) for c in fit]
    err = max(abs(mp.polyval(as32[::-1], u) - p_of_u(u)) for u in grid)
    print("ERFC32:", ", ".join(repr(float(c)) for c in fit))
    print(f"  against P over u in [0, 1), coefficients in float32: {mp.nstr(err, 3)}")

    half = float(mp.log(2) / 2)
    r = np.cos(np.pi * (np.arange(400) + 0.5) / 400) * half
    basis = np.vstack([r**j for j in range(1, 7)]).T / np.exp(r)[:, None]
    c, *_ = np.linalg.lstsq(basis, 1 - 1 / np.exp(r), rcond=None)
    print("EXP32 (r^1 .. r^6; r^0: 1):", ", ".join(repr(float(v)) for v in c))
    as32 = [1, *(float(np.float32(v)) for v in c)]
    rt = [mp.mpf(k) / 5000 * 2 * half - half for k in range(5001)]
    err = max(abs(mp.polyval(as32[::-1], x) / mp.exp(x) - 1) for x in rt)
    print(f"  relative error, coefficients in float32: {mp.nstr(err, 3)}")


if __name__ == "__main__":
    main()
