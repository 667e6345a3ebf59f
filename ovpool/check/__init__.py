"""Checking one run against another: ``compare`` (a device against the numpy reference, per layer),
``plot`` (compare's picture), ``verify`` (a converted model against its source) and ``bench``."""
