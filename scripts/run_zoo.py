#!/usr/bin/python3
"""Runs the model zoo (scripts/export_zoo.py) through tessel and checks every output.

For each exported model NAME in --zoo-dir:

  JIT       tessel run NAME.onnx --input NAME.input.npy -o WORK/NAME/jit --json --repeat 1
  artifact  tessel compile NAME.onnx -o WORK/NAME/NAME.tsl --json        (untuned: no --db, run
            in an empty directory so no ./tessel.db is picked up)
            tessel run WORK/NAME/NAME.tsl --input NAME.input.npy -o WORK/NAME/artifact --json

and compares each output with NAME.expected.npy (PyTorch, float64): rel L2 = ||out - expected|| /
||expected|| in float64, correct below 1e-4. A failing step is recorded with the last line of
tessel's stderr (its "error: ..." line), which says why. Each process runs alone, under a time
limit that kills its whole process group.

With Node.js and bench/ort/node_modules/onnxruntime-node present (else `npm ci --prefix bench/ort`
is tried once), it also times ONNX Runtime (bench/ort/ort_bench.js) and the artifact
(`tessel run --repeat`), both with --threads, like bench/bench_e2e.py; --no-latency skips that.

One JSON line per model goes to --jsonl; a model already there is skipped unless --force, so an
interrupted run resumes. The markdown table (--out) is rebuilt from the JSON lines each time.

usage: /usr/bin/python3 scripts/run_zoo.py --zoo-dir /tmp/zoo [--models mlp,squeezenet1_1]
           [--tessel build/bin/tessel] [--out bench/results/zoo.md] [--timeout 900]
           [--work-dir /tmp/tessel_zoo] [--jsonl /tmp/tessel_zoo/results.jsonl] [--force]
           [--threads 2] [--runs 20] [--no-latency]
"""
import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.dont_write_bytecode = True  # importing bench_e2e should leave no __pycache__ in the tree
sys.path.insert(0, str(REPO / "bench"))
from bench_e2e import Peak, last_json_line, machine_name, md_escape, rel_l2, run_command, short  # noqa: E402

REL_L2_LIMIT = 1e-4
ORT_DIR = REPO / "bench" / "ort"
ORT_BENCH = ORT_DIR / "ort_bench.js"
ORT_MODULE = ORT_DIR / "node_modules" / "onnxruntime-node"
BINARY_WAIT_S = 600  # the binary may be mid-rebuild; wait this long for it to reappear


# ---------------------------------------------------------------------------------------------
# Steps.

def wait_for_binary(path):
    """Waits while the tessel binary is missing (a rebuild replaces it); False if it never returns."""
    deadline = time.monotonic() + BINARY_WAIT_S
    warned = False
    while not (path.is_file() and os.access(path, os.X_OK)):
        if time.monotonic() > deadline:
            return False
        if not warned:
            print(f"run_zoo: {path} is missing; waiting up to {BINARY_WAIT_S} s", file=sys.stderr,
                  flush=True)
            warned = True
        time.sleep(5)
    return True


def run_tessel(args, argv, cwd, peak, env):
    """run_command for tessel, retried once if the binary vanished under it (a rebuild)."""
    for attempt in range(2):
        if not wait_for_binary(args.tessel):
            return None
        res = run_command([str(args.tessel)] + argv, peak, cwd=str(cwd), env=env,
                          timeout=args.timeout)
        vanished = res.rc in (126, 127) and not res.stdout.strip()
        if not vanished or attempt == 1:
            return res
        time.sleep(5)
    return res


def stderr_tail(res, lines=3):
    kept = [l.rstrip() for l in res.stderr.splitlines() if l.strip()]
    return kept[-lines:]


def check_output(info, out_dir, expected):
    """rel L2 of the run's first output against expected.npy: (rel, error)."""
    outs = (info or {}).get("outputs") or []
    path = Path(outs[0]["file"]) if outs and outs[0].get("file") else None
    if path is None:
        found = sorted(out_dir.glob("*.npy"))
        path = found[0] if found else None
    if path is None or not path.is_file():
        return None, "no output file"
    if not path.is_absolute():
        path = out_dir / path
    rel, err = rel_l2(path, expected)
    return rel, err


