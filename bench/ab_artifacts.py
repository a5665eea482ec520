#!/usr/bin/python3
"""Kernel-by-kernel comparison of compiled tessel artifacts of one model, in fresh processes.

Runs `tessel run ARTIFACT --profile --json` for every artifact in interleaved rounds (the order
reversed every other round), then prints, per kernel call, the median over processes of each
process's own median. On a virtual machine the time a cache line takes between the two vCPUs
changes over minutes, and kernels that read the other thread's output slow down with it
(bench/results/small_map_convs.md); `tessel run --profile` measures that round trip before
loading, and the processes are reported in two groups by it, so that a change is compared
with its baseline under the same conditions.

usage: bench/ab_artifacts.py --input x.npy [--tessel build/bin/tessel] [--rounds 8] [--runs 200]
           [--threads 2] [--slow-ns 200] A.tsl B.tsl [C.tsl ...]
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path


def run_once(args, artifact):
    command = [args.tessel, "run", str(artifact), "--input", str(args.input), "--repeat", str(args.runs),
               "--warmup", "5", "--threads", str(args.threads), "--profile", "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"ab_artifacts: {' '.join(command)} failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout)


def report(label, runs, artifacts):
    names = [Path(a).name for a in artifacts]
    counts = {n: len(runs[a]) for n, a in zip(names, artifacts)}
    if not all(counts.values()):
        print(f"\n{label}: processes {counts} (too few to compare)")
        return
    print(f"\n{label}: processes {counts}")
    print("model median ms: " + ", ".join(
        f"{n} {statistics.median(r['median_ms'] for r in runs[a]):.3f}" for n, a in zip(names, artifacts)))
    print(f"{'step':>4} {'ops':30} " + " ".join(f"{n[:12]:>12}" for n in names) + "   last/first")
    kernels = runs[artifacts[0]][0]["kernels"]
    for i, kernel in enumerate(kernels):
        try:
            medians = [statistics.median(r["kernels"][i]["median_ms"] for r in runs[a]) for a in artifacts]
        except IndexError:
            sys.exit("ab_artifacts: the artifacts run different numbers of kernel calls; compile the same model")
        print(f"{kernel['step']:4d} {kernel['ops'][:30]:30} " + " ".join(f"{m:12.4f}" for m in medians) +
              f"   {medians[-1] / medians[0]:.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("artifacts", nargs="+", type=Path, help="compiled artifacts (model.tsl directories) of one model")
    p.add_argument("--input", required=True, type=Path, help="input .npy for every run")
    p.add_argument("--tessel", default="build/bin/tessel")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--runs", type=int, default=200, help="timed runs per process")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--slow-ns", type=float, default=200.0,
                   help="cross-core round trip above which a process counts as run in a slow phase")
    args = p.parse_args()
    if len(args.artifacts) < 2:
        p.error("give at least two artifacts")
    runs = {a: [] for a in args.artifacts}
    for r in range(args.rounds):
        for a in (args.artifacts if r % 2 == 0 else args.artifacts[::-1]):
            runs[a].append(run_once(args, a))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    slow = lambda run: run.get("cross_core_round_trip_ns", 0.0) >= args.slow_ns
    report(f"fast phase (round trip < {args.slow_ns:.0f} ns)", {a: [x for x in v if not slow(x)] for a, v in runs.items()},
           args.artifacts)
    report(f"slow phase (round trip >= {args.slow_ns:.0f} ns)", {a: [x for x in v if slow(x)] for a, v in runs.items()},
           args.artifacts)


if __name__ == "__main__":
    main()
