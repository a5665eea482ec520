#!/usr/bin/python3
"""Compares two .npy arrays: prints {"rel_l2": ||a-b|| / ||b||, "max_abs_diff": ...} as one JSON line.

B is the reference. usage: bench/ort/compare_npy.py A.npy B.npy
Exit 1 on a shape mismatch or an unreadable file.
"""
import json
import sys

import numpy as np


def main():
    if len(sys.argv) != 3:
        print("usage: compare_npy.py A.npy B.npy", file=sys.stderr)
        return 2
    try:
        a = np.load(sys.argv[1], allow_pickle=False)
        b = np.load(sys.argv[2], allow_pickle=False)
    except (OSError, ValueError) as err:
        print(f"compare_npy: cannot read input: {err}", file=sys.stderr)
        return 1
    if a.shape != b.shape:
        print(f"compare_npy: shape mismatch: {sys.argv[1]} is {a.shape}, {sys.argv[2]} is {b.shape}",
              file=sys.stderr)
        return 1
    # Accumulate in float64 so the comparison itself adds no float32 rounding.
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    diff = np.linalg.norm((a - b).ravel())
    ref = np.linalg.norm(b.ravel())
    rel = diff / ref if ref > 0 else (0.0 if diff == 0 else float("inf"))
    max_abs = float(np.max(np.abs(a - b))) if a.size else 0.0
    print(json.dumps({"a": sys.argv[1], "b": sys.argv[2], "shape": list(a.shape),
                      "rel_l2": float(rel), "max_abs_diff": max_abs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