def fresh_dir(path):
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def step_record(res, what):
    """The common fields of one step: wall time, and why it failed if it did."""
    rec = {"seconds": round(res.seconds, 2), "rc": res.rc, "timed_out": res.timed_out}
    if res.peak_kb is not None:
        rec["peak_mb"] = round(res.peak_kb / 1024, 1)
    if res.rc != 0 or res.timed_out:
        rec["error"] = res.error(what)
        rec["stderr_tail"] = stderr_tail(res)
    return rec


def judge(rec, rel, err):
    if err:
        rec["error"] = f"output check: {err}"
        rec["ok"] = False
    else:
        rec["rel_l2"] = rel
        rec["ok"] = rel < REL_L2_LIMIT


def run_jit(args, model, files, work, peak, env):
    out_dir = fresh_dir(work / "jit")
    cwd = fresh_dir(work / "jit_cwd")
    res = run_tessel(args, ["run", str(files["onnx"]), "--input", str(files["input"]), "-o",
                            str(out_dir), "--json", "--repeat", "1", "--threads",
                            str(args.threads)], cwd, peak, env)
    if res is None:
        return {"ok": False, "error": f"no tessel binary at {args.tessel}"}
    rec = step_record(res, "run")
    if "error" in rec:
        rec["ok"] = False
        return rec
    info = last_json_line(res.stdout) or {}
    for key in ("first_run_ms", "compile_seconds", "kernels_compiled"):
        if key in info:
            rec[key] = info[key]
    judge(rec, *check_output(info, out_dir, files["expected"]))
    return rec


def run_artifact(args, model, files, work, peak, env, latency):
    artifact = work / f"{model}.tsl"
    cwd = fresh_dir(work / "compile_cwd")  # empty: compile finds no ./tessel.db, so untuned
    res = run_tessel(args, ["compile", str(files["onnx"]), "-o", str(artifact), "--json"], cwd,
                     peak, env)
    if res is None:
        return {"ok": False, "error": f"no tessel binary at {args.tessel}"}
    rec = {"compile": step_record(res, "compile")}
    if "error" in rec["compile"]:
        rec.update(ok=False, error=rec["compile"]["error"])
        return rec
    info = last_json_line(res.stdout) or {}
    for key in ("tuned_tasks", "default_tasks"):
        if key in info:
            rec["compile"][key] = info[key]

    out_dir = fresh_dir(work / "artifact")
    repeat = args.runs if latency else 1
    res = run_tessel(args, ["run", str(artifact), "--input", str(files["input"]), "-o",
                            str(out_dir), "--json", "--repeat", str(repeat), "--threads",
                            str(args.threads)], work, peak, env)
    run = step_record(res, "run")
    rec["run"] = run
    if "error" in run:
        rec.update(ok=False, error=run["error"])
        return rec
    info = last_json_line(res.stdout) or {}
    if latency and "median_ms" in info:
        rec["median_ms"] = info["median_ms"]
        rec["repeats"] = info.get("repeats", repeat)
    judge(rec, *check_output(info, out_dir, files["expected"]))
    return rec


def run_ort(args, files, work, peak, env):
    out_file = fresh_dir(work / "ort") / "output.npy"
    res = run_command([args.node, str(ORT_BENCH), str(files["onnx"]), str(files["input"]),
                       "--threads", str(args.threads), "--runs", str(args.runs), "--output",
                       str(out_file)], peak, cwd=str(work), env=env, timeout=args.timeout)
    rec = step_record(res, "ort")
    info = last_json_line(res.stdout)
    if "error" in rec or info is None or "median_ms" not in info:
        rec.setdefault("error", "ort: no timing in its output")
        return rec
    rec["median_ms"] = info["median_ms"]
    rec["ort_version"] = info.get("ort_version")
    # ONNX Runtime against PyTorch checks the export itself, apart from tessel.
    rel, err = rel_l2(out_file, files["expected"])
    rec["rel_l2"] = rel if err is None else None
    if err:
        rec["check_error"] = err
    return rec


# ---------------------------------------------------------------------------------------------
# ONNX Runtime availability.

