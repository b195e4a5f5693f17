"""A preload file that fails."""

raise RuntimeError("this preload is broken on purpose")
