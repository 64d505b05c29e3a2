#!/usr/bin/env python3
"""python_compile.py MODEL OUTPUT ADAPTER SCALE: compiles MODEL to the
executable OUTPUT through the Python package's compile(), with ADAPTER
merged at SCALE (lora=[(ADAPTER, SCALE)])."""
import sys

import tfmc

model, output, adapter, scale = sys.argv[1:5]
tfmc.compile(model, output, emit="exe", progress=False,
             lora=[(adapter, float(scale))])
