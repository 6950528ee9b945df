"""Layer 4: the ``ringtool`` command line."""
