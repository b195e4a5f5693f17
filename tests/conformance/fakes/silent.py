"""An adapter that reads its commands and never answers."""

import sys
import time

sys.stderr.write("silent fake: reading, never answering\n")
sys.stderr.flush()
sys.stdin.readline()
time.sleep(600)
