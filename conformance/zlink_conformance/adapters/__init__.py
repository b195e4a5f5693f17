"""Adapters shipped with the kit: the reference adapter over zlink_reference."""
