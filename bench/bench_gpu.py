#!/usr/bin/env python3
"""GPU benchmark: tessel on an NVIDIA GPU against cuBLAS, cuDNN and PyTorch eager, in one run.

Three rows, as issue 7 asks, each a ratio of medians measured in this process's run:
  matmul   4096x4096x4096 fp32: `tessel bench matmul --target cuda` (tuned, --trials-matmul
           searched records) against torch.matmul = cuBLAS SGEMM with TF32 off.
  conv     ResNet-18's 3x3 conv (1,64,56,56 -> 64): `tessel bench conv --target cuda` against
           torch.nn.functional.conv2d = cuDNN with TF32 off (cudnn.benchmark on).
  resnet18 end to end: `tessel tune` (--trials-model), `tessel compile --target cuda`,
           `tessel run model.tsl` (host input in, host output out) against torchvision's
           resnet18 in eager mode (input already on the GPU) and ONNX Runtime's CUDA provider
           when the onnxruntime there has one.

PyTorch times with CUDA events after warm-up: the median of --rounds rounds, each the mean of
--calls back-to-back calls. tessel times with its own loop (each run waits for the GPU).

Tuning takes long; every stage can run alone (--only), and with --skip-tune the database is
used as it is (tune in earlier calls, each under a device time limit).

usage: bench/bench_gpu.py [--tessel build/bin/tessel] [--db gpu.db] [--only matmul,conv,resnet18]
           [--trials-matmul 1000] [--trials-conv 300] [--trials-model 2000] [--skip-tune]
           [--models-dir build/models] [--out bench/results/gpu.md] [--work-dir /tmp/tessel_gpu]
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
from pathlib import Path

MATMUL = "4096x4096x4096"
CONV = "1,64,56,56,64,3,3,1,1"  # N,C,H,W,K,R,S,stride,pad: ResNet-18's stage-1 3x3 conv
REL_L2_LIMIT = 1e-3


def run(command, **kwargs):
    print("$ " + " ".join(shlex.quote(str(c)) for c in command), file=sys.stderr, flush=True)
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(map(str, command))}\n{done.stdout}\n{done.stderr}")
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


def tessel_kernel_ms(args, kind, spec, trials):
    command = [args.tessel, "bench", kind, spec, "--target", "cuda", "--db", args.db, "--json",
               "--rounds", str(args.rounds)]
    if not args.skip_tune:
        command += ["--trials", str(trials)]
    report = json.loads(run(command))
    rows = {r["name"]: r for r in report["kernels"][0]["rows"]}
    tuned = rows.get("tessel tuned", {})
    if "median_ms" not in tuned:
        sys.exit(f"tessel bench {kind} {spec}: no tuned row ({tuned.get('unavailable', 'missing')})")
    return tuned["median_ms"], rows.get("tessel default", {}).get("median_ms"), " ".join(map(str, command))


def bench_matmul(args, torch):
    ms, default_ms, command = tessel_kernel_ms(args, "matmul", MATMUL, args.trials_matmul)
    m, n, k = (int(v) for v in MATMUL.split("x"))
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    peer = cuda_time_ms(torch, lambda: torch.matmul(a, b), args.rounds, 10)
    flops = 2 * m * n * k
    return {"name": f"matmul {MATMUL} fp32", "peer": "cuBLAS SGEMM (torch.matmul, TF32 off)", "peer_ms": peer,
            "tessel_ms": ms, "default_ms": default_ms, "command": command,
            "note": f"tessel {flops / ms / 1e9:.0f} GFLOP/s, cuBLAS {flops / peer / 1e9:.0f} GFLOP/s; bar: >= 0.8x cuBLAS"}


def bench_conv(args, torch):
    ms, default_ms, command = tessel_kernel_ms(args, "conv", CONV, args.trials_conv)
    n, c, h, w, k, r, s, stride, pad = (int(v) for v in CONV.split(","))
    x = torch.randn(n, c, h, w, device="cuda")
    weight = torch.randn(k, c, r, s, device="cuda")
    conv = torch.nn.functional.conv2d
    peer = cuda_time_ms(torch, lambda: conv(x, weight, stride=stride, padding=pad), args.rounds, 20)
    return {"name": f"conv {CONV} (ResNet-18 3x3)", "peer": "cuDNN (conv2d, TF32 off)", "peer_ms": peer,
            "tessel_ms": ms, "default_ms": default_ms, "command": command, "note": ""}


def rel_l2(got, want):
    import numpy as np
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def bench_resnet18(args, torch):
    import numpy as np
    models = Path(args.models_dir)
    model, data, expected = (models / "resnet18.onnx", models / "resnet18.input.npy", models / "resnet18.expected.npy")
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    if not args.skip_tune:
        run([args.tessel, "tune", model, "--target", "cuda", "--trials", args.trials_model, "--db", args.db])
    artifact = work / "resnet18_cuda.tsl"
    run([args.tessel, "compile", model, "--target", "cuda", "--db", args.db, "-o", artifact])
    out_dir = work / "resnet18_out"
    out_dir.mkdir(exist_ok=True)
    report = json.loads(run([args.tessel, "run", artifact, "-i", data, "--repeat", "200", "--json", "-o", out_dir]))
    tessel_ms = report["median_ms"]
    got = np.load(next(out_dir.glob("*.npy")))
    error = rel_l2(got, np.load(expected))
    if not error <= REL_L2_LIMIT:
        sys.exit(f"tessel's ResNet-18 output differs from expected.npy: rel L2 {error:.2e}")

    import torchvision
    net = torchvision.models.resnet18().eval().cuda()
    x = torch.from_numpy(np.load(data)).cuda()
    with torch.no_grad():
        eager = cuda_time_ms(torch, lambda: net(x), args.rounds, 20)
    rows = [{"name": "ResNet-18 end to end", "peer": "PyTorch eager (torchvision, TF32 off)", "peer_ms": eager,
             "tessel_ms": tessel_ms, "default_ms": None,
             "command": f"tessel run {artifact} --repeat 200 (rel L2 {error:.1e} vs expected.npy)",
             "note": "bar: <= 1.0x PyTorch eager's latency"}]
    try:
        import onnxruntime as ort
        if "CUDAExecutionProvider" in ort.get_available_providers():
            session = ort.InferenceSession(str(model), providers=["CUDAExecutionProvider"])
            feed = {session.get_inputs()[0].name: np.load(data)}
            for _ in range(10):
                session.run(None, feed)
            import time
            times = []
            for _ in range(200):
                start = time.perf_counter()
                session.run(None, feed)
                times.append((time.perf_counter() - start) * 1e3)
            rows.append({"name": "ResNet-18 end to end", "peer": "ONNX Runtime CUDA provider",
                         "peer_ms": statistics.median(times), "tessel_ms": tessel_ms, "default_ms": None,
                         "command": "", "note": "host input and output, as tessel's"})
        else:
            print("ONNX Runtime here has no CUDA provider: no ONNX Runtime row", file=sys.stderr)
    except ImportError:
        print("no onnxruntime here: no ONNX Runtime row", file=sys.stderr)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tessel", default="build/bin/tessel")
    parser.add_argument("--db", default="gpu.db")
    parser.add_argument("--only", default="matmul,conv,resnet18")
    parser.add_argument("--trials-matmul", type=int, default=1000)
    parser.add_argument("--trials-conv", type=int, default=300)
    parser.add_argument("--trials-model", type=int, default=2000)
    parser.add_argument("--skip-tune", action="store_true")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--models-dir", default="build/models")
    parser.add_argument("--out", default="")
    parser.add_argument("--work-dir", default="/tmp/tessel_gpu")
    args = parser.parse_args()

    try:
        import torch
    except ImportError:
        sys.exit("bench_gpu.py needs PyTorch with CUDA for its peers (cuBLAS, cuDNN, eager)")
    if not torch.cuda.is_available():
        sys.exit("no CUDA GPU here (torch.cuda.is_available() is False): nothing to measure")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True

    stages = {"matmul": bench_matmul, "conv": bench_conv, "resnet18": bench_resnet18}
    rows = []
    for name in args.only.split(","):
        if name not in stages:
            sys.exit(f"--only: unknown stage '{name}' (matmul, conv, resnet18)")
        result = stages[name](args, torch)
        rows += result if isinstance(result, list) else [result]

    lines = [f"# GPU benchmark ({datetime.date.today().isoformat()})", "",
             f"GPU: {torch.cuda.get_device_name()} (PyTorch {torch.__version__}); host {platform.processor() or platform.machine()}",
             "", "command: `" + " ".join(shlex.quote(a) for a in sys.argv) + "`", "",
             "| kernel / model | tessel default ms | tessel tuned ms | peer | peer ms | speed vs peer |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        default = f"{r['default_ms']:.4f}" if r["default_ms"] else "-"
        lines.append(f"| {r['name']} | {default} | {r['tessel_ms']:.4f} | {r['peer']} | {r['peer_ms']:.4f} | "
                     f"{r['peer_ms'] / r['tessel_ms']:.2f}x |")
    lines += [""] + [f"- {r['name']}: {r['command']}. {r['note']}" for r in rows]
    lines += ["", "speed vs peer = peer median / tessel median (above 1: tessel is faster). Medians of "
              f"{args.rounds} rounds; PyTorch by CUDA events, tessel by its own timer waiting for the GPU."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
