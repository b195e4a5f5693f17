"""A preload file: proves the adapter ran it before the handshake."""

import sys

sys.stderr.write("preload ran\n")
sys.stderr.flush()
