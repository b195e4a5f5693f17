"""Where the kit finds what it carries besides its code (the protocol, the guide, the
example adapters): under ``zlink_conformance/shipped/`` in a built kit (conformance/setup.py
puts it there), else, for an editable install, in the checkout the kit runs from, so the
two never differ. Also the kit's version, for ``--version``.
"""

from __future__ import annotations

import importlib.metadata
from importlib import resources
from pathlib import Path

__all__ = ["ShippedError", "kit_version", "shipped_file"]


class ShippedError(Exception):
    """A shipped text or example that this install does not hold, or a bad target."""


def kit_version() -> str:
    """The installed kit's version (``unknown`` when run from a bare source tree)."""
    try:
        return importlib.metadata.version("zlink-conformance")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _checkout() -> Path | None:
    """The checkout an editable kit runs from, if any."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "specs" / "adapter-protocol.md").is_file() else None


def shipped_file(relative: str, in_checkout: str) -> Path:
    """The shipped file or folder ``relative`` (under shipped/), else the checkout's
    ``in_checkout``; ShippedError when neither exists."""
    shipped = Path(str(resources.files("zlink_conformance"))) / "shipped" / relative
    if shipped.exists():
        return shipped
    root = _checkout()
    if root is not None and (root / in_checkout).exists():
        return root / in_checkout
    raise ShippedError(f"this install of the kit holds no {relative} (a wheel built without "
                       f"conformance/setup.py?)")
