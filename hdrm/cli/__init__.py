"""Command-line layer (L5): the only place, with :mod:`hdrm.launcher`, that prints and exits."""
