"""``ScopeSurface``: the scope members a queue and a coordinator show (SD-1 .. SD-6).

Each member hands the call to the ``Scope`` the host holds (scope.py), and the hooks a
``Scope`` calls on its host (``ScopeHost``) have their defaults here, so a host writes
only what differs. This room holds no logic of its own: what a disposal or a wait does
is the ``Scope``'s.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from zlink_model.queue import WorkRecord

from .scope import ErrorHandler, Scope, ScopeQueue, ZombieInfo

if TYPE_CHECKING:
    from .handle import ZLinkWorkHandle

__all__ = ["ScopeSurface", "scope_registry"]

# The runtime end (zlink_reference.disposal) sets this to its registry of scopes; every
# scope made while it is set joins it (SD-5: the scheduler keeps a registry of work).
scope_registry: contextvars.ContextVar[list[ScopeSurface] | None] = contextvars.ContextVar(
    "zlink_scope_registry", default=None
)


class ScopeSurface:
    """The scope members ``ZLinkSerialExecutionQueue`` and the coordinators show: each
    hands the call to the ``Scope`` its host holds (``_scope()``), and the hooks a
    ``Scope`` calls on its host (``ScopeHost``) have their defaults here. A host
    provides ``_scope()``, ``_scope_queues()`` and its runtime ``_rt``, and may override
    ``_scope_closing()``, ``_scope_cancelling()``, ``_held()``, ``_counts()`` and
    ``_running_as()``."""

    __slots__ = ()

    def _scope(self) -> Scope:
        """The ``Scope`` this host holds (made on first use)."""
        raise NotImplementedError

    def _scope_queues(self) -> Sequence[ScopeQueue]:
        raise NotImplementedError

    def _scope_closing(self) -> None:
        """Hook: the scope closes to new work (every disposal call)."""

    def _scope_cancelling(self) -> None:
        """Hook: the scope cancels what is left (dispose, or the timeout expired)."""

    def _held(self) -> list[tuple[ScopeQueue, ZLinkWorkHandle[Any]]]:
        """Hook: the works this scope accepted and holds back from their queue (a
        session's final work before its turn is due), each with the queue it will be
        placed in; none by default. They count from acceptance (D-22)."""
        return []

    def _counts(self, queue: ScopeQueue, rec: WorkRecord) -> bool:
        """Hook: whether a live record of ``queue`` is a work of the scope of its own;
        every one by default."""
        return True

    def _running_as(self, queue: ScopeQueue, rec: WorkRecord) -> WorkRecord:
        """The record whose phase says where the counted work ``rec`` is. A work runs
        as its own record here; a coordinator whose works run as a turn placed on
        another queue (SpotWide) returns that turn, so a suspended work is listed as
        suspended with what it waits on, not as its holder's "running" (SD-6)."""
        return rec

    def _join_registry(self) -> None:
        registry = scope_registry.get()
        if registry is not None:
            registry.append(self)

    # ------------------------------------------------------------ disposal
    def dispose(self) -> None:
        """Close and cancel everything now (SD-1). Idempotent once cancelled."""
        self._scope().dispose()

    def dispose_safely(self) -> None:
        """Close and cancel nothing: live works go on as zombies (SD-1, SD-2). Does
        nothing on a scope already disposed."""
        self._scope().dispose_safely()

    def dispose_after_timeout(self, timeout_ms: float) -> None:
        """Close now; after ``timeout_ms`` on the scope's clock cancel what is left, as
        ``dispose`` does (SD-1). With nothing left, no timer is started. After
        ``dispose_safely`` it bounds the zombies: they are cancelled when the time is
        up (D-27). A bound already running stays the one that holds."""
        self._scope().dispose_after_timeout(timeout_ms)

    # ------------------------------------------------------------- waiting
    async def await_completion(self) -> None:
        """Return once no active work is left; zombies do not count (SD-3). From an
        active work of this scope it raises ``ZLinkReentrancyError`` (SE-8.2)."""
        await self._scope().await_completion()

    async def await_after_cancellation(self, error_handler: ErrorHandler | None = None) -> None:
        """Wait for every live work, zombies included; only after a disposal (SD-3).

        Each failure of a zombie is passed to ``error_handler(error, scope)``, in the
        order they happened; without a handler the first one is raised once nothing is
        left running. A failure is reported once, to the first call that returns.
        From a live work of this scope it raises ``ZLinkReentrancyError`` (SE-8.2).
        """
        await self._scope().await_after_cancellation(error_handler, self)

    # -------------------------------------------------------------- flags
    @property
    def dispose_safely_on_exit(self) -> bool:
        """True (the default): destroying this scope (leaving its ``async with`` block,
        runtime end) turns its works into zombies; False: it cancels them (SD-4)."""
        return self._scope().rt.dispose_safely_on_exit

    def as_not_safely(self) -> Self:
        """Make destruction cancel instead of making zombies (SD-4). Applies to every
        queue of the scope, those made later and those already made (D-16)."""
        self._scope().as_not_safely()
        return self

    @classmethod
    def inherit(cls, parent: ScopeSurface, *args: Any, **kwargs: Any) -> Self:
        """A child scope of ``parent`` (the seed's ``Scope::inherit($parent)``, SD-4):
        made like ``cls(*args, **kwargs)``, on the parent's loop unless ``loop`` is
        given, with the parent's dispose-safely flag as it is now. A parent made
        ``as_not_safely()`` makes children that cancel on destruction; a child may
        still call ``as_not_safely()`` itself. The flag is copied, not shared: a later
        change to the parent leaves its children as they were (decision D-29)."""
        if not isinstance(parent, ScopeSurface):
            raise TypeError(
                f"parent must be a scope (a queue or a coordinator), got {parent!r}")
        kwargs.setdefault("loop", parent._scope().rt.loop)
        child = cls(*args, **kwargs)
        if not parent.dispose_safely_on_exit:
            child.as_not_safely()
        return child

    def destroy(self) -> None:
        """Destroy the scope: ``dispose_safely`` or ``dispose``, by the flag (SD-4)."""
        self._scope().destroy()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.destroy()

    # --------------------------------------------------------- accounting
    def active_count(self) -> int:
        """Live works that are not zombies (SD-2)."""
        return sum(1 for _, rec in self._scope().counted() if not rec.zombie)

    def zombie_count(self) -> int:
        """Live zombies (SD-2)."""
        return sum(1 for _, rec in self._scope().counted() if rec.zombie)

    def zombies(self) -> list[ZombieInfo]:
        """The zombies running now, with where they are and since when (SD-6)."""
        return self._scope().zombies()
