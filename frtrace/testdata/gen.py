#!/usr/bin/env python3
"""Writes the flight recorder dumps of frtrace's tests (run from frtrace/testdata: python3 gen.py).

torch cannot be installed here, so the dumps are made to the layout torch writes, each version's
keys from PyTorch's source:

- bare list (early 2024): a list of entries with seq_id (TraceUtils.h before pg_config; the
  torch_mlu copy of it keeps that layout);
- "2.3": TraceUtils.h (DEFINE_CONSTANT(version_val, "2.3")): version, pg_config, pg_status,
  entries with collective_seq_id, p2p_seq_id, op_id, input/output dtypes, timeout_ms, is_p2p;
  nccl_version;
- "2.4": FlightRecorder.hpp (version_val "2.4");
- "2.10": FlightRecorder.hpp / FlightRecorderDetail.hpp (version_val "2.10"): comm_lib_version,
  thread_name, thread_id; getCollectiveTrace, getPgConfig (ranks as the string "[0, 1]"),
  getPgStatus (ints; the JSON twin's dump_json writes them as strings and 0 for a None time).

Two pickle writers: Python's pickle at protocol 2, and TorchPickler, which writes bytes as
torch/csrc/jit/serialization/pickler.cpp does (memoized strings, BININT1/2/BININT/LONG1 by
range, restore_type_tag around dicts and lists in the builds that tag them, containers shared
by pointer written once and fetched with BINGET).
"""

import json
import os
import pickle
import struct

NS = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z


class TorchPickler:
    def __init__(self, tag=False):
        self.out = bytearray()
        self.memo = 0
        self.strings = {}
        self.globals = {}
        self.shared = {}
        self.tag = tag

    def put(self):
        if self.memo <= 255:
            self.out += b"q" + bytes([self.memo])
        else:
            self.out += b"r" + struct.pack("<I", self.memo)
        self.memo += 1
        return self.memo - 1

    def get(self, i):
        if i <= 255:
            self.out += b"h" + bytes([i])
        else:
            self.out += b"j" + struct.pack("<I", i)

    def glob(self, mod, name):
        key = mod + "\n" + name + "\n"
        if key in self.globals:
            self.get(self.globals[key])
        else:
            self.out += b"c" + key.encode()
            self.globals[key] = self.put()

    def string(self, s):
        if s in self.strings:
            self.get(self.strings[s])
            return
        b = s.encode()
        self.out += b"X" + struct.pack("<I", len(b)) + b
        self.strings[s] = self.put()

    def int(self, n):
        if 0 <= n <= 255:
            self.out += b"K" + bytes([n])
        elif 0 <= n <= 65535:
            self.out += b"M" + struct.pack("<H", n)
        elif -(2**31) <= n < 2**31:
            self.out += b"J" + struct.pack("<i", n)
        else:
            self.out += b"\x8a\x08" + struct.pack("<q", n)

    def value(self, v):
        if id(v) in self.shared:
            self.get(self.shared[id(v)])
            return
        if v is None:
            self.out += b"N"
        elif v is True:
            self.out += b"\x88"
        elif v is False:
            self.out += b"\x89"
        elif isinstance(v, int):
            self.int(v)
        elif isinstance(v, float):
            self.out += b"G" + struct.pack(">d", v)
        elif isinstance(v, str):
            self.string(v)
        elif isinstance(v, tuple):
            for x in v:
                self.value(x)
            self.out += {0: b")", 1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(v)]
        elif isinstance(v, dict):
            if self.tag:
                self.glob("torch.jit._pickle", "restore_type_tag")
            self.out += b"}("
            for k, x in v.items():
                self.value(k)
                self.value(x)
            self.out += b"u"
            if self.tag:
                self.string("Dict[str, Any]")
                self.out += b"\x86R"
        elif isinstance(v, list):
            if self.tag:
                self.glob("torch.jit._pickle", "restore_type_tag")
            self.out += b"]("
            for x in v:
                self.value(x)
            self.out += b"e"
            if self.tag:
                self.string("List[Any]")
                self.out += b"\x86R"
        else:
            raise TypeError(type(v))
        if isinstance(v, (dict, list)) and getattr(self, "_share", set()) and id(v) in self._share:
            self.shared[id(v)] = self.put()

    def dumps(self, v, share=()):
        self._share = {id(x) for x in share}
        self.out += b"\x80\x02"
        self.value(v)
        self.out += b"."
        return bytes(self.out)


