#!/bin/sh
# launch.sh OUT [SLOW_RANK]: three gloo ranks as processes, their output in one file.
out=$1; export SLOW_RANK=${2:-}
export MASTER_ADDR=127.0.0.1 MASTER_PORT=${PORT:-29533} WORLD_SIZE=3
for r in 0 1 2; do RANK=$r /usr/bin/python3 train.py & done > "$out" 2>&1
wait
