#!/usr/bin/env python3
"""Checks that every #include "module/..." points down the module order of DESIGN.md.

usage: check_layering.py [SOURCE_DIR]   exits 1 and lists each include that points upwards.

Module order, bottom to top: base -> tensor -> graph -> compute -> schedule -> search ->
codegen -> task -> executor / compiler -> tuner -> peers / report -> tools. Side branches
stay low: tuning_db links only base; host (plain C++ ops) links graph/ir and graph/infer; the
deploy runtime links base, tensor, those two graph folders and host (a program that runs
artifacts links no compiler). Inside graph/, the sub-layers ir -> infer -> onnx / fusion
-> passes hold the same way, but for the arrows listed in KEPT.
"""
import pathlib
import re
import sys

CHAIN = ["base", "tensor", "graph", "compute", "schedule", "search", "codegen", "task"]
ALLOWED = {m: set(CHAIN[:i]) for i, m in enumerate(CHAIN)}
ALLOWED["tuning_db"] = {"base"}
# host/ runs ops on host tensors with plain C++ (the deploy runtime's host steps, the
# executor's host ops): it may read graph/ir and graph/infer (tessel_graph_core), no more.
ALLOWED["host"] = {"base", "tensor", "graph"}
ALLOWED["deploy"] = {"base", "tensor", "graph", "host"}
ALLOWED["executor"] = set(CHAIN) | {"host"}
ALLOWED["compiler"] = set(CHAIN) | {"tuning_db", "deploy", "host"}
ALLOWED["tuner"] = ALLOWED["compiler"] | {"compiler", "executor"}
ALLOWED["peers"] = ALLOWED["tuner"] | {"tuner"}
ALLOWED["report"] = ALLOWED["tuner"] | {"tuner"}
ALLOWED["tools"] = set(ALLOWED) | {"peers", "report"}

GRAPH_CHAIN = {"ir": set(), "infer": {"ir"}, "onnx": {"ir", "infer"}, "fusion": {"ir", "infer"},
               "passes": {"ir", "infer", "onnx", "fusion"}}

# Arrows kept on purpose. tessel's internal ops and layouts (TesselConvNHWC, convs over a
# blocked weight, products over a B in panels, the Winograd transforms) are declared by the pass
# that introduces them, next to the rewrite; inference and FLOP counting read those declarations.
KEPT = {
    ("graph/infer/infer_nn.cpp", "graph/passes/block_conv_weights.h"),
    ("graph/infer/infer_nn.cpp", "graph/passes/block_nhwc_conv_weights.h"),
    ("graph/infer/infer_nn.cpp", "graph/passes/channels_last_conv.h"),
    ("graph/infer/infer_nn.cpp", "graph/passes/panel_matmul_weights.h"),
    ("graph/infer/infer_winograd.cpp", "graph/passes/winograd_conv.h"),
    ("graph/infer/model_stats.cpp", "graph/passes/block_conv_weights.h"),
    ("graph/infer/model_stats.cpp", "graph/passes/block_nhwc_conv_weights.h"),
    ("graph/infer/model_stats.cpp", "graph/passes/channels_last_conv.h"),
}

# Modules that link tessel_graph_core, not tessel_graph (no ONNX import in the deploy runtime).
GRAPH_CORE_ONLY = {"host", "deploy"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def violations(root):
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".c") or "build" in path.relative_to(root).parts[:1]:
            continue
        parts = path.relative_to(root).parts
        module = parts[0]
        if module not in ALLOWED:
            continue  # tests/, bench/, examples/ sit on top of everything
        for included in INCLUDE.findall(path.read_text(errors="replace")):
            if (str(path.relative_to(root)), included) in KEPT:
                continue
            target = included.split("/")
            if len(target) < 2 or target[0] == module and module != "graph":
                continue
            if target[0] != module:
                if target[0] in ALLOWED and target[0] not in ALLOWED[module]:
                    yield f"{path.relative_to(root)}: includes {included} ({module} is below {target[0]})"
                elif module in GRAPH_CORE_ONLY and target[0] == "graph" and target[1] not in ("ir", "infer"):
                    yield f"{path.relative_to(root)}: includes {included} ({module} links only graph/ir and graph/infer)"
            elif len(parts) > 2 and len(target) > 2 and parts[1] in GRAPH_CHAIN:
                if target[1] != parts[1] and target[1] not in GRAPH_CHAIN[parts[1]]:
                    yield f"{path.relative_to(root)}: includes {included} (graph/{parts[1]} is below graph/{target[1]})"


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = list(violations(root))
    for line in found:
        print(line)
    print(f"{len(found)} include(s) against the module order")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
