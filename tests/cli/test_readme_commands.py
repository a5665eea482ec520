#!/usr/bin/env python3
"""Every `tessel ...` command line README.md prints runs as printed (issue 26: README's own
`tessel bench conv` example had broken unnoticed).

usage: test_readme_commands.py PATH/TO/tessel SOURCE_DIR

Each indented README line that starts with `tessel ` is a synopsis: optional [groups] are
left out, `a|b|c` alternatives of a subcommand each become a command, and the placeholders
(model.onnx, model.tsl, DIR, ...) are bound to the bundled example and files made here.
Sizes stay as printed; `--trials` counts above 8 become 8, to keep the run short. A command
passes when it exits 0 and prints no "error:". Commands that need what this machine may lack
(a GPU, a PostgreSQL server with workers) are listed in NEEDS with where they are tested
instead; without a GPU, the GPU commands must end in the one-line error that says so. A
README command this script cannot bind fails the test, so a new documented command gets a
binding here.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Extra arguments a subcommand needs that its synopsis line leaves to the text around it.
REQUIRED_ARGS = {
    ("db", "best"): ["--workload", "{workload}"],
    ("db", "import"): ["{log}"],
    ("db", "prune"): ["--failed"],
}

# Commands that cannot run on every CI machine: a regular expression on the bound command,
# and why / where they are tested instead.
NEEDS = [
    (r"--remote\b", "a PostgreSQL server and running workers: tests/cli/test_remote_tune.sh"),
    (r"^tessel worker\b", "a PostgreSQL server and a coordinator: tests/cli/test_remote_tune.sh"),
]
# GPU commands: without a GPU they must say so in one line.
NEEDS_GPU = [r"^tessel tune .*--target cuda", r"^tessel bench .*--target cuda"]
NO_GPU_ERROR = re.compile(r"tessel: error: .*(CUDA|GPU|cuda)")


def readme_commands(readme):
    """The README's indented `tessel ` lines, comments cut off."""
    lines = []
    for line in open(readme, encoding="utf-8"):
        m = re.match(r"^ {4}(tessel .*)$", line.rstrip("\n"))
        if m:
            lines.append(re.sub(r"\s+#.*$", "", m.group(1)).strip())
    return lines


def drop_optional(text):
    while True:
        shorter = re.sub(r"\[[^\[\]]*\]", "", text)
        if shorter == text:
            return re.sub(r"\s+", " ", text).strip()
        text = shorter


def split_words(text):
    """Words, a double-quoted one kept whole (--target "cuda -arch=sm_90")."""
    return [a or b for a, b in re.findall(r'"([^"]*)"|(\S+)', text)]


def expand(synopsis):
    """One command per alternative of each `a|b` word (bindings of placeholders later)."""
    words = split_words(drop_optional(synopsis))
    commands = [[]]
    for w in words:
        options = w.split("|") if "|" in w and not w.startswith("postgres") else [w]
        commands = [c + [o] for c in commands for o in options]
    return commands


def bind(words, files):
    bound = []
    for i, w in enumerate(words):
        prev = words[i - 1] if i else ""
        if prev == "--trials" and w.isdigit():
            w = str(min(int(w), 8))
        w = {
            "model.onnx": files["model"],
            "model.tsl": files["artifact"],
            "report.html": os.path.join(files["tmp"], "report.html"),
            "DIR": os.path.join(files["tmp"], "ptx"),
            "FROM": files["db"],
            "TO": os.path.join(files["tmp"], "copy.db"),
            "WORKLOAD_KEY": files["workload"],
            "tessel.db": files["db"],
        }.get(w, w)
        bound.append(w)
    # A cuda artifact of its own: the host artifact stays for the commands that run it.
    if bound[1] == "compile" and "cuda" in bound and files["artifact"] in bound:
        bound[bound.index(files["artifact"])] = os.path.join(files["tmp"], "cuda.tsl")
    key = tuple(bound[1:3])
    for extra in REQUIRED_ARGS.get(key, []):
        bound.append(extra.format(**files))
    return bound


def run(tessel, words, cwd):
    proc = subprocess.run([tessel] + words[1:], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=900)
    return proc.returncode, proc.stdout


def have_gpu():
    return shutil.which("nvidia-smi") is not None and subprocess.run(
        ["nvidia-smi", "-L"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def prepare(tessel, src, tmp):
    """A tuned database, its log, an artifact, and one workload key, for the commands to use."""
    files = {"tmp": tmp, "model": os.path.join(src, "examples/models/tiny_cnn.onnx"),
             "db": os.path.join(tmp, "tessel.db"), "artifact": os.path.join(tmp, "model.tsl"),
             "log": os.path.join(tmp, "tuning.jsonl")}
    for step in (["tune", files["model"], "--trials", "8", "--db", files["db"]],
                 ["compile", files["model"], "--db", files["db"], "-o", files["artifact"]],
                 ["db", "export", "--db", files["db"], "-o", files["log"]]):
        code, out = run(tessel, ["tessel"] + step, tmp)
        if code != 0:
            sys.exit(f"setup failed: tessel {' '.join(step)}\n{out}")
    first = open(files["log"], encoding="utf-8").readline()
    files["workload"] = json.loads(first)["workload_key"]
    return files


def main():
    tessel, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    gpu = have_gpu()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        files = prepare(tessel, src, tmp)
        for synopsis in readme_commands(os.path.join(src, "README.md")):
            for words in expand(synopsis):
                words = bind(words, files)
                shown = " ".join(words)
                need = next((why for pattern, why in NEEDS if re.search(pattern, shown)), None)
                if need:
                    print(f"skip {shown}  (needs {need})")
                    continue
                code, out = run(tessel, words, tmp)
                if any(re.search(p, shown) for p in NEEDS_GPU) and not gpu:
                    ok = code == 1 and NO_GPU_ERROR.search(out) is not None
                    print(f"{'ok  ' if ok else 'FAIL'} {shown}  (no GPU here: {out.strip().splitlines()[-1:]})")
                else:
                    ok = code == 0 and "error:" not in out
                    print(f"{'ok  ' if ok else 'FAIL'} {shown}")
                if not ok:
                    failures += 1
                    print("\n".join("    " + l for l in out.strip().splitlines()[-8:]))
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
