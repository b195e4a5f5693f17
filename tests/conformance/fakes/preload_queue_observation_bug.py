"""A preload file (``ZLINK_ADAPTER_PRELOAD``) that breaks one of the bare queue's
observers in the reference runtime, named by ``ZLINK_QUEUE_BUG``, so a test can show that
the SE-6.2 case of that observer fails:

* ``is_current_any_holder``: ``is_current`` answers whether any work holds the queue's
  turn, not whether the caller does;
* ``quiescence_ignores_yielded``: ``await_quiescence`` waits only for the work holding the
  turn, so a yielded work (which holds none) is forgotten.

They live here, not in the mutant catalogue, because the catalogue's mutants must also be
killed by the project's state machines, which do not call these observers; the unit tests
and the kit's cases do."""

import asyncio
import os
from typing import Any

from zlink_reference._shell.queue import ZLinkSerialExecutionQueue


def _any_holder(self: Any) -> bool:
    return self._core.current is not None


async def _ignores_yielded(self: Any) -> None:
    while self._core.current is not None:
        await asyncio.shield(self._core.current)


_BUGS = {"is_current_any_holder": ("is_current", _any_holder),
         "quiescence_ignores_yielded": ("await_quiescence", _ignores_yielded)}
_name, _patch = _BUGS[os.environ["ZLINK_QUEUE_BUG"]]
setattr(ZLinkSerialExecutionQueue, _name, _patch)
