#!/usr/bin/env bash
# A plan with one kernel call taken out, its hash and size recomputed in the manifest so
# that only the data flow can tell: a later step would read bytes nothing wrote.
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
"$py" - a.tsl <<'PY'
import json, os, sys
folder = sys.argv[1]
plan_path = os.path.join(folder, "plan.txt")
lines = open(plan_path).read().split("\n")
kernels = [i for i, l in enumerate(lines) if l.split(" ")[0] in ("kernel", "serial-kernel")]
del lines[kernels[0]]  # the first kernel: what it writes, a later one reads
text = "\n".join(lines).encode()
open(plan_path, "wb").write(text)
h = 0xcbf29ce484222325
for b in text:
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
manifest_path = os.path.join(folder, "manifest.json")
manifest = json.load(open(manifest_path))
manifest["files"]["plan"]["bytes"] = len(text)
manifest["files"]["plan"]["fnv1a64"] = "%016x" % h
json.dump(manifest, open(manifest_path, "w"), indent=2)
PY
expect_error "a.tsl: plan.txt: step 1 \(kernel [a-z0-9_]+\) reads tensor [0-9]+ \(.*\), which no earlier step wrote" -- \
  "$tessel" run a.tsl --repeat 1
