"""Graph passes over ONNX models with trt-scatter's ops, one module each: a plain function for
Python users and a polygraphy loader (a ``BaseLoader`` that composes with ``OnnxFromPath``).

- :mod:`.rewrite`: the scatter patterns PyTorch's exporters write -> ``trt_scatter`` nodes.
"""
