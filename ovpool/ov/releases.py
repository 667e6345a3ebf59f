"""``ovpool.ov.releases`` is ``ovpool.ir.releases`` (moved in 0.2.0: which IR opsets each OpenVINO
release reads is a table of the IR world, read by ``ovpool.ir.validation`` too); this name stays."""

import sys

from ovpool.ir import releases

sys.modules[__name__] = releases
