"""An adapter that answers hello with an error (it speaks another protocol version)."""

import json
import sys

line = json.loads(sys.stdin.readline())
reply = {"re": line["id"], "ok": False,
         "error": {"kind": "unsupported", "message": "this adapter speaks protocol 7"}}
sys.stdout.write(json.dumps(reply) + "\n")
sys.stdout.flush()
