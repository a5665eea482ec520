#!/usr/bin/python3
"""End-to-end benchmark: tessel (untuned and tuned artifacts) against ONNX Runtime's CPU provider.

For each model: `tessel compile` an untuned artifact (in an empty directory, no --db) and, with --db,
a tuned one; then time ONNX Runtime (bench/ort/ort_bench.js), tessel untuned and tessel tuned in
interleaved rounds, a fresh process per run, rotating the order each round. Each process runs under
GNU time for its peak resident memory. Outputs are checked against ONNX Runtime's and against the
model's PyTorch expected.npy. Prints markdown (and writes it with --out).

usage: bench/bench_e2e.py --models-dir DIR [--models resnet18,mobilenet_v2,transformer_encoder]
           [--db tessel.db] [--tessel build/bin/tessel] [--threads 2] [--rounds 5] [--runs 20]
           [--out bench/results/e2e.md] [--work-dir /tmp/tessel_e2e]
"""
import argparse
import datetime
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ORT_BENCH = HERE / "ort" / "ort_bench.js"
GNU_TIME = "/usr/bin/time"
REL_L2_LIMIT = 1e-4
ORT_WARMUP = 5

ORT = "ort"
UNTUNED = "untuned"
TUNED = "tuned"
LABELS = {ORT: "ONNX Runtime", UNTUNED: "tessel untuned", TUNED: "tessel tuned"}


# ---------------------------------------------------------------------------------------------
# Running one command: stdout/stderr captured, peak RSS of that process, a time limit that ends
# the whole process group the command started (and nothing else).

