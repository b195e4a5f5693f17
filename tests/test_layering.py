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


# ------------------------------------------------------------------- inside the shell
# The shell's rooms, lowest first (docs/design.md, docs/implementers.md "Reading the
# reference"): a module imports only modules before it, type-only imports included, so
# no circle can form. The package's __init__ is the seam, above them all.
SHELL_ORDER = ("clock", "loop", "checks", "context", "handle", "scope", "surface", "drain",
               "drive", "queue")
# The runtime's packages beside the shell, which may use it only through its seam.
SHELL_SIBLINGS = ("coordinators", "disposal", "testing", "__init__.py")


def _shell_private_names(shell: Path) -> frozenset[str]:
    """Underscore names (methods, attributes, slots) of the shell's classes."""
    names: set[str] = set()
    for path in shell.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in ast.walk(node):
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name) \
                        and item.value.id == "self":
                    names.add(item.attr)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.Constant) and isinstance(item.value, str):
                    names.add(item.value)  # __slots__ entries
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def _seam(shell: Path) -> frozenset[str]:
    """The names ``_shell/__init__.py`` lists in ``__all__``: the seam."""
    tree = ast.parse((shell / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def shell_problems(runtime: Path) -> list[str]:
    """Every break of the shell's order or of its seam, as ``file:line: why``."""
    problems: list[str] = []
    shell = runtime / "_shell"
    rank = {name: i for i, name in enumerate(SHELL_ORDER)}
    for path in sorted(shell.glob("*.py")):
        where = f"{path.relative_to(runtime.parent)}"
        if path.stem == "__init__":
            continue
        if path.stem not in rank:
            problems.append(f"{where}: {path.stem} has no place in the shell's order "
                            f"{SHELL_ORDER}")
            continue
        for line, module, names in _imports(runtime, path):
            parts = module.split(".")
            if parts[:2] != [runtime.name, "_shell"]:
                continue
            targets = [parts[2]] if len(parts) > 2 else list(names)
            for target in targets:
                if target not in rank:
                    problems.append(f"{where}:{line}: imports the shell's seam or an "
                                    f"unknown room ({module} {target})")
                elif rank[target] >= rank[path.stem]:
                    problems.append(f"{where}:{line}: {path.stem} imports {target}, which "
                                    f"is not below it in the shell's order {SHELL_ORDER}")
    seam = _seam(shell)
    private = _shell_private_names(shell)
    for sibling in SHELL_SIBLINGS:
        for path in sorted((runtime / sibling).rglob("*.py")) if sibling.endswith("s") or \
                (runtime / sibling).is_dir() else [runtime / sibling]:
            where = f"{path.relative_to(runtime.parent)}"
            for line, module, names in _imports(runtime, path):
                parts = module.split(".")
                if parts[:2] != [runtime.name, "_shell"]:
                    continue
                if len(parts) > 2:
                    problems.append(f"{where}:{line}: imports {module}: use the shell "
                                    "through its seam, zlink_reference._shell")
                for name in names:
                    if name not in seam:
                        problems.append(f"{where}:{line}: {name} is not in the shell's "
                                        "seam (_shell/__init__.py __all__)")
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr in private \
                        and not (isinstance(node.value, ast.Name)
                                 and node.value.id in ("self", "cls")) \
                        and not (isinstance(node.value, ast.Call)
                                 and isinstance(node.value.func, ast.Name)
                                 and node.value.func.id == "super"):
                    problems.append(f"{where}:{node.lineno}: touches {node.attr}, a private "
                                    "member of a shell object (add it to the seam instead)")
    return problems


def test_the_shell_keeps_its_order_and_is_used_through_its_seam() -> None:
    problems = shell_problems(PACKAGES["zlink_reference"])
    assert not problems, ("the shell's rooms or seam are broken (docs/design.md, "
                          "Layers 1):\n" + "\n".join(problems))


def test_the_shell_check_catches_a_circle_a_side_door_and_a_private_reach(
        tmp_path: Path) -> None:
    runtime = tmp_path / "zlink_reference"
    files = {
        "__init__.py": "from ._shell import Thing\n",
        "_shell/__init__.py": '__all__ = ["Thing", "checks"]\nfrom .queue import Thing\n',
        "_shell/loop.py": "from typing import TYPE_CHECKING\n"
                          "if TYPE_CHECKING:\n    from .queue import Thing\n",
        "_shell/handle.py": "from . import context\n",
        "_shell/context.py": "",
        "_shell/drain.py": "from .drain import x\n",
        "_shell/queue.py": "class Thing:\n    __slots__ = ('_core',)\n"
                           "    def _transfer(self): ...\n",
        "_shell/extra.py": "",
        "coordinators/spot.py": "from .._shell.queue import Thing\n"
                                "from .._shell import Hidden, checks\n"
                                "def f(q):\n    q._transfer()\n    return q._core\n"
                                "class C:\n    def g(self):\n        return self._core\n",
        "disposal/runtime.py": "from zlink_reference._shell.scope import X\n",
        "testing/spot.py": "",
    }
    for rel, text in files.items():
        (runtime / rel).parent.mkdir(parents=True, exist_ok=True)
        (runtime / rel).write_text(text)
    found = "\n".join(shell_problems(runtime))
    assert "_shell/loop.py:3: loop imports queue, which is not below it" in found
    assert "_shell/drain.py:1: drain imports drain, which is not below it" in found
    assert "_shell/handle.py:1" not in found  # context is below handle
    assert "extra has no place in the shell's order" in found
    assert ("coordinators/spot.py:1: imports zlink_reference._shell.queue: use the shell "
            "through its seam") in found
    assert "coordinators/spot.py:2: Hidden is not in the shell's seam" in found
    assert "coordinators/spot.py:2: checks" not in found
    assert "coordinators/spot.py:4: touches _transfer, a private member" in found
    assert "coordinators/spot.py:5: touches _core, a private member" in found
    assert "coordinators/spot.py:8" not in found  # its own member, through self
    assert "disposal/runtime.py:1: imports zlink_reference._shell.scope" in found
    assert "zlink_reference/__init__.py" not in found
