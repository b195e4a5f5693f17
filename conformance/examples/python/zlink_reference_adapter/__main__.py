"""``python -m zlink_reference_adapter``: serve the protocol on stdin/stdout."""

import sys

from .adapter import main

sys.exit(main())
