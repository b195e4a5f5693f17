"""An adapter that never reads its stdin, yet answers: it watches how many bytes wait in
its stdin pipe (FIONREAD) and writes the next reply whenever more have come, so the
runner's commands pile up in a pipe nobody drains (made one page small where the system
allows). A runner whose writes are not bounded blocks on that pipe forever.
FAKE_PIDS: a file to append the pid to."""

import fcntl
import os
import struct
import sys
import termios
import time

pids = os.environ.get("FAKE_PIDS")
if pids:
    with open(pids, "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
try:
    fcntl.fcntl(0, fcntl.F_SETPIPE_SZ, 4096)
except (AttributeError, OSError):
    pass


def pending() -> int:
    return int(struct.unpack("i", fcntl.ioctl(0, termios.FIONREAD, b"\0\0\0\0"))[0])


out = sys.stdout.buffer
seen, ident = 0, 0
while True:
    now = pending()
    if now <= seen:
        time.sleep(0.001)
        continue
    seen = now
    if ident == 0:
        out.write(b'{"re":0,"ok":true,"protocol":1,"runtime":{"name":"blind"},"capabilities":'
                  b'["actor","spot.user.per_actor","spot.user.spot_wide","session"]}\n')
    else:
        out.write(b'{"re":%d,"ok":true,"verdict":"accepted","now_ms":0}\n' % ident)
    out.flush()
    ident += 1
