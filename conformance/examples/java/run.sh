#!/bin/sh
# Build the Java example (JDK only, no other dependency) unless a build of exactly these
# sources exists, then run its conformance adapter on this process's stdin and stdout.
#
#   zlink conformance run --adapter "sh conformance/examples/java/run.sh"
#
# Builds go to build/ next to this script (gitignored), one directory per version of the
# sources, named by a checksum of their names and contents. A build is compiled in a
# fresh directory and renamed into place in one step, and a directory in use is never
# renamed or deleted, so adapters starting at once (a test run, a second terminal) never
# see half a build. Delete build/ whenever no adapter runs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build="$here/build"
sources=$(cd "$here" && find src -name '*.java' | LC_ALL=C sort)
sum=$( (cd "$here" && echo "$sources" && cat $sources) | cksum | tr ' ' '-')
classes="$build/classes-$sum"

if [ ! -d "$classes" ]; then
    mkdir -p "$build"
    fresh=$(mktemp -d "$build/tmp.XXXXXX")
    # -parameters keeps the parameter names: the handshake reads the entry points'
    # signatures by reflection (SE-10.1). javac's messages go to stderr, the adapter's log.
    if ! (cd "$here" && javac -encoding UTF-8 -parameters -d "$fresh" $sources) 1>&2; then
        rm -rf "$fresh"
        echo "[java-adapter] javac failed" >&2
        exit 3
    fi
    # Another adapter may have finished the same build first: then use that one. (Should
    # it finish between the test and the rename, this copy lands inside that build, off
    # the class path, and is harmless.)
    if [ -d "$classes" ] || ! mv "$fresh" "$classes" 2>/dev/null; then rm -rf "$fresh"; fi
fi
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$classes" zlink.adapter.Adapter