def ort_available(args):
    """(usable, why not). Tries `npm ci --prefix bench/ort` once when the package is missing."""
    if args.no_latency:
        return False, "--no-latency"
    node = shutil.which(args.node)
    if node is None:
        return False, f"Node.js not found ({args.node})"
    args.node = node
    if not ORT_BENCH.is_file():
        return False, f"missing {ORT_BENCH}"
    if ORT_MODULE.is_dir():
        return True, None
    npm = shutil.which("npm")
    if npm is None:
        return False, "onnxruntime-node not installed and npm not found"
    print("run_zoo: onnxruntime-node is not installed; trying `npm ci --prefix bench/ort` once",
          file=sys.stderr, flush=True)
    try:
        r = subprocess.run([npm, "ci", "--prefix", str(ORT_DIR)], capture_output=True, text=True,
                           timeout=300, start_new_session=True)
        failed = r.returncode != 0
        why = (r.stderr.strip().splitlines() or ["(no message)"])[-1] if failed else None
    except (OSError, subprocess.TimeoutExpired) as err:
        failed, why = True, str(err)
    if failed or not ORT_MODULE.is_dir():
        return False, f"`npm ci --prefix bench/ort` failed: {why}"
    return True, None


# ---------------------------------------------------------------------------------------------
# Records and markdown.

def load_records(path):
    """model -> its latest record in the JSON-lines file."""
    records = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut short by an interrupted run
            if "model" in rec:
                records[rec["model"]] = rec
    return records


def brief_error(text):
    """An error line made short enough for a table cell without losing the why: the model's
    path is dropped, and so are the node-name lists after each unsupported op type."""
    text = re.sub(r"tessel: error: \S+?\.(onnx|tsl): ", "error: ", text)
    if "unsupported ops" in text:
        text = re.sub(r" \([^()]*\)", "", text)
    return text


def rel_cell(step):
    if step is None:
        return "not run"
    if step.get("rel_l2") is not None:
        text = f"{step['rel_l2']:.2e}"
        return text if step.get("ok") else f"**FAIL** {text}"
    return "**FAIL** " + short(brief_error(step.get("error", "?")), 160)


def latency_cells(rec):
    art = (rec.get("artifact") or {}).get("median_ms")
    ort = rec.get("ort") or {}
    ort_ms = ort.get("median_ms")
    art_text = f"{art:.3f}" if art is not None else "n/a"
    if ort_ms is not None:
        ort_text = f"{ort_ms:.3f}"
    elif ort.get("error"):
        ort_text = "n/a (" + short(ort["error"], 60) + ")"
    else:
        ort_text = "n/a"
    ratio = f"{art / ort_ms:.2f}x" if art is not None and ort_ms else "–"
    # ONNX Runtime against PyTorch checks the export itself, independently of tessel.
    ort_rel = f"{ort['rel_l2']:.2e}" if ort.get("rel_l2") is not None else "–"
    return [art_text, ort_text, ratio, ort_rel]


def times_cell(rec):
    parts = []
    jit = rec.get("jit") or {}
    if "seconds" in jit:
        parts.append(f"JIT {jit['seconds']:.1f}")
    art = rec.get("artifact") or {}
    if "compile" in art:
        parts.append(f"compile {art['compile']['seconds']:.1f}")
    if "run" in art:
        parts.append(f"run {art['run']['seconds']:.1f}")
    return ", ".join(parts) or "–"


