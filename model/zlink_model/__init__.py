"""The pure protocol core: every rule of the serial executor, with no asyncio, no clock
reads and no threads. Shells drive it; checkers (Hypothesis, CrossHair, z3, the model
replay and the state-space enumeration) read it. See ``queue.py`` for the theory of
operation."""
