"""Scope disposal and the runtime end (SD). The scope calls (dispose, dispose_safely,
dispose_after_timeout, await_completion, await_after_cancellation, as_not_safely) are on
every queue and coordinator; this package adds the runtime that ends when no active work
is left and then cancels the zombies, within a bound (SD-5)."""

from .._shell import ZLinkNotDisposedError, ZombieInfo
from .runtime import ShutdownReport, ZLinkRuntime, run

__all__ = ["ShutdownReport", "ZLinkNotDisposedError", "ZLinkRuntime", "ZombieInfo", "run"]
