#!/usr/bin/env python3
"""Split a score.py report (read on stdin) by excerpt range: 001-183, the first collection the
rules were written beside, and 184-344, gathered the same way and kept aside (the honest
estimate on unseen wording). Usage: python3 score.py BIN | python3 scripts/corpus-split.py"""
import csv
import os
import re
import sys

index = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus", "real", "INDEX.tsv")
index = os.environ.get("CORPUS_INDEX", index)
with open(index, newline="", encoding="utf-8") as f:
    ids = [int(r["id"]) for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
missed = set()
text = sys.stdin.read()
sys.stdout.write(text)
for m in re.finditer(r"^  (\d{3})  want=", text, re.M):
    missed.add(int(m.group(1)))
for name, lo, hi in (("001-183", 1, 183), ("184-344", 184, 344)):
    n = sum(1 for i in ids if lo <= i <= hi)
    right = n - sum(1 for i in missed if lo <= i <= hi)
    print("%s: %d/%d = %.1f%%" % (name, right, n, 100.0 * right / n if n else 0))
