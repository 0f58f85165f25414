"""Benchmark targets of ``gpucomm bench``: one module each, defining ``register(subparsers)``."""