FRAMES = {
    "step": {"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2501},
    "wrap": {"name": "wrapper", "filename": "torch/distributed/c10d_logger.py", "line": 83},
    "train": {"name": "train_step", "filename": "/workspace/train.py", "line": 211},
    "main": {"name": "main", "filename": "/workspace/train.py", "line": 305},
    "gather": {"name": "all_gather", "filename": "torch/distributed/distributed_c10d.py", "line": 3101},
    "eval": {"name": "evaluate", "filename": "/workspace/train.py", "line": 160},
    "send": {"name": "send", "filename": "torch/distributed/distributed_c10d.py", "line": 1890},
    "recv": {"name": "recv", "filename": "torch/distributed/distributed_c10d.py", "line": 1950},
    "pipe": {"name": "forward_step", "filename": "/workspace/pipeline.py", "line": 77},
}


def frames(*names):
    return [FRAMES[n] for n in names]


def entry(version, rid, seq, op="nccl:all_reduce", state="completed", pg=("0", "default_pg"), size=(1024,),
          dtype="Float", p2p=False, p2pseq=0, opid=None, fr=None, t=0):
    created = NS + t * 1_000_000_000
    started = created + 1000 if state in ("started", "completed") else None
    completed = created + 2000 if state == "completed" else None
    fr = fr if fr is not None else frames("step", "wrap", "train", "main")
    if version == "list":
        return {"record_id": rid, "pg_id": int(pg[0]), "seq_id": seq, "op_id": opid or seq, "profiling_name": op,
                "time_created_ns": created, "input_sizes": [list(size)], "output_sizes": [list(size)],
                "state": state, "time_discovered_started_ns": started, "time_discovered_completed_ns": completed,
                "retired": state == "completed", "frames": fr}
    e = {"frames": fr, "record_id": rid, "pg_id": int(pg[0]), "process_group": tuple(pg)}
    if version == "2.10":
        e["thread_name"] = "pt_main_thread"
        e["thread_id"] = "140245036984128"
    e.update({
        "collective_seq_id": 0 if p2p else seq, "p2p_seq_id": p2pseq if p2p else 0, "op_id": opid or seq,
        "profiling_name": op, "time_created_ns": created,
        "input_sizes": [list(size)], "input_dtypes": [dtype], "output_sizes": [list(size)], "output_dtypes": [dtype],
        "state": state, "time_discovered_started_ns": started, "time_discovered_completed_ns": completed,
        "retired": state == "completed", "timeout_ms": 600000, "is_p2p": p2p,
    })
    return e


def dump(version, entries, groups, status):
    if version == "list":
        return entries
    d = {"version": version}
    d["comm_lib_version" if version == "2.10" else "nccl_version"] = "2.21.5"
    d["pg_config"] = {name: {"name": name, "desc": desc, "ranks": str(list(ranks))} for name, desc, ranks in groups}
    d["pg_status"] = {pg: {"last_enqueued_collective": e, "last_started_collective": s, "last_completed_collective": c}
                      for pg, (e, s, c) in status.items()}
    d["entries"] = entries
    return d


def json_twin(d):
    """dump_json's form: no frames, pg_status as strings, 0 for a time not reached."""
    j = {k: v for k, v in d.items() if k != "entries"}
    j["pg_status"] = {pg: {k: str(v) for k, v in st.items()} for pg, st in d["pg_status"].items()}
    ents = []
    for e in d["entries"]:
        e = {k: v for k, v in e.items() if k != "frames"}
        e["process_group"] = list(e["process_group"])
        for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            e[k] = e[k] or 0
        ents.append(e)
    j["entries"] = ents
    return json.dumps(j, sort_keys=True)


def collectives(version, upto, last_state, rank_fr=None, start=1, t0=0, **kw):
    es = []
    for s in range(start, upto + 1):
        st = last_state if s == upto else "completed"
        es.append(entry(version, s - start, s, state=st, fr=rank_fr, t=t0 + s, **kw))
    return es


def write(dirname, name, data):
    os.makedirs(dirname, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(dirname, name), mode) as f:
        f.write(data)


def status_of(es):
    seqs = [e.get("collective_seq_id", e.get("seq_id")) for e in es if not e.get("is_p2p")]
    done = [e.get("collective_seq_id") for e in es if e["state"] == "completed" and not e.get("is_p2p")]
    started = [e.get("collective_seq_id") for e in es if e["state"] in ("started", "completed") and not e.get("is_p2p")]
    return {"0": (max(seqs), max(started or [0]), max(done or [0]))}


def scenario(dirname, version, per_rank, groups, writer="python", tag=False, twin=False, prefix="nccl_trace_rank_"):
    for rank, es in per_rank.items():
        d = dump(version, es, groups, status_of(es) if version != "list" else {})
        if writer == "torch":
            data = TorchPickler(tag=tag).dumps(d, share=list(FRAMES.values()))
        else:
            data = pickle.dumps(d, protocol=2)
        write(dirname, f"{prefix}{rank}", data)
        if twin:
            write(dirname, f"{prefix}{rank}.json", json_twin(d))


def main():
    world = [("0", "default_pg", [0, 1, 2, 3])]
    # PyTorch's flight recorder tutorial: rank 0 runs one extra all_reduce; the tool reports
    # "missing rank 1" for that collective. Two ranks, Python's pickle, version 2.4.
    scenario("tutorial", "2.4", {
        0: collectives("2.4", 5, "scheduled"),
        1: collectives("2.4", 4, "completed"),
    }, [("0", "default_pg", [0, 1])])
    # Four ranks, torch's own pickler of 2.10 builds (no type tags), host names in the file
    # names (pytorch#140879): rank 2 stopped in evaluate() before all_reduce #48.
    slow = frames("step", "wrap", "eval", "main")
    scenario("missing-rank", "2.10", {
        0: collectives("2.10", 48, "started", start=20),
        1: collectives("2.10", 48, "started", start=20),
        2: collectives("2.10", 47, "completed", start=20)[:-1] + [entry("2.10", 27, 47, fr=slow, t=47)],
        3: collectives("2.10", 48, "started", start=20),
    }, world, writer="torch", prefix="gpu-node-7.cluster.local_trace_rank_")
    # The same, from an older torch build that wraps dicts and lists in restore_type_tag.
    scenario("missing-rank-tagged", "2.3", {
        0: collectives("2.3", 48, "started", start=20),
        1: collectives("2.3", 47, "completed", start=20),
    }, [("0", "default_pg", [0, 1])], writer="torch", tag=True)
    # Every rank enqueued all_reduce #7 and started it; none completed it: the network.
    scenario("stalled", "2.10", {r: collectives("2.10", 7, "started") for r in range(4)}, world, twin=True)
    # Every rank enqueued #7; the kernel started on ranks 0, 1 and 3, not on rank 2: its GPU.
    scenario("stalled-gpu", "2.4", {r: collectives("2.4", 7, "scheduled" if r == 2 else "started") for r in range(4)}, world)
    # Rank 1 all_gathers where the others all_reduce (#3); its sizes differ at #3 in another run.
    op = {r: collectives("2.4", 5, "started") for r in range(3)}
    op[1][2] = entry("2.4", 2, 3, op="nccl:all_gather", state="completed", t=3)
    scenario("mismatch-op", "2.4", op, [("0", "default_pg", [0, 1, 2])])
    size = {r: collectives("2.4", 5, "started") for r in range(3)}
    size[2][3] = entry("2.4", 3, 4, size=(2048,), state="completed", t=4)
    scenario("mismatch-size", "2.4", size, [("0", "default_pg", [0, 1, 2])])
    # Pipeline send/recv: rank 0 sent to rank 1, which never posted its recv.
    pp = [("0", "default_pg", [0, 1]), ("1", "pp", [0, 1])]
    p0 = collectives("2.10", 3, "completed") + [entry("2.10", 3, 0, op="nccl:send 0->1", state="started", pg=("1", "pp"), p2p=True, p2pseq=1, fr=frames("send", "pipe", "main"), t=9)]
    p1 = collectives("2.10", 3, "completed")
    scenario("p2p", "2.10", {0: p0, 1: p1}, pp)
    # Coalesced groups: each collective is a batch of two all_reduces sharing one seq; rank 1
    # never entered batch #4.
    def coalesced(upto, last):
        es = []
        for s in range(1, upto + 1):
            st = last if s == upto else "completed"
            es.append(entry("2.10", 3 * s, s, op="nccl:all_reduce", state=st, opid=2 * s, t=s))
            es.append(entry("2.10", 3 * s + 1, s, op="nccl:all_reduce", state=st, opid=2 * s + 1, t=s))
            es.append(entry("2.10", 3 * s + 2, s, op="nccl:coalesced", state=st, opid=2 * s + 1, t=s))
        return es
    scenario("coalesced", "2.10", {0: coalesced(4, "started"), 1: coalesced(3, "completed")}, [("0", "default_pg", [0, 1])])
    # Dumps of ranks 0 and 1 of four, both waiting in #9: the absent ranks may be the ones
    # behind, so nothing is named but the gap.
    scenario("subset", "2.10", {r: collectives("2.10", 9, "started") for r in (0, 1)}, world)
    # The bare list of entries (before the dump had a version), two ranks, rank 1 behind.
    scenario("bare-list", "list", {
        0: collectives("list", 12, "started"),
        1: collectives("list", 11, "completed"),
    }, [])


def sample(root):
    """The dumps of samples/pytorchjob-hang-flight-recorder: four ranks, one per pod
    (llama-ft-master-0, llama-ft-worker-0..2), TORCH_NCCL_TRACE_BUFFER_SIZE=200, written by
    torch 2.10's pickler when the watchdog timed out at 10:47:32. Each training step runs six
    collectives; every rank enqueued all_reduce #2890 at about 10:17:32 (step 482); the kernel
    started on ranks 0, 1 and 3 and never on rank 2, whose GPU was still busy."""
    pods = ["llama-ft-master-0", "llama-ft-worker-0", "llama-ft-worker-1", "llama-ft-worker-2"]
    base = 1773483452_100_000_000  # 2026-03-14T10:17:32.1Z, when #2890 was enqueued
    groups = [("0", "default_pg", [0, 1, 2, 3])]
    step = frames("step", "wrap", "train", "main")
    for rank, pod in enumerate(pods):
        es = []
        for i, seq in enumerate(range(2691, 2891)):
            created = base - (2890 - seq) * 333_333_333 + rank * 60_000
            state = "completed"
            if seq == 2890:
                state = "scheduled" if rank == 2 else "started"
            e = entry("2.10", 2690 + i, seq, state=state, size=(262144,), fr=step)
            e["time_created_ns"] = created
            e["time_discovered_started_ns"] = created + 2_000_000 if state != "scheduled" else None
            e["time_discovered_completed_ns"] = created + 40_000_000 if state == "completed" else None
            es.append(e)
        d = dump("2.10", es, groups, {"0": (2890, 2889 if rank == 2 else 2890, 2889)})
        data = TorchPickler().dumps(d, share=list(FRAMES.values()))
        write(os.path.join(root, "flightrecorder", "ml", pod), f"comm_lib_trace_rank_{rank}", data)


if __name__ == "__main__":
    import sys
    if len(sys.argv) > 2 and sys.argv[1] == "sample":
        sample(sys.argv[2])
    else:
        main()
