"""IR layer templates: data files, one per layer type and version (installed as ``ovpool.ir_templates``)."""
