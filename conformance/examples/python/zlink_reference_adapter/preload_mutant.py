"""A preload file (``ZLINK_ADAPTER_PRELOAD``) that switches on the mutant named by
``ZLINK_MUTANT_NAME`` from the catalogue in ``mutants.py`` (or ``explore_mutants.py``)."""

import os

from zlink_reference_adapter import explore_mutants, mutants

name = os.environ["ZLINK_MUTANT_NAME"]
if name in explore_mutants.CATALOGUE:  # the mutants only explore kills
    explore_mutants.apply(name)
else:
    mutants.apply(name)
