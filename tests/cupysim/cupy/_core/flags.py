"""``ndarray.flags`` (cupy/_core/flags.pyx): C_CONTIGUOUS, F_CONTIGUOUS, OWNDATA."""

from __future__ import annotations


class Flags:
    # flags.pyx: the fields are read-only properties (assigning raises AttributeError), and
    # a cdef class takes no other attribute
    __slots__ = ("_c_contiguous", "_f_contiguous", "_owndata")

    def __init__(self, c_contiguous, f_contiguous, owndata) -> None:
        self._c_contiguous = c_contiguous
        self._f_contiguous = f_contiguous
        self._owndata = owndata

    @property
    def c_contiguous(self) -> bool:
        return self._c_contiguous

    @property
    def f_contiguous(self) -> bool:
        return self._f_contiguous

    @property
    def owndata(self) -> bool:
        return self._owndata

    @property
    def fnc(self) -> bool:
        return self.f_contiguous and not self.c_contiguous

    @property
    def forc(self) -> bool:
        return self.f_contiguous or self.c_contiguous

    def __getitem__(self, name: str) -> bool:
        if name == "C_CONTIGUOUS":
            return self.c_contiguous
        if name == "F_CONTIGUOUS":
            return self.f_contiguous
        if name == "OWNDATA":
            return self.owndata
        raise KeyError(f"{name} is not defined for cupy.ndarray.flags")

    def __repr__(self) -> str:
        t = "  %s : %s"
        return "\n".join(
            t % (name, self[name]) for name in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA")
        )
