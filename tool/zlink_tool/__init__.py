"""The ``zlink`` tool: the checks a spec author and CI run over the models, the specs,
policies, traces and runtimes (``zlink --help``).

It sits on top of every other package (model, reference runtime, kit, reference
adapter) and nothing imports it.
"""