class Peak:
    """How a run's peak resident memory is measured: GNU time if it works here, else os.wait4."""

    def __init__(self):
        self.gnu_time = self._gnu_time_works()

    @staticmethod
    def _gnu_time_works():
        if not os.access(GNU_TIME, os.X_OK):
            return False
        with tempfile.NamedTemporaryFile("r", suffix=".time") as f:
            try:
                r = subprocess.run([GNU_TIME, "-f", "%M", "-o", f.name, "true"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                return False
            return r.returncode == 0 and _last_int(Path(f.name).read_text()) is not None

    def describe(self):
        if self.gnu_time:
            return f"`{GNU_TIME} -f %M` (GNU time: the process's maximum resident set size)"
        return ("`os.wait4` rusage `ru_maxrss` of each process (GNU time not found at "
                f"{GNU_TIME}; `apt-get install -y time` to use it)")


def _last_int(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.isdigit():
            return int(line)
    return None


class RunResult:
    def __init__(self, rc, stdout, stderr, peak_kb, seconds, timed_out=False):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.peak_kb = peak_kb
        self.seconds = seconds
        self.timed_out = timed_out

    def error(self, what):
        """One line saying why the command failed, for a table cell."""
        if self.timed_out:
            return f"{what}: timed out after {self.seconds:.0f} s"
        lines = [l.strip() for l in self.stderr.splitlines() if l.strip() and not l.startswith("note:")]
        reason = lines[-1] if lines else "(no message)"
        if self.rc < 0:
            try:
                status = f"killed by {signal.Signals(-self.rc).name}"
            except ValueError:
                status = f"killed by signal {-self.rc}"
        else:
            status = f"exit {self.rc}"
        return f"{what} {status}: {reason}"


def run_command(argv, peak, cwd=None, env=None, timeout=None):
    """Runs argv (a fresh process) and returns a RunResult with its peak RSS in KB."""
    start = _now()
    with tempfile.TemporaryDirectory(prefix="bench_e2e_") as tmp:
        out_path = Path(tmp) / "stdout"
        err_path = Path(tmp) / "stderr"
        time_path = Path(tmp) / "time"
        full = [GNU_TIME, "-f", "%M", "-o", str(time_path)] + argv if peak.gnu_time else argv
        timed_out = False
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(full, cwd=cwd, env=env, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            if peak.gnu_time:
                try:
                    rc = proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    os.killpg(proc.pid, signal.SIGKILL)
                    rc = proc.wait()
                rusage_kb = None
            else:
                # os.wait4 gives this child's own rusage; a time limit needs a timer around it.
                timer = None
                if timeout:
                    def kill():
                        nonlocal timed_out
                        timed_out = True
                        try:
                            os.killpg(proc.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    timer = threading.Timer(timeout, kill)
                    timer.start()
                _, status, usage = os.wait4(proc.pid, 0)
                if timer:
                    timer.cancel()
                proc.returncode = rc = os.waitstatus_to_exitcode(status)
                rusage_kb = usage.ru_maxrss  # Linux: kilobytes
        seconds = _now() - start
        stdout = out_path.read_text(errors="replace")
        stderr = err_path.read_text(errors="replace")
        if peak.gnu_time:
            time_text = time_path.read_text(errors="replace") if time_path.exists() else ""
            peak_kb = _last_int(time_text)
            # GNU time reports the child's own status as its exit code; a signal shows in its file.
            for line in time_text.splitlines():
                if line.startswith("Command terminated by signal"):
                    try:
                        rc = -int(line.split()[-1])
                    except ValueError:
                        pass
        else:
            peak_kb = rusage_kb
    return RunResult(rc, stdout, stderr, peak_kb, seconds, timed_out)


def _now():
    return time.monotonic()


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


# ---------------------------------------------------------------------------------------------
# Output checks (same formula as bench/ort/compare_npy.py: ||a-b|| / ||b||, in float64).

def rel_l2(a_path, b_path):
    try:
        a = np.load(a_path, allow_pickle=False).astype(np.float64)
        b = np.load(b_path, allow_pickle=False).astype(np.float64)
    except (OSError, ValueError) as err:
        return None, f"unreadable: {err}"
    if a.shape != b.shape:
        return None, f"shape {a.shape} vs {b.shape}"
    diff = np.linalg.norm((a - b).ravel())
    ref = np.linalg.norm(b.ravel())
    rel = diff / ref if ref > 0 else (0.0 if diff == 0 else float("inf"))
    return float(rel), None


# ---------------------------------------------------------------------------------------------
# Per-model state.

class Config:
    def __init__(self, name):
        self.name = name
        self.error = None          # set when the config cannot run at all (compile failed, no --db)
        self.artifact = None
        self.compile_s = None
        self.compile_info = None   # compile --json summary
        self.medians = []          # per successful round
        self.peaks_kb = []
        self.round_errors = []
        self.outputs = {}          # round index -> output .npy, successful rounds only
        self.ort_version = None

    def runnable(self):
        return self.error is None


def compile_artifact(args, model, config, work, peak, env):
    onnx = args.models_dir / f"{model}.onnx"
    artifact = work / f"{config.name}.tsl"
    if config.name == UNTUNED:
        # An empty directory: no ./tessel.db for compile to pick up, no --db, no --log.
        cwd = work / "untuned_cwd"
        if cwd.exists():
            shutil.rmtree(cwd)
        cwd.mkdir(parents=True)
        argv = [args.tessel, "compile", str(onnx), "-o", str(artifact), "--json"]
    else:
        cwd = work
        argv = [args.tessel, "compile", str(onnx), "--db", str(args.db), "-o", str(artifact), "--json"]
        if args.select_in_graph is not None:
            argv += ["--select-in-graph", str(args.select_in_graph)]
        argv += ["--threads", str(args.threads)]
    res = run_command(argv, peak, cwd=str(cwd), env=env, timeout=args.timeout)
    config.compile_s = res.seconds
    info = last_json_line(res.stdout)
    if res.rc != 0 or res.timed_out or info is None:
        config.error = res.error("compile")
        return
    config.compile_info = info
    config.artifact = artifact


def run_round(args, model, config, round_index, work, peak, env):
    onnx = args.models_dir / f"{model}.onnx"
    inp = args.models_dir / f"{model}.input.npy"
    out_dir = work / f"round{round_index}" / config.name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    if config.name == ORT:
        out_file = out_dir / "output.npy"
        argv = [args.node, str(ORT_BENCH), str(onnx), str(inp), "--threads", str(args.threads),
                "--warmup", str(ORT_WARMUP), "--runs", str(args.runs), "--output", str(out_file)]
    else:
        argv = [args.tessel, "run", str(config.artifact), "--input", str(inp), "--threads",
                str(args.threads), "--warmup", str(ORT_WARMUP), "--repeat", str(args.runs), "--json", "-o",
                str(out_dir)]
    res = run_command(argv, peak, cwd=str(work), env=env, timeout=args.timeout)
    info = last_json_line(res.stdout)
    if res.rc != 0 or res.timed_out or info is None or "median_ms" not in info:
        config.round_errors.append(res.error("run"))
        return
    config.medians.append(float(info["median_ms"]))
    if res.peak_kb is not None:
        config.peaks_kb.append(res.peak_kb)
    if config.name == ORT:
        config.ort_version = info.get("ort_version")
        config.outputs[round_index] = out_file
    else:
        outs = info.get("outputs") or []
        if outs and outs[0].get("file"):
            f = Path(outs[0]["file"])
            config.outputs[round_index] = f if f.is_absolute() else work / f


# ---------------------------------------------------------------------------------------------
# Markdown.

def md_escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def short(text, limit=110):
    text = md_escape(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def fmt_ms(config):
    if config.error:
        return short(config.error)
    if not config.medians:
        return "FAILED: " + short(config.round_errors[-1] if config.round_errors else "no result")
    med = float(np.median(config.medians))
    lo, hi = min(config.medians), max(config.medians)
    cell = f"{med:.3f} ({lo:.3f}–{hi:.3f})" if len(config.medians) > 1 else f"{med:.3f}"
    if config.round_errors:
        cell += f"; {len(config.round_errors)} round(s) failed: {short(config.round_errors[-1], 60)}"
    return cell


def median_of(config):
    if config.error or not config.medians:
        return None
    return float(np.median(config.medians))


def fmt_ratio(num, den):
    if num is None or den is None or den <= 0:
        return "–"
    return f"{num / den:.2f}x"


def fmt_peak(config):
    if config.error or not config.peaks_kb:
        return "–"
    return f"{max(config.peaks_kb) / 1024:.0f}"


def worst_rel(config, refs):
    """Max rel L2 of this config's outputs against refs: one path, or {round: path} (a round without
    its own reference uses any other round's). Returns (text, failed)."""
    if config.error or not config.outputs:
        return "–", False
    if isinstance(refs, dict) and not refs:
        return "– (no ORT output)", False
    worst = None
    for r, out in sorted(config.outputs.items()):
        ref = refs.get(r, next(iter(refs.values()))) if isinstance(refs, dict) else refs
        rel, err = rel_l2(out, ref)
        if rel is None:
            return f"FAIL ({short(err, 50)})", True
        worst = rel if worst is None else max(worst, rel)
    return f"{worst:.2e}", False


def tasks_cell(configs):
    parts = []
    for name in (UNTUNED, TUNED):
        c = configs.get(name)
        if c is None or c.compile_info is None:
            continue
        tuned = c.compile_info.get("tuned_tasks")
        default = c.compile_info.get("default_tasks")
        if tuned is None or default is None:
            parts.append(f"{name}: ?")
        else:
            parts.append(f"{name}: {tuned}/{tuned + default}")
    return "; ".join(parts) if parts else "–"


def machine_name():
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (lscpu failed)"
    for line in text.splitlines():
        if line.startswith("Model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def loadavg():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def render(args, header, rows, checks, method):
    lines = ["# End-to-end: tessel vs ONNX Runtime", ""]
    lines += [f"- {k}: {v}" for k, v in header]
    lines += ["",
              "| model | ONNX Runtime ms | tessel untuned ms | tessel tuned ms | tuned / ORT | untuned / ORT "
              "| ORT peak MB | tessel peak MB | rel L2 vs ORT (untuned, tuned) | tasks with records |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", "Milliseconds: median over rounds of each round's median (min–max of the round medians). "
              "Ratios above 1 mean tessel is slower. tessel peak MB: untuned / tuned.", ""]
    lines += ["Output checks and compile times:", ""] + [f"- {c}" for c in checks]
    lines += ["", "## Method", "", method, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description="End-to-end benchmark of tessel artifacts against ONNX Runtime.")
    p.add_argument("--models-dir", required=True, type=Path,
                   help="directory with NAME.onnx, NAME.input.npy, NAME.expected.npy (scripts/export_models.py)")
    p.add_argument("--models", default="resnet18,mobilenet_v2,transformer_encoder",
                   help="comma-separated model names")
    p.add_argument("--db", type=Path, help="tuning database for the tuned artifact (no tuned column without it)")
    p.add_argument("--tessel", default="build/bin/tessel", help="tessel binary")
    p.add_argument("--node", default="node", help="Node.js binary for bench/ort/ort_bench.js")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--select-in-graph", type=int, default=None, metavar="K",
                   help="compile the tuned artifact with `tessel compile --select-in-graph K` (default: compile's "
                        "own, the fastest record and the built-in of each task timed in the model; 0: the fastest "
                        "records alone)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=20, help="timed runs per process")
    p.add_argument("--out", type=Path, help="also write the markdown here")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/tessel_e2e"),
                   help="artifacts and outputs go here (one subdirectory per model)")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="seconds before one compile or run process is killed")
    args = p.parse_args(argv)
    if args.threads < 1 or args.rounds < 1 or args.runs < 1:
        p.error("--threads, --rounds and --runs must be positive")
    return args


def main(argv):
    args = parse_args(argv)
    command = " ".join(shlex.quote(a) for a in [sys.argv[0]] + argv)
    cwd0 = Path.cwd()
    args.models_dir = args.models_dir.resolve()
    args.work_dir = args.work_dir.resolve()
    if args.db is not None:
        args.db = args.db.resolve()
    tessel = shutil.which(args.tessel) if os.sep not in args.tessel else None
    args.tessel = tessel or str((cwd0 / args.tessel).resolve())
    node = shutil.which(args.node)
    args.node = node or args.node
    models = [m.strip() for m in args.models.split(",") if m.strip()]

    peak = Peak()
    env = dict(os.environ)
    # Default schedules size their parallelism from HL_NUM_THREADS (codegen/target.cpp): compile
    # for the thread count that is timed.
    env["HL_NUM_THREADS"] = str(args.threads)

    problems = []
    if not Path(args.tessel).is_file():
        problems.append(f"tessel binary not found: {args.tessel}")
    if node is None:
        problems.append(f"Node.js not found: {args.node}")
    if not ORT_BENCH.is_file():
        problems.append(f"missing {ORT_BENCH}")
    if args.db is not None and not args.db.is_file():
        problems.append(f"--db {args.db} does not exist")
    for p in problems:
        print(f"bench_e2e: warning: {p}", file=sys.stderr)

    load_before = loadavg()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    all_configs = {}
    checks = []
    for model in models:
        work = args.work_dir / model
        work.mkdir(parents=True, exist_ok=True)
        configs = {ORT: Config(ORT), UNTUNED: Config(UNTUNED), TUNED: Config(TUNED)}
        all_configs[model] = configs
        missing = [f for f in (f"{model}.onnx", f"{model}.input.npy")
                   if not (args.models_dir / f).is_file()]
        if missing:
            for c in configs.values():
                c.error = "missing " + ", ".join(missing)
            continue
        if node is None or not ORT_BENCH.is_file():
            configs[ORT].error = "ONNX Runtime peer unavailable (node or ort_bench.js missing)"
        if not Path(args.tessel).is_file():
            configs[UNTUNED].error = configs[TUNED].error = f"no tessel binary at {args.tessel}"
        if args.db is None:
            configs[TUNED].error = "no --db"
        elif not args.db.is_file():
            configs[TUNED].error = f"--db {args.db} not found"

        for name in (UNTUNED, TUNED):
            c = configs[name]
            if c.runnable():
                print(f"bench_e2e: {model}: compiling {name} ...", file=sys.stderr, flush=True)
                compile_artifact(args, model, c, work, peak, env)
                if c.error:
                    print(f"bench_e2e: {model}: {c.error}", file=sys.stderr)

        order = [n for n in (ORT, UNTUNED, TUNED) if configs[n].runnable()]
        for r in range(args.rounds):
            k = r % len(order) if order else 0
            for name in order[k:] + order[:k]:
                print(f"bench_e2e: {model}: round {r + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
                run_round(args, model, configs[name], r, work, peak, env)

    load_after = loadavg()

    rows = []
    measured = 0
    ort_version = None
    any_fail = False
    for model in models:
        configs = all_configs[model]
        ort, unt, tun = configs[ORT], configs[UNTUNED], configs[TUNED]
        ort_version = ort_version or ort.ort_version
        measured += sum(1 for c in configs.values() if median_of(c) is not None)
        ort_ms, unt_ms, tun_ms = median_of(ort), median_of(unt), median_of(tun)
        # tessel vs ONNX Runtime: each round's output against that round's ORT output (or the last).
        ort_refs = ort.outputs
        rel_cells = []
        for c in (unt, tun):
            text, fail = worst_rel(c, ort_refs)
            try:
                if float(text) > REL_L2_LIMIT:
                    text, fail = f"**FAIL** {text}", True
            except ValueError:
                pass
            any_fail |= fail
            rel_cells.append(text)
        peaks = f"{fmt_peak(unt)} / {fmt_peak(tun)}"
        rows.append([md_escape(model), fmt_ms(ort), fmt_ms(unt), fmt_ms(tun), fmt_ratio(tun_ms, ort_ms),
                     fmt_ratio(unt_ms, ort_ms), fmt_peak(ort), peaks, ", ".join(rel_cells),
                     md_escape(tasks_cell(configs))])
        expected = args.models_dir / f"{model}.expected.npy"
        if expected.is_file():
            parts = [f"{LABELS[c.name]} {worst_rel(c, expected)[0]}" for c in (ort, unt, tun) if c.outputs]
            exp_text = ("rel L2 vs PyTorch expected.npy: " + ", ".join(parts)) if parts else "no outputs"
        else:
            exp_text = f"no {expected.name}"
        comp = []
        for c in (unt, tun):
            if c.compile_s is not None:
                comp.append(f"{c.name} {c.compile_s:.1f} s" + (" (failed)" if c.compile_info is None else ""))
        comp_text = ("compile " + ", ".join(comp)) if comp else "no compile"
        checks.append(f"{md_escape(model)}: {exp_text}; {comp_text}")

    header = [
        ("date", date),
        ("machine", f"{machine_name()} ({os.cpu_count()} logical CPUs)"),
        ("command", f"`{command}` (in `{cwd0}`)"),
        ("tessel", f"`{args.tessel}`" + (f", tuning database `{args.db}`" if args.db else ", no --db")),
        ("threads", str(args.threads)),
        ("rounds x runs", f"{args.rounds} x {args.runs}"),
        ("load average (1/5/15 min) before / after", f"{load_before} / {load_after}"),
        ("ONNX Runtime", ort_version or "unknown (no successful run)"),
    ]
    method = (
        f"Each model is compiled twice with `tessel compile --json`: untuned in an empty directory with no "
        f"`--db` (every task gets its default schedule), tuned with `--db` (only when it is given)"
        + (f" and `--select-in-graph {args.select_in_graph}`" if args.select_in_graph is not None else "") + "; "
        f"`HL_NUM_THREADS={args.threads}` for both. \"tasks with records\" is compile's `tuned_tasks` out of "
        f"`tuned_tasks + default_tasks`. Timing runs in {args.rounds} interleaved rounds: each round starts a "
        f"fresh process for ONNX Runtime (`node bench/ort/ort_bench.js --threads {args.threads} --warmup "
        f"{ORT_WARMUP} --runs {args.runs}`: CPU execution provider, all graph optimizations, sequential) and for "
        f"each tessel artifact (`tessel run --threads {args.threads} --warmup {ORT_WARMUP} --repeat {args.runs}`: "
        f"the same {ORT_WARMUP} untimed warm-up runs, then {args.runs} timed), and the order rotates by one each round so that load changes on this "
        f"shared machine hit every configuration alike. A configuration's number is the median over rounds "
        f"of each process's own median (ORT interpolates between the middle two samples, tessel takes the "
        f"upper one); the range is the min and max of those round medians. Session creation, artifact loading "
        f"and warm-up are not timed. Peak memory is the maximum over rounds of each process's peak resident "
        f"set, measured with {peak.describe()}; it includes Node.js for ONNX Runtime. Outputs (the first graph "
        f"output) are compared with rel L2 = ||a-b|| / ||b|| in float64: each tessel run against ONNX Runtime's "
        f"output from the same round (worst round shown; over {REL_L2_LIMIT:g} is marked FAIL), and every "
        f"configuration against the PyTorch `expected.npy` from scripts/export_models.py."
    )
    text = render(args, header, rows, checks, method)
    print(text)
    if args.out:
        out = args.out if args.out.is_absolute() else cwd0 / args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"bench_e2e: wrote {out}", file=sys.stderr)
    if measured == 0:
        print("bench_e2e: nothing could be measured", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
