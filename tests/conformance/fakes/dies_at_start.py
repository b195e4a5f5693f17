"""An adapter that fails before the handshake."""

import sys

sys.stderr.write("dies_at_start fake: cannot find my runtime\n")
sys.exit(1)
