"""A preload file (``ZLINK_ADAPTER_PRELOAD``) that puts back the reference runtime's old
behaviour before SD-3a: a work that survives its cancellation is never marked a zombie,
so it stays active for ever (``Disposal_survivor_stays_active`` in the TLA+ models)."""

from typing import Any

from zlink_model.queue import QueueCore


def _never(self: Any, rec: Any) -> bool:
    return False


QueueCore.survive_cancel = _never  # type: ignore[method-assign]
