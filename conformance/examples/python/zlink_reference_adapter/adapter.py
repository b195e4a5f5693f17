"""The reference adapter: ``zlink_reference`` behind the conformance protocol.

Run it as ``python -m zlink_reference_adapter``; it reads commands on stdin
and writes replies and events on stdout (``specs/adapter-protocol.md``), its log on
stderr. It is also the worked example of an adapter for runtime authors.

How it keeps the protocol's promises
------------------------------------
* **One case, one event loop, one virtual clock.** ``reset`` tears the old loop down and
  makes a fresh ``asyncio`` loop and ``VirtualClock`` (integer milliseconds), so cases
  never see each other's leftovers and time only moves on ``advance`` and ``busy``. A
  case's faults stay with it: ``settle`` reports an exception that ended one of the
  case's tasks unretrieved as a ``fault`` then (not when the collector frees the task,
  which may be during a later case), the loop's fault handler knows its case, and what
  a case leaves at its end is logged on stderr under its number, never as an event of
  the next case.
* **The loop turns only inside a command.** Each command runs as a coroutine on the case's
  loop (``run_until_complete``); when it is done the loop stops, and the buffered events
  and then the reply are written in one go. So every event that happened before a reply
  is written before it, and nothing happens between commands. ``settle`` is
  ``run_until_idle``: the loop turns until no callback is ready, which is "nothing can
  progress without further input" for a single-threaded runtime. How far the runtime
  gets while a command other than ``settle`` is carried out is set by
  ``ZLINK_ADAPTER_PROGRESS`` (``default``, ``lazy``: not at all, ``eager``: until idle);
  the kit's tests run every case in all three, since a case must not depend on it.
* **Held steps (capability ``held_steps``).** A bare queue created with ``held`` is a
  ``zlink_reference.testing.held.HeldQueue``: its runtime takes none of its own steps
  (enter the drain, take the next turn, end a slice, leave the drain, requeue a
  returned call's work) until a ``step`` command names one, which it refuses when the
  step is not enabled. Declared on the interpreted build only (the compiled one does
  not dispatch to the held subclass), and left out with
  ``ZLINK_ADAPTER_HELD_STEPS=off``.
* **A debug build.** The reference's SE-8.1 ownership checks are switched on
  (``set_ownership_checks``, decision D-25): code that assumes serial ownership and is
  reached from elsewhere raises ``ZLinkNotOnLaneError`` inside the case that caused it.
* **Events come from the runtime, on the work's turn.** A work's code emits ``started``,
  ``resumed``, ``finished``, ``failed`` and ``cancelled`` itself, so they are ordered
  against other works exactly as the runtime ran them. ``yielded`` comes from the queue
  core's own ``yield_turn`` transition (through the trace observer), at the moment the
  turn is given back. Owners are read from the queue that really ran the work
  (``current_work().queue_name``), not computed from the routing table, so routing is
  checked, not echoed.

Preload hook
------------
If the environment variable ``ZLINK_ADAPTER_PRELOAD`` names a Python file, the adapter
executes that file (as ``__main__``-less module code, with ``runpy.run_path``) after its
imports and before it answers the handshake. A self-test uses it to switch on a
deliberate bug in the reference runtime and show that the suite catches it. If the file
fails, the adapter writes the traceback to stderr and exits with status 3.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import json
import logging
import os
import runpy
import sys
import threading
import traceback
import typing

# asyncio's own hook for loop implementations (in asyncio.events.__all__): the lazy mode
# runs a handler with the case's loop current but not turning.
from asyncio.events import _set_running_loop as set_running_loop  # noqa: PLC2701
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import IO, Any, cast

from zlink_conformance.protocol.wire import (
    CAPABILITIES,
    CLOSE_COMMAND,
    DISPOSE_COMMAND,
    ENTRIES,
    PROTOCOL_VERSION,
)
from zlink_model.vocabulary import (
    DISPOSE,
    DISPOSE_AFTER_TIMEOUT,
    DISPOSE_SAFELY,
    HELD_STEPS,
    REQUEUE,
    YIELD_TURN,
    wire_status,
)
from zlink_reference import (
    ZLinkActorSerialExecutor,
    ZLinkClock,
    ZLinkExecutionLanePolicy,
    ZLinkReentrancyError,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    ZLinkSessionSerialExecutor,
    ZLinkSpotKind,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    ZLinkWorkHandle,
    ZLinkYieldNotSupportedError,
    __version__,
    current_snapshot,
    current_work,
    set_ownership_checks,
    yield_framework_call,
)
from zlink_reference.disposal import ZLinkNotDisposedError, ZLinkRuntime
from zlink_reference.testing import VirtualClock, held, run_until_idle

__all__ = ["PRELOAD_VARIABLE", "PROGRESS_VARIABLE", "ReferenceAdapter", "main"]

PRELOAD_VARIABLE = "ZLINK_ADAPTER_PRELOAD"
# Loop turns a settle may take; the largest case needs a few hundred.
SETTLE_TURNS = 100_000
# How far the runtime may progress between commands (ZLINK_ADAPTER_PROGRESS): "default"
# lets the loop turn while a command is carried out; "lazy" turns it only in settle;
# "eager" runs it until idle after every command. Cases must pass in all three.
PROGRESS_VARIABLE = "ZLINK_ADAPTER_PROGRESS"
PROGRESS_MODES = ("default", "lazy", "eager")
# Whether the handshake declares held_steps (ZLINK_ADAPTER_HELD_STEPS, "on" by default
# where the build offers it; "off" shows what the protocol reaches without it).
HELD_STEPS_VARIABLE = "ZLINK_ADAPTER_HELD_STEPS"
# submit_concurrent: at most this many threads, and this long for each to hand its
# submission to the loop (a bound against an adapter bug, never a verdict).
CONCURRENT_LIMIT = 16
CONCURRENT_WAIT_S = 10.0
# The reference's work phases in the protocol's status names.
ZOMBIE_STATES = wire_status()

Coordinator = (
    ZLinkSpotSerialExecutor | ZLinkActorSerialExecutor | ZLinkSessionSerialExecutor
    | ZLinkSerialExecutionQueue
)


class CommandError(Exception):
    """A command the adapter cannot carry out; becomes a reply with ok false."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class ScriptError(Exception):
    """Raised inside a work by the ``raise`` op or a failed external call: the work fails
    with this message."""


