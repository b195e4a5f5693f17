"""Build hook of the ``zlink-conformance`` distribution: ship, inside the kit, the texts
and examples its help points to, so an installed kit needs no checkout to be understood:
the adapter protocol (``specs/adapter-protocol.md``), the guide for runtime authors
(``docs/conformance.md``) and the Node and Java example adapters, under
``zlink_conformance/shipped/`` (``zlink-conformance docs`` and ``examples`` print and copy
them).

The checkout stays the one source: nothing is copied into the source tree, only into the
build directory and the sdist's release tree; a wheel built from the sdist takes the copy
the sdist carries.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Shipped name -> its source in the checkout.
SOURCES = {
    "docs/protocol.md": ROOT / "specs" / "adapter-protocol.md",
    "docs/guide.md": ROOT / "docs" / "conformance.md",
    "examples/node": HERE / "examples" / "node",
    "examples/java": HERE / "examples" / "java",
}
SHIPPED = HERE / "zlink_conformance" / "shipped"
# Build output of the examples never ships.
_IGNORED = shutil.ignore_patterns("build", "node_modules", "*.class", "__pycache__")


def write_shipped(target: Path) -> None:
    """Fill ``target`` (``zlink_conformance/shipped`` of a build or an sdist) from the
    checkout, or, inside an unpacked sdist, from the copy the sdist carries."""
    shutil.rmtree(target, ignore_errors=True)
    if (SHIPPED / "docs" / "protocol.md").is_file():
        shutil.copytree(SHIPPED, target)
        return
    missing = [str(source) for source in SOURCES.values() if not source.exists()]
    if missing:
        raise SystemExit(f"zlink-conformance: cannot build: {', '.join(missing)} not found, "
                         f"and no zlink_conformance/shipped/ in {HERE}. Build from a "
                         f"checkout (python -m build conformance) or from an sdist made by "
                         f"one.")
    for name, source in SOURCES.items():
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, destination, ignore=_IGNORED)
        else:
            shutil.copy2(source, destination)


class BuildWithShipped(build_py):
    """``build_py`` that also copies the protocol, the guide and the examples."""

    def run(self) -> None:
        super().run()
        write_shipped(Path(self.build_lib) / "zlink_conformance" / "shipped")


class SdistWithShipped(sdist):
    """``sdist`` that carries them too, so a wheel built from it is whole."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        write_shipped(Path(base_dir) / "zlink_conformance" / "shipped")


setup(cmdclass={"build_py": BuildWithShipped, "sdist": SdistWithShipped})
