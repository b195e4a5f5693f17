"""The project's in-memory copies of file content, and how a test file boundary drops them.

``zlink verify`` records, for each test file, the files it depends on (``tracelog``). A
test process runs many test files one after the other, and what one file's tests read
can stay in memory for the next: a memoized loader (``functools.cache``) fills on first
use, and a later test file calling it reads nothing. The record of a test file therefore
holds what its process read that can carry over (imports and what they read, session
and package fixtures, collection) plus what its own tests opened, and the pytest plugin
(``pytest_marks``) calls ``clear_memos`` before each test file starts: every memoized
function of the project's modules is emptied (and ``linecache``), so a later file that
needs the content reads it again, and the read is its own.

That is sound only while every in-memory copy of file content a later test file can
reach is one ``clear_memos`` empties, or is filled where the record counts it for every
later file (at import, in a session fixture). ``scan`` finds, in the source, every way a
module keeps state across calls; ``uncovered`` says which of them the clearing does not
reach and nobody has reviewed (``REVIEWED``, with the reason each holds no file
content). ``tests/test_memos.py`` fails on any such finding.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import importlib
import importlib.util
import linecache
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["REVIEWED", "Memo", "clear_memos", "find_memos", "load_module", "scan",
           "source_files",
           "uncovered"]

# The folders of the checkout whose Python files are the project's (the packages, the
# tests and their helpers, the scripts): everything a test process may import from it.
HOMES = ("model", "reference", "conformance", "tool", "tests", "scripts", "benchmarks")
_SKIPPED_PARTS = frozenset({".venv", "__pycache__", "build", "dist", ".build-compiled",
                            "node_modules", ".git"})

# State kept across calls that ``clear_memos`` does not empty, reviewed: each entry says
# why it holds no file content a later test file could use without reading the file.
# Keyed "file:name" as ``Memo.key`` gives it; shell wildcards (``fnmatch``) allowed.
REVIEWED: dict[str, str] = {
    "reference/zlink_reference/_shell/checks.py:ON":
        "a switch set by code (set_ownership_checks), never from a file",
    "reference/zlink_reference/_shell/loop.py:_LOCAL":
        "a thread-local holding each thread's turn state and shared runtime; no file content",
    "conformance/examples/python/zlink_reference_adapter/adapter.py:_SUBMITTING":
        "a thread-local depth counter of submits in progress",
    "conformance/examples/python/zlink_reference_adapter/*mutants.py:*":
        "a mutant patches the model's and the runtime's code, never with file content",
    "tests/conformance/fakes/preload_bounded_pool.py:*":
        "a fake adapter's pool of threads (ids and queues), in the adapter's own process",
    "tests/coordinators/*:unexpected_errors":
        "the exceptions a test's hooks saw, checked and emptied by that test",
    "tests/reliability/reliability_bar.py:SETTLE_S":
        "a number taken from the scenario's size, never from a file",
    "tests/reliability/test_reliability_bar.py:reliability_bar":
        "the scenarios' counts, for the summary printed at the session's end",
    "tests/stateful/conftest.py:_WALL":
        "each machine's wall time, for the summary printed at the session's end",
    "tests/stateful/machinery.py:STATS":
        "each machine's step counts, for the summary printed at the session's end",
    "benchmarks/bench_queue.py:_shared":
        "a benchmark's runtime per event loop; benchmarks are not tests",
    "tests/conformance/conftest.py:catalogue":
        "the case catalogue, read whole when the fixture is made (what a session fixture "
        "reads counts for every later test file)",
    "tests/conformance/conftest.py:full_run":
        "one run of the suite, made whole when the fixture is made",
    "tests/packaging/conftest.py:built":
        "a folder of built files outside the checkout, made from a copy of it when the "
        "fixture is made",
    "tool/zlink_tool/pytest_schedule.py:_state":
        "each test's seconds in this run, from pytest's reports: the order of the next "
        "run, never what a test checks",
    "tool/zlink_tool/pytest_marks.py:*":
        "the marking plugin's own bookkeeping: the running test file, its fixtures, "
        "each thread's last mark",
    "tool/zlink_tool/importgraph.py:ImportGraph.*":
        "an instance's own memo: every caller makes its own graph, none is kept in a "
        "module or a session fixture",
    "tool/zlink_tool/checkinputs.py:CheckoutFiles.*":
        "an instance's own memo: made per verify run or per test, never kept in a "
        "module or a session fixture",
    "tool/zlink_tool/steprun.py:StepRunner._graph":
        "an instance's own memo: a runner is made per verify run or per test",
}

_FUNCTOOLS_CACHES = frozenset({"cache", "lru_cache"})
_MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault",
                       "__setitem__", "appendleft", "extendleft"})


@dataclasses.dataclass(frozen=True)
class Memo:
    """One way a module keeps state across calls.

    ``kind``: "memoized function" (``functools.cache``/``lru_cache``; ``reachable``: it
    is a module's or a class's attribute, where ``find_memos`` looks), "cached
    property", "fixture outliving a test file" (session or package scope: its value
    may hold a loader filled later), "global rebound" (``global NAME`` assigned in a
    function), "module state changed" (a module-level object changed in a function:
    item or attribute set, a container's adding method called), "class state changed"
    (a container held by a class changed in a method), "fixture reached by
    name" (``request.getfixturevalue``: the plugin marks only declared fixtures)."""

    file: str
    line: int
    name: str
    kind: str
    reachable: bool = True

    @property
    def key(self) -> str:
        return f"{self.file}:{self.name}"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind} {self.name}"


