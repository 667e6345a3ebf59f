"""ovpool's own numpy operators for the executor, one module per operator family.

Each module registers its operator versions with :func:`ovpool.engine.ops.base.register`;
:func:`ovpool.engine.ops.base.lookup` finds the one for a node's schema version.
"""
