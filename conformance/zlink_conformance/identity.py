"""Which suite ran: the kit's version, the protocol's version and the case set's digest.

A team that pins the kit in CI needs to tell, from any report, which cases its green run
covered. Every report (console header, JSON, JUnit properties, HTML) therefore carries
a ``SuiteIdentity``: the kit version (the installed distribution's), the protocol
version of ``specs/adapter-protocol.md``, and a digest over the case files the run was
given with their count. The digest is sha256 over the sorted lines ``<case id> <content
digest>``, each content digest the sha256 of the case's canonical JSON
(``catalog.content_digest``): the same selection of the same cases gives the same
digest on every machine, whatever the files' layout, and any change to what a case says,
any case added or left out, changes it.

The kit's released case sets are recorded in ``cases/releases.json`` (case ID ->
content digest, per version), so ``cases --changes-since VERSION`` can say which cases
were added, changed or retired since (``changes_since``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from .catalog import Case, CaseError, Catalogue
from .protocol.wire import PROTOCOL_VERSION

__all__ = ["KIT_VERSION", "Changes", "SuiteIdentity", "changes_since", "identify",
           "load_releases"]


def _kit_version() -> str:
    try:
        return metadata.version("zlink-conformance")
    except metadata.PackageNotFoundError:  # run from a source tree without installing
        return "unknown"


KIT_VERSION: Final = _kit_version()
RELEASES_FILE: Final = "releases.json"


@dataclasses.dataclass(frozen=True, slots=True)
class SuiteIdentity:
    """The kit and protocol versions and the digest of the case set a run was given."""

    kit: str
    protocol: int
    digest: str  # "sha256:<hex>"
    count: int

    def line(self) -> str:
        """``zlink-conformance 0.2.0; protocol 1; case set sha256:1f2e3d4c5b6a (87 cases)``:
        the digest cut to 12 hex digits for reading (the reports carry it whole)."""
        return (f"zlink-conformance {self.kit}; protocol {self.protocol}; case set "
                f"{self.digest[:19]} ({self.count} case{'s' if self.count != 1 else ''})")

    def to_json(self) -> dict[str, Any]:
        """Plain data for the JSON report."""
        return {"kit_version": self.kit, "protocol_version": self.protocol,
                "case_set_digest": self.digest, "case_count": self.count}


def identify(cases: Iterable[Case]) -> SuiteIdentity:
    """The identity of a run over ``cases``."""
    items = sorted((c.id, c.digest) for c in cases)
    text = "".join(f"{case_id} {digest}\n" for case_id, digest in items)
    return SuiteIdentity(KIT_VERSION, PROTOCOL_VERSION,
                         "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
                         len(items))


def load_releases(directory: Path) -> dict[str, dict[str, str]]:
    """Version -> {case ID: content digest} from ``releases.json`` in ``directory``
    (empty when there is none)."""
    path = directory / RELEASES_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CaseError(f"{path}: cannot read the released case sets: {exc}") from None
    releases = data.get("releases") if isinstance(data, dict) else None
    if not isinstance(releases, dict) or not all(
            isinstance(v, dict) and all(isinstance(d, str) for d in v.values())
            for v in releases.values()):
        raise CaseError(f'{path}: expected {{"releases": {{VERSION: {{CASE ID: DIGEST}}}}}}')
    return {str(k): dict(v) for k, v in releases.items()}


@dataclasses.dataclass(frozen=True, slots=True)
class Changes:
    """How the case set changed since a released version."""

    since: str
    added: tuple[str, ...]
    changed: tuple[str, ...]
    retired: tuple[tuple[str, str], ...]  # (case ID, why, as retired.json says, or "")

    def lines(self) -> list[str]:
        """The report of ``cases --changes-since``."""
        out = [f"changes since {self.since}: {len(self.added)} added, {len(self.changed)} "
               f"changed, {len(self.retired)} retired"]
        for title, ids in (("added", self.added), ("changed", self.changed)):
            out += [f"  {title:8s} {case_id}" for case_id in ids]
        out += [f"  retired  {case_id}" + (f" ({why})" if why else "")
                for case_id, why in self.retired]
        return out


def changes_since(version: str, catalogue: Catalogue,
                  releases: Mapping[str, Mapping[str, str]]) -> Changes:
    """Cases added, changed (by content digest) and retired since ``version`` (a
    ``KeyError`` naming the versions recorded when it is not one of them)."""
    if version not in releases:
        raise KeyError(version)
    old = releases[version]
    now = {c.id: c.digest for c in catalogue.cases}
    return Changes(
        since=version,
        added=tuple(sorted(i for i in now if i not in old)),
        changed=tuple(sorted(i for i in now if i in old and old[i] != now[i])),
        retired=tuple(sorted((i, catalogue.retired.get(i, "")) for i in old if i not in now)))
