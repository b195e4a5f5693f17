"""``zlink-conformance init --lang java|node|python DIR``: a starter adapter to fill in.

Each starter answers the handshake, ``reset``, ``settle`` and ``shutdown``, handles JSON
with the language's own library (Python's ``json``, Node's ``JSON``; the JDK has none, so
the Java starter carries the small reader and writer of the Java example), and wires one
owner kind, the bare serial queue (capability ``queue``), to a stub class whose methods
refuse. Run as written, the suite accepts its handshake and reports every case it runs
as refused (``unsupported``): the author replaces the stub's bodies with the runtime's
calls. The templates live under ``starters/`` beside this module.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from .bundled import shipped_file
from .helptext import plain

__all__ = ["LANGUAGES", "StarterError", "add_init_action", "write_starter"]

# Language -> (template -> file written, how to run it from DIR).
LANGUAGES: dict[str, tuple[dict[str, str], str]] = {
    "python": ({"adapter.py.tmpl": "adapter.py"}, "python3 adapter.py"),
    "node": ({"adapter.js.tmpl": "adapter.js"}, "node adapter.js"),
    "java": ({"Adapter.java.tmpl": "src/adapter/Adapter.java",
              "MyRuntime.java.tmpl": "src/adapter/MyRuntime.java",
              "run.sh.tmpl": "run.sh"}, "sh run.sh"),
}
# The Java example's JSON code, in the starter's package.
_JAVA_JSON = ("examples/java/src/zlink/adapter/Json.java",
              "conformance/examples/java/src/zlink/adapter/Json.java")


class StarterError(Exception):
    """An unknown language, or a target folder that is not new or empty."""


def write_starter(language: str, target: Path) -> list[Path]:
    """Write the ``language`` starter into ``target`` (new or empty); the files written."""
    if language not in LANGUAGES:
        raise StarterError(f"no starter for {language!r}; choose one of "
                           f"{', '.join(sorted(LANGUAGES))}")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise StarterError(f"{target} exists and is not an empty folder; choose a new one")
    templates = resources.files("zlink_conformance") / "starters" / language
    files: dict[Path, str] = {}
    for template, name in LANGUAGES[language][0].items():
        files[target / name] = (templates / template).read_text(encoding="utf-8")
    if language == "java":
        json_code = shipped_file(*_JAVA_JSON).read_text(encoding="utf-8")
        files[target / "src" / "adapter" / "Json.java"] = json_code.replace(
            "package zlink.adapter;", "package adapter;", 1)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return sorted(files)


def _init(args: argparse.Namespace) -> int:
    prog = args.conformance_host.prog
    target = Path(args.dir)
    try:
        written = write_starter(args.lang, target)
    except StarterError as exc:
        print(f"{prog} init: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    print(f"run the suite against it (every case is refused until MyRuntime is filled in):\n"
          f"  cd {target} && {prog} run --adapter \"{LANGUAGES[args.lang][1]}\"")
    return 0


_INIT_DOC = """Write a starter adapter to fill in: the handshake, the command loop, JSON, and
    the bare serial queue wired to a stub class (MyRuntime) whose methods refuse.

      {prog} init --lang python my-adapter     adapter.py
      {prog} init --lang node my-adapter       adapter.js
      {prog} init --lang java my-adapter       src/adapter/*.java and run.sh (JDK only)

    Run as written, the suite accepts the handshake and reports every case it runs as
    refused (unsupported); replace MyRuntime's bodies with your runtime's calls. Exit
    status 0; 2 for an unknown language or a folder that is not new or empty.
    """


def add_init_action(sub: Any, prog: str) -> None:
    """Register ``init`` on the kit's subparsers."""
    init_p = sub.add_parser("init", help="write a starter adapter to fill in (java, node, "
                                                "python)",
                            description=plain(_INIT_DOC, prog),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    init_p.add_argument("--lang", required=True, choices=sorted(LANGUAGES),
                        help="the adapter's language")
    init_p.add_argument("dir", metavar="DIR", help="a new or empty folder to write it into")
    init_p.set_defaults(conformance_handler=_init)
