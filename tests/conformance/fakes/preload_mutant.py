"""A preload file that switches on one mutant of tests/mutants.py (ZLINK_MUTANT_NAME)."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import mutants

mutants.apply(os.environ["ZLINK_MUTANT_NAME"])
