"""Which IR operation sets each OpenVINO release reads: the table behind ``--target-openvino``.

An IR layer names the opset its version comes from (``version="opset14"``); a release reads the
layers of its newest opset and every older one, and refuses a newer one ("Cannot create MaxPool
layer pool1 id:4 from unsupported opset: opset14" on 2023.3). The newest opset of each release,
from OpenVINO's "Available Operation Sets" table (2023.0 to 2024.5) and measured by reading an
IR with a Relu of each ``opsetN`` on the wheels of 2023.0, 2023.1, 2023.2, 2023.3, 2024.0, 2024.4, 2024.5,
2024.6, 2025.0, 2025.1, 2025.2, 2025.3, 2025.4, 2026.0 and 2026.4 (2024.4 reads opset14, 2025.4
opset15; ``tests/ops/test_target_openvino_releases.py`` measures each release it is given again):

=========  ======
release    opset
=========  ======
2023.0     11
2023.1     12
2023.2     13
2024.0     14
2024.5     15
2026.0     16
=========  ======

A release is ``YEAR.N`` or ``YEAR.N.PATCH`` (the patch does not change the opsets):
``newest_opset("2023.3") == 13``, ``newest_opset("2025.4") == 15``. A release past the table's
last row reads at least that row's opset.
"""

from __future__ import annotations

import re

from ovpool.errors import UsageError

Release = tuple[int, int]

# (first release, its newest opset), in release order: every release from that one up to the
# next row reads up to that opset.
NEWEST_OPSET: tuple[tuple[Release, int], ...] = (
    ((2023, 0), 11),
    ((2023, 1), 12),
    ((2023, 2), 13),
    ((2024, 0), 14),
    ((2024, 5), 15),
    ((2026, 0), 16),
)

OLDEST = NEWEST_OPSET[0][0]
# (layer type, opset) of the layers ``ovpool convert --target-openvino`` writes in an exact older
# form for a release that lacks their opset (``ovpool.ov.backport.OLDER_FORMS`` holds how), with what
# that form needs that an IR's XML does not show ("" for nothing; ``ovpool validate`` says it). A
# dilated AvgPool-16's static spatial dims are in the XML, and validate checks them.
OLDER_FORM_NEEDS: dict[tuple[str, int], str] = {
    ("MaxPool", 14): "",
    ("AvgPool", 14): "",
    ("AvgPool", 16): "",
    ("Identity", 16): "",
    ("Pad", 12): "constant pads of at least 0",
    ("OneHot", 16): "",
}
_RELEASE = re.compile(r"([0-9]{4})\.([0-9]{1,3})(?:\.[0-9]{1,3})?")


def parse(text: str, build: bool = False) -> Release:
    """``"2023.3"`` -> ``(2023, 3)``; ``"2024.6.0"`` -> ``(2024, 6)``; with ``build``, an OpenVINO
    version string such as ``"2026.4.1-22982-e213a147257-releases/2026/4"`` reads as its leading
    release. Anything else (``"2023.3x"``), or a release before 2023.0, is a ``UsageError`` naming
    ``--target-openvino``."""
    match = _RELEASE.match(text) if build else _RELEASE.fullmatch(text)
    if match is None:
        raise UsageError(f"--target-openvino {text}: expected an OpenVINO release such as 2023.3 or 2024.6")
    release = (int(match.group(1)), int(match.group(2)))
    if release < OLDEST:
        raise UsageError(f"--target-openvino {text}: ovpool knows the OpenVINO releases from {shown(OLDEST)} on")
    return release


def shown(release: Release) -> str:
    """``(2023, 3)`` -> ``"2023.3"``."""
    return f"{release[0]}.{release[1]}"


def newest_opset(release: Release | str) -> int:
    """The newest IR opset ``release`` reads: 2023.3 -> 13, 2024.0 -> 14, 2024.6 -> 15."""
    wanted = parse(release) if isinstance(release, str) else release
    return max(opset for first, opset in NEWEST_OPSET if first <= wanted)


def installed() -> Release:
    """The installed OpenVINO's release: ``(2026, 4)`` for openvino 2026.4.1."""
    import openvino

    return parse(openvino.get_version(), build=True)


def opset_number(version: str) -> int | None:
    """The opset number of an IR layer version: ``"opset14"`` -> 14; None for a version that is
    not a numbered opset (an extension's, or ``"experimental"``)."""
    match = re.fullmatch(r"opset(\d+)", version)
    return int(match.group(1)) if match else None
