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


# What must be there for the copy to be whole: a wheel without them would install a
# tool whose every subcommand fails (or, for the test index, whose `zlink rules` reports
# gaps that are not there).
REQUIRED = ("models/manifest.json", "specs/rules.toml", "tests")


def missing_sources(root: Path) -> list[str]:
    """The parts of a checkout under ``root`` that a wheel of ``zlink`` needs and lacks."""
    return [name for name in REQUIRED if not (root / name).exists()]


class BuildWithData(build_py):
    """``build_py`` that also copies the models and specs into the package."""

    def run(self) -> None:
        missing = missing_sources(ROOT)
        if missing:
            raise SystemExit(
                f"zlink: cannot build: {', '.join(missing)} not found in {ROOT}. The zlink "
                f"wheel ships the repository's models/ and specs/, so it is built from a "
                f"checkout (pip wheel ./tool, or python -m build --wheel tool), not from an "
                f"sdist.")
        super().run()
        data = Path(self.build_lib) / "zlink_tool" / "data"
        # A build directory left by an earlier build may hold models since removed.
        shutil.rmtree(data, ignore_errors=True)
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
