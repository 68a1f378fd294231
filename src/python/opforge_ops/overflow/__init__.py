"""opforge_ops.overflow: fused inf/nan/underflow/overflow statistics and a drop-in
DebugUnderflowOverflow. Importing this module imports neither torch nor numpy."""
from ._install import install, installed, uninstall
from ._lib import OverflowLibError
from ._stats import TensorStats, stats_many, tensor_stats
from .debug import EMPTY_LABEL, NO_STORAGE_LABEL, DebugUnderflowOverflow, detect_overflow
from .selftest import selftest

__all__ = ["DebugUnderflowOverflow", "detect_overflow", "tensor_stats", "stats_many", "TensorStats",
           "selftest", "OverflowLibError", "EMPTY_LABEL", "NO_STORAGE_LABEL", "install", "uninstall",
           "installed"]
