#!/usr/bin/env python3
"""Makes the sample runs of compare's tests from samples/pytorchjob-succeeded, each a run of the
same job on another day, under another name and uid, on other nodes:

  good   the healthy run, a day earlier
  good2  another healthy run (noise only: names, uid, nodes, times)
  bad    the run that failed: image tag v2.3.1-hf -> v2.4.0-hf, one env var added
         (NCCL_ALGO=Tree), and the loss is nan from step 60 to the end

Run from the repository root, then: go run ./samples/internal/mkmanifest compare/testdata/{good,good2,bad}
"""
import os, re, shutil, sys

SRC = "samples/pytorchjob-succeeded"
RUNS = {
    "good":  dict(day="2026-03-13", name="alpaca-sft-0313", uid="3c1f0b7e-5a51-4f4e-9d0e-0a9b51c0e313", nodes=("gpu-a100-4", "gpu-a100-5"), bad=False),
    "good2": dict(day="2026-03-12", name="alpaca-sft-0312", uid="7d2e41aa-0c6b-4b7a-8f51-2f6d2a0c0312", nodes=("gpu-a100-2", "gpu-a100-7"), bad=False),
    "bad":   dict(day="2026-03-14", name="alpaca-sft-0314", uid="9e5a7c10-3b2d-4c8e-a1f4-6b3d9e2f0314", nodes=("gpu-a100-1", "gpu-a100-3"), bad=True),
}
OLD_UID = "21b5a5ae-2a8a-59d0-9e3f-1c48906e532a"

def transform(text, run, path):
    text = text.replace("2026-03-14", run["day"]).replace(OLD_UID, run["uid"])
    text = text.replace("alpaca-sft", run["name"]).replace("/ckpt/" + run["name"], "/ckpt/alpaca-sft")
    text = text.replace("gpu-a100-0", "@N0@").replace("gpu-a100-1", "@N1@")
    text = text.replace("@N0@", run["nodes"][0]).replace("@N1@", run["nodes"][1])
    if run["bad"]:
        text = text.replace("trainer:v2.3.1-hf", "trainer:v2.4.0-hf")
        if path.endswith(".yaml") and ("PyTorchJob" in path or "/Pod/" in path):
            text = re.sub(r"(\n(\s*)- name: NCCL_DEBUG\n\s*value: INFO)", r"\1\n\2- name: NCCL_ALGO\n\2  value: Tree", text)
        if path.endswith("master-0/pytorch.log"):
            out, step = [], 0
            for line in text.split("\n"):
                m = re.search(r"\| (\d+)/135 \[", line)
                if m:
                    step = int(m.group(1))
                if step >= 60 and "{'loss':" in line:
                    line = re.sub(r"'loss': [0-9.]+, 'grad_norm': [0-9.]+", "'loss': nan, 'grad_norm': nan", line)
                out.append(line)
            text = "\n".join(out)
    return text

for name, run in RUNS.items():
    dst = os.path.join("compare/testdata", name)
    shutil.rmtree(dst, ignore_errors=True)
    for root, _, files in os.walk(SRC):
        for f in files:
            if f == "expected.json":
                continue
            src = os.path.join(root, f)
            rel = os.path.relpath(src, SRC)
            out = os.path.join(dst, transform(rel, run, rel))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(src, encoding="utf-8") as fh:
                data = fh.read()
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(transform(data, run, rel))