def canonical(queue_name: str) -> str:
    """The protocol's owner name for a reference queue name: ``spot:S/actor:A`` is
    ``S/actor:A``, ``actor:A`` is ``A``, ``session:s`` is ``s``, a bare queue keeps its
    name (the target's)."""
    for prefix in ("spot:", "actor:", "session:"):
        if queue_name.startswith(prefix):
            return queue_name[len(prefix):]
    return queue_name


class WorkState:
    """What the adapter knows about one work the runner named."""

    __slots__ = ("admit_owner", "ended", "handle", "id", "run_owner", "started", "suspended_on",
                 "target")

    def __init__(self, work_id: str, admit_owner: str) -> None:
        self.id = work_id
        self.target = admit_owner  # the target the work was submitted to
        self.admit_owner = admit_owner
        self.run_owner = admit_owner
        self.handle: ZLinkWorkHandle[Any] | None = None
        self.started = False
        self.ended = False  # a terminal event (finished, failed, cancelled) was written
        self.suspended_on: str | None = None  # the call a yielded work waits on


class Target:
    """One created target and how each entry of its type submits to it."""

    __slots__ = ("name", "obj", "type")

    def __init__(self, name: str, type_: str, obj: Coordinator) -> None:
        self.name = name
        self.type = type_
        self.obj = obj

    def submit(self, entry: str, work: Callable[[], Any], sub: Mapping[str, Any]
               ) -> ZLinkWorkHandle[Any]:
        payload = sub.get("payload_bytes", 0)
        obj = self.obj
        if entry not in ENTRIES[self.type]:
            raise CommandError("bad_command", f"a {self.type} has no entry {entry!r}")
        if isinstance(obj, ZLinkSpotSerialExecutor):
            if entry == "execute_spot":
                return obj.execute_spot(work)
            if entry == "execute_lifecycle":
                return obj.execute_lifecycle(work)
            if entry == "execute_actor":
                return obj.execute_actor(_required(sub, "actor_id"), work, payload)
            return obj.execute_timer(_required(sub, "timer_name"), work)
        if isinstance(obj, ZLinkActorSerialExecutor):
            if entry == "execute_actor":
                return obj.execute_actor(work, payload)
            return obj.execute_lifecycle(work)
        if isinstance(obj, ZLinkSessionSerialExecutor):
            if entry == "execute_application":
                return obj.execute_application(work, payload)
            if entry == "execute_control":
                return obj.execute_control(work)
            if entry == "execute_infrastructure":
                return obj.execute_infrastructure(work)
            return obj.execute_final(work)
        if entry == "enqueue":
            return obj.enqueue(work)
        if entry == "enqueue_with_payload_bytes":
            return obj.enqueue_with_payload_bytes(work, payload)
        if entry == "enqueue_lifecycle":
            return obj.enqueue_lifecycle(work)
        return obj.enqueue_barrier_next(work)

    def queues(self) -> list[ZLinkSerialExecutionQueue]:
        obj = self.obj
        if isinstance(obj, ZLinkSerialExecutionQueue):
            return [obj]
        return obj._scope_queues()


def _required(sub: Mapping[str, Any], key: str) -> Any:
    if key not in sub:
        raise CommandError("bad_command", f"submission needs {key!r}")
    return sub[key]


def _policy(data: Any, what: str) -> ZLinkExecutionLanePolicy | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise CommandError("bad_command", f"{what} must be an object")
    try:
        return ZLinkExecutionLanePolicy.from_mapping(data)
    except (TypeError, ValueError) as exc:
        raise CommandError("bad_command", f"{what}: {exc}") from None


class CaseState:
    """Everything one case made; thrown away by ``reset``.

    ``number`` counts the cases this process served (1 for the first ``reset``), the
    name a leftover of this case is logged under once the case is over. The case's loop
    reports to ``on_fault`` with this case attached, so a fault raised after the case
    ended (a task collected later) is never taken for one of the case running then.
    Every task made on the loop is kept in ``tasks`` while it lives, so an exception no
    one retrieved is found at the case's ``settle`` rather than whenever the task
    happens to be collected."""

    def __init__(self, number: int,
                 on_fault: Callable[[CaseState, dict[str, Any]], None]) -> None:
        self.number = number
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(lambda loop, context: on_fault(self, context))
        self.tasks: list[asyncio.Task[Any]] = []
        self.loop.set_task_factory(self._track)
        self.clock = VirtualClock()
        self.targets: dict[str, Target] = {}
        self.works: dict[str, WorkState] = {}
        self.gates: dict[str, asyncio.Event] = {}
        self.calls: dict[str, asyncio.Future[None]] = {}
        self.waiters: dict[str, asyncio.Task[None]] = {}
        self.records: dict[tuple[str, int], WorkState] = {}  # (queue, wid) -> work
        self.zombies_seen: set[str] = set()

    def _track(self, loop: asyncio.AbstractEventLoop,
               coro: Coroutine[Any, Any, Any] | typing.Generator[Any, None, Any],
               **kwargs: Any) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.Task(coro, loop=loop, **kwargs)
        self.tasks.append(task)
        return task

    def unretrieved(self) -> list[BaseException]:
        """Exceptions of this case's ended tasks that no one retrieved, each once (it is
        retrieved here, so asyncio will not report it again); forgets ended tasks."""
        found: list[BaseException] = []
        live: list[asyncio.Task[Any]] = []
        for task in self.tasks:
            if not task.done():
                live.append(task)
            elif not task.cancelled() and task._log_traceback:
                exc = task.exception()
                if exc is not None:
                    found.append(exc)
        self.tasks = live
        return found


