#!/usr/bin/python3
"""Tuning curves: how fast tuning pays, for models the pretrained cost model never saw.

For each model and each configuration, from an empty database (config c: from a copy of a
database holding other models' records), tune to each checkpoint in turn and read the
estimated model latency (sum over tasks of weight x best) that `tessel tune` prints; with
--measure, also compile the artifact at the checkpoint and time it (`tessel run --repeat`).
Configurations take turns checkpoint by checkpoint, so a change in the machine's load hits
all alike:

  a  today's tuner: untrained cost model, no transfer (--cost-model none --transfer 0)
  b  the pretrained cost model (--cost-model MODEL --transfer 0)
  c  pretrained and transfer from --other-db's records (--cost-model MODEL, --transfer 4)

usage: bench/tuning_curve.py --zoo-dir /tmp/zoo --pretrained models/cost_model/llvm.json
           --other-db /tmp/pretrain.db [--models mobilenet_v2,resnet18,transformer_encoder]
           [--checkpoints 50,100,200,500,1000,2000] [--tessel build/bin/tessel]
           [--work-dir /tmp/tessel_curve] [--measure | --measure-at 200,2000] [--stop b=500,c=500]
           [--report-dir bench/results] [--out bench/results/tuning_curve.md]

--stop ends a configuration early (its last checkpoint); --report-dir writes one
`tessel report --compare` page per model with the three runs' curves over each other.
"""
import argparse
import datetime
import os
import re
import shutil
import subprocess
import time

CONFIGS = ["a", "b", "c"]
LABELS = {"a": "today (no model, no transfer)", "b": "pretrained model", "c": "pretrained + transfer"}
LATENCY = re.compile(r"sum of task latencies ([0-9.]+) ms built-in -> ([0-9.]+) ms tuned")
TRANSFERRED = re.compile(r"(\d+) of (\d+) tasks started from schedules transferred")


def tune(args, model, config, db, trials):
    command = [args.tessel, "tune", os.path.join(args.zoo_dir, model + ".onnx"), "--db", db, "--trials", str(trials)]
    if config == "a":
        command += ["--cost-model", "none", "--transfer", "0"]
    elif config == "b":
        command += ["--cost-model", args.pretrained, "--transfer", "0"]
    else:
        command += ["--cost-model", args.pretrained, "--transfer", "4"]
    start = time.time()
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{out.stdout}\n{out.stderr}")
    latency = LATENCY.search(out.stdout)
    transferred = TRANSFERRED.search(out.stdout)
    return (float(latency.group(1)), float(latency.group(2)), time.time() - start,
            int(transferred.group(1)) if transferred else 0)


def measure(args, model, db, work, trials):
    # One artifact per checkpoint, kept: a single timed process per point is noisy on a shared
    # host, and the kept artifacts can be run again in alternating processes afterwards.
    artifact = os.path.join(work, f"model_at_{trials}.tsl")
    subprocess.run([args.tessel, "compile", os.path.join(args.zoo_dir, model + ".onnx"), "--db", db, "-o", artifact],
                   check=True, capture_output=True)
    out = subprocess.run([args.tessel, "run", artifact, "-i", os.path.join(args.zoo_dir, model + ".input.npy"),
                          "--repeat", "20"], capture_output=True, text=True, check=True)
    found = re.search(r"median latency ([0-9.]+) ms", out.stdout + out.stderr)
    return float(found.group(1)) if found else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo-dir", required=True)
    parser.add_argument("--pretrained", required=True)
    parser.add_argument("--other-db", required=True, help="records of other models (config c starts from a copy)")
    parser.add_argument("--models", default="mobilenet_v2,resnet18,transformer_encoder")
    parser.add_argument("--checkpoints", default="50,100,200,500,1000,2000")
    parser.add_argument("--tessel", default="build/bin/tessel")
    parser.add_argument("--work-dir", default="/tmp/tessel_curve")
    parser.add_argument("--measure", action="store_true", help="compile and time the artifact at each checkpoint")
    parser.add_argument("--measure-at", default="", help="checkpoints at which to compile and time the artifact")
    parser.add_argument("--stop", default="", help="CONFIG=TRIALS,...: a configuration's last checkpoint")
    parser.add_argument("--report-dir", help="write <model>_curves.html (tessel report --compare) here")
    parser.add_argument("--out")
    args = parser.parse_args()
    checkpoints = [int(c) for c in args.checkpoints.split(",")]
    measure_at = {int(c) for c in args.measure_at.split(",") if c}
    stop = {config: int(trials) for config, trials in (item.split("=") for item in args.stop.split(",") if item)}

    rows = []
    for model in args.models.split(","):
        dbs, done, wall, untuned = {}, {}, {}, None
        for config in CONFIGS:
            work = os.path.join(args.work_dir, model, config)
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            dbs[config] = os.path.join(work, "tessel.db")
            if config == "c":
                shutil.copy(args.other_db, dbs[config])
            done[config], wall[config] = 0, 0.0
        for checkpoint in checkpoints:
            for config in CONFIGS:  # interleaved: each config's next stretch in turn
                if checkpoint > stop.get(config, checkpoints[-1]):
                    continue
                builtin, tuned, seconds, transferred = tune(args, model, config, dbs[config], checkpoint - done[config])
                untuned = untuned or builtin
                done[config] = checkpoint
                wall[config] += seconds
                measured = (measure(args, model, dbs[config], os.path.dirname(dbs[config]), checkpoint)
                            if args.measure or checkpoint in measure_at else None)
                rows.append((model, config, checkpoint, builtin, tuned, measured, wall[config], transferred))
                print(f"{model} {config} {checkpoint}: estimated {tuned:.3f} ms (built-in {builtin:.3f})"
                      + (f", measured {measured:.3f} ms" if measured is not None else "")
                      + f", {wall[config]:.0f} s", flush=True)
        if args.report_dir:
            page = os.path.join(args.report_dir, model + "_curves.html")
            subprocess.run([args.tessel, "report", "--db", dbs["a"], "--label", LABELS["a"], "--model",
                            os.path.join(args.zoo_dir, model + ".onnx"), "--compare", f"{LABELS['b']}={dbs['b']}",
                            "--compare", f"{LABELS['c']}={dbs['c']}", "-o", page], check=True, capture_output=True)

    host = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True, text=True).stdout.strip()
    lines = [f"# Tuning curves", "", f"Date: {datetime.date.today()}. Host: {host}, {os.cpu_count()} cores.", "",
             "Command: `bench/tuning_curve.py " + " ".join(
                 f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v not in (None, False)) + "`", "",
             "The built-in latency is re-measured by every `tessel tune` call (its tasks' references); this host",
             "has slow and fast modes (up to 2x apart, minutes long), so the speedup over the built-in latency of",
             "the same call is the figure to compare across configurations.", "",
             "| model | config | trials | built-in ms (this call) | estimated ms | speedup | measured ms | wall s | tasks from transfer |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for model, config, trials, builtin, tuned, measured, seconds, transferred in rows:
        lines.append(f"| {model} | {LABELS[config]} | {trials} | {builtin:.3f} | {tuned:.3f} | {builtin / tuned:.2f}x | "
                     f"{'' if measured is None else f'{measured:.3f}'} | {seconds:.0f} | {transferred} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
