"""Captures the golden reports from transformers' own DebugUnderflowOverflow.
usage: /usr/bin/python3 capture_golden.py TRANSFORMERS_SITE   (e.g. a pip --target folder)"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.append(sys.argv[1])  # appended: Debian's numpy/torch stay first
sys.path.insert(0, os.path.join(here, "..", "..", "python"))

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers.debug_utils import DebugUnderflowOverflow  # noqa: E402

import overflow_models  # noqa: E402

for name in overflow_models.SCENARIOS:
    with open(os.path.join(here, name + ".txt"), "w") as f:
        f.write(overflow_models.run(DebugUnderflowOverflow, name))
with open(os.path.join(here, "VERSIONS.txt"), "w") as f:
    f.write(f"transformers {transformers.__version__}\ntorch {torch.__version__}\n"
            f"python {sys.version.split()[0]}\n")
print("captured", len(overflow_models.SCENARIOS), "scenarios")