def render(args, index, names, records, header):
    with_latency = any("ort" in records.get(n, {}) or
                       (records.get(n, {}).get("artifact") or {}).get("median_ms") is not None
                       for n in names)
    cols = ["model", "source", "opset", "nodes", "JIT rel L2", "artifact rel L2",
            "PyTorch fp32 rel L2"]
    if with_latency:
        cols += ["tessel artifact ms", "ORT ms", "tessel / ORT", "ORT rel L2"]
    cols += ["wall s"]
    lines = ["# Model zoo: tessel on real PyTorch-exported models", ""]
    lines += [f"- {k}: {v}" for k, v in header]
    lines += [""]

    exported = [n for n in names if index.get(n, {}).get("status") == "ok"]
    ran = [n for n in names if n in records and records[n].get("status") == "ran"]
    jit_ok = sum(1 for n in ran if (records[n].get("jit") or {}).get("ok"))
    art_ok = sum(1 for n in ran if (records[n].get("artifact") or {}).get("ok"))
    m = len(names)
    lines += [f"**Summary: {jit_ok}/{m} correct through JIT (`tessel run model.onnx`), {art_ok}/{m} "
              f"correct through the artifact (`tessel compile` + `tessel run model.tsl`)**; "
              f"correct = rel L2 < {REL_L2_LIMIT:g} against PyTorch's float64 output. "
              f"{len(exported)}/{m} models exported to ONNX, {len(ran)} of them run here"
              + (f" ({len(exported) - len(ran)} not run yet)" if len(ran) < len(exported) else "")
              + ".", ""]

    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for n in names:
        entry = index.get(n, {"name": n})
        source = short(entry.get("source", "?"), 70)
        opset = str(entry.get("opset", "?"))
        nodes = str(entry.get("nodes", "–"))
        rec = records.get(n)
        fp32 = entry.get("torch_fp32_rel_l2")
        fp32_cell = f"{fp32:.1e}" if fp32 is not None else "–"
        if entry.get("status") != "ok":
            why = (entry.get("error") or "not in the index").splitlines()[0]
            cells = [f"export failed: {short(why, 120)}", "–", "–"]
            extra = ["–"] * 4 if with_latency else []
            lines.append("| " + " | ".join([md_escape(n), source, opset, nodes] + cells + extra
                                           + ["–"]) + " |")
            continue
        if rec is None:
            cells = ["not run", "not run", fp32_cell] + (["–"] * 4 if with_latency else []) + ["–"]
        else:
            cells = [rel_cell(rec.get("jit")), rel_cell(rec.get("artifact")), fp32_cell]
            if with_latency:
                cells += latency_cells(rec)
            cells.append(times_cell(rec))
        lines.append("| " + " | ".join([md_escape(n), source, opset, nodes] + cells) + " |")

    lines += ["", "## Method", "",
              "Models come from `scripts/export_zoo.py` (random weights with fixed seeds; BatchNorm "
              "statistics calibrated on random batches; the expected output is PyTorch's, computed "
              "in float64; one input and one output per model; `source` says where the "
              "architecture comes from). `PyTorch fp32 rel L2` is PyTorch's own float32 output "
              "against its float64 one: roughly the floor a float32 runtime can reach on that "
              "model, for judging a result near the limit. JIT: `tessel run NAME.onnx --input NAME.input.npy --json "
              f"--repeat 1 --threads {args.threads}`. Artifact: `tessel compile NAME.onnx -o "
              "NAME.tsl --json` in an empty directory with no `--db` (every task gets its default, "
              "untuned schedule), then `tessel run NAME.tsl` on the same input. rel L2 = "
              "||out - expected|| / ||expected|| in float64 over the first output; a failure shows "
              "the failing step and the last line of tessel's stderr. Every process runs alone "
              f"with `HL_NUM_THREADS={args.threads}` under a {args.timeout:.0f} s limit. "
              "Latency (when shown): the artifact's median over `--repeat "
              f"{args.runs}` timed runs after one warm-up, and ONNX Runtime's median from "
              f"`node bench/ort/ort_bench.js MODEL INPUT --threads {args.threads} --runs "
              f"{args.runs}` (CPU execution provider), one process each, not interleaved: "
              "indicative only, use bench/bench_e2e.py for careful numbers. `ORT rel L2` is "
              "ONNX Runtime's output against the same expected.npy: a check of the export "
              "itself, apart from tessel. `wall s` is each "
              "step's wall time, including process start, JIT compilation and loading.", ""]
    return "\n".join(lines)


def repo_commit():
    try:
        r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


# ---------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description="Run the model zoo through tessel (JIT and artifact).")
    p.add_argument("--zoo-dir", required=True, type=Path,
                   help="directory written by scripts/export_zoo.py (with zoo_index.json)")
    p.add_argument("--models", help="comma-separated model names (default: every model in the index)")
    p.add_argument("--tessel", default="build/bin/tessel", type=Path, help="tessel binary")
    p.add_argument("--out", default=Path("bench/results/zoo.md"), type=Path,
                   help="markdown table to write")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds before one tessel (or ORT) process is killed")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/tessel_zoo"),
                   help="artifacts and outputs, one subdirectory per model")
    p.add_argument("--jsonl", type=Path,
                   help="results, one JSON line per model (default: WORK_DIR/results.jsonl)")
    p.add_argument("--force", action="store_true", help="run models already in --jsonl again")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=20, help="timed runs for the latency columns")
    p.add_argument("--no-latency", action="store_true", help="skip the ORT and tessel timings")
    p.add_argument("--node", default="node", help="Node.js binary for bench/ort/ort_bench.js")
    p.add_argument("--require-correct", action="store_true",
                   help="exit 1 unless every model listed is correct through both paths (for CTest)")
    args = p.parse_args(argv)
    if args.threads < 1 or args.runs < 1:
        p.error("--threads and --runs must be positive")
    return args


