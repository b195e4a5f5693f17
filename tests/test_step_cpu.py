"""``zlink verify`` reports each step's CPU time (user + system) beside its wall time: on
a machine shared with other work the wall time mostly says how long the step waited for
a core. The CPU time counts the step's process and every process it waited for (pytest's
workers, TLC's JVMs, adapters), as ``wait4`` reports it."""

from __future__ import annotations

import sys
from pathlib import Path

from zlink_tool.steprun import run_counting_cpu

# Spend at least 0.3 s of CPU in this process (CPU time, so the machine's load does not
# change the figure), then print a word on stdout and one on stderr.
_BUSY = ("import sys, time\n"
         "while time.process_time() < 0.3:\n"
         "    pass\n"
         "print('out'); print('err', file=sys.stderr)\n")


def test_the_cpu_time_of_a_step_counts_the_processes_it_waited_for(tmp_path: Path) -> None:
    # The busy process is a grandchild: the step's process starts it and waits.
    child = ("import subprocess, sys\n"
             f"sys.exit(subprocess.run([sys.executable, '-c', {_BUSY!r}]).returncode + 3)")
    code, output, cpu = run_counting_cpu([sys.executable, "-c", child], tmp_path, {})
    assert code == 3
    assert output.split() == ["out", "err"]
    assert cpu >= 0.3, f"{cpu:.2f} s of CPU reported for a step that spent at least 0.3 s"
