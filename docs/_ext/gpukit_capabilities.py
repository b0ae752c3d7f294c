"""The ``gpukit-capabilities`` directive: one module's capability table, built from
``gk.capabilities()`` when the docs are built (never written by hand).

.. code-block:: rst

   .. gpukit-capabilities:: gk.fft
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList

from gpukit import _capabilities


class CapabilityTable(Directive):
    """The table of the module named by the argument (``gk``, ``gk.fft``, ...)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        module = self.arguments[0]
        if module not in _capabilities.modules():
            raise self.error(
                f"gpukit-capabilities: no module {module!r}; modules: {_capabilities.modules()}"
            )
        rst = _capabilities.render_rst(*_capabilities.summary(module))
        node = nodes.container(classes=["gpukit-capabilities"])
        self.state.nested_parse(StringList(rst.splitlines(), "gk.capabilities()"), 0, node)
        return [node]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("gpukit-capabilities", CapabilityTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
