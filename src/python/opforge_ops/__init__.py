"""Prebuilt DeepSpeed-style ops, packaged by opforge.

Importing this package loads no native library and imports neither torch nor numpy: each op
module loads its own library (``opforge_ops._native.load``) and imports torch lazily. Every error
about an op library is an :class:`OpError`.
"""
from ._native import OpError, OpLoadError, OpNotBuiltError, OpUnavailableError, available_ops, load
from .build_info import BUILD_INFO as build_info

__version__: str = str(build_info.get('version', '0+unknown'))

__all__ = ['OpError', 'OpLoadError', 'OpNotBuiltError', 'OpUnavailableError', 'available_ops',
           'build_info', 'load', '__version__']
