"""The kit in one file: ``zlink-conformance.pyz``, a zipapp holding the conformance kit
and the protocol model (the kit's only dependency), for runtime teams that would rather
not manage a Python environment: ``python3 zlink-conformance.pyz run --adapter CMD`` on
any Python 3.11 or newer with nothing installed.

It is made from the two wheels ``./dev dist`` has just built, so it holds exactly what
``pip install zlink-conformance`` would. At start the archive unpacks its ``lib/`` into a
temporary folder (removed at exit) and imports from there: the kit reads its cases and
schemas as files, which a zip import would not give it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

# What the archive runs. It must parse on an old Python too, to say which one it needs.
_MAIN = '''\
"""zlink-conformance in one file: unpack the kit and the model, then run the kit."""
import os
import sys
import tempfile
import zipfile

if sys.version_info < (3, 11):
    sys.stderr.write("zlink-conformance.pyz needs Python 3.11 or newer, not %s\\n"
                     % sys.version.split()[0])
    sys.exit(2)


def main():
    archive = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix="zlink-conformance-") as unpacked:
        with zipfile.ZipFile(archive) as z:
            z.extractall(unpacked, [n for n in z.namelist() if n.startswith("lib/")])
        sys.path.insert(0, os.path.join(unpacked, "lib"))
        sys.dont_write_bytecode = True
        from zlink_conformance.cli import main as kit

        code = kit(sys.argv[1:])
    sys.exit(code)


main()
'''
_WHEELS = ("zlink_model", "zlink_conformance")


def build_pyz(wheels: Path, version: str, target: Path) -> Path:
    """Write ``target`` from the model's and the kit's wheels of ``version`` in ``wheels``."""
    with open(target, "wb") as fh:
        fh.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as out:
            out.writestr("__main__.py", _MAIN)
            for stem in _WHEELS:
                wheel = wheels / f"{stem}-{version}-py3-none-any.whl"
                with zipfile.ZipFile(wheel) as z:
                    for name in z.namelist():
                        # dist-info too: importlib.metadata gives the kit its --version.
                        out.writestr(f"lib/{name}", z.read(name))
    target.chmod(0o755)
    return target
