"""From CUDA source to a host translation unit.

The CUDA text is compiled as written; the few constructs a C++ compiler cannot
take as they are are rewritten in place, keeping every line where it was (so
compiler messages point at the user's lines):

* ``extern __shared__ T name[];`` (dynamic shared memory, sized by the launch)
  becomes a pointer to the block's dynamic shared buffer;
* each ``__launch_bounds__(n, ...)`` is remembered, so the kernel's
  ``max_threads_per_block`` is ``n`` as the CUDA driver reports it.

Then one entry per kernel is appended: the name expressions given to
``RawModule`` (templates instantiated as NVRTC's ``nvrtcAddNameExpression``
does) and every non-template ``__global__`` function found in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KernelDecl", "TranslationUnit", "blank", "translation_unit"]

_TOKEN = re.compile(
    r"""//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
    re.S,
)
_EXTERN_SHARED = re.compile(
    r"\bextern\s+__shared__\s+(?P<type>[^;{}]*?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\[\s*\]\s*;"
)
_GLOBAL = re.compile(r"\b__global__\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_SKIP_WORDS = {
    "void",
    "static",
    "inline",
    "__noinline__",
    "__forceinline__",
    "__host__",
    "__device__",
    "extern",
}


def blank(src: str) -> str:
    """``src`` with comments and literals replaced by spaces (newlines kept)."""

    def spaces(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return _TOKEN.sub(spaces, src)


def _balanced(text: str, start: int, open_: str = "(", close: str = ")") -> int:
    """Index just past the bracket matching ``text[start]`` (== open_)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced {open_!r} at offset {start}")


def _split_top(text: str) -> list[str]:
    """Split on commas not nested in brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts]


@dataclass(frozen=True)
class KernelDecl:
    """A ``__global__`` function as written in the source."""

    name: str
    template: str | None  # "template <int BM, ...>" when the kernel is a template
    launch_bounds: str | None  # the max-threads expression of __launch_bounds__
    params: str  # the parameter list text, to tell overloads from redeclarations


def _kernels(scan: str, src: str) -> list[KernelDecl]:
    out = []
    for m in _GLOBAL.finditer(scan):
        # The declaration's start: after the previous ; { or }.
        head_start = max(scan.rfind(c, 0, m.start()) for c in ";{}") + 1
        head = scan[head_start : m.start()]
        template = None
        t = re.search(r"\btemplate\s*<", head)
        if t:
            lt = head_start + t.end() - 1
            template = src[head_start + t.start() : _balanced(scan, lt, "<", ">")]
        pos, bounds, name = m.end(), None, None
        while pos < len(scan):
            while pos < len(scan) and scan[pos].isspace():
                pos += 1
            ident = _IDENT.match(scan, pos)
            if not ident:
                break
            word, pos = ident.group(0), ident.end()
            if word in ("__launch_bounds__", "__attribute__", "__align__"):
                paren = scan.index("(", pos)
                end = _balanced(scan, paren)
                if word == "__launch_bounds__":
                    bounds = _split_top(src[paren + 1 : end - 1])[0]
                pos = end
                continue
            if word in _SKIP_WORDS:
                continue
            rest = scan[pos:].lstrip()
            if rest.startswith("("):
                name = word
                paren = scan.index("(", pos)
                params = " ".join(scan[paren : _balanced(scan, paren)].split())
                out.append(KernelDecl(name, template, bounds, params))
            break
    return out


def _rewrite_extern_shared(src: str, scan: str) -> tuple[str, set[str]]:
    names = set()
    pieces, last = [], 0
    for m in _EXTERN_SHARED.finditer(scan):
        type_text = src[m.start("type") : m.end("type")].strip()
        name = m.group("name")
        names.add(name)
        newlines = src.count("\n", m.start(), m.end())
        decl = (
            f"CUPYSIM_DYNAMIC_SHARED {type_text} *const {name} = "
            f"static_cast<std::remove_const_t<decltype({name})>>(cupysim_dynamic_shared());"
        )
        pieces += [src[last : m.start()], decl + "\n" * newlines]
        last = m.end()
    pieces.append(src[last:])
    return "".join(pieces), names


@dataclass(frozen=True)
class TranslationUnit:
    """The host C++ text and what it exports."""

    text: str
    entries: tuple[str, ...]  # the name (expression) of each exported kernel, by index
    dynamic_shared: frozenset[str]  # names of the rewritten extern __shared__ arrays


_CUPY_HEADERS = (
    "#include <cupy/complex.cuh>\n#include <cupy/carray.cuh>\n"
    "#include <cupy/atomics.cuh>\n#include <cupy/math_constants.h>\n"
)


def _bounds_call(expr: str, decls: dict[str, KernelDecl]) -> str:
    base = expr.split("<", 1)[0].strip()
    decl = decls.get(base)
    if decl is None or decl.launch_bounds is None:
        return "1024"
    if decl.template:
        return f"cupysim_lb_{base}{expr[expr.index('<') :]}()"
    return f"cupysim_lb_{base}"


def translation_unit(
    code: str,
    name_expressions: tuple[str, ...] | None,
    cupy_headers: bool,
    preamble: list[str] = (),  # type: ignore[assignment]
) -> TranslationUnit:
    """The host translation unit for ``code`` (see the module docstring).

    ``cupy_headers``: prepend CuPy's kernel headers, as ``compile_with_cache``
    does for elementwise and reduction kernels (``cupy/_core/core.pyx``).
    ``preamble``: the option macros (``compiler.host_options``).
    """
    scan = blank(code)
    body, dynamic = _rewrite_extern_shared(code, scan)
    decls = _kernels(scan, code)
    by_name: dict[str, list[KernelDecl]] = {}
    for d in decls:
        by_name.setdefault(d.name, []).append(d)
    entries = list(name_expressions or ())
    # Non-template kernels can be launched by their (extern "C" or mangled) symbol.
    for name, ds in by_name.items():
        if any(d.template for d in ds) or len({d.params for d in ds}) > 1 or name in entries:
            continue
        entries.append(name)
    first = {name: ds[-1] for name, ds in by_name.items()}
    lines = [
        "#include <cupysim_cuda.h>",
        *preamble,
        _CUPY_HEADERS if cupy_headers else "",
        '#line 1 "kernel.cu"',
        body,
        '\n#line 1 "cupysim-entries"',
    ]
    for d in first.values():
        if d.launch_bounds is None:
            continue
        if d.template:
            lines.append(
                f"{d.template} constexpr int cupysim_lb_{d.name}() "
                f"{{ return ({d.launch_bounds}); }}"
            )
        else:
            lines.append(f"static constexpr int cupysim_lb_{d.name} = ({d.launch_bounds});")
    lines.append(f'extern "C" int cupysim_kernel_count(void) {{ return {len(entries)}; }}')
    lines.append('extern "C" const ::cupysim::KernelInfo* cupysim_kernel(int i) {')
    lines.append(f"  static ::cupysim::KernelInfo infos[{max(1, len(entries))}];")
    lines.append("  switch (i) {")
    for i, expr in enumerate(entries):
        lines.append(
            f"    case {i}: infos[{i}] = ::cupysim::Entry<&{expr} >::info("
            f"{_bounds_call(expr, first)}); return &infos[{i}];"
        )
    lines += ["  }", "  return nullptr;", "}", ""]
    return TranslationUnit("\n".join(lines), tuple(entries), frozenset(dynamic))
