"""Trace toolkit helpers for ``gpucomm trace``: running the C++ analyser, rendering its report,
plots, queue-snapshot files and the deep-learning communication model of ``gpucomm trace
dnn-model``. Metric definitions: docs/TRACES.md."""
from __future__ import annotations
