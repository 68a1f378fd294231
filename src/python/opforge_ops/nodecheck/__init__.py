"""``python -m opforge_ops.nodecheck``: is this cluster ready? Every rank loads the prebuilt ops,
every GPU computes, every process can talk — checked in one run, under deadlines. See
docs/nodecheck.md. Importing this package imports no torch (each rank imports it when it runs).
"""
from .cli import main

__all__ = ['main']
