"""The ``zlink`` command line."""
