"""Checking one run against another: ``compare`` (a device against the numpy reference, per layer:
its rooms are ``sides`` (the device and the reference, opened), ``tolerance`` (one tensor against
its reference, ``Difference``), ``taps`` (per-layer values from OpenVINO), ``layers`` (the
per-layer walk) and ``report`` (``Comparison``, its text and JSON); ``compare`` holds ``compare()``
and every name those had from it), ``plot`` (compare's picture), ``verify`` (a converted model
against its source) and ``bench``."""
