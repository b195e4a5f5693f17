"""The layers of docs/design.md, enforced: arrows point down only.

    zlink_tool                      (the zlink command: may import everything below)
    zlink_reference_adapter         (a runtime behind the protocol: runtime + kit)
    zlink_reference   zlink_conformance   (the runtime; the kit: never each other)
    zlink_model                     (the protocol model: imports nothing of ours)

Also: the model, the runtime and the kit use the standard library only; asyncio is
imported only by the runtime's shell, its disposal runtime and its asyncio test helpers;
no package imports another package's private module or name, or reaches into a private
attribute of the model's objects.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES: Mapping[str, Path] = {
    "zlink_model": ROOT / "model" / "zlink_model",
    "zlink_reference": ROOT / "reference" / "zlink_reference",
    "zlink_conformance": ROOT / "conformance" / "zlink_conformance",
    "zlink_reference_adapter": ROOT / "conformance" / "examples" / "python"
                               / "zlink_reference_adapter",
    "zlink_tool": ROOT / "tool" / "zlink_tool",
}
# Which of our packages each package may import.
ALLOWED: Mapping[str, frozenset[str]] = {
    "zlink_model": frozenset(),
    "zlink_reference": frozenset({"zlink_model"}),
    "zlink_conformance": frozenset({"zlink_model"}),
    "zlink_reference_adapter": frozenset({"zlink_model", "zlink_reference",
                                          "zlink_conformance"}),
    "zlink_tool": frozenset({"zlink_model", "zlink_reference", "zlink_conformance",
                             "zlink_reference_adapter"}),
}
STDLIB_ONLY = frozenset({"zlink_model", "zlink_reference", "zlink_conformance"})
# Where asyncio may be imported (package-relative folders).
ASYNCIO_HOMES: Mapping[str, tuple[str, ...]] = {
    "zlink_reference": ("_shell", "disposal", "testing"),
    "zlink_reference_adapter": ("",),  # it runs the reference on a loop of its own
    "zlink_tool": ("",),
}


def _imports(folder: Path, path: Path) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, absolute module, names imported from it) for every import in ``path``, a
    file of the package in ``folder``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = path.relative_to(folder.parent).with_suffix("").parts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # parts[:-1] is the module's package (for __init__ too); each level
                # beyond the first goes one package up.
                base = list(parts[:len(parts) - node.level])
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield node.lineno, module, tuple(a.name for a in node.names)


# The model's objects other packages hold: their underscore names are the model's own.
MODEL_CLASSES = frozenset({"QueueCore", "WorkRecord", "QueueConfig"})
# Deliberate breaks of the runtime's internals: the mutant catalogue patches private
# names by design (ruff's per-file ignore says the same).
MUTANT_FILES = frozenset({"mutants.py", "explore_mutants.py", "preload_mutant.py"})
# The pytest plugin is loaded by pytest only; the kit itself needs nothing but stdlib.
OPTIONAL_IMPORTS: Mapping[str, frozenset[str]] = {"pytest_plugin.py": frozenset({"pytest"})}


def _private_attributes(folder: Path) -> frozenset[str]:
    """Underscore names (methods and attributes) of the model's classes held elsewhere."""
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ClassDef) and node.name in MODEL_CLASSES):
                continue
            for item in ast.walk(node):
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name) \
                        and item.value.id == "self":
                    names.add(item.attr)
                elif isinstance(item, ast.Constant) and isinstance(item.value, str):
                    names.add(item.value)  # __slots__ entries
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def layering_problems(packages: Mapping[str, Path] = PACKAGES) -> list[str]:
    """Every import or access that breaks the layers, as ``file:line: why``."""
    problems: list[str] = []
    model_private = _private_attributes(packages["zlink_model"])
    for package, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            where = f"{path.relative_to(folder.parent)}"
            inner = path.relative_to(folder).parts
            mutant = path.name in MUTANT_FILES
            for line, module, names in _imports(folder, path):
                top = module.split(".")[0]
                if top in packages and top != package:
                    if top not in ALLOWED[package]:
                        problems.append(f"{where}:{line}: {package} imports {module} "
                                        f"(allowed: {sorted(ALLOWED[package]) or 'none'})")
                    if not mutant and any(p.startswith("_") for p in module.split(".")[1:]):
                        problems.append(f"{where}:{line}: private module {module} "
                                        f"imported across packages")
                    private = [n for n in names
                               if n.startswith("_") and not n.startswith("__")]
                    if private and not mutant:
                        problems.append(f"{where}:{line}: private name(s) "
                                        f"{', '.join(private)} imported from {module}")
                elif top not in packages and top and package in STDLIB_ONLY \
                        and top not in sys.stdlib_module_names \
                        and top not in OPTIONAL_IMPORTS.get(path.name, ()):
                    problems.append(f"{where}:{line}: {package} imports {top}, which is "
                                    "not in the standard library")
                if top == "asyncio":
                    homes = ASYNCIO_HOMES.get(package, ())
                    if not any(h == "" or inner[0] == h for h in homes):
                        problems.append(f"{where}:{line}: asyncio imported outside the "
                                        f"shell ({package}/{'/'.join(inner)})")
            if package != "zlink_model" and not mutant:
                tree = ast.parse(path.read_text(encoding="utf-8"))
                for node in ast.walk(tree):
                    if isinstance(node, ast.Attribute) and node.attr in model_private \
                            and not (isinstance(node.value, ast.Name)
                                     and node.value.id in ("self", "cls")):
                        problems.append(f"{where}:{node.lineno}: touches {node.attr}, a "
                                        "private attribute of a model object")
    return problems


def test_arrows_point_down_only() -> None:
    problems = layering_problems()
    assert not problems, "the layers of docs/design.md are broken:\n" + "\n".join(problems)


def test_the_layering_check_catches_each_kind_of_break(tmp_path: Path) -> None:
    def package(name: str, files: Mapping[str, str]) -> Path:
        folder = tmp_path / name
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        return folder

    planted = {
        "zlink_model": package("zlink_model", {
            "__init__.py": "", "queue.py": "from zlink_reference import x\n"
                                           "class QueueCore:\n"
                                           "    def _release(self): ...\n"}),
        "zlink_reference": package("zlink_reference", {
            "__init__.py": "", "coordinators/spot.py": "import asyncio\n",
            "_shell/queue.py": "import asyncio\nfrom zlink_model.queue import _place\n",
            "_shell/scope.py": "def f(core):\n    return core._release(None)\n"}),
        "zlink_conformance": package("zlink_conformance", {
            "__init__.py": "import z3\nfrom zlink_reference._shell import queue\n"}),
        "zlink_reference_adapter": package("zlink_reference_adapter", {"__init__.py": ""}),
        "zlink_tool": package("zlink_tool", {"__init__.py": ""}),
    }
    found = "\n".join(layering_problems(planted))
    assert "zlink_model imports zlink_reference" in found
    assert "asyncio imported outside the shell (zlink_reference/coordinators/spot.py)" in found
    assert "_shell/queue.py:1" not in found  # the shell may import asyncio
    assert "private name(s) _place imported from zlink_model.queue" in found
    assert "zlink_conformance imports zlink_reference._shell" in found
    assert "private module zlink_reference._shell imported across packages" in found
    assert "zlink_conformance imports z3, which is not in the standard library" in found
    assert "scope.py:2: touches _release, a private attribute of a model object" in found
