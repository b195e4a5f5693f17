"""Build hook of the ``zlink-tool`` distribution: ship the repository's ``models/`` and
``specs/`` (and an index of the test functions ``zlink rules`` cross-checks) inside the
wheel and the sdist, under ``zlink_tool/data/``, so every subcommand works with no
checkout and a wheel built from the sdist is whole.

The checkout stays the one source: nothing is copied into the source tree, only into the
build directory and the sdist's release tree.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHIPPED = {"models": ("*.tla", "*.cfg", "manifest.json"), "specs": ("*.md", "*.toml")}


# What must be there for the copy to be whole: a wheel without them would install a
# tool whose every subcommand fails (or, for the test index, whose `zlink rules` reports
# gaps that are not there).
REQUIRED = ("models/manifest.json", "specs/rules.toml", "tests")
# Where an sdist carries the copy (the checkout is not there when a wheel is built from it).
SHIPPED_DATA = HERE / "zlink_tool" / "data"


def missing_sources(root: Path) -> list[str]:
    """The parts of a checkout under ``root`` that a wheel of ``zlink-tool`` needs and lacks."""
    return [name for name in REQUIRED if not (root / name).exists()]


def write_data(target: Path) -> None:
    """Fill ``target`` (a ``zlink_tool/data`` folder of a build or an sdist) from the
    checkout, or, inside an unpacked sdist, from the copy the sdist carries."""
    # A build directory left by an earlier build may hold models since removed.
    shutil.rmtree(target, ignore_errors=True)
    if (SHIPPED_DATA / "models" / "manifest.json").is_file():
        shutil.copytree(SHIPPED_DATA, target)
        return
    missing = missing_sources(ROOT)
    if missing:
        raise SystemExit(
            f"zlink-tool: cannot build: {', '.join(missing)} not found in {ROOT}, and no "
            f"zlink_tool/data/ in {HERE}. Build from a checkout (python -m build tool) or "
            f"from an sdist made by one.")
    for folder, patterns in SHIPPED.items():
        folder_target = target / folder
        folder_target.mkdir(parents=True, exist_ok=True)
        for pattern in patterns:
            for path in sorted((ROOT / folder).glob(pattern)):
                shutil.copy2(path, folder_target / path.name)
    sys.path.insert(0, str(HERE))
    from zlink_tool.specindex import test_functions

    index = test_functions(ROOT / "tests")
    (target / "test_functions.json").write_text(json.dumps(index, indent=1, sort_keys=True))


class BuildWithData(build_py):
    """``build_py`` that also copies the models and specs into the package."""

    def run(self) -> None:
        super().run()
        write_data(Path(self.build_lib) / "zlink_tool" / "data")


class SdistWithData(sdist):
    """``sdist`` that carries the models, specs and test index, so that a wheel built
    from it (pip's fallback, a distribution packager's build) is the wheel a checkout
    builds."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        write_data(Path(base_dir) / "zlink_tool" / "data")


setup(cmdclass={"build_py": BuildWithData, "sdist": SdistWithData})
