"""The ``ovpool`` command line (installed as ``ovpool.cli``)."""
