#!/usr/bin/python3
"""Where tessel's kernels lose time to oneDNN's, across the model zoo.

Runs `tessel bench MODEL.onnx --vs default,onednn --json` for each model (every task of the
model, as the model runs it, against oneDNN in plain and in its preferred blocked layout,
rows interleaved), then ranks the tasks of all models by the time tessel loses per model run
to oneDNN's faster layout: occurrences x (tessel's median - oneDNN's), and as a share of the
model's summed task time. Tasks no peer computes (pools, Concats, ...) are left out of the
ranking, not out of the sums. The pattern classes at the top are where kernel work pays.

usage: bench/zoo_kernel_gaps.py --zoo-dir /tmp/zoo [--models resnet18,squeezenet1_1,...]
           [--tessel build/bin/tessel] [--db empty.db] [--threads 2] [--rounds 2] [--top 40]
           [--json-dir DIR [--reuse]] [--out gaps.md]
--db names a tuning database (its best records are timed; default: a fresh empty one, so the
default schedules are). JSON per model is kept in --json-dir; with --reuse the table is made
from the JSON found there, without benchmarking again.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ZOO = ("resnet18,mobilenet_v2,transformer_encoder,squeezenet1_1,mobilenet_v3_small,mobilenet_v3_large,"
       "mnasnet1_0,efficientnet_b0,efficientnet_v2_s,shufflenet_v2_x1_0,regnet_y_400mf,convnext_tiny")


def bench_model(args, model, json_path):
    command = [args.tessel, "bench", str(Path(args.zoo_dir) / f"{model}.onnx"), "--vs", "default,onednn",
               "--threads", str(args.threads), "--rounds", str(args.rounds), "--min-time", str(args.min_time),
               "--db", args.db, "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    # A row with wrong output makes the exit status 1; the JSON still holds every row.
    if not done.stdout.strip():
        sys.exit(f"zoo_kernel_gaps: {' '.join(command)} failed:\n{done.stderr.strip()[-2000:]}")
    json_path.write_text(done.stdout)
    return json.loads(done.stdout)


def task_rows(model, result):
    """(model, task text, ops, weight, tessel ms, oneDNN ms or None) per task, and the rows with
    wrong output as (model, task text, row name)."""
    rows, wrong = [], []
    for kernel in result["kernels"]:
        task = kernel["kernel"].split(": ", 1)[-1]
        wrong += [(model, task, r["name"]) for r in kernel["rows"] if r.get("status") == "wrong"]
        ok = [r for r in kernel["rows"] if r.get("status") == "ok"]
        tessel = [r["median_ms"] for r in ok if r["name"].startswith("tessel")]
        if not tessel:
            continue
        peers = [r["median_ms"] for r in ok if r["name"].startswith("oneDNN")]
        rows.append((model, task, kernel["ops"], kernel["weight"], min(tessel), min(peers) if peers else None))
    return rows, wrong


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo-dir", required=True)
    parser.add_argument("--models", default=ZOO)
    parser.add_argument("--tessel", default="build/bin/tessel")
    parser.add_argument("--db", default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=0.1)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--json-dir", default=None)
    parser.add_argument("--reuse", action="store_true", help="read --json-dir's JSON instead of benchmarking")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.reuse and not args.json_dir:
        parser.error("--reuse reads the JSON of --json-dir")
    scratch = tempfile.TemporaryDirectory(prefix="zoo_kernel_gaps_")
    if args.db is None:
        args.db = str(Path(scratch.name) / "empty.db")
    json_dir = Path(args.json_dir or scratch.name)
    json_dir.mkdir(parents=True, exist_ok=True)

    rows, totals, wrong = [], {}, []
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for model in args.models.split(","):
        print(f"zoo_kernel_gaps: {model}", file=sys.stderr)
        json_path = json_dir / f"{model}.json"
        result = json.loads(json_path.read_text()) if args.reuse else bench_model(args, model, json_path)
        found, wrong_rows = task_rows(model, result)
        totals[model] = sum(r[3] * r[4] for r in found)
        wrong += wrong_rows
        rows += [r for r in found if r[5] is not None]
    rows.sort(key=lambda r: -(r[3] * (r[4] - r[5])))

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    lines = [f"- date: {started}", f"- machine: {cpu} ({os.cpu_count()} logical CPUs)",
             f"- command: `{' '.join(sys.argv)}`", f"- threads {args.threads}, rounds {args.rounds}, database "
             f"{'empty (default schedules)' if args.db.startswith(scratch.name) else args.db}", "",
             "| model | task | x | tessel ms | oneDNN ms (faster layout) | oneDNN / tessel | lost ms per run | share of the model |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for model, task, ops, weight, tessel, onednn in rows[:args.top]:
        lost = weight * (tessel - onednn)
        lines.append(f"| {model} | {ops} -> {task.split('->')[-1].strip()} | {weight} | {tessel:.4f} | {onednn:.4f} | "
                     f"{onednn / tessel:.2f} | {lost:+.4f} | {100 * lost / totals[model]:.0f}% |")
    lines += ["", "Summed task time per model (ms, tessel): " +
              ", ".join(f"{m} {t:.3f}" for m, t in totals.items())]
    if wrong:
        lines += ["", "Rows with wrong output: " + "; ".join(f"{m} {t} ({n})" for m, t, n in wrong)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
