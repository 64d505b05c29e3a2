#!/usr/bin/env python3
"""compile_lora_slots.py MODEL OUTPUT: compiles MODEL to the library
OUTPUT through the Python package's compile() with 4 run-time adapter
slots of rank 8 (lora_slots=4, lora_rank=8)."""
import sys

import tfmc

tfmc.compile(sys.argv[1], sys.argv[2], progress=False, lora_slots=4,
             lora_rank=8)
