"""Build every distribution of the repository into one folder: ``./dev dist``.

For each of the five distributions, ``python -m build`` makes the sdist and then the wheel
*from that sdist* (build's default), so a wheel only comes out of an sdist that carries
what the wheel needs. Then ``twine check --strict`` reads every file's metadata, and the
kit's single-file zipapp (``zlink-conformance.pyz``: the kit and the model) is made from
the two wheels just built. It fails before building anything when the five versions
differ: one repository, one version.

With ``--compiled``, also wheels of zlink-model and zlink-reference compiled by mypyc for
this interpreter and platform, beside the pure ones (which stay the reference).

Usage: python scripts/dist.py [--out DIR] [--no-pyz] [--compiled]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from compiled_build import compile_copy, compiled_wheels  # scripts/, this script's folder
from pyz import build_pyz

ROOT = Path(__file__).resolve().parent.parent
# Source folder of each distribution, in dependency order.
FOLDERS = ("model", "reference", "conformance", "conformance/examples/python", "tool")


class DistError(Exception):
    """A build that cannot give a whole, consistent set of files."""


def versions(root: Path = ROOT) -> dict[str, str]:
    """Distribution name -> version, from each folder's pyproject.toml."""
    found = {}
    for folder in FOLDERS:
        with open(root / folder / "pyproject.toml", "rb") as fh:
            project = tomllib.load(fh)["project"]
        found[project["name"]] = project["version"]
    return found


def the_version(root: Path = ROOT) -> str:
    """The one version of the five distributions; DistError naming them when they differ."""
    found = versions(root)
    if len(set(found.values())) != 1:
        listed = ", ".join(f"{name} {version}" for name, version in found.items())
        raise DistError(f"the five distributions must share one version, found: {listed}")
    return next(iter(found.values()))


def expected_files(version: str, root: Path = ROOT) -> list[str]:
    """The sdist and wheel file names the build must leave in the output folder."""
    names = []
    for name in versions(root):
        stem = f"{name.replace('-', '_')}-{version}"
        names += [f"{stem}.tar.gz", f"{stem}-py3-none-any.whl"]
    return names


def _run(step: str, argv: list[str], log: list[str]) -> None:
    started = time.monotonic()
    print(f"[dist] {step} ...", end="", flush=True)
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    log.append(result.stdout + result.stderr)
    if result.returncode != 0:
        print(" FAILED")
        raise DistError(f"{step} failed ({' '.join(argv)}):\n"
                        f"{(result.stdout + result.stderr).strip()}")
    print(f" ok ({time.monotonic() - started:.1f} s)")


def build(out: Path, *, pyz: bool = True) -> list[Path]:
    """Build the sdists, the wheels from them, check them, and (unless ``pyz`` is false)
    the kit's zipapp, into ``out``; the paths written."""
    version = the_version()
    out.mkdir(parents=True, exist_ok=True)
    wanted = expected_files(version)
    # Files of an earlier build (another version) would be checked and published too.
    for old in out.iterdir():
        if old.name.startswith("zlink") and old.suffix in (".whl", ".gz", ".pyz"):
            old.unlink()
    log: list[str] = []
    for folder in FOLDERS:
        # --no-isolation: the development environment holds the build backend the
        # pyprojects ask for (requirements-dev.txt), so no download is needed.
        _run(f"sdist and wheel of {folder}/",
             [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
              str(ROOT / folder)], log)
    missing = [name for name in wanted if not (out / name).is_file()]
    if missing:
        raise DistError(f"the build left no {', '.join(missing)} in {out}")
    files = [out / name for name in wanted]
    _run("twine check --strict",
         [sys.executable, "-m", "twine", "check", "--strict", *map(str, files)], log)
    if pyz:
        started = time.monotonic()
        print("[dist] zlink-conformance.pyz ...", end="", flush=True)
        target = build_pyz(out, version, out / "zlink-conformance.pyz")
        print(f" ok ({time.monotonic() - started:.1f} s)")
        files.append(target)
    return files


def compiled(out: Path) -> list[Path]:
    """The compiled wheels of zlink-model and zlink-reference, made from the pure ones in
    ``out`` and a compiled build in a temporary folder; the paths written."""
    started = time.monotonic()
    print("[dist] compiled wheels (mypyc) ...", end="", flush=True)
    with tempfile.TemporaryDirectory(prefix="zlink-compiled-") as tmp:
        if compile_copy(Path(tmp) / "build") != 0:
            print(" FAILED")
            raise DistError("the compiled build failed (its log is above)")
        made = compiled_wheels(Path(tmp) / "build", out)
    print(f" ok ({time.monotonic() - started:.1f} s)")
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="./dev dist", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "dist", metavar="DIR",
                        help="where the files go (default: dist/ of the checkout)")
    parser.add_argument("--no-pyz", action="store_true",
                        help="leave out the kit's zipapp")
    parser.add_argument("--compiled", action="store_true",
                        help="also wheels of zlink-model and zlink-reference compiled by mypyc "
                             "for this interpreter and platform, beside the pure ones "
                             "(scripts/compiled_build.py; pip prefers them where they fit)")
    args = parser.parse_args(argv)
    try:
        files = build(args.out.resolve(), pyz=not args.no_pyz)
        if args.compiled:
            files += compiled(args.out.resolve())
    except DistError as exc:
        print(f"dist: {exc}", file=sys.stderr)
        return 1
    print(f"[dist] {len(files)} files in {args.out}:")
    for path in files:
        print(f"  {path.name}  ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
