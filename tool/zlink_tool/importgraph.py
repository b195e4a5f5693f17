"""The checkout's Python import graph, read from the source (nothing is imported).

Why: the result cache and ``zlink impact`` must know which Python files a check can
run. A test module runs what it imports, what those import, and so on; a module named
in a string (``python -m zlink_reference_adapter``, a mutant's ``"zlink_reference._shell.
queue"``, ``importlib.import_module(name)``) runs too, so a string literal that spells a
first-party module counts as an import. The graph over-approximates on purpose: a file
in the closure that is not really run costs a re-run; a file missing from it would make
a stale cached result look fresh.

Resolution follows how the checks run: the first-party packages from their source
folders (``./dev env`` installs them editable), and a bare ``import helpers`` in a test
from the test's own folder and then from ``tests/`` (pytest prepends a test file's
folder to ``sys.path``; ``tests/conftest.py`` adds ``tests/``), and ``benchmarks/``.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

__all__ = ["PACKAGE_HOMES", "ImportGraph"]

# Folder (relative to the checkout) that holds each first-party package.
PACKAGE_HOMES: dict[str, str] = {
    "zlink_model": "model",
    "zlink_reference": "reference",
    "zlink_conformance": "conformance",
    "zlink_reference_adapter": "conformance/examples/python",
    "zlink_tool": "tool",
}
# Folders whose plain modules other files import by bare name.
_LOCAL_FOLDERS = ("tests", "benchmarks")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclasses.dataclass
class ImportGraph:
    """Imports between the checkout's Python files, resolved to files."""

    root: Path
    _edges: dict[Path, frozenset[Path]] = dataclasses.field(default_factory=dict)

    def module_file(self, dotted: str, near: Path | None = None) -> Path | None:
        """The file of a module name: a first-party package module, or a bare name
        beside ``near`` (a test's folder and its parents up to ``tests/``) or in one of
        the local folders. None for the standard library and third-party modules."""
        head = dotted.partition(".")[0]
        if head in PACKAGE_HOMES:
            return self._find(self.root / PACKAGE_HOMES[head], dotted.split("."))
        folders: list[Path] = []
        if near is not None:
            folder = near.parent
            while True:
                folders.append(folder)
                if folder in (self.root, folder.parent) or folder.name in _LOCAL_FOLDERS:
                    break
                folder = folder.parent
        folders += [self.root / f for f in _LOCAL_FOLDERS]
        for folder in folders:
            found = self._find(folder, dotted.split("."))
            if found is not None:
                return found
        return None

    @staticmethod
    def _find(base: Path, parts: list[str]) -> Path | None:
        # The longest prefix of the dotted name that is a file (``from pkg import name``
        # names a module or an attribute; ``import a.b.c`` runs every package on the way).
        for n in range(len(parts), 0, -1):
            stem = base.joinpath(*parts[:n])
            if (stem / "__init__.py").is_file():
                return stem / "__init__.py"
            if stem.with_suffix(".py").is_file():
                return stem.with_suffix(".py")
        return None

    def imports_of(self, path: Path) -> frozenset[Path]:
        """The first-party files ``path`` imports directly (and the packages'
        ``__init__`` files on the way), with the modules its strings name."""
        path = path.resolve()
        if path in self._edges:
            return self._edges[path]
        found: set[Path] = set()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            self._edges[path] = frozenset()
            return self._edges[path]
        package = self._package_parts(path)
        for name in _imported_names(tree, package):
            target = self.module_file(name, near=path)
            if target is not None:
                found.add(target.resolve())
                found.update(self._inits_on_the_way(target))
        found.discard(path)
        self._edges[path] = frozenset(found)
        return self._edges[path]

    def _package_parts(self, path: Path) -> list[str]:
        """The dotted package of a package module (for relative imports); [] elsewhere."""
        for package, home in PACKAGE_HOMES.items():
            base = (self.root / home).resolve()
            try:
                rel = path.relative_to(base)
            except ValueError:
                continue
            if rel.parts and rel.parts[0] == package:
                return list(rel.parent.parts)
        return []

    def _inits_on_the_way(self, target: Path) -> set[Path]:
        inits: set[Path] = set()
        folder = target.parent
        while (folder / "__init__.py").is_file():
            inits.add((folder / "__init__.py").resolve())
            folder = folder.parent
        return inits

    def closure(self, starts: Iterable[Path]) -> frozenset[Path]:
        """Every first-party file reachable from ``starts`` (included)."""
        seen: set[Path] = set()
        todo = [p.resolve() for p in starts]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            todo.extend(self.imports_of(path) - seen)
        return frozenset(seen)

    @cached_property
    def python_files(self) -> frozenset[Path]:
        """Every Python file of the packages and the local folders."""
        files: set[Path] = set()
        for home in [*PACKAGE_HOMES.values(), *_LOCAL_FOLDERS]:
            files.update(p.resolve() for p in (self.root / home).rglob("*.py")
                         if "build" not in p.relative_to(self.root).parts[:3])
        return frozenset(files)

    def importers_of(self, changed: Iterable[Path]) -> frozenset[Path]:
        """Every file whose closure holds one of ``changed`` (them included)."""
        targets = {p.resolve() for p in changed}
        reached = set(targets)
        grew = True
        while grew:
            grew = False
            for path in self.python_files - reached:
                if self.imports_of(path) & reached:
                    reached.add(path)
                    grew = True
        return frozenset(reached)


def _imported_names(tree: ast.AST, package: list[str]) -> Iterable[str]:
    """Module names a file imports or spells in a string literal."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if module:
                yield module
                for alias in node.names:
                    yield f"{module}.{alias.name}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if _DOTTED.match(text) and text.split(".")[0] in PACKAGE_HOMES:
                yield text
