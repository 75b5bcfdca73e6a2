"""Point-to-point calls of a pipeline-parallel job matched by their ends (`Src Rank`, `Dst Rank`), not by `Seq`.

PyTorch numbers a rank's p2p calls with one counter per process group (ProcessGroupNCCL's `seqP2P_`), whatever
the peer, and Kineto writes it as `Seq` beside `Src Rank` and `Dst Rank` (libkineto `output_json.cpp` at
114171df: kP2pSrc, kP2pDst, kSeqNum). In a 3-stage pipeline the middle stage receives and sends, so its
counter runs twice as fast as either neighbour's: matched by (group, Seq) its calls pair with the wrong peers'.

The job here is planted: stage r receives microbatch m from r - 1 (posted early, so it waits) and sends it on
to r + 1 after RECV_TO_SEND_US of compute; each transfer ends TRANSFER_US after its later end arrives. The truth
(who waits how long in which transfer) is computed from this construction.
"""
from __future__ import annotations

import pytest
from test_synthetic_multirank import ranks_view_of

STAGES, STEPS, MICRO = 3, 2, 4
STEP_US, SLOT_US, RECV_TO_SEND_US, TRANSFER_US, STAGE_DELAY_US = 40_000.0, 3_000.0, 1_200.0, 300.0, 700.0
KERNEL = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"


def _job(both_ends: bool = True) -> tuple[dict[int, dict], dict[tuple, float]]:
    """(trace per rank, the receiver's wait per transfer (src, step, microbatch) in µs)."""
    send_at: dict[tuple, float] = {}  # (src, step, m) -> when the sender's kernel starts
    recv_at: dict[tuple, float] = {}
    for s in range(STEPS):
        for m in range(MICRO):
            for r in range(STAGES - 1):
                t = s * STEP_US + 500.0 + m * SLOT_US + r * (RECV_TO_SEND_US + STAGE_DELAY_US + TRANSFER_US)
                send_at[(r, s, m)] = t
                recv_at[(r, s, m)] = t - STAGE_DELAY_US if r == 0 else t - STAGE_DELAY_US / 2  # posted early: waits
    end = {k: max(send_at[k], recv_at[k]) + TRANSFER_US for k in send_at}
    traces = {}
    for r in range(STAGES):
        calls = []  # (start, kind, peer, transfer key)
        for (src, s, m), t in send_at.items():
            if src == r:
                calls.append((t, "send", r + 1, (src, s, m)))
            if src == r - 1:
                calls.append((recv_at[(src, s, m)], "recv", r - 1, (src, s, m)))
        events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}", "pid": 10, "tid": 10,
                   "ts": s * STEP_US, "dur": STEP_US - 10} for s in range(STEPS)]
        for n, (t, kind, peer, key) in enumerate(sorted(calls)):
            src, dst = (r, peer) if kind == "send" else (peer, r)
            fields = {"Collective name": kind, "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20, "Group size": STAGES,
                      "dtype": "BFloat16", "Process Group Name": "0", "Process Group Description": "default_pg",
                      "Process Group Ranks": "[0, 1, 2]", "Seq": n + 1}
            if both_ends or kind == "send":
                fields["Dst Rank"] = dst
            if both_ends or kind == "recv":
                fields["Src Rank"] = src
            events += [{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 10, "tid": 10, "ts": t - 60,
                        "dur": 50.0, "args": fields},
                       {"ph": "X", "cat": "user_annotation", "name": f"nccl:{kind}", "pid": 10, "tid": 10, "ts": t - 55,
                        "dur": 40.0},
                       {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": t - 50,
                        "dur": 5.0, "args": {"correlation": n + 1}},
                       {"ph": "X", "cat": "kernel", "name": KERNEL, "pid": 0, "tid": 20, "ts": t, "dur": end[key] - t,
                        "args": {"device": 0, "stream": 20, "correlation": n + 1}}]
        for e in events:
            e["ts"] += 1_700_000_000_000_000.0 + r * 1_300.0  # each rank's own clock
        traces[r] = {"schemaVersion": 1, "deviceProperties": [],
                     "distributedInfo": {"backend": "nccl", "rank": r, "world_size": STAGES},
                     "traceEvents": sorted(events, key=lambda e: e["ts"])}
    return traces, {k: send_at[k] - recv_at[k] for k in send_at}


@pytest.mark.parametrize("both_ends", [True, False], ids=["both ends written", "the far end only"])
def test_each_transfer_pairs_its_sender_with_its_receiver(both_ends):
    traces, waits = _job(both_ends)
    view = ranks_view_of(traces)
    instances = view["instances"]
    assert len(instances) == view["matched_instances"] == (STAGES - 1) * STEPS * MICRO
    assert {i["kind"] for i in instances} == {"send_recv"}
    by_pair: dict[tuple, list[float]] = {}
    for inst in instances:
        present = tuple(r for r, d in enumerate(inst["dur_us"]) if d is not None)
        assert len(present) == 2 and present[1] == present[0] + 1  # a stage and the next one, never two others
        assert inst["seq"] is None  # a p2p Seq counts the rank's own calls: no match, no clock, no gap is read from it
        by_pair.setdefault(present, []).append(inst["wait_us"][present[1]])  # the receiver waited for the sender
    for src in range(STAGES - 1):
        planted = [waits[(src, s, m)] for s in range(STEPS) for m in range(MICRO)]
        assert by_pair[(src, src + 1)] == pytest.approx(planted, abs=0.01)
    assert not [h for h in view["group_health"] if h["check"] == "seq_gaps"]  # each rank's own p2p count is no gap


def test_matched_by_seq_the_middle_stage_would_pair_with_the_wrong_peers():
    """What the (group, Seq) match of the other collectives would do with these calls: the middle stage's Seq
    numbers its receives and sends together, so equal numbers on two ranks are mostly different transfers."""
    traces, _ = _job()
    seqs = {r: {e["args"]["Seq"]: (e["args"]["Src Rank"], e["args"]["Dst Rank"]) for e in doc["traceEvents"]
                if e["name"] == "record_param_comms"} for r, doc in traces.items()}
    same_number_other_transfer = sum(seqs[0][n] != seqs[1][n] for n in seqs[0] if n in seqs[1])
    assert same_number_other_transfer >= len(seqs[0]) // 2
