"""The optional C kernels (``_compiled.c``, built by setup.py where a C compiler is found) and their
Python face ``compiled``: without them the engine computes the same values in numpy."""
