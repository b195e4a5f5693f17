"""Where the models, specs and tests that the subcommands read are found.

Two homes, tried in this order:

1. ``ZLINK_ROOT``, when set: a ZLink checkout (or any folder with ``models/`` and
   ``specs/`` laid out as in the repository). It must hold them; a wrong value is an
   error, never a silent fallback.
2. A checkout: the one holding the current directory, else the one this package was
   installed from in editable mode. A spec author editing ``models/`` sees the edit.
3. The copy shipped in the wheel (``zlink_tool/data/``): the models and specs the tool
   was built with, and an index of the test functions, so every subcommand works from
   an installed wheel in any directory.

Only ``zlink verify`` needs a checkout for real (it runs the test suite, mypy and ruff);
``Layout.checkout`` tells it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

__all__ = ["DataError", "Layout", "locate"]

ENV = "ZLINK_ROOT"
_DATA = Path(__file__).resolve().parent / "data"


class DataError(Exception):
    """The models or specs are not where they were looked for."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """The folders the subcommands read, and where they came from."""

    root: Path  # holds models/ and specs/
    source: str  # "ZLINK_ROOT", "checkout" or "shipped"

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def specs(self) -> Path:
        return self.root / "specs"

    @property
    def checkout(self) -> bool:
        """A checkout: the tests are there too (the shipped copy has only an index)."""
        return (self.root / "tests").is_dir()

    def test_functions(self) -> dict[str, str] | None:
        """Test name -> ``file::name`` from the shipped index (None in a checkout, whose
        tests are read directly)."""
        index = self.root / "test_functions.json"
        if self.source != "shipped" or not index.is_file():
            return None
        loaded: dict[str, str] = json.loads(index.read_text(encoding="utf-8"))
        return loaded


def _holds_models(folder: Path) -> bool:
    return (folder / "models" / "manifest.json").is_file() and \
        (folder / "specs" / "rules.toml").is_file()


def _checkout_above(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if _holds_models(folder) and (folder / "tool" / "zlink_tool").is_dir():
            return folder
    return None


def locate() -> Layout:
    """The layout to read, by the order in the module docstring."""
    env = os.environ.get(ENV)
    if env:
        root = Path(env).expanduser().resolve()
        if not _holds_models(root):
            raise DataError(
                f"{ENV}={env} holds no models/manifest.json and specs/rules.toml; point it "
                f"at a ZLink checkout, or unset it to use the models shipped with the tool")
        return Layout(root, ENV)
    for start in (Path.cwd().resolve(), Path(__file__).resolve().parent):
        found = _checkout_above(start)
        if found is not None:
            return Layout(found, "checkout")
    if _holds_models(_DATA):
        return Layout(_DATA, "shipped")
    raise DataError(
        f"no models found: not in a ZLink checkout, and the tool's own copy "
        f"({_DATA / 'models'}) is missing (a broken install?); set {ENV} to a checkout")