def main(argv):
    args = parse_args(argv)
    command = " ".join(shlex.quote(a) for a in [sys.argv[0]] + argv)
    cwd0 = Path.cwd()
    args.zoo_dir = args.zoo_dir.resolve()
    args.work_dir = args.work_dir.resolve()
    args.tessel = args.tessel.resolve()
    args.jsonl = (args.jsonl or args.work_dir / "results.jsonl").resolve()
    out = args.out if args.out.is_absolute() else cwd0 / args.out

    index_path = args.zoo_dir / "zoo_index.json"
    if not index_path.is_file():
        print(f"run_zoo: no {index_path}; export the zoo first (scripts/export_zoo.py)",
              file=sys.stderr)
        return 2
    index_list = json.loads(index_path.read_text()).get("models", [])
    index = {e["name"]: e for e in index_list}
    if args.models:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        unknown = [n for n in names if n not in index]
        if unknown:
            print(f"run_zoo: not in {index_path}: {', '.join(unknown)}", file=sys.stderr)
            return 2
    else:
        names = [e["name"] for e in index_list]

    args.work_dir.mkdir(parents=True, exist_ok=True)
    args.jsonl.parent.mkdir(parents=True, exist_ok=True)
    records = load_records(args.jsonl)
    todo = [n for n in names if args.force or n not in records]
    latency, no_latency_why = ort_available(args) if todo else (False, "nothing to run")
    if todo and not latency:
        print(f"run_zoo: ONNX Runtime column n/a: {no_latency_why}", file=sys.stderr)
    peak = Peak()
    env = dict(os.environ)
    # Default schedules size their parallelism from HL_NUM_THREADS: compile for the threads used.
    env["HL_NUM_THREADS"] = str(args.threads)

    start_all = time.monotonic()
    for i, name in enumerate(names, 1):
        prefix = f"[{i}/{len(names)}] {name}"
        if name not in todo:
            print(f"{prefix}: in {args.jsonl.name}, skipped", flush=True)
            continue
        entry = index[name]
        rec = {"model": name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"), "opset": entry.get("opset"), "nodes": entry.get("nodes"),
            "source": entry.get("source"), "threads": args.threads}
        files = {"onnx": args.zoo_dir / f"{name}.onnx",
                 "input": args.zoo_dir / f"{name}.input.npy",
                 "expected": args.zoo_dir / f"{name}.expected.npy"}
        missing = [p.name for p in files.values() if not p.is_file()]
        if entry.get("status") != "ok" or missing:
            rec["status"] = "not_exported"
            rec["error"] = ((entry.get("error") or "").splitlines() or
                            [f"missing {', '.join(missing)}"])[0]
            print(f"{prefix}: not exported: {rec['error']}", flush=True)
        else:
            rec["status"] = "ran"
            try:
                rec["tessel_mtime"] = datetime.datetime.fromtimestamp(
                    args.tessel.stat().st_mtime).isoformat(timespec="seconds")
            except OSError:
                pass
            work = args.work_dir / name
            work.mkdir(parents=True, exist_ok=True)
            rec["jit"] = run_jit(args, name, files, work, peak, env)
            rec["artifact"] = run_artifact(args, name, files, work, peak, env, latency)
            if latency:
                rec["ort"] = run_ort(args, files, work, peak, env)
            print(f"{prefix}: JIT {rel_cell(rec['jit'])} ({rec['jit'].get('seconds', 0):.1f} s); "
                  f"artifact {rel_cell(rec['artifact'])}", flush=True)
        with open(args.jsonl, "a") as f:
            f.write(json.dumps(rec) + "\n")
        records[name] = rec

    header = [
        ("date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("host", f"{machine_name()} ({os.cpu_count()} logical CPUs, {socket.gethostname()})"),
        ("command", f"`{command}` (in `{cwd0}`)"),
        ("tessel", f"`{args.tessel}` (repository at {repo_commit()})"),
        ("zoo", f"`{args.zoo_dir}` ({len(names)} model(s))"),
        ("results", f"`{args.jsonl}`"),
    ]
    text = render(args, index, names, records, header)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    summary = [l for l in text.splitlines() if l.startswith("**Summary")]
    print(summary[0] if summary else "", flush=True)
    print(f"run_zoo: wrote {out} ({time.monotonic() - start_all:.0f} s)", flush=True)
    if args.require_correct:
        wrong = [n for n in names if not all(records.get(n, {}).get(path, {}).get("ok")
                                             for path in ("jit", "artifact"))]
        if wrong:
            print(f"run_zoo: not correct through both paths: {', '.join(wrong)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
