"""Shells: the only code that imports asyncio. They drive the core and decide nothing."""
