#!/usr/bin/env python3
"""GPU benchmark: tessel on an NVIDIA GPU against cuBLAS, cuDNN, PyTorch eager and ONNX Runtime.

Stages, each a ratio of medians measured on the same GPU in the same call:
  matmul   4096x4096x4096 fp32: `tessel bench matmul --target cuda` (tuned first: --trials-matmul
           searched records or --budget-matmul seconds) against torch.matmul = cuBLAS SGEMM, TF32 off.
  conv     ResNet-18's 3x3 conv (1,64,56,56 -> 64): `tessel bench conv --target cuda` against
           torch.nn.functional.conv2d = cuDNN with TF32 off (cudnn.benchmark on).
  resnet18 end to end: `tessel tune` (--trials-model / --budget-model), `tessel compile --target
           cuda`, `tessel run model.tsl` (host input in, host output out), its output against
           PyTorch's (expected.npy, relative L2), timed against torchvision's resnet18 in eager
           mode (input already on the GPU) and ONNX Runtime's CUDA provider when there is one.

PyTorch times with CUDA events after warm-up: the median of --rounds rounds, each the mean of
back-to-back calls. tessel times with its own loop (each run waits for the GPU).

Every stage can run alone (--only), writing its rows as JSON lines (--rows FILE, appended), so
that a driver (scripts/gpu_check.sh) can give each stage its own timeout; --summary FILE...
prints the table of all rows. With --skip-tune the database is used as it is.

usage: bench/bench_gpu.py [--tessel build/bin/tessel] [--db gpu.db] [--only matmul,conv,resnet18]
           [--trials-matmul 1000] [--budget-matmul S] [--trials-conv 300] [--budget-conv S]
           [--trials-model 2000] [--budget-model S] [--skip-tune] [--models-dir build/models]
           [--rows rows.jsonl] [--out bench/results/gpu.md] [--work-dir /tmp/tessel_gpu]
       bench/bench_gpu.py --summary rows.jsonl [--out gpu.md]
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

MATMUL = "4096x4096x4096"
CONV = "1,64,56,56,64,3,3,1,1"  # N,C,H,W,K,R,S,stride,pad: ResNet-18's stage-1 3x3 conv
CONV7 = "1,512,7,7,512,3,3,1,1"  # its stage-4 3x3 conv: few outputs, long reductions (split-k)
REL_L2_LIMIT = 1e-4             # the bar for ResNet-18 against PyTorch


class StageFailed(Exception):
    pass


def run(command, timeout=None):
    print("$ " + " ".join(shlex.quote(str(c)) for c in command), file=sys.stderr, flush=True)
    start = time.monotonic()
    try:
        done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise StageFailed(f"timed out after {timeout} s: {' '.join(map(str, command))}\n{e.stderr or ''}")
    sys.stderr.write(done.stderr[-6000:])
    print(f"  ({time.monotonic() - start:.1f} s, exit {done.returncode})", file=sys.stderr, flush=True)
    if done.returncode != 0:
        raise StageFailed(f"failed ({done.returncode}): {' '.join(map(str, command))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def cuda_time_ms(torch, call, rounds, calls):
    """Median over rounds of the mean time of `calls` back-to-back calls, by CUDA events."""
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    per_round = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            call()
        end.record()
        end.synchronize()
        per_round.append(start.elapsed_time(end) / calls)
    return statistics.median(per_round)


def tune_flags(args, trials, budget):
    if args.skip_tune:
        return []
    flags = ["--trials", str(trials)]
    if budget:
        flags += ["--time-budget", str(budget)]
    return flags


def tessel_kernel_ms(args, kind, spec, trials, budget):
    command = [args.tessel, "bench", kind, spec, "--target", "cuda", "--db", args.db, "--json",
               "--rounds", str(args.rounds)] + tune_flags(args, trials, budget)
    report = json.loads(run(command))
    rows = {r["name"]: r for r in report["kernels"][0]["rows"]}
    tuned = rows.get("tessel tuned", {})
    default_ms = rows.get("tessel default", {}).get("median_ms")
    if "median_ms" not in tuned:
        print(f"tessel bench {kind} {spec}: no tuned row ({tuned.get('unavailable', 'missing')}); "
              "the default schedule stands for it", file=sys.stderr)
        if default_ms is None:
            raise StageFailed(f"tessel bench {kind} {spec}: neither a tuned nor a default time")
        return default_ms, default_ms, " ".join(map(str, command))
    return tuned["median_ms"], default_ms, " ".join(map(str, command))


def bench_matmul(args, torch):
    m, n, k = (int(v) for v in MATMUL.split("x"))
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    peer = cuda_time_ms(torch, lambda: torch.matmul(a, b), args.rounds, 10)
    del a, b
    torch.cuda.empty_cache()
    ms, default_ms, command = tessel_kernel_ms(args, "matmul", MATMUL, args.trials_matmul, args.budget_matmul)
    flops = 2 * m * n * k
    return [{"name": f"matmul {MATMUL} fp32", "peer": "cuBLAS SGEMM (torch.matmul, TF32 off)", "peer_ms": peer,
             "tessel_ms": ms, "default_ms": default_ms, "command": command,
             "note": f"tessel {flops / ms / 1e6:.0f} GFLOP/s, cuBLAS {flops / peer / 1e6:.0f} GFLOP/s; "
                     "bars: >= 0.5x cuBLAS first, 0.8x the goal"}]


def bench_conv(args, torch, spec=CONV, label="ResNet-18 3x3"):
    n, c, h, w, k, r, s, stride, pad = (int(v) for v in spec.split(","))
    x = torch.randn(n, c, h, w, device="cuda")
    weight = torch.randn(k, c, r, s, device="cuda")
    conv = torch.nn.functional.conv2d
    peer = cuda_time_ms(torch, lambda: conv(x, weight, stride=stride, padding=pad), args.rounds, 20)
    ms, default_ms, command = tessel_kernel_ms(args, "conv", spec, args.trials_conv, args.budget_conv)
    flops = 2 * n * k * (h // stride) * (w // stride) * c * r * s
    return [{"name": f"conv {spec} ({label})", "peer": "cuDNN (conv2d, TF32 off)", "peer_ms": peer,
             "tessel_ms": ms, "default_ms": default_ms, "command": command,
             "note": f"tessel {flops / ms / 1e6:.0f} GFLOP/s, cuDNN {flops / peer / 1e6:.0f} GFLOP/s; bar: >= 0.8x cuDNN"}]


def rel_l2(got, want):
    import numpy as np
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def bench_resnet18(args, torch):
    import numpy as np
    models = Path(args.models_dir)
    model, data, expected = (models / "resnet18.onnx", models / "resnet18.input.npy", models / "resnet18.expected.npy")
    if not model.exists():
        raise StageFailed(f"{model} not found (scripts/export_models.py {models} resnet18 writes it)")
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    tune_note = "untuned"
    if not args.skip_tune:
        run([args.tessel, "tune", model, "--target", "cuda", "--db", args.db] +
            tune_flags(args, args.trials_model, args.budget_model))
        tune_note = f"tuned (--trials {args.trials_model}" + (f", --time-budget {args.budget_model} s)" if args.budget_model else ")")
    artifact = work / "resnet18_cuda.tsl"
    compile_start = time.monotonic()
    run([args.tessel, "compile", model, "--target", "cuda", "--db", args.db, "-o", artifact])
    compile_s = time.monotonic() - compile_start
    out_dir = work / "resnet18_out"
    out_dir.mkdir(exist_ok=True)
    report = json.loads(run([args.tessel, "run", artifact, "-i", data, "--repeat", "100", "--json", "-o", out_dir]))
    tessel_ms = report["median_ms"]
    got = np.load(next(out_dir.glob("*.npy")))
    error = rel_l2(got, np.load(expected))
    verdict = "matches" if error < REL_L2_LIMIT else "DIFFERS FROM"
    print(f"ResNet-18 cuda artifact {verdict} PyTorch: relative L2 {error:.2e} (bar {REL_L2_LIMIT:g})", file=sys.stderr)

    # Where the artifact's time goes: its kernels (each timed alone, waiting for the GPU)
    # against the whole call, which also copies the input in and the output out.
    try:
        profile = json.loads(run([args.tessel, "run", artifact, "-i", data, "--repeat", "20", "--json", "--profile"]))
        kernels = profile.get("kernels", [])
        kernel_sum = sum(k["median_ms"] for k in kernels)
        print(f"ResNet-18 artifact: {len(kernels)} kernel calls summing to {kernel_sum:.3f} ms; "
              f"whole call {tessel_ms:.3f} ms", file=sys.stderr)
        for k in sorted(kernels, key=lambda k: -k["median_ms"])[:8]:
            print(f"  {k['median_ms']:.4f} ms  {k['kernel']}  {k.get('ops', '')}", file=sys.stderr)
    except (StageFailed, ValueError, KeyError) as e:
        print(f"ResNet-18 artifact profile: {e}", file=sys.stderr)

    import torchvision
    net = torchvision.models.resnet18().eval().cuda()
    host_input = np.load(data)
    x = torch.from_numpy(host_input).cuda()
    with torch.no_grad():
        eager = cuda_time_ms(torch, lambda: net(x), args.rounds, 20)
        # Like for like with `tessel run`: a host array in, a host array out, waiting for both.
        def eager_from_host():
            return net(torch.from_numpy(host_input).cuda()).cpu().numpy()
        for _ in range(10):
            eager_from_host()
        host_times = []
        for _ in range(100):
            start = time.perf_counter()
            eager_from_host()
            host_times.append((time.perf_counter() - start) * 1e3)
    command = f"tessel run {artifact.name} --repeat 100 ({tune_note}; compile {compile_s:.0f} s)"
    rows = [{"name": "ResNet-18 end to end", "peer": "PyTorch eager (torchvision, TF32 off)", "peer_ms": eager,
             "tessel_ms": tessel_ms, "default_ms": None, "command": command,
             "note": f"output vs PyTorch: relative L2 {error:.1e} ({verdict.lower()} the {REL_L2_LIMIT:g} bar); "
                     "bar: <= 1.0x PyTorch eager's latency; eager's input already on the GPU, tessel's copied in "
                     "and out on every run"},
            {"name": "ResNet-18 end to end", "peer": "PyTorch eager, host input and output",
             "peer_ms": statistics.median(host_times), "tessel_ms": tessel_ms, "default_ms": None,
             "command": "torch.from_numpy(x).cuda() -> resnet18 -> .cpu().numpy(), wall clock, median of 100",
             "note": "like for like: each run copies a host array in and the result out, as `tessel run` does"}]
    try:
        import onnxruntime as ort
        providers = ort.get_available_providers()
        if "CUDAExecutionProvider" in providers:
            session = ort.InferenceSession(str(model), providers=["CUDAExecutionProvider"])
            feed = {session.get_inputs()[0].name: np.load(data)}
            for _ in range(10):
                session.run(None, feed)
            times = []
            for _ in range(100):
                start = time.perf_counter()
                session.run(None, feed)
                times.append((time.perf_counter() - start) * 1e3)
            rows.append({"name": "ResNet-18 end to end", "peer": "ONNX Runtime CUDA provider",
                         "peer_ms": statistics.median(times), "tessel_ms": tessel_ms, "default_ms": None,
                         "command": "", "note": "host input and output, as tessel's"})
        else:
            print(f"ONNX Runtime here has no CUDA provider ({providers}): no ONNX Runtime row", file=sys.stderr)
    except Exception as e:  # a broken onnxruntime costs its row, not the stage
        print(f"ONNX Runtime: {type(e).__name__}: {e}", file=sys.stderr)
    if error >= REL_L2_LIMIT:
        for r in rows:
            r["note"] = "WRONG OUTPUT: " + r["note"]
    return rows


def environment(torch):
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:
        smi = f"nvidia-smi: {e}"
    return (f"GPU: {torch.cuda.get_device_name()} ({smi}); PyTorch {torch.__version__}, CUDA {torch.version.cuda}, "
            f"cuDNN {torch.backends.cudnn.version()}; host {platform.machine()}, {os.cpu_count()} cores")


def table(rows, header_lines):
    lines = header_lines + ["| kernel / model | tessel default ms | tessel ms | peer | peer ms | speed vs peer |",
                            "|---|---|---|---|---|---|"]
    for r in rows:
        default = f"{r['default_ms']:.4f}" if r.get("default_ms") else "-"
        lines.append(f"| {r['name']} | {default} | {r['tessel_ms']:.4f} | {r['peer']} | {r['peer_ms']:.4f} | "
                     f"{r['peer_ms'] / r['tessel_ms']:.2f}x |")
    lines += [""] + [f"- {r['name']} vs {r['peer']}: {r['command']}. {r['note']}" for r in rows]
    lines += ["", "speed vs peer = peer median / tessel median (above 1: tessel is faster). PyTorch by CUDA "
              "events (median of rounds of back-to-back calls), tessel by its own timer waiting for the GPU."]
    return "\n".join(lines) + "\n"


def summary(paths, out):
    rows, env = [], ""
    for path in paths:
        if not Path(path).exists():
            continue
        for line in Path(path).read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if "environment" in row:
                    env = row["environment"]
                else:
                    rows.append(row)
    text = table(rows, [f"# GPU benchmark ({datetime.date.today().isoformat()})", "", env, ""])
    print(text)
    if out:
        Path(out).write_text(text)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tessel", default="build/bin/tessel")
    parser.add_argument("--db", default="gpu.db")
    parser.add_argument("--only", default="matmul,conv,resnet18")
    parser.add_argument("--trials-matmul", type=int, default=1000)
    parser.add_argument("--budget-matmul", type=float, default=0, help="seconds of tuning at most")
    parser.add_argument("--trials-conv", type=int, default=300)
    parser.add_argument("--budget-conv", type=float, default=0)
    parser.add_argument("--trials-model", type=int, default=2000)
    parser.add_argument("--budget-model", type=float, default=0)
    parser.add_argument("--skip-tune", action="store_true")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--models-dir", default="build/models")
    parser.add_argument("--rows", default="", help="append each row as a JSON line to this file")
    parser.add_argument("--summary", nargs="+", default=None, help="print the table of these row files")
    parser.add_argument("--out", default="")
    parser.add_argument("--work-dir", default="/tmp/tessel_gpu")
    args = parser.parse_args()
    if args.summary:
        return summary(args.summary, args.out)

    try:
        import torch
    except ImportError:
        sys.exit("bench_gpu.py needs PyTorch with CUDA for its peers (cuBLAS, cuDNN, eager)")
    if not torch.cuda.is_available():
        sys.exit("no CUDA GPU here (torch.cuda.is_available() is False): nothing to measure")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True

    stages = {"matmul": bench_matmul, "conv": bench_conv, "resnet18": bench_resnet18,
              "conv7": lambda a, t: bench_conv(a, t, CONV7, "ResNet-18 stage-4 3x3")}
    rows, failed = [], []
    if args.rows:
        with open(args.rows, "a") as f:
            f.write(json.dumps({"environment": environment(torch)}) + "\n")
    for name in args.only.split(","):
        if name not in stages:
            sys.exit(f"--only: unknown stage '{name}' (matmul, conv, conv7, resnet18)")
        try:
            stage_rows = stages[name](args, torch)
        except StageFailed as e:
            print(f"stage {name} FAILED: {e}", file=sys.stderr)
            failed.append(name)
            continue
        rows += stage_rows
        if args.rows:
            with open(args.rows, "a") as f:
                for r in stage_rows:
                    f.write(json.dumps(r) + "\n")
    text = table(rows, [f"# GPU benchmark ({datetime.date.today().isoformat()})", "", environment(torch), "",
                        "command: `" + " ".join(shlex.quote(a) for a in sys.argv) + "`", ""])
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
