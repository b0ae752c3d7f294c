"""hatchling build hook: compile gpukit's host kernels into the wheel.

``gpukit/_host/build_native.py`` does the work (loaded by path: the build environment
has no NumPy, so gpukit cannot be imported). An editable install compiles into the
source tree, beside the C sources; a wheel gets the extension module as a file for the
Python and platform at hand (the wheel's tags say which). Without a working C compiler
or Python's headers the build still succeeds and gpukit runs the same kernels as NumPy
ufuncs.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _builder():
    path = Path(__file__).parent / "gpukit" / "_host" / "build_native.py"
    spec = importlib.util.spec_from_file_location("_gpukit_build_native", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class NativeKernelsHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        native = _builder()
        log = self.app.display_info
        if version == "editable":
            native.build(native.HERE, log)
            return
        self._tmp = tempfile.TemporaryDirectory()
        built = native.build(Path(self._tmp.name), log)
        if built is not None:
            build_data["force_include"][str(built)] = f"gpukit/_host/{built.name}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()