class ReferenceAdapter:
    """Serves the protocol over ``zlink_reference`` on the given streams."""

    def __init__(self, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[str],
                 progress: str = "default") -> None:
        if progress not in PROGRESS_MODES:
            raise ValueError(f"progress must be one of {', '.join(PROGRESS_MODES)}")
        self._progress = progress
        self._held_steps = held.AVAILABLE and \
            os.environ.get(HELD_STEPS_VARIABLE, "on").strip().lower() != "off"
        self._in = stdin
        self._out = stdout
        self._err = stderr
        self._buffer: list[str] = []
        self._live = False  # events are written only while a case is live
        self._greeted = False
        self._cases = 0  # cases served so far (resets)
        self._case = CaseState(0, self._fault)
        self._install_zombie_log()

    # ------------------------------------------------------------------ output
    def emit(self, event: str, **fields: Any) -> None:
        """Queue one event; written before the reply of the command that runs now."""
        if self._live:
            self._buffer.append(json.dumps({"event": event, **fields}, separators=(",", ":")))

    def _flush(self, reply: Mapping[str, Any]) -> None:
        self._buffer.append(json.dumps(reply, separators=(",", ":")))
        data = ("\n".join(self._buffer) + "\n").encode("utf-8")
        self._buffer.clear()
        self._out.write(data)
        self._out.flush()

    def log(self, message: str) -> None:
        """A line on stderr, the adapter's log."""
        self._err.write(f"[reference-adapter] {message}\n")
        self._err.flush()

    # -------------------------------------------------------------------- main
    def serve(self) -> int:
        """Answer commands until ``shutdown`` or end of input."""
        for number, raw in enumerate(self._in, 1):
            if not raw.strip():
                continue
            try:
                cmd = json.loads(raw)
                if not isinstance(cmd, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                self.log(f"stdin line {number}: not a JSON object ({exc}); ignored")
                continue
            ident = cmd.get("id", -1)
            name = cmd.get("cmd")
            try:
                fields = self._run_command(name, cmd)
            except CommandError as exc:
                self._flush({"re": ident, "ok": False,
                             "error": {"kind": exc.kind, "message": exc.message}})
                continue
            except Exception as exc:  # an adapter bug: say so, keep serving
                self.log("".join(traceback.format_exception(exc)).rstrip())
                self._flush({"re": ident, "ok": False,
                             "error": {"kind": "internal", "message": repr(exc)}})
                continue
            self._flush({"re": ident, "ok": True, **fields})
            if name == "shutdown":
                self._teardown()
                return 0
        self._teardown()
        return 0

    def _run_command(self, name: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        if name == "hello":
            return self.hello(cmd)
        if not self._greeted:
            raise CommandError("bad_command", "the first command must be hello")
        if name == "shutdown":
            return {}
        if name == "reset":
            self._teardown()
            self._cases += 1
            self._case = CaseState(self._cases, self._fault)
            self._live = True
            return {}
        handler = self._handlers().get(name) if isinstance(name, str) else None
        if handler is None:
            raise CommandError("bad_command", f"unknown command {name!r}")
        self._live = True
        loop = self._case.loop
        # submit_concurrent turns the loop in every mode: the loop thread must take the
        # other threads' submissions.
        if self._progress == "lazy" and name not in ("settle", "submit_concurrent"):
            return self._without_turning(handler(cmd))
        fields: dict[str, Any] = loop.run_until_complete(handler(cmd))
        if self._progress == "eager":
            loop.run_until_complete(run_until_idle(SETTLE_TURNS))
        return fields

    def _without_turning(self, step: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
        """Carry out a command without letting the loop run anything else (lazy mode):
        the handler runs with the case's loop set as the running loop and never waits."""
        set_running_loop(self._case.loop)
        try:
            step.send(None)
        except StopIteration as done:
            return cast("dict[str, Any]", done.value)
        finally:
            set_running_loop(None)
        step.close()
        raise CommandError("internal", "a command handler waited in lazy mode")

    def _handlers(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {
            "create": self.create, "submit": self.submit_command, "open": self.open,
            "complete": self.complete, "fail": self.fail, "advance": self.advance,
            "register": self.register, "update_registration": self.update_registration,
            "settle": self.settle, CLOSE_COMMAND: self.close, DISPOSE_COMMAND: self.dispose,
            "as_not_safely": self.as_not_safely, "await": self.await_scope,
            "runtime_end": self.runtime_end, "statistics": self.statistics,
            "submit_concurrent": self.submit_concurrent,
            "zombies": self.zombies, "step": self.step,
        }

    # --------------------------------------------------------------- handshake
    def hello(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """The handshake: protocol version, what this runtime offers, its surface."""
        if cmd.get("protocol") != PROTOCOL_VERSION:
            raise CommandError("unsupported",
                               f"this adapter speaks protocol {PROTOCOL_VERSION}, "
                               f"not {cmd.get('protocol')!r}")
        self._greeted = True
        return {
            "protocol": PROTOCOL_VERSION,
            "runtime": {"name": "zlink-reference", "version": __version__,
                        "language": f"python {sys.version_info.major}.{sys.version_info.minor}"},
            # held_steps needs the interpreted build (zlink_reference.testing.held), and
            # ZLINK_ADAPTER_HELD_STEPS=off leaves it out (a runtime driven from outside).
            "capabilities": sorted(c for c in CAPABILITIES
                                   if c != "held_steps" or self._held_steps),
            "surface": surface(),
            "members": members(),
        }

    # --------------------------------------------------------------- teardown
    def _teardown(self) -> None:
        """End the case: let every blocked work go, then close its loop. Nothing of it
        reaches the next case: events it left unwritten (after its last reply) and
        whatever its teardown shakes out (exceptions no one retrieved, objects collected
        now rather than during a later case) go to stderr, under the case's number."""
        self._live = False
        case = self._case
        loop = case.loop
        if self._buffer:
            for line in self._buffer:
                self.log(f"case {case.number} (ended): event after its last reply: {line}")
            self._buffer.clear()
        if loop.is_closed():
            return
        for gate in case.gates.values():
            gate.set()
        for call in case.calls.values():
            if not call.done():
                call.cancel()
        with contextlib.suppress(RuntimeError):
            loop.run_until_complete(run_until_idle(max_iterations=2000))
        # The case's own tasks, which its loop's task factory (_track) listed: asking
        # asyncio.all_tasks would walk every task alive in the process, the ended
        # cases' ones the collector has not freed yet among them, at every reset.
        tasks = [t for t in case.tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            with contextlib.suppress(BaseException):
                loop.run_until_complete(asyncio.wait(tasks, timeout=1.0))
        for exc in case.unretrieved():
            self._fault(case, {"message": "Task exception was never retrieved",
                               "exception": exc})
        if case.tasks:  # what the cancellation did not end within the wait above
            self.log(f"case {case.number} (ended): {len(case.tasks)} task(s) still "
                     f"pending, dropped with its loop: {case.tasks!r}")
            case.tasks = []
        gc.collect(1)  # what only the collector frees reports now, under this case
        loop.close()

    # ------------------------------------------------------------- gates etc.
    def gate(self, name: str) -> asyncio.Event:
        """The gate of that name, made on first mention (shut)."""
        gate = self._case.gates.get(name)
        if gate is None:
            gate = self._case.gates[name] = asyncio.Event()
        return gate

    def call(self, name: str) -> asyncio.Future[None]:
        """The external call of that name, made on first mention (pending)."""
        fut = self._case.calls.get(name)
        if fut is None:
            fut = self._case.calls[name] = self._case.loop.create_future()
        return fut

    def target(self, name: Any) -> Target:
        target = self._case.targets.get(name) if isinstance(name, str) else None
        if target is None:
            raise CommandError("unknown_target", f"no target named {name!r}")
        return target

    def work(self, name: Any) -> WorkState:
        ws = self._case.works.get(name) if isinstance(name, str) else None
        if ws is None:
            raise CommandError("unknown_work", f"no work named {name!r}")
        return ws

    # ---------------------------------------------------------------- commands
    async def create(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Make a Spot, Actor, Session or bare queue named by the runner."""
        name = cmd.get("target")
        if not isinstance(name, str) or name in self._case.targets:
            raise CommandError("bad_command", f"target name {name!r} is missing or taken")
        type_ = cmd.get("type")
        case = self._case
        common: dict[str, Any] = {"clock": case.clock, "loop": case.loop,
                                  "error_hook": self._error_hook, "observer": self._observe}
        policy = _policy(cmd.get("policy"), "policy")
        obj: Coordinator
        try:
            if type_ == "spot":
                kind = ZLinkSpotKind(cmd.get("kind", "user"))
                mode = cmd.get("mode")
                obj = ZLinkSpotSerialExecutor(
                    name, kind=kind,
                    mode=ZLinkUserSpotExecutionMode(mode) if mode is not None else None,
                    policy=policy, actor_policy=_policy(cmd.get("actor_policy"), "actor_policy"),
                    timer_policy=_policy(cmd.get("timer_policy"), "timer_policy"), **common)
            elif type_ == "actor":
                obj = ZLinkActorSerialExecutor(name, policy=policy,
                                               actor_type=cmd.get("actor_type"), **common)
            elif type_ == "session":
                obj = ZLinkSessionSerialExecutor(name, policy=policy, **common)
            elif type_ == "queue" and cmd.get("held"):
                if not self._held_steps:
                    raise CommandError("unsupported", "held queues need the interpreted "
                                                      "build of the reference")
                obj = held.HeldQueue(policy, name=name, **common)
            elif type_ == "queue":
                obj = ZLinkSerialExecutionQueue(policy, name=name, **common)
            else:
                raise CommandError("bad_command", f"unknown target type {type_!r}")
        except (TypeError, ValueError) as exc:
            raise CommandError("bad_command", str(exc)) from None
        warn = cmd.get("zombie_warn_after_ms")
        if warn is not None:
            obj._rt.zombie_warn_after_ms = warn
        case.targets[name] = Target(name, type_, obj)
        return {}

    async def submit_command(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Submit one work through one entry; the verdict is the accepted/rejected event."""
        return {"verdict": self.submit(cmd)}

    async def submit_concurrent(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Submit several works at once, each from its own OS thread (SE-6.3 under real
        concurrency). The threads start together at a barrier; the loop thread, which
        alone may change queue state (D-7), takes no submission until every thread has
        handed its own over, so all of them really are in flight at once. The works wait
        at a latch until every verdict is written, so no ``started`` can come before an
        ``accepted``."""
        subs = cmd.get("submissions")
        if not isinstance(subs, list) or not 2 <= len(subs) <= CONCURRENT_LIMIT or \
                not all(isinstance(sub, dict) for sub in subs):
            raise CommandError("bad_command", f"submissions must be a list of 2 to "
                                              f"{CONCURRENT_LIMIT} submission objects")
        loop = self._case.loop
        latch = asyncio.Event()
        n = len(subs)
        handed = threading.Semaphore(0)
        post = loop.call_soon_threadsafe

        def counting(callback: Callable[..., Any], *args: Any, **kw: Any) -> Any:
            handle = post(callback, *args, **kw)
            handed.release()
            return handle

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign,assignment]
        barrier = threading.Barrier(n)
        done: list[asyncio.Future[None]] = [loop.create_future() for _ in subs]
        errors: list[CommandError] = []

        def worker(index: int) -> None:
            barrier.wait()
            try:
                self.submit(subs[index], latch)
            except CommandError as exc:
                errors.append(exc)
            except Exception as exc:  # an adapter bug: reported as the command's error
                errors.append(CommandError("internal", repr(exc)))
            finally:
                handed.release()  # this thread will hand nothing (more) over
                post(done[index].set_result, None)

        threads = [threading.Thread(target=worker, args=(i,), daemon=True,
                                    name=f"zlink-submit-{i}") for i in range(n)]
        try:
            for t in threads:
                t.start()
            # Each thread hands over its submission, or ends: block the loop thread until
            # all n have done one of the two (bounded, in case a thread never does).
            for _ in range(n):
                if not handed.acquire(timeout=CONCURRENT_WAIT_S):
                    raise CommandError("internal", "a submitting thread neither handed its "
                                                   "submission to the loop nor ended")
        finally:
            del loop.call_soon_threadsafe
        await asyncio.gather(*done)
        latch.set()
        if errors:
            raise errors[0]
        return {}

    def submit(self, sub: Mapping[str, Any], latch: asyncio.Event | None = None) -> str:
        """Submit (from a command or a work's ``submit`` op). Returns the verdict."""
        work_id = sub.get("work")
        if not isinstance(work_id, str) or work_id in self._case.works:
            raise CommandError("bad_command", f"work name {work_id!r} is missing or taken")
        target = self.target(sub.get("target"))
        entry = sub.get("entry")
        if not isinstance(entry, str):
            raise CommandError("bad_command", "submission needs an entry")
        script = sub.get("script", [])
        if not isinstance(script, list):
            raise CommandError("bad_command", "script must be a list of ops")
        ws = WorkState(work_id, target.name)
        fn = self._make_work(ws, script, latch)
        _SUBMITTING.depth = getattr(_SUBMITTING, "depth", 0) + 1
        try:
            handle = target.submit(entry, fn, sub)
        except ZLinkRejectedError as exc:
            owner = canonical(exc.queue) if exc.queue else target.name
            self._case.works[work_id] = ws
            ws.ended = True
            self.emit("rejected", work=work_id, owner=owner, reason=exc.reason.value)
            return "rejected"
        except (TypeError, ValueError) as exc:
            raise CommandError("bad_command", str(exc)) from None
        finally:
            _SUBMITTING.depth -= 1
        handle.label = work_id
        ws.handle = handle
        ws.admit_owner = ws.run_owner = canonical(handle.queue_name)
        self._case.works[work_id] = ws
        self.emit("accepted", work=work_id, owner=ws.admit_owner)
        handle.add_done_callback(lambda h: self._ended(ws, h))
        return "accepted"

    async def open(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Open a gate: works waiting at it go on (made open if not mentioned yet)."""
        self.gate(_name(cmd, "gate")).set()
        return {}

    async def complete(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """The external call returns."""
        fut = self.call(_name(cmd, "call"))
        if fut.cancelled():
            return {"state": "cancelled"}  # cut short by a disposal (D-15)
        if fut.done():
            raise CommandError("bad_command", f"call {cmd['call']!r} was already settled")
        fut.set_result(None)
        return {"state": "completed"}

    async def fail(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """The external call fails with the given message."""
        fut = self.call(_name(cmd, "call"))
        if fut.cancelled():
            return {"state": "cancelled"}
        if fut.done():
            raise CommandError("bad_command", f"call {cmd['call']!r} was already settled")
        fut.set_exception(ScriptError(str(cmd.get("message", "external call failed"))))
        return {"state": "failed"}

    async def advance(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Move the virtual clock; due timers run on the next loop turns."""
        ms = cmd.get("ms")
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise CommandError("bad_command", f"ms must be a non-negative integer, got {ms!r}")
        self._case.clock.advance(ms)
        return {"now_ms": self._case.clock.now()}

    async def register(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Register an Actor with its type and values (one state-lane turn)."""
        target = self.target(cmd.get("target"))
        values = _values(cmd)
        obj = target.obj
        if isinstance(obj, ZLinkSpotSerialExecutor):
            obj.register_actor(_name(cmd, "actor_id"), cmd.get("actor_type"), **values)
        elif isinstance(obj, ZLinkActorSerialExecutor):
            obj.update_registration(**values)
        else:
            raise CommandError("bad_command", f"a {target.type} has no Actor registrations")
        return {}

    async def update_registration(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Change some registered values of an Actor, all in one state-lane turn."""
        target = self.target(cmd.get("target"))
        values = _values(cmd)
        obj = target.obj
        if isinstance(obj, ZLinkSpotSerialExecutor):
            obj.update_actor_registration(_name(cmd, "actor_id"), **values)
        elif isinstance(obj, ZLinkActorSerialExecutor):
            obj.update_registration(**values)
        else:
            raise CommandError("bad_command", f"a {target.type} has no Actor registrations")
        return {}

    async def settle(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Answer once nothing can progress without further input. A runtime that never
        gets there (a livelock) gets an error reply instead of a hang."""
        try:
            await run_until_idle(SETTLE_TURNS)
        except RuntimeError:
            raise CommandError("internal", f"the runtime did not become idle within "
                                           f"{SETTLE_TURNS} event-loop turns (a livelock?)"
                               ) from None
        self._report_unretrieved()
        return {"now_ms": self._case.clock.now()}

    def _report_unretrieved(self) -> None:
        """An exception that ended one of the case's tasks and that no one retrieved
        escaped the runtime: a ``fault`` of this case, reported now, while the case
        still runs, not when the collector happens to free the task."""
        case = self._case
        for exc in case.unretrieved():
            self._fault(case, {"message": "Task exception was never retrieved",
                               "exception": exc})

    async def close(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """No new work; accepted work finishes."""
        self.target(cmd.get("target")).obj.close()
        return {}

    async def dispose(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """One of the scope's shutdown calls (SD-1, SD-4)."""
        target = self.target(cmd.get("target"))
        obj = target.obj
        mode = cmd.get("mode")
        try:
            if mode == DISPOSE:
                obj.dispose()
            elif mode == DISPOSE_SAFELY:
                obj.dispose_safely()
            elif mode == DISPOSE_AFTER_TIMEOUT:
                obj.dispose_after_timeout(cmd.get("timeout_ms"))  # type: ignore[arg-type]
            elif mode == "destroy":
                obj.destroy()
            else:
                raise CommandError("bad_command", f"unknown dispose mode {mode!r}")
        except (TypeError, ValueError) as exc:
            raise CommandError("bad_command", str(exc)) from None
        for z in obj.zombies():
            ws = self._case.works.get(z.label) if z.label else None
            if ws is not None and ws.ended:
                # Its code already ended (a SpotWide Actor work whose Actor queue has
                # not yet seen its execution turn end): a zombie is a work that still
                # runs, and the record ends on its own at once.
                continue
            if z.label and z.label not in self._case.zombies_seen:
                self._case.zombies_seen.add(z.label)
                owner = ws.run_owner if ws is not None and ws.started else canonical(z.queue)
                self.emit("zombie", work=z.label, owner=owner)
        return {}

    async def as_not_safely(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Destroying the target cancels instead of making zombies (SD-4)."""
        self.target(cmd.get("target")).obj.as_not_safely()
        return {}

    async def await_scope(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Start waiting on a scope; ``returned`` names the waiter when the wait ends."""
        target = self.target(cmd.get("target"))
        waiter = _name(cmd, "waiter")
        mode = cmd.get("mode")
        if waiter in self._case.waiters:
            raise CommandError("bad_command", f"waiter {waiter!r} exists")
        errors: list[str] = []
        obj = target.obj

        async def wait() -> None:
            try:
                if mode == "quiescence":
                    await cast(ZLinkSerialExecutionQueue, obj).await_quiescence()
                    self.emit("returned", waiter=waiter)
                elif mode == "completion":
                    await obj.await_completion()
                    self.emit("returned", waiter=waiter)
                else:
                    await obj.await_after_cancellation(lambda exc, scope: errors.append(str(exc)))
                    self.emit("returned", waiter=waiter, errors=errors)
            except ZLinkNotDisposedError:
                self.emit("returned", waiter=waiter, error="not_disposed")

        if mode not in ("completion", "after_cancellation", "quiescence"):
            raise CommandError("bad_command", f"unknown await mode {mode!r}")
        if mode == "quiescence" and not isinstance(obj, ZLinkSerialExecutionQueue):
            raise CommandError("bad_command", "await_quiescence is a bare queue's")
        self._case.waiters[waiter] = self._case.loop.create_task(wait())
        return {}

    async def runtime_end(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """The runtime end (SD-5) over every target of the case, on the virtual clock."""
        waiter = _name(cmd, "waiter")
        grace = cmd.get("grace_ms", 1000)
        runtime = ZLinkRuntime(zombie_grace_ms=grace, clock=cast(ZLinkClock, self._case.clock))
        runtime.scopes.extend(t.obj for t in self._case.targets.values())

        async def end() -> None:
            report = await runtime.finish()
            self.emit("returned", waiter=waiter,
                      cancelled=_labels(z.label for z in report.cancelled_zombies),
                      abandoned=_labels(z.label for z in report.abandoned))

        self._case.waiters[waiter] = self._case.loop.create_task(end())
        return {}

    async def step(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Capability held_steps: the held queue takes the one step of its own named
        (``zlink_model.vocabulary.HELD_STEPS``); refused when it is not enabled there.
        Its effects on the loop (the work's code on its turn, the requeue in the work's
        task) come by the next ``settle``."""
        target = self.target(cmd.get("target"))
        queue = target.obj
        name = cmd.get("step")
        if not held.AVAILABLE or not isinstance(queue, held.HeldQueue):
            raise CommandError("bad_command", f"{target.name} was not created held")
        if name not in HELD_STEPS:
            raise CommandError("bad_command", f"unknown step {name!r}")
        handle = self.work(cmd.get("work")).handle if name == REQUEUE else None
        try:
            queue.step(name, handle)
        except held.HeldStepError as exc:
            raise CommandError("bad_command", str(exc)) from None
        return {}

    async def statistics(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Active and zombie counts and each owner's reservations."""
        target = self.target(cmd.get("target"))
        owners = {}
        for q in target.queues():
            st = q.statistics()
            owners[canonical(q.name)] = {
                "application_count": st.application_count,
                "application_bytes": st.application_bytes,
                "lifecycle_count": st.lifecycle_count,
                "lifecycle_bytes": st.lifecycle_bytes,
            }
        return {"active": target.obj.active_count(), "zombies": target.obj.zombie_count(),
                "owners": owners}

    async def zombies(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """The target's zombies while they run (SD-6)."""
        target = self.target(cmd.get("target"))
        out = []
        for z in target.obj.zombies():
            ws = self._case.works.get(z.label)
            owner = ws.run_owner if ws is not None and ws.started else canonical(z.queue)
            out.append({"work": z.label, "owner": owner, "state": ZOMBIE_STATES[z.state]})
        return {"zombies": out}

    # ------------------------------------------------------------------- works
    def _make_work(self, ws: WorkState, script: list[Any], latch: asyncio.Event | None = None
                   ) -> Callable[[], Any]:
        """The callable submitted for a script: synchronous when no op waits (a
        synchronous turn), else a coroutine function."""
        waits = any(isinstance(op, dict) and op.get("op") in WAITING_OPS
                    for op in script)
        if not waits and latch is None:
            def run_sync() -> None:
                self._begin(ws, _on_submitter_stack())
                try:
                    for index, op in enumerate(script):
                        self._sync_op(ws, index, op)
                except ScriptError as exc:
                    self._end(ws, "failed", message=str(exc))
                    raise RuntimeError(str(exc)) from None
                self._end(ws, "finished")
            return run_sync

        async def run_async() -> None:
            inline = _on_submitter_stack()  # before any await: where the code began
            if latch is not None and not inline:
                await latch.wait()
            self._begin(ws, inline)
            try:
                for index, op in enumerate(script):
                    if op.get("op") in WAITING_OPS:
                        await self._async_op(ws, index, op)
                    else:
                        self._sync_op(ws, index, op)
            except asyncio.CancelledError:
                self._end(ws, "cancelled")
                raise
            except ScriptError as exc:
                self._end(ws, "failed", message=str(exc))
                raise RuntimeError(str(exc)) from None
            self._end(ws, "finished")
        return run_async

    def _begin(self, ws: WorkState, inline: bool) -> None:
        rec = current_work()
        if rec is not None:
            ws.run_owner = canonical(rec.queue_name)
            self._case.records[(rec.queue_name, rec.wid)] = ws
        ws.started = True
        self.emit("started", work=ws.id, owner=ws.run_owner, on_submitter_stack=inline)

    def _end(self, ws: WorkState, what: str, **fields: Any) -> None:
        if not ws.ended:
            ws.ended = True
            self.emit(what, work=ws.id, owner=ws.run_owner, **fields)

    def _ended(self, ws: WorkState, handle: ZLinkWorkHandle[Any]) -> None:
        """A handle settled; report what the work's own code could not (a work cancelled
        before it started, or a failure outside the script)."""
        if ws.ended:
            return
        owner = ws.run_owner if ws.started else ws.admit_owner
        if handle.cancelled():
            self._end_as(ws, "cancelled", owner)
        elif handle.exception() is not None:
            self._end_as(ws, "failed", owner, message=str(handle.exception()))
        else:
            self._end_as(ws, "finished", owner)

    def _end_as(self, ws: WorkState, what: str, owner: str, **fields: Any) -> None:
        ws.ended = True
        self.emit(what, work=ws.id, owner=owner, **fields)

    def _sync_op(self, ws: WorkState, index: int, op: dict[str, Any]) -> None:
        kind = op.get("op")
        if kind == "busy":
            self._case.clock.advance(op["ms"])
        elif kind == "submit":
            try:
                self.submit(op)
            except CommandError as exc:
                self.log(f"work {ws.id} op {index}: {exc.message}")
                self.emit("error", work=ws.id, owner=ws.run_owner, op=index, kind="other")
        elif kind == "snapshot":
            snap = current_snapshot()
            values = dict(snap.registration) if snap is not None else {}
            self.emit("snapshot", work=ws.id, owner=ws.run_owner, values=values)
        elif kind == "raise":
            raise ScriptError(str(op.get("message", "raised")))
        elif kind == "is_current":
            target = self.target(op.get("target"))
            queue = target.obj
            if not isinstance(queue, ZLinkSerialExecutionQueue):
                raise ScriptError(f"is_current asks a bare queue, not a {target.type}")
            self.emit("current", work=ws.id, owner=ws.run_owner, target=target.name,
                      current=queue.is_current())
        else:
            raise ScriptError(f"unknown op {kind!r}")

    async def _async_op(self, ws: WorkState, index: int, op: dict[str, Any]) -> None:
        kind = op["op"]
        if kind == "gate":
            gate = self.gate(op["gate"])
            if not op.get("ignore_cancel"):
                await gate.wait()
                return
            while not gate.is_set():
                try:
                    await gate.wait()
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None:
                        task.uncancel()  # this work defers cancellation until the gate opens
        elif kind == "call":
            await self._call(ws, index, op["call"])
        elif kind == "await_scope":
            await self._await_scope(ws, index, str(op["mode"]))
        else:
            await self._wait_for(ws, index, op["work"], bool(op.get("wrapped")))

    async def _call(self, ws: WorkState, index: int, name: str) -> None:
        fut = self.call(name)
        ws.suspended_on = name
        try:
            await yield_framework_call(fut)
        except ZLinkYieldNotSupportedError:
            self.emit("error", work=ws.id, owner=ws.run_owner, op=index,
                      kind="yield_not_supported")
            return
        finally:
            if ws.suspended_on is None:  # it did yield: it holds its turn again now
                self.emit("resumed", work=ws.id, owner=ws.run_owner)
            ws.suspended_on = None

    async def _wait_for(self, ws: WorkState, index: int, name: str, wrapped: bool) -> None:
        other = self._case.works.get(name)
        if other is None or other.handle is None:
            self.log(f"work {ws.id} op {index}: no accepted work named {name!r}")
            self.emit("error", work=ws.id, owner=ws.run_owner, op=index, kind="other")
            return
        handle = other.handle
        try:
            if wrapped:
                # As users write it: a timeout around the wait, which runs it in a task
                # of its own (a child of this work's task).
                await asyncio.wait_for(_awaited(handle), WRAPPED_WAIT_S)
            else:
                await handle
            outcome = "finished"
        except ZLinkReentrancyError:
            self.emit("error", work=ws.id, owner=ws.run_owner, op=index, kind="reentrancy")
            return
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not handle.cancelled() or (task is not None and task.cancelling()):
                raise
            outcome = "cancelled"
        except Exception:
            outcome = "failed"
        self.emit("waited", work=ws.id, owner=ws.run_owner, target=name, outcome=outcome)

    async def _await_scope(self, ws: WorkState, index: int, mode: str) -> None:
        """The ``await_scope`` op: wait, from inside the work, on its own target's
        quiescence, completion or after-cancellation. Each waits for the waiter itself,
        so the runtime must refuse it at once (SE-8.2, SE-10.13); a wait that returns
        reports nothing, and the case's checks see the missing error."""
        obj = self.target(ws.target).obj
        try:
            if mode == "quiescence":
                await obj.await_quiescence()
            elif mode == "completion":
                await obj.await_completion()
            elif mode == "after_cancellation":
                await obj.await_after_cancellation(lambda exc, scope: None)
            else:
                raise ScriptError(f"unknown await_scope mode {mode!r}")
        except ZLinkReentrancyError:
            self.emit("error", work=ws.id, owner=ws.run_owner, op=index, kind="reentrancy")
        except ZLinkNotDisposedError:
            self.emit("error", work=ws.id, owner=ws.run_owner, op=index, kind="not_disposed")

    # ------------------------------------------------------------------ hooks
    def _observe(self, queue: str, event: str, fields: dict[str, object]) -> None:
        """Trace observer: report a yield at the moment the core gives the turn back."""
        if event != YIELD_TURN:
            return
        ws = self._case.records.get((queue, fields["work"]))  # type: ignore[arg-type]
        if ws is None or ws.suspended_on is None:
            return
        call, ws.suspended_on = ws.suspended_on, None
        self.emit("yielded", work=ws.id, owner=ws.run_owner, call=call)

    def _fault(self, case: CaseState, context: dict[str, Any]) -> None:
        """An exception escaped the runtime's own code (a loop callback or task): the
        runtime broke one of its invariants. Logged, and reported as a ``fault`` of the
        case whose loop it came from while that case runs; once the case is over, only
        logged, under its number (it must not fail whichever case runs then)."""
        exc = context.get("exception")
        message = str(context.get("message", "unhandled exception"))
        if exc is not None:
            message += f": {exc!r}"
        current = case is self._case and self._live
        where = f"case {case.number}" + ("" if current else " (ended)")
        self.log(f"{where}: fault: {message}")
        if exc is not None:
            self.log("".join(traceback.format_exception(exc)).rstrip())
        if current:
            self.emit("fault", message=message)

    def _error_hook(self, exc: BaseException, handle: ZLinkWorkHandle[Any]) -> None:
        """Work failures are reported as ``failed`` events; nothing else to do."""

    def _install_zombie_log(self) -> None:
        adapter = self

        class ZombieWarnings(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                args = record.args
                if not record.msg.startswith("zombie work") or not isinstance(args, tuple):
                    return
                label, queue = args[2], args[1]
                if isinstance(label, str) and label in adapter._case.works:
                    ws = adapter._case.works[label]
                    owner = ws.run_owner if ws.started else canonical(str(queue))
                    adapter.emit("zombie_warning", work=label, owner=owner)

        logger = logging.getLogger("zlink.zombies")
        logger.addHandler(ZombieWarnings())
        logger.setLevel(logging.WARNING)
        logger.propagate = False


# How many submit calls this thread is inside now. A work whose code begins while it is
# not zero began on the submitter's stack (SE-6.5 forbids it); a thread of its own, or a
# later turn of the loop, sees zero. Thread-local, not a context variable: a task copies
# its context when it is made, which would carry a submitter's count into the work.
_SUBMITTING = threading.local()


# The timeout of a wrapped wait: far beyond any case, so only the wrapper matters.
WRAPPED_WAIT_S = 3600.0
# The ops that wait, so a script holding one runs as a coroutine function.
WAITING_OPS = ("gate", "call", "wait_for", "await_scope")


async def _awaited(handle: ZLinkWorkHandle[Any]) -> Any:
    return await handle


def _on_submitter_stack() -> bool:
    return getattr(_SUBMITTING, "depth", 0) > 0


def _name(cmd: Mapping[str, Any], key: str) -> str:
    value = cmd.get(key)
    if not isinstance(value, str) or not value:
        raise CommandError("bad_command", f"{cmd.get('cmd')} needs a {key!r} name")
    return value


def _values(cmd: Mapping[str, Any]) -> dict[str, Any]:
    values = cmd.get("values", {})
    if not isinstance(values, dict):
        raise CommandError("bad_command", "values must be an object")
    return values


def _labels(labels: Iterable[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        if label and label not in out:
            out.append(label)
    return out


def surface() -> dict[str, dict[str, list[str]]]:
    """The entry points of each coordinator type and their parameters, read from the
    classes themselves (so a parameter that let a caller pick a queue would show)."""
    classes = {"spot": ZLinkSpotSerialExecutor, "actor": ZLinkActorSerialExecutor,
               "session": ZLinkSessionSerialExecutor}
    out: dict[str, dict[str, list[str]]] = {}
    for type_, cls in classes.items():
        entries = {}
        for name in sorted(dir(cls)):
            if name.startswith("execute"):
                params = inspect.signature(getattr(cls, name)).parameters
                entries[name] = [p for p in params if p != "self"]
        out[type_] = entries
    return out


def members() -> dict[str, dict[str, str]]:
    """Each coordinator type's public members beyond its entry points, and whether one
    hands out a queue (SE-2.5): read from a live instance (a property's value) and from
    the annotations of methods (their result), so a member added later is reported too.
    The handle an entry returns is the coordinator's too: its members are listed as
    ``execute_actor().name`` (SE-10.1: no handle hands out a queue either)."""
    loop = asyncio.new_event_loop()
    try:
        probes: dict[str, Callable[[], Any]] = {
            "spot": lambda: ZLinkSpotSerialExecutor(
                "probe", mode=ZLinkUserSpotExecutionMode.PER_ACTOR, loop=loop),
            "actor": lambda: ZLinkActorSerialExecutor("probe", loop=loop),
            "session": lambda: ZLinkSessionSerialExecutor("probe", loop=loop),
        }
        out: dict[str, dict[str, str]] = {}
        for type_, make in probes.items():
            obj = make()
            found = {}
            for name in sorted(dir(type(obj))):
                if name.startswith("_") or name.startswith("execute"):
                    continue
                found[name] = "queue" if _hands_out_queue(obj, name) else "other"
            for entry in sorted(n for n in dir(type(obj)) if n.startswith("execute")):
                handle = _probe_handle(make(), entry)  # a fresh probe: a final closes
                for name in sorted(dir(type(handle))):
                    if not name.startswith("_"):
                        found[f"{entry}().{name}"] = (
                            "queue" if _hands_out_queue(handle, name) else "other")
            out[type_] = found
        return out
    finally:
        loop.close()


def _probe_handle(coordinator: Any, entry: str) -> Any:
    """The handle ``entry`` returns on a probe coordinator (never run: the probe's
    loop does not run)."""
    fn = getattr(coordinator, entry)
    params = [p for p in inspect.signature(fn).parameters if p != "work"]
    args = ["probe" for p in params if p in ("actor_id", "timer_name")]
    return fn(*args, lambda: None)


def _submittable(value: object) -> bool:
    """A queue, or anything else a caller could submit to (a public ``enqueue*`` or
    ``execute*`` method)."""
    if isinstance(value, ZLinkSerialExecutionQueue):
        return True
    if isinstance(value, type):
        return False
    return any(callable(getattr(value, n, None)) for n in dir(value)
               if n.startswith(("enqueue", "execute")))


def _hands_out_queue(obj: Any, name: str) -> bool:
    static = inspect.getattr_static(type(obj), name)
    if callable(static) and not isinstance(static, property):
        try:
            hints = typing.get_type_hints(getattr(obj, name))
        except Exception:
            return False
        return "ZLinkSerialExecutionQueue" in str(hints.get("return", ""))
    try:
        value = getattr(obj, name)
    except Exception:
        return False
    values = list(value.values()) if isinstance(value, Mapping) else (
        list(value) if isinstance(value, list | tuple | set | frozenset) else [value])
    return any(_submittable(v) for v in values)


def main() -> int:
    """Run the adapter on this process's standard streams."""
    # The adapter runs the reference as a debug build: the SE-8.1 ownership checks are
    # on (D-25), so a case that breaks the serial-ownership premise fails at its cause.
    set_ownership_checks(True)
    preload = os.environ.get(PRELOAD_VARIABLE)
    if preload:
        try:
            runpy.run_path(preload, run_name="zlink_adapter_preload")
        except BaseException:
            sys.stderr.write(f"[reference-adapter] {PRELOAD_VARIABLE}={preload} failed:\n")
            traceback.print_exc(file=sys.stderr)
            return 3
    progress = os.environ.get(PROGRESS_VARIABLE, "default")
    if progress not in PROGRESS_MODES:
        sys.stderr.write(f"[reference-adapter] {PROGRESS_VARIABLE} must be one of "
                         f"{', '.join(PROGRESS_MODES)}, not {progress!r}\n")
        return 2
    adapter = ReferenceAdapter(sys.stdin.buffer, sys.stdout.buffer, sys.stderr, progress)
    return adapter.serve()


if __name__ == "__main__":
    sys.exit(main())
