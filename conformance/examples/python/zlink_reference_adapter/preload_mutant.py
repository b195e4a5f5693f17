"""A preload file (``ZLINK_ADAPTER_PRELOAD``) that switches on the mutant named by
``ZLINK_MUTANT_NAME`` from the catalogue in ``mutants.py``."""

import os

from zlink_reference_adapter import mutants

mutants.apply(os.environ["ZLINK_MUTANT_NAME"])
