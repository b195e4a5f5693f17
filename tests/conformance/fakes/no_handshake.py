"""An adapter that starts talking before it was greeted: its first line is an event."""

import sys

sys.stdout.write('{"event":"started","work":"a","owner":"S"}\n')
sys.stdout.flush()
for _line in sys.stdin:
    pass
