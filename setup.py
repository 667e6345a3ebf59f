"""ovpool's compiled kernels (ovpool/engine/native/_compiled.c): the depthwise Conv tap loop and
chains of element-wise nodes.

It is optional: where no C compiler is found the build goes on without it, and the numpy
executor runs the same operations in numpy (the same results, bit for bit, more slowly). The rest of
the project's metadata is in pyproject.toml.
"""

import sys

from setuptools import Extension, setup

# No fused multiply-add: numpy rounds the product and the sum separately (see _compiled.c).
flags = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off", "-fno-math-errno"]

setup(
    ext_modules=[
        Extension("ovpool.engine.native._compiled", ["ovpool/engine/native/_compiled.c"], extra_compile_args=flags, optional=True)
    ]
)
