"""The OpenVINO IR world, without OpenVINO: layer templates as typed values (``templates``),
layers <-> PoolSpec (``adapter``), the safe reader (``reader``), the writer (``writer``), IR -> ONNX
(``to_onnx``), ``ovpool validate`` (``validation``) and its reports (``report``).
"""
