"""ovpool's numpy engine: the exact executor of ONNX graphs and OpenVINO IR documents.

Modules: ``ops`` (the operator library, registered by (domain, op, version range)), ``ir_layers``
(IR layer types onto the same kernels with OpenVINO's meaning), ``graph`` (the ONNX session),
``ir_executor`` (the IR session), ``budget`` (working memory of a plan), ``fusion``, ``inplace``,
``chains`` and ``shapevalues`` (rewrites of a plan), ``blas`` and ``memo`` (helpers of the kernels),
``native`` (the optional C kernels).
"""
