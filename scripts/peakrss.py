#!/usr/bin/env python3
"""peakrss.py CMD ARGS...: runs CMD and prints its wall time and the peak
resident set size of it and its children, for machines without GNU time
(the GPU machines of scripts/gpu-check.sh). Exits with CMD's status."""
import resource
import subprocess
import sys
import time

start = time.monotonic()
status = subprocess.run(sys.argv[1:]).returncode
peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"peakrss: wall {time.monotonic() - start:.2f} s, peak RSS {peak_mib:.0f} MiB, exit {status}", file=sys.stderr)
sys.exit(status)
