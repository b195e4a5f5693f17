#!/bin/sh
# Build the Java example (JDK only, no other dependency) if a source is newer than the
# last build, then run its conformance adapter on this process's stdin and stdout.
#
#   zlink conformance run --adapter "sh conformance/examples/java/run.sh"
#
# The classes go to build/ next to this script (gitignored). A build is made in a fresh
# directory and moved into place, so two runs starting at once never see half a build.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build="$here/build"
classes="$build/classes"
stamp="$build/classes.stamp"

stale=yes
if [ -f "$stamp" ] && [ -z "$(find "$here/src" -name '*.java' -newer "$stamp" | head -n 1)" ]; then
    stale=no
fi
if [ "$stale" = yes ]; then
    mkdir -p "$build"
    fresh=$(mktemp -d "$build/classes.XXXXXX")
    # -parameters keeps the parameter names: the handshake reads the entry points'
    # signatures by reflection (SE-10.1). javac's messages go to stderr, the adapter's log.
    find "$here/src" -name '*.java' > "$fresh.list"
    if ! javac -encoding UTF-8 -parameters -d "$fresh" "@$fresh.list" 1>&2; then
        rm -rf "$fresh" "$fresh.list"
        echo "[java-adapter] javac failed" >&2
        exit 3
    fi
    rm -f "$fresh.list"
    touch "$fresh.stamp"
    rm -rf "$classes.old"
    if [ -d "$classes" ]; then mv "$classes" "$classes.old"; fi
    mv "$fresh" "$classes"
    mv "$fresh.stamp" "$stamp"
    rm -rf "$classes.old"
fi
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss4m -cp "$classes" zlink.adapter.Adapter
