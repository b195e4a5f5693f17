"""The ``zlink`` tool: the checks a spec author and CI run over the models, the specs,
policies, traces and runtimes (``zlink --help``).

It sits on top of every other package (model, reference runtime, kit, reference
adapter) and nothing imports it.
"""

from typing import Final

# The name the tool is published under: the bare name ``zlink`` on the package index
# belongs to an unrelated project. The command it installs is still ``zlink``.
DISTRIBUTION: Final = "zlink-tool"
