"""No module of the asyncio shell keeps state that changes (D-24: owners on any thread).

What the current work is, and every cache the shell keeps, belongs to a thread (the
loop binding's ``ThreadState``) or to an object (a runtime, a queue, a record), never to a
module: a module slot is one value for every thread, and two owners on two threads
overwrite each other's (the two-thread test in ``test_owner_threads.py`` shows the symptom).

Two checks: the source of every shell module has no ``global`` statement (the one
exception is the SE-8.1 switch, a process-wide setting by the seed's design), and while
real work runs on two threads, seen from inside synchronous, async and yielding works,
every shell module's namespace and the class attributes of its classes are exactly as
they were before any of it started.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import pkgutil
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import zlink_reference._shell as shell_package
from zlink_reference import (
    ZLinkSerialExecutionQueue,
    ZLinkSpotKind,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    current_work,
    yield_framework_call,
)

SHELL = Path(shell_package.__file__).parent
# (module, name) rebound on purpose. The SE-8.1 ownership-check switch is one setting
# for the process (the seed's debug build is a property of the build, not of a thread).
ALLOWED_GLOBALS = {("checks", "ON")}


def _shell_modules() -> list[ModuleType]:
    names = [m.name for m in pkgutil.iter_modules([str(SHELL)])]
    return [importlib.import_module(f"zlink_reference._shell.{n}") for n in sorted(names)]


def _globals_rebound(source: str) -> set[str]:
    """Names a ``global`` statement in ``source`` lets a function rebind."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Global):
            found.update(node.names)
    return found


def module_globals_rebound(root: Path) -> set[tuple[str, str]]:
    """(module, name) for every ``global`` statement in the shell's source under root."""
    return {(path.stem, name) for path in sorted(root.glob("*.py"))
            for name in _globals_rebound(path.read_text())}


def test_D_24_no_shell_function_rebinds_a_module_global() -> None:
    rebound = module_globals_rebound(SHELL) - ALLOWED_GLOBALS
    assert not rebound, (
        f"D-24: shell code rebinds module globals {sorted(rebound)}: a module slot is "
        "one value for every thread; keep it in the thread's ThreadState (loop.py) or an "
        "object instead")


def _fingerprint(value: Any) -> Any:
    """What must stay the same about a module-level value: its identity, and for a
    container its contents (by identity, one level deep)."""
    if isinstance(value, list | tuple):
        return (id(value), tuple(id(v) for v in value))
    if isinstance(value, dict):
        return (id(value), tuple((k, id(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return (id(value), frozenset(id(v) for v in value))
    return id(value)


def snapshot(modules: list[ModuleType]) -> dict[str, Any]:
    """Every shell module's namespace and its own classes' attributes, fingerprinted."""
    out: dict[str, Any] = {}
    for module in modules:
        for name, value in vars(module).items():
            out[f"{module.__name__}.{name}"] = _fingerprint(value)
            if isinstance(value, type) and value.__module__ == module.__name__:
                for attr, member in vars(value).items():
                    out[f"{module.__name__}.{name}.{attr}"] = _fingerprint(member)
    return out


def _workload(probe: Any) -> None:
    """A bit of everything the shell does, on this thread's own loop: synchronous,
    async, posted and yielding works, a SpotWide Actor work, a disposal. ``probe()`` is
    called from inside the works, while they hold their turns."""

    async def main() -> None:
        queue = ZLinkSerialExecutionQueue(name="state")
        seen: list[Any] = []

        def sync() -> None:
            seen.append(current_work())
            probe()

        async def yielding() -> None:
            seen.append(current_work())
            probe()
            await yield_framework_call(asyncio.sleep(0))
            seen.append(queue.is_current())
            probe()

        handles = [queue.enqueue(sync), queue.enqueue(yielding), queue.enqueue(sync)]
        queue.post(lambda: (seen.append(queue.is_current()), probe()))
        await asyncio.gather(*handles)
        spot = ZLinkSpotSerialExecutor("s", kind=ZLinkSpotKind.USER,
                                       mode=ZLinkUserSpotExecutionMode.SPOT_WIDE)
        spot.register_actor("a")
        await spot.execute_actor("a", sync)
        spot.dispose_safely()
        await spot.await_after_cancellation()
        queue.dispose()
        assert seen and all(s is not None and s is not False for s in seen)

    asyncio.run(main())


def _in_threads(count: int, probe: Any) -> None:
    """Run the workload on ``count`` threads of their own at once. Daemon threads, each
    given 30 s: a broken queue that never ends a work fails the test, never hangs it."""
    threads = [threading.Thread(target=_workload, args=(probe,), daemon=True)
               for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "an owner's loop did not finish"


def test_D_24_real_work_on_two_threads_leaves_every_shell_module_unchanged() -> None:
    modules = _shell_modules()
    _in_threads(1, lambda: None)  # first use may import lazily; compare from a warm start
    before = snapshot(modules)
    changed: set[str] = set()
    lock = threading.Lock()

    def probe() -> None:
        now = snapshot(modules)
        with lock:
            changed.update(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))

    _in_threads(2, probe)
    probe()
    assert not changed, (
        f"D-24: running works changed module-level state of the shell: {sorted(changed)}; what "
        "changes belongs to a thread (loop.py's ThreadState) or an object, not a module")