def source_files(root: Path) -> list[Path]:
    """The project's Python files under ``HOMES`` (environments and build output left
    out)."""
    found: list[Path] = []
    for home in HOMES:
        base = root / home
        if base.is_dir():
            found += [p for p in base.rglob("*.py")
                      if not _SKIPPED_PARTS.intersection(p.relative_to(root).parts)]
    return sorted(found)


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Name):
        return target.id
    return ""


_CONTAINERS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "deque",
                         "Counter", "WeakValueDictionary", "WeakKeyDictionary"})


def _container(node: ast.expr) -> bool:
    """A mutable container: a literal or a call of a container type."""
    if isinstance(node, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp |
                  ast.SetComp):
        return True
    return isinstance(node, ast.Call) and _decorator_name(node) in _CONTAINERS


def _wraps_in_cache(node: ast.Call) -> bool:
    """``cache(f)``, ``lru_cache(f)``, ``lru_cache(maxsize=N)(f)``: a function memoized
    without a decorator."""
    func = node.func.func if isinstance(node.func, ast.Call) else node.func
    return _decorator_name(func) in _FUNCTOOLS_CACHES and bool(node.args)


def _root_name(node: ast.expr) -> str | None:
    """``X`` of ``X``, ``X.a.b``, ``X[k].a``: the name an expression starts from."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Scanner(ast.NodeVisitor):
    def __init__(self, rel: str, module_names: set[str]) -> None:
        self.rel = rel
        self.module_names = module_names
        self.scope: list[tuple[str, str]] = []  # (kind "class"/"def", name)
        self.found: list[Memo] = []
        self.local_names: list[set[str]] = []
        self.handled: set[int] = set()  # cache calls already recorded with their name
        self.class_state: list[tuple[str, set[str]]] = []  # (class, its containers)

    def _qual(self, name: str) -> str:
        return ".".join([*(n for _, n in self.scope), name])

    def _in_function(self) -> bool:
        return any(kind == "def" for kind, _ in self.scope)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # Containers held by the class itself: shared by every instance and every caller.
        shared = {t.id for stmt in node.body
                  if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None
                  and _container(stmt.value) for t in _targets(stmt)
                  if isinstance(t, ast.Name)}
        self.scope.append(("class", node.name))
        self.class_state.append((node.name, shared))
        self.generic_visit(node)
        self.class_state.pop()
        self.scope.pop()

    def _class_object(self, node: ast.expr) -> str | None:
        """``Class.NAME`` when an expression in a method changes a container the class
        holds (through ``self.NAME``, ``cls.NAME`` or ``type(self).NAME``)."""
        while isinstance(node, ast.Subscript):
            node = node.value
        while isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute |
                                                              ast.Subscript):
            node = node.value
        if not (isinstance(node, ast.Attribute) and self.class_state and
                self._in_function()):
            return None
        owner, shared = self.class_state[-1]
        base = node.value
        if isinstance(base, ast.Call) and _decorator_name(base) == "type":
            base = base.args[0] if base.args else base
        if isinstance(base, ast.Name) and base.id in ("self", "cls", owner) and \
                node.attr in shared:
            return f"{owner}.{node.attr}"
        return None

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for dec in node.decorator_list:
            name = _decorator_name(dec)
            if name in _FUNCTOOLS_CACHES:
                self.found.append(Memo(self.rel, node.lineno, self._qual(node.name),
                                       "memoized function", not self._in_function()))
            elif name == "cached_property":
                self.found.append(Memo(self.rel, node.lineno, self._qual(node.name),
                                       "cached property"))
            elif name == "fixture" and isinstance(dec, ast.Call) and any(
                    k.arg == "scope" and not (isinstance(k.value, ast.Constant) and
                                              k.value.value in ("function", "class",
                                                                "module"))
                    for k in dec.keywords):
                self.found.append(Memo(self.rel, node.lineno, self._qual(node.name),
                                       "fixture outliving a test file"))
        self.scope.append(("def", node.name))
        assigned = {t.id for n in ast.walk(node) for t in _targets(n)
                    if isinstance(t, ast.Name)}
        args = {a.arg for a in [*node.args.posonlyargs, *node.args.args,
                                *node.args.kwonlyargs]}
        declared_global: set[str] = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Global):
                declared_global.update(n.names)
        self.local_names.append((assigned | args) - declared_global)
        for n in ast.walk(node):
            if isinstance(n, ast.Global):
                for name in n.names:
                    if name in assigned:
                        self.found.append(Memo(self.rel, n.lineno, name, "global rebound"))
        for stmt in node.body:
            self.visit(stmt)
        self.local_names.pop()
        self.scope.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _module_object(self, node: ast.expr) -> str | None:
        """The module-level name an expression inside a function changes, if any."""
        name = _root_name(node)
        if name is None or not self._in_function() or name not in self.module_names:
            return None
        if any(name in local for local in self.local_names):
            return None
        return name

    def _changed(self, target: ast.expr, line: int) -> None:
        if isinstance(target, ast.Attribute | ast.Subscript):
            name = self._module_object(target)
            if name is not None:
                self.found.append(Memo(self.rel, line, name, "module state changed"))
            held = self._class_object(target) if isinstance(target, ast.Subscript) else None
            if held is not None:
                self.found.append(Memo(self.rel, line, held, "class state changed"))

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._changed(t, node.lineno)
        if isinstance(node.value, ast.Call) and _wraps_in_cache(node.value) and \
                len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.found.append(Memo(self.rel, node.lineno, self._qual(node.targets[0].id),
                                   "memoized function", not self._in_function()))
            self.handled.add(id(node.value))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._changed(node.target, node.lineno)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._changed(node.target, node.lineno)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._changed(t, node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _wraps_in_cache(node) and id(node) not in self.handled:
            # Memoized where no name of a module or class holds it.
            self.found.append(Memo(self.rel, node.lineno, self._qual("<call>"),
                                   "memoized function", False))
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "getfixturevalue":
            # The plugin marks the fixtures a test declares; one reached by name is not
            # among them, and what its setup read would be missing from the record.
            self.found.append(Memo(self.rel, node.lineno, self._qual("getfixturevalue"),
                                   "fixture reached by name"))
        if isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
            name = self._module_object(func.value)
            if name is not None:
                self.found.append(Memo(self.rel, node.lineno, name, "module state changed"))
            held = self._class_object(func.value)
            if held is not None:
                self.found.append(Memo(self.rel, node.lineno, held, "class state changed"))
        self.generic_visit(node)


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        for t in node.targets:
            yield from _flatten(t)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
        yield node.target
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        yield from _flatten(node.target)
    elif isinstance(node, ast.With | ast.AsyncWith):
        for item in node.items:
            if item.optional_vars is not None:
                yield from _flatten(item.optional_vars)
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef |
                    ast.ExceptHandler) and node.name:
        yield ast.Name(node.name)
    elif isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            yield ast.Name((alias.asname or alias.name).split(".")[0])


def _flatten(node: ast.expr) -> Iterator[ast.expr]:
    if isinstance(node, ast.Tuple | ast.List):
        for e in node.elts:
            yield from _flatten(e)
    elif isinstance(node, ast.Starred):
        yield from _flatten(node.value)
    else:
        yield node


def _module_level_names(tree: ast.Module) -> set[str]:
    """The names a module binds, less those it imports from the standard library:
    changing ``sys.path`` or ``os.environ`` keeps no file content. A name imported from
    the project (a shared list, a class a mutant patches) counts: changing it changes
    state a later test file can see."""
    names: set[str] = set()
    stdlib: set[str] = set()
    for stmt in tree.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                    and n is not stmt:
                continue
            bound = {t.id for t in _targets(n) if isinstance(t, ast.Name)}
            if isinstance(n, ast.Import | ast.ImportFrom):
                for alias in n.names:
                    source = n.module if isinstance(n, ast.ImportFrom) else alias.name
                    if isinstance(n, ast.ImportFrom) and n.level:
                        continue  # relative: the project's
                    if (source or "").split(".")[0] in sys.stdlib_module_names \
                            or source == "__future__":
                        stdlib.add((alias.asname or alias.name).split(".")[0])
            names.update(bound)
    return names - stdlib


def scan(root: Path, files: Iterable[Path]) -> list[Memo]:
    """Every way the modules in ``files`` keep state across calls (see ``Memo``)."""
    found: list[Memo] = []
    for path in files:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        scanner = _Scanner(rel, _module_level_names(tree))
        scanner.visit(tree)
        found += scanner.found
    unique = {(m.key, m.kind): m for m in found}
    return sorted(unique.values(), key=lambda m: (m.file, m.line, m.name))


def _is_memo(obj: object) -> bool:
    return callable(getattr(obj, "cache_clear", None)) and \
        callable(getattr(obj, "cache_info", None))


def _attributes(holder: Any, module: str, seen: set[int]) -> Iterator[tuple[str, object]]:
    """(qualified name, object) of a module's or class's attributes, the classes defined
    in ``module`` looked into (nested ones too), static and class methods unwrapped."""
    for name, held in list(vars(holder).items()):
        value = held.__func__ if isinstance(held, staticmethod | classmethod) else held
        yield name, value
        if isinstance(value, type) and value.__module__ == module and id(value) not in seen:
            seen.add(id(value))
            for inner, obj in _attributes(value, module, seen):
                yield f"{name}.{inner}", obj


def _under(path: str | None, root: str) -> bool:
    """A file of the checkout at ``root`` (a string ending in the separator), outside its
    environments and build output."""
    if not path or not path.startswith(root):
        return False
    return not _SKIPPED_PARTS.intersection(Path(path[len(root):]).parts)


def find_memos(root: Path, modules: Iterable[ModuleType] | None = None
               ) -> dict[str, Callable[..., Any]]:
    """The memoized functions of the project's loaded modules (those whose file is in the
    checkout, outside its environments): qualified name -> the function, as
    ``clear_memos`` empties them. Looked for where a later caller can reach one: a
    module's attributes and its classes' (nested classes, static and class methods)."""
    prefix = os.path.join(str(root.resolve()), "")
    chosen = list(sys.modules.values()) if modules is None else list(modules)
    found: dict[str, Callable[..., Any]] = {}
    for module in chosen:
        if not isinstance(module, ModuleType) or \
                not _under(getattr(module, "__file__", None), prefix):
            continue
        for name, obj in _attributes(module, module.__name__, set()):
            if _is_memo(obj):
                found[f"{module.__name__}:{name}"] = obj  # type: ignore[assignment]
    return found


def clear_memos(root: Path) -> int:
    """Empty every memoized function of the project's loaded modules, and ``linecache``
    (source lines kept for tracebacks and ``inspect``); returns how many were emptied."""
    memos = find_memos(root)
    for fn in memos.values():
        fn.cache_clear()  # type: ignore[attr-defined]
    linecache.clearcache()
    return len(memos)


def uncovered(root: Path, found: Iterable[Memo],
              load: Callable[[Path], ModuleType]) -> list[str]:
    """What the boundary clearing misses, one line each: a memoized function
    ``find_memos`` does not find in its module (``load`` gives the module of a file), or
    other state kept across calls that ``REVIEWED`` does not list; and each ``REVIEWED``
    entry that names nothing any more."""
    problems: list[str] = []
    loaded: dict[str, dict[str, Callable[..., Any]]] = {}
    used: set[str] = set()
    for memo in found:
        if memo.kind == "memoized function":
            if not memo.reachable:
                problems.append(f"{memo}: memoized inside a function, where the "
                                "boundary clearing cannot reach it")
                continue
            if memo.file not in loaded:
                module = load(root / memo.file)
                loaded[memo.file] = {k.split(":", 1)[1]: v
                                     for k, v in find_memos(root, [module]).items()}
            if memo.name not in loaded[memo.file]:
                problems.append(f"{memo}: not among the memoized functions the boundary "
                                "clearing empties")
            continue
        keys = [k for k in REVIEWED if fnmatch.fnmatchcase(memo.key, k)]
        if keys:
            used.update(keys)
        else:
            problems.append(f"{memo}: kept across calls, not emptied at a test file "
                            "boundary and not reviewed (memos.REVIEWED)")
    for key in REVIEWED:
        if key not in used:
            problems.append(f"{key}: reviewed in memos.REVIEWED, but no such state found")
    return problems


def load_module(path: Path) -> ModuleType:
    """The module of a project file: the loaded one if there is, else imported by its
    dotted name (its package folders walked up), else run from the file under a name of
    its own."""
    path = path.resolve()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve() == path:
            return module
    parts = [path.stem] if path.stem != "__init__" else []
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if str(folder) in sys.path or any(Path(p).resolve() == folder for p in sys.path if p):
        return importlib.import_module(".".join(parts))
    spec = importlib.util.spec_from_file_location(f"_zlink_memo_scan_{abs(hash(path))}",
                                                  path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
