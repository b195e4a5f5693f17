"""Build hook of the ``zlink`` distribution: ship the repository's ``models/`` and
``specs/`` (and an index of the test functions ``zlink rules`` cross-checks) inside the
wheel, under ``zlink_tool/data/``, so every subcommand works with no checkout.

The checkout stays the one source: nothing is copied into the source tree, only into the
build directory.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHIPPED = {"models": ("*.tla", "*.cfg", "manifest.json"), "specs": ("*.md", "*.toml")}


class BuildWithData(build_py):
    """``build_py`` that also copies the models and specs into the package."""

    def run(self) -> None:
        super().run()
        data = Path(self.build_lib) / "zlink_tool" / "data"
        for folder, patterns in SHIPPED.items():
            target = data / folder
            target.mkdir(parents=True, exist_ok=True)
            for pattern in patterns:
                for path in sorted((ROOT / folder).glob(pattern)):
                    shutil.copy2(path, target / path.name)
        sys.path.insert(0, str(HERE))
        from zlink_tool.specindex import test_functions

        index = test_functions(ROOT / "tests")
        (data / "test_functions.json").write_text(json.dumps(index, indent=1, sort_keys=True))


setup(cmdclass={"build_py": BuildWithData})
