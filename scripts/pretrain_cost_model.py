#!/usr/bin/env python3
"""Generates the record set the shipped cost model is pretrained on, and trains it.

Tunes each training model of the zoo (scripts/export_zoo.py) from an empty task for
--trials candidates into one database (sampled, mutated and model-guided schedules alike,
every one measured and checked), then trains the XGBoost model on every record with
`tessel db train-model` and writes it with a summary of the data. Resumable: a model whose
tune finished is listed in <db>.done and skipped; a tune cut short keeps its records (the
database never measures a schedule twice). The held-out models (the tuning-curve benchmark's)
are never tuned here, and their workloads are left out of training.

  scripts/pretrain_cost_model.py --zoo-dir /tmp/zoo --db /tmp/pretrain.db \\
      --out models/cost_model/llvm.json [--trials 120] [--tessel build/bin/tessel]
      [--start-from models/cost_model/llvm.json]   (add this host's records to the shipped model)
"""
import argparse
import os
import subprocess
import sys
import time

TRAINING_MODELS = [
    "squeezenet1_1", "shufflenet_v2_x1_0", "mnasnet1_0", "efficientnet_b0", "googlenet",
    "regnet_x_400mf", "mobilenet_v3_small", "vgg11", "bert_small", "gpt2_small",
    "mlp_mixer_small", "vit_tiny_16", "unet_small", "tcn", "m5_audio", "convnext_tiny",
    "densenet121", "resnet50",
]
# The tuning-curve benchmark's models: a CNN with depthwise convs, a plain CNN, a transformer.
HELD_OUT_MODELS = ["mobilenet_v2", "resnet18", "transformer_encoder"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo-dir", required=True)
    parser.add_argument("--db", required=True, help="the record set (SQLite file), created or resumed")
    parser.add_argument("--out", required=True, help="the trained model (XGBoost JSON)")
    parser.add_argument("--tessel", default="build/bin/tessel")
    parser.add_argument("--trials", type=int, default=120, help="candidates per model")
    parser.add_argument("--models", default=",".join(TRAINING_MODELS))
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per model's tune")
    parser.add_argument("--train-only", action="store_true", help="train on the records there are")
    parser.add_argument("--start-from", help="continue from this model's trees (records of another host)")
    args = parser.parse_args()

    done_path = args.db + ".done"
    done = set(open(done_path).read().split()) if os.path.exists(done_path) else set()
    models = [m for m in args.models.split(",") if m]
    for index, model in enumerate(models):
        if args.train_only or model in done:
            continue
        if model in HELD_OUT_MODELS:
            sys.exit(f"{model} is held out for the tuning-curve benchmark")
        path = os.path.join(args.zoo_dir, model + ".onnx")
        if not os.path.exists(path):
            print(f"skip {model}: {path} is missing (scripts/export_zoo.py writes it)", flush=True)
            continue
        start = time.time()
        command = [args.tessel, "tune", path, "--trials", str(args.trials), "--db", args.db, "--transfer", "0", "--cost-model", "none",
                   "--seed", str(index + 1)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
            tail = result.stdout.strip().splitlines()[-3:] or result.stderr.strip().splitlines()[-3:]
            ok = result.returncode == 0
        except subprocess.TimeoutExpired:
            tail, ok = ["timed out; its records so far are kept"], False
        print(f"{model}: {'ok' if ok else 'FAILED'} in {time.time() - start:.0f} s | " + " | ".join(tail), flush=True)
        if ok:
            done.add(model)
            with open(done_path, "a") as f:
                f.write(model + "\n")

    held_out = [os.path.join(args.zoo_dir, m + ".onnx") for m in HELD_OUT_MODELS]
    command = [args.tessel, "db", "train-model", "--db", args.db, "-o", args.out]
    for path in held_out:
        if os.path.exists(path):
            command += ["--exclude-model", path]
    if args.start_from:
        command += ["--start-from", args.start_from]
    print(" ".join(command), flush=True)
    sys.exit(subprocess.run(command).returncode)


if __name__ == "__main__":
    main()
