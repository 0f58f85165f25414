"""Starting local PEs: ``gpucomm run``."""
from .launcher import LaunchOptions, launch

__all__ = ["LaunchOptions", "launch"]
