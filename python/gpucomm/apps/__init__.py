"""The application suite (docs/APPS.md): applications in several communication models, each checked
against a CPU reference. The programs are C++ (``gpucomm-apps``); this package reads their catalog,
checks the command line against it, launches the PEs and prints the results."""
