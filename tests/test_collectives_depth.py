"""Tests of the collectives chapter's depth pass: the communication-vs-compute roofline per
parallelism, ZeRO/FSDP step volumes, and NCCL's own protocol/algorithm cost model.

Sources
-------
[SB-GPU] Austin et al., "How to Scale Your Model", "How to Think About GPUs" (2025-08-18),
      section "Rooflines for LLM Scaling on GPUs" (jax-ml/scaling-book, gpus.md): data parallelism
      and FSDP are compute-bound when B/X > C/W_collective: "Within a node ... 990e12 / 450e9 = 2200";
      "Within an SU or at the spine level, BS > 990e12 / 400e9 = 2475"; B200 beyond a node
      "2250e12 / 400e9 = 5625". Tensor parallelism: Y < F W / C, "F / 2475 beyond a node. For
      F=28000 like LLaMA-3, this is about 11-way TP".
[SB-TR] Same book, "How to Parallelize a Transformer for Training" (training.md): TPU v5p,
      C = 4.6e14, W = 2 x 9e10: "our batch size per chip must be at least 2,550".
[ZeRO] Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
      Models", Section 7: data parallelism 2 Psi per step (reduce-scatter + all-gather), Pos and
      Pos+g 2 Psi, Pos+g+p 3 Psi ("1.5x" of baseline data parallelism).
[NCCL] NVIDIA/nccl tag v2.28.9-1: src/graph/tuning.cc (ncclTunerConstantsDefaults: baseLatencies
      ring {6.6, 14.0, 8.4} us, tree {6.8, 14.0, 8.4}; hwLatencies NVLINK ring {.6, 1.9, 3.4}, tree
      {.6, 1.25, 4.0}; llMaxBws Hopper-N1 141.0 GB/s; "busBw * .5" for ring LL, "0.92 /*120.0/128.0*/"
      for ring LL128, tree all-reduce ".92", tree LL "1.0/3.8", tree LL128 one node "7.0/9.0";
      ratio n/nsteps for rings, .5 for trees; treeCorrectionFactor), src/graph/topo.h
      (SM90_NVLINK_BW 20.6), src/include/enqueue.h (ncclFuncMaxSendRecvCount: nBytes of all-gather and
      reduce-scatter are count x nRanks, the whole buffer).
[NCCL-NET] Same tag, src/graph/tuning.cc: hwLatencies NET ring {2.7, 4.0, 14.0} us, tree {5.0, 8.5, 14};
      llMaxBws "Volta-N1/Intel-N2/Intel-N4" {39.0, 39.0, 20.4} GB/s (multi-node rows taken by CPU vendor);
      getNetOverhead 1.0 us on Intel x86, "if (p == NCCL_PROTO_SIMPLE) netOverhead *= 3",
      "intraLat = std::max(intraLat, netOverhead)", nInterSteps = 2(nNodes-1) for all-reduce;
      ncclTopoGetAlgoTime: "lat *= comm->minCompCap < 80 ? 1.9 : 1.4; // Plateau effect of ring" only for
      ring, Simple, all-reduce, nNodes > 1 and nBytes/(nChannels*nRanks) >= 64. netOverhead and the 1.4
      factor are already in tag v2.18.1-1 (v2.17.1-1: no netOverhead, 1.5 for compute capability >= 9.0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from widgets.models import collectives as cm
from widgets.models import training_memory as tm

GiB = 2**30
MiB = 2**20
ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------------
# The roofline per parallelism
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("c, w, expected", [(990e12, 450e9, 2200), (990e12, 400e9, 2475), (2250e12, 400e9, 5625), (4.6e14, 1.8e11, 2555.6)])
def test_critical_batch_matches_the_scaling_book(c, w, expected):
    """[SB-GPU] H100 in a node 2200, across nodes 2475, B200 across nodes 5625; [SB-TR] TPU v5p
    4.6e14 / 1.8e11 = 2556 (the book rounds to "at least 2,550"). The book's rule is the many-rank
    limit: the ring's (r-1)/r -> 1."""
    assert cm.critical_tokens_per_gpu(c, w) == pytest.approx(expected, rel=1e-4)


def test_critical_batch_is_where_the_layer_crosses():
    """At the critical tokens per GPU the backward's matmuls and the all-reduce take the same time,
    for any width: the widths cancel (hand-derived: 8 t D F / C = 2 (r-1)/r 2 D F e / W)."""
    c, w = 989.4e12, 450e9
    for r in (2, 8, 64):
        t = cm.critical_tokens_per_gpu(c, w, r)
        assert t == pytest.approx((r - 1) / r * c / w)
        for d, f in ((4096, 14336), (8192, 28672), (1, 1)):
            x = cm.layer_roofline("data", t, d, f, c, w, r)
            assert x.ratio == pytest.approx(1.0) and x.phase == "backward"
            assert cm.layer_roofline("data", 2 * t, d, f, c, w, r).ratio == pytest.approx(0.5)
            assert not cm.layer_roofline("data", 2 * t, d, f, c, w, r).comm_bound
            assert cm.layer_roofline("data", t / 2, d, f, c, w, r).comm_bound
    assert cm.critical_tokens_per_gpu(c, w, 1) == 0  # one GPU: nothing to send
    assert cm.critical_tokens_per_gpu(c, w, 2**20, bytes_per_elem=4) == pytest.approx(2 * c / w, rel=1e-5)  # fp32 gradients


def test_moe_critical_batch_grows_by_experts_over_active():
    """[SB-GPU] Data Parallelism, MoE models: B/X > (E/k) C/W; gpt-oss (E = 128, k = 4) across nodes
    "32 x 2475 = 79,200"."""
    assert cm.critical_tokens_per_gpu(990e12, 400e9, experts_ratio=128 / 4) == pytest.approx(79_200, rel=1e-4)
    assert cm.critical_tokens_per_gpu(990e12, 400e9, 8, experts_ratio=32) == pytest.approx(32 * cm.critical_tokens_per_gpu(990e12, 400e9, 8))
    for bad in (0.5, 0, 2000):
        with pytest.raises(ValueError, match="^experts_ratio"):
            cm.critical_tokens_per_gpu(990e12, 400e9, experts_ratio=bad)


def test_fsdp_has_the_critical_batch_of_data_parallelism_and_half_again_its_bytes():
    """[SB-GPU] "DP and ZeRO sharding involve either a weight AllReduce or a ReduceScatter + AllGather
    in the backward pass. Since these both have the same cost ..."; the forward's all-gather adds the
    third Psi of [ZeRO]."""
    args = (3000, 8192, 28672, 989.4e12, 450e9, 16)
    dp, fsdp = cm.layer_roofline("data", *args), cm.layer_roofline("fsdp", *args)
    assert fsdp.ratio == pytest.approx(dp.ratio) and fsdp.comm_bytes == pytest.approx(dp.comm_bytes)
    weights = 2 * 8192 * 28672 * 2.0
    assert dp.comm_bytes == pytest.approx(2 * 15 / 16 * weights)  # a ring all-reduce sends 2(n-1)/n S per rank


def test_tensor_parallel_limit_matches_the_scaling_book():
    """[SB-GPU] F=28000 beyond a node: F W / C = 28000 x 400e9 / 990e12 = 11.3 ("about 11-way"); the
    exact ring's (Y-1)/Y adds one rank to the bound, which the book drops."""
    y = cm.tensor_parallel_max_ranks(28000, 990e12, 400e9)
    assert y - 1 == pytest.approx(11.31, abs=0.01)
    # at exactly that degree the forward's all-gather + reduce-scatter take as long as its matmuls
    assert cm.layer_roofline("tensor", 4096, 8192, 28000, 990e12, 400e9, ranks=12).ratio < 1
    assert cm.layer_roofline("tensor", 4096, 8192, 28000, 990e12, 400e9, ranks=13).ratio > 1
    # the ratio does not depend on the tokens or on d_model
    r = [cm.layer_roofline("tensor", t, d, 28000, 990e12, 400e9, ranks=8).ratio for t in (64, 65536) for d in (1024, 16384)]
    assert max(r) == pytest.approx(min(r))
    assert r[0] == pytest.approx(7 * 990e12 / (28000 * 400e9))


def test_pipeline_sends_are_cheap():
    """Hand-derived: one [t, D] bf16 send per stage against 4 t D F L / C of forward matmuls:
    ratio = e C / (4 F L W); falls as layers per stage grow."""
    r1 = cm.layer_roofline("pipeline", 4096, 8192, 28672, 989.4e12, 450e9, layers_per_stage=1)
    assert r1.ratio == pytest.approx(2 * 989.4e12 / (4 * 28672 * 450e9))
    r10 = cm.layer_roofline("pipeline", 4096, 8192, 28672, 989.4e12, 450e9, layers_per_stage=10)
    assert r10.ratio == pytest.approx(r1.ratio / 10) and r1.comm_bytes == 4096 * 8192 * 2


def test_roofline_links_from_the_catalog():
    """[SB-GPU] table: H100 GPU egress 450e9, node egress 400e9 (8 x 400 Gb/s). A GPU without NVLink
    uses its PCIe link."""
    from widgets.hardware import get_gpu

    assert cm.roofline_link_bytes_per_s("H100-SXM") == 450e9
    assert cm.roofline_link_bytes_per_s("H100-SXM", "network") == 400e9
    assert cm.roofline_link_bytes_per_s("B200", "network") == 400e9  # [SB-GPU] Quiz 5: the same 400 GB/s scale-out
    assert cm.roofline_link_bytes_per_s("L4") == get_gpu("L4").host_bytes_per_s
    with pytest.raises(ValueError, match="^scope must be one of"):
        cm.roofline_link_bytes_per_s("H200-SXM", "rack")


@pytest.mark.parametrize("bad", [dict(parallelism="expert"), dict(tokens=0), dict(d_model=0), dict(ranks=0), dict(bytes_per_elem=0)])
def test_roofline_rejects_bad_input(bad):
    args = dict(parallelism="data", tokens=1024, d_model=4096, d_ff=16384, peak_flop_per_s=1e15, link_bytes_per_s=4e11)
    with pytest.raises(ValueError, match=f"^{next(iter(bad))}"):
        cm.layer_roofline(**{**args, **bad})


# --------------------------------------------------------------------------------------------
# ZeRO and FSDP volumes
# --------------------------------------------------------------------------------------------
def test_zero_step_time_agrees_with_the_training_memory_volumes():
    """[ZeRO] Section 7: 2 Psi for stages 0-2, 3 Psi for stage 3 (1.5x). The collectives' ring times
    (this module) and the bytes per GPU of training_memory must tell the same story: time =
    bytes x (n-1)/n / busbw."""
    psi, n, w = 7e9, 8, 450e9
    times = [cm.zero_step_comm_s(psi, n, s, w) for s in range(4)]
    for s, t in enumerate(times):
        assert t == pytest.approx(tm.zero_comm_bytes_per_gpu(psi, s) * (n - 1) / n / w)
    assert times[0] == times[1] == times[2] and times[3] / times[0] == pytest.approx(1.5)
    assert cm.zero_step_comm_s(psi, 1, 3, w) == 0.0
    assert [op for op, _ in cm.ZERO_COLLECTIVES[3]].count("all_gather") == 2


# --------------------------------------------------------------------------------------------
# NCCL's tuner model
# --------------------------------------------------------------------------------------------
def test_nccl_model_latencies_are_tunings():
    """[NCCL] a zero-byte call costs base + steps x hw: ring LL on 8 ranks 6.6 + 14 x 0.6 = 15.0 us
    (the chapter's existing NCCL_CALL_LATENCY_S + 14 NCCL_NVLINK_STEP_LATENCY_S), Simple 8.4 + 14 x 3.4,
    LL128 14.0 + 14 x 1.9; all-gather has n-1 steps."""
    t = {p: cm.nccl_model_time_s("all_reduce", 0, 8, 370.8e9, "ring", p) for p in cm.PROTOCOLS}
    assert t["LL"] == pytest.approx(15.0e-6) and t["Simple"] == pytest.approx(56.0e-6) and t["LL128"] == pytest.approx(40.6e-6)
    assert t["LL"] == pytest.approx(cm.ring_allreduce_time_s(0, 8, 1e12))  # the same NCCL constants as the chapter's ring
    assert cm.nccl_model_time_s("all_gather", 0, 8, 370.8e9, "ring", "LL") == pytest.approx(6.6e-6 + 7 * 0.6e-6)
    assert cm.nccl_model_time_s("all_reduce", 0, 8, 370.8e9, "tree", "LL") == pytest.approx(6.8e-6 + 14 * 0.6e-6)


def test_nccl_model_bandwidths_are_the_protocol_shares():
    """[NCCL] at large sizes the ring's busbw tends to the link x 0.5 (LL, capped at 141 GB/s on
    Hopper), x 0.92 (LL128), x 1 (Simple); the tree all-reduce's algbw is half its busbw."""
    s, n, b = 2.0**50, 8, 370.8e9
    busbw = {p: cm.busbw_bytes_per_s("all_reduce", n, s, cm.nccl_model_time_s("all_reduce", s, n, b, "ring", p)) for p in cm.PROTOCOLS}
    assert busbw["LL"] == pytest.approx(141e9, rel=1e-5)  # 0.5 x 370.8 = 185 > the cap (latency: 1e-8 of the time at 1 PiB)
    assert busbw["LL128"] == pytest.approx(0.92 * b, rel=1e-5) and busbw["Simple"] == pytest.approx(b, rel=1e-5)
    low = cm.busbw_bytes_per_s("all_reduce", n, s, cm.nccl_model_time_s("all_reduce", s, n, 200e9, "ring", "LL"))
    assert low == pytest.approx(100e9, rel=1e-5)  # below the cap: half the link
    tree = cm.nccl_model_time_s("all_reduce", s, n, b, "tree", "Simple")
    assert s / tree == pytest.approx(0.5 * 0.92 * b, rel=1e-5)  # log2(2**50/64) >= 23: no size correction
    with pytest.raises(ValueError, match="^algorithm must be 'ring' for all_gather"):
        cm.nccl_model_time_s("all_gather", GiB, 8, b, "tree")


def test_nccl_model_choice_orders_protocols_by_size():
    """LL wins small messages (lowest latency), Simple large ones (full bandwidth); on 8 ranks
    LL128 sits between (its per-step latency 1.9 us beats Simple's 3.4 us); on one node the tree
    never wins: it takes the ring's 2(n-1) steps, its latencies are at least the ring's except
    LL128's per step (base LL 6.8 against 6.6 us, per step Simple 4.0 against 3.4 us, LL128 1.25
    against 1.9 us), and its algorithm-bandwidth factor, 0.5 x 0.92 = 0.46 of the link, is below
    the ring's n / (2(n-1)) (0.571 at 8 ranks, 1.0 at 2)."""
    for p in cm.PROTOCOLS:  # [NCCL] tuning.cc: the one-node tree is never cheaper per call
        assert cm.NCCL_BASE_LATENCY_S["tree"][p] >= cm.NCCL_BASE_LATENCY_S["ring"][p]
    for p in ("LL", "Simple"):
        assert cm.NCCL_NVLINK_HW_LATENCY_S["tree"][p] >= cm.NCCL_NVLINK_HW_LATENCY_S["ring"][p]
    assert cm.NCCL_NVLINK_HW_LATENCY_S["tree"]["LL128"] < cm.NCCL_NVLINK_HW_LATENCY_S["ring"]["LL128"]
    for n in (2, 8, 72):
        for s in (1.0, MiB, GiB):
            assert cm.nccl_model_choice("all_reduce", s, n, 370.8e9).algorithm == "ring"
    sw = cm.nccl_model_switch_bytes("all_reduce", 8, 370.8e9)
    assert [p for _, _, p in sw] == ["LL", "LL128", "Simple"] and all(a == "ring" for _, a, _ in sw)
    sizes = [s for s, _, _ in sw]
    assert sizes == sorted(sizes) and sizes[0] == 1.0
    for s, _a, p in sw[1:]:  # each switch point is exact to one byte
        assert cm.nccl_model_choice("all_reduce", s, 8, 370.8e9).protocol == p
        assert cm.nccl_model_choice("all_reduce", s - 1, 8, 370.8e9).protocol != p
    # 2 ranks: 2 steps, so Simple's extra per-step latency costs little and LL128 never wins
    assert [p for _, _, p in cm.nccl_model_switch_bytes("all_reduce", 2, 370.8e9)] == ["LL", "Simple"]
    c = cm.nccl_model_choice("all_reduce", GiB, 8, 370.8e9, protocols=("LL",))
    assert (c.algorithm, c.protocol) == ("ring", "LL") and len(c.times) == 2
    with pytest.raises(ValueError, match="^protocols must be"):
        cm.nccl_model_choice("all_reduce", GiB, 8, 370.8e9, protocols=())


def test_nccl_ring_allreduce_one_node_is_the_tuner_model():
    """On one node the protocol-consistent ring cost is nccl_model_time_s's ring all-reduce, exactly."""
    for n in (2, 8):
        for size in (0.0, 1e3, MiB, GiB):
            for p in cm.PROTOCOLS:
                assert cm.nccl_ring_allreduce_time_s(size, n, 370.8e9, p) == pytest.approx(
                    cm.nccl_model_time_s("all_reduce", size, n, 370.8e9, "ring", p), rel=1e-12)


def test_nccl_ring_allreduce_across_nodes_by_hand():
    """[NCCL-NET] 16 ranks in 2 nodes, 400 GB/s Simple bus bandwidth, 25 MiB: 30 steps, 2 across the
    network. LL: 6.6 + 28 x max(0.6, 1.0) + 2 x 2.7 = 40.0 us, bus min(39, 200) GB/s; LL128: 14.0 + 28 x 1.9
    + 2 x 4.0 = 75.2 us at 0.92 x 400 GB/s; Simple: 1.4 x (8.4 + 28 x max(3.4, 3.0) + 2 x 14.0) = 184.24 us
    at 400 GB/s. Algorithm bandwidth = bus x 16/30."""
    s, n, b = 25 * MiB, 16, 400e9
    t = {p: cm.nccl_ring_allreduce_time_s(s, n, b, p, nodes=2) for p in cm.PROTOCOLS}
    assert t["LL"] == pytest.approx(40.0e-6 + s / (39e9 * 16 / 30))
    assert t["LL128"] == pytest.approx(75.2e-6 + s / (0.92 * b * 16 / 30))
    assert t["Simple"] == pytest.approx(1.4 * 131.6e-6 + s / (b * 16 / 30))
    assert cm.nccl_ring_allreduce_choice(s, n, b, nodes=2).protocol == "LL128"
    # the plateau factor: Simple only, across nodes only, and only from 64 B per channel and rank
    assert cm.nccl_ring_allreduce_time_s(0, n, b, "Simple", nodes=2) == pytest.approx(131.6e-6)
    assert cm.nccl_ring_allreduce_time_s(s, n, b, "Simple", nodes=1) == pytest.approx(8.4e-6 + 30 * 3.4e-6 + s / (b * 16 / 30))
    # more than two nodes: LL's cap falls to 20.4 GB/s; one rank per node: the tree's network latency
    assert cm.nccl_ring_allreduce_time_s(GiB, 32, b, "LL", nodes=4) == pytest.approx(
        6.6e-6 + 56 * 1.0e-6 + 6 * 2.7e-6 + GiB / (20.4e9 * 32 / 62))
    assert cm.nccl_ring_allreduce_time_s(0, 2, b, "LL", nodes=2) == pytest.approx(6.6e-6 + 2 * 5.0e-6)
    for bad, match in ((dict(protocol="LL64"), "^protocol must be"), (dict(nodes=17), "^nodes must be"),
                       (dict(channels=0), "^channels must be")):
        with pytest.raises(ValueError, match=match):
            cm.nccl_ring_allreduce_time_s(**{**dict(size_bytes=s, n=n, link_bytes_per_s=b), **bad})


def test_dp_buckets_take_latency_and_bandwidth_from_one_protocol():
    """Review finding: a MiB-sized data-parallel bucket was costed with NCCL's ring LL latencies (6.6 us +
    0.6 us per NVLink step + 2.7 us per network step) at the full link bandwidth, a pairing NCCL's model
    never makes (LL's bus bandwidth is capped: 39 GB/s on two Intel-host nodes). With protocol="auto"
    each bucket pays the latency and bandwidth of the one protocol NCCL's model picks for its size."""
    n, nodes, b = 16, 2, 400e9
    ll_lat = cm.NCCL_CALL_LATENCY_S + 28 * cm.NCCL_NVLINK_STEP_LATENCY_S + 2 * cm.NCCL_NET_STEP_LATENCY_S
    for mib in (1, 4, 25, 64, 256, 1024):
        size = mib * MiB
        p = cm.dp_step(10 * size, size, 0.01, n, b, nodes=nodes, protocol="auto")
        at_full_link = 2 * (n - 1) / n * size / b
        assert p.protocol in ("LL128", "Simple")
        # what the bucket pays beyond the full link's transfer time: LL's latency would be 28.8 us; LL128's
        # (75.2 us plus its 0.92 bandwidth share) and Simple's (184.2 us) are more than twice that
        assert p.comm_per_bucket_s - at_full_link > 2 * ll_lat  # fails if LL's latency meets the full link again
        assert p.comm_per_bucket_s == min(t for *_, t in cm.nccl_ring_allreduce_choice(size, n, b, nodes).times)
        tl = cm.dp_timeline(10 * size, size, 0.01, n, b, nodes=nodes, protocol="auto")
        assert tl[-1][2] == pytest.approx(p.finish_s)
    forced = cm.dp_step(10 * MiB, MiB, 0.01, n, b, nodes=nodes, protocol="LL")  # LL forced: capped bandwidth
    assert forced.comm_per_bucket_s == pytest.approx(40.0e-6 + MiB / (39e9 * 16 / 30))
    # the chapter's example (1.3B bf16 gradients, 15 ms backward): 25 MiB buckets cannot keep up, 128 MiB is best
    ex = dict(grad_bytes=2.6e9, backward_s=0.015, n=n, link_bytes_per_s=b, nodes=nodes, protocol="auto")
    assert cm.dp_step(bucket_bytes=25 * MiB, **ex).total_comm_s > 0.015
    assert cm.best_bucket_bytes(candidates=[2.0**k for k in range(20, 31)], **ex) == 128 * MiB
    for bad, match in ((dict(latency_s=0.6e-6), "^latency_s must be 0 when protocol"),
                       (dict(call_latency_s=6.6e-6), "^call_latency_s must be 0 when protocol"),
                       (dict(inter_latency_s=2.7e-6), "^inter_latency_s must be None when protocol"),
                       (dict(algorithm="tree"), "^algorithm must be 'ring' when protocol"),
                       (dict(protocol="LL64"), "^protocol must be None or one of")):
        with pytest.raises(ValueError, match=match):
            cm.dp_step(**{**dict(grad_bytes=1e9, bucket_bytes=1e8, backward_s=0.1, n=n, link_bytes_per_s=b, protocol="auto"), **bad})


def test_nccl_counts_less_nvlink_than_the_datasheet():
    """[NCCL] topo.h: 20.6 GB/s per NVLink 4 link; 18 links (catalog) = 370.8 GB/s, against the
    datasheet's 450 GB/s per direction."""
    from widgets.hardware import get_gpu

    g = get_gpu("H200-SXM")
    assert g.interconnect_links * cm.NCCL_NVLINK_BYTES_PER_S_PER_LINK[g.arch] == pytest.approx(370.8e9)
    assert g.interconnect_links * cm.NCCL_NVLINK_BYTES_PER_S_PER_LINK[g.arch] < g.interconnect_bytes_per_s


def test_accuracy_rows_carry_the_tuner_predictions():
    """The reference two-H200 record gets the tuner model's rows, each a prediction, only from 16 MiB
    up, each naming the protocol chosen; ratios are recomputed, not stored."""
    from widgets.experiments import collectives as ex

    rec = json.loads((ROOT / "widgets/data/h200x2/collectives.json").read_text())
    rows = [r for r in ex.accuracy_rows(rec) if "tuner" in r.quantity]
    assert rows and all(r.label == "prediction" for r in rows)
    assert all("chosen: ring" in r.inputs for r in rows)
    assert {r.quantity.split(", ")[1] for r in rows} == {"16 MiB", "64 MiB", "256 MiB", "1 GiB"}
    # the model leaves NVLS out (NCCL would weigh it on an NVSwitch node): the record must be NVLS-off
    assert ex.WORKER_ENV["NCCL_NVLS_ENABLE"] == "0"


# --------------------------------------------------------------------------------------------
# The calculators
# --------------------------------------------------------------------------------------------
def test_depth_figures_stay_light_and_offer_every_gpu():
    import plotly.io as pio

    from widgets.hardware import gpu_names
    from widgets.ui import collectives as ui

    fig = ui.parallelism_roofline_figure()
    assert len(pio.to_json(fig)) < 300_000 and len(fig.layout.sliders) >= 1 and len(fig.layout.updatemenus) == 1
    # review R5-9: the dropdown offers the GPUs and each figure draws both scopes (solid in a node,
    # dashed across nodes); a GPU x scope dropdown had 26 entries and made the figure 1,121 px tall
    labels = [b.label for b in fig.layout.updatemenus[0].buttons]
    assert set(gpu_names()) <= set(labels) and len(labels) == len(set(labels))
    dashes = {(t.line.dash or "solid") for t in fig.data if t.mode == "lines" and t.showlegend is not False} | {
        t.line.dash for t in fig.data if t.mode == "lines" and t.hovertemplate and "across nodes" in t.hovertemplate}
    assert {"solid", "dash"} <= dashes
    for fr in fig.frames:  # every state names both scopes' critical batch
        sub = fr.layout.title.subtitle.text.replace("<br>", " ")
        assert "in a node: data (8 GPUs)" in sub and "across nodes: data (64 GPUs)" in sub, sub
    assert fig.layout.height <= 760
    t4 = next(f for f in fig.frames if "T4" in f.layout.title.text)
    assert "fp16 peak" in t4.layout.title.subtitle.text.replace("<br>", " ")  # says why it is not bf16
    fig = ui.protocol_figure(measured={"all_reduce": ([MiB, 16 * MiB], [20.0, 200.0])})
    assert len(pio.to_json(fig)) < 300_000 and len(fig.layout.updatemenus) == 1


def test_live_calculators_build_without_error():
    from widgets.ui import collectives as ui

    for make in (ui.parallelism_roofline_calculator, ui.protocol_calculator):
        form = make()
        assert form is not None


# --------------------------------------------------------------------------------------------
# Topology and expert parallelism
# --------------------------------------------------------------------------------------------
def test_fat_tree_sizes_match_published_clusters():
    """Al-Fares, Loukissas & Vahdat 2008 (SIGCOMM), Section 3: k^3/4 hosts, "48-port ... 27,648 hosts";
    Zhao et al. 2025 (Insights into DeepSeek-V3, ISCA): a two-layer fat tree of 64-port 400G switches
    per plane, eight planes, up to 16,384 GPUs."""
    assert cm.fat_tree_max_endpoints(48, 3) == 27_648
    assert 8 * cm.fat_tree_max_endpoints(64, 2) == 16_384
    assert cm.fat_tree_max_endpoints(4, 3) == 16  # the paper's Figure 3: k = 4, 16 hosts
    assert cm.fat_tree_max_endpoints(64, 1) == 64  # one switch: every port down
    with pytest.raises(ValueError, match="^switch_ports must be even"):
        cm.fat_tree_max_endpoints(47, 2)


def test_oversubscription_shares_the_uplinks():
    assert cm.oversubscribed_bytes_per_s(50e9, 32, 32) == 50e9
    assert cm.oversubscribed_bytes_per_s(50e9, 32, 16) == 25e9  # 2:1
    assert cm.oversubscribed_bytes_per_s(50e9, 16, 32) == 50e9  # more up than down: the adapter limits


def test_moe_all_to_all_matches_the_deepseek_estimate():
    """Zhao et al. 2025 (Insights into DeepSeek-V3, ISCA, arXiv:2505.09343): reproduces the paper's
    formula (FP8 dispatch, BF16 combine, 32 tokens, 9 experts, D ~ 7K, 50 GB/s, two micro-batches
    over 61 layers) and its headline ~67 tokens/s (400 Gb/s InfiniBand) and ~1,200 tokens/s (GB200
    NVL72, 900 GB/s). The headline figures are checked against secondary summaries of the paper;
    its intermediate per-layer times were not read in the primary text, so they are not asserted."""
    t = cm.moe_all_to_all_time_s(32, 7000, 9, 50e9)
    assert t == pytest.approx((1 + 2) * 32 * 9 * 7000 / 50e9)  # the formula, term for term (hand-derived)
    assert 1 / (2 * 61 * t) == pytest.approx(67, rel=0.02)
    nvl = cm.moe_all_to_all_time_s(32, 7000, 9, 900e9)
    assert 1 / (2 * 61 * nvl) == pytest.approx(1200, rel=0.02)
    assert 1 / (2 * 61 * cm.moe_all_to_all_time_s(32, 7168, 9, 50e9)) < 67  # D = 7,168 exactly would miss 67
    # uniform routing over n GPUs keeps (n-1)/n of the copies remote; bf16 both ways costs 4/3 as much
    assert cm.moe_all_to_all_time_s(32, 7000, 9, 50e9, remote_fraction=7 / 8) == pytest.approx(t * 7 / 8)
    assert cm.moe_all_to_all_time_s(32, 7000, 9, 50e9, 2.0, 2.0) == pytest.approx(t * 4 / 3)


def test_exercise_checks_pass_the_answer_and_fail_others():
    """The two new exercises' checks accept the model's answer (within their tolerance) and reject a
    wrong one, a non-number and an off-by-a-factor answer."""
    from widgets.ui import collectives as ui

    want = cm.critical_tokens_per_gpu(2250e12, 400e9)  # B200 (catalog bf16 2.25 PFLOP/s) across nodes
    assert ui.check_critical_tokens(want * 1.01) and not ui.check_critical_tokens(want * 1.05)
    assert not ui.check_critical_tokens(want / 8) and not ui.check_critical_tokens("5625")
    s = cm.nccl_model_switch_bytes("all_reduce", 4, ui.H200_NCCL_NVLINK)[1][0]
    assert ui.check_protocol_switch(s * 0.97, n=4) and not ui.check_protocol_switch(s * 1.2, n=4)
    assert not ui.check_protocol_switch(-1, n=4)


def test_roofline_calculator_rows_carry_every_parallelism_and_the_zero_stages():
    from widgets.ui import collectives as ui

    rows = ui.parallelism_roofline_rows("H200-SXM", "node", 4096, 8192, 28672, 8, 8)
    names = [r[0] for r in rows]
    assert names[:4] == ["data (backward)", "fsdp (backward)", "tensor (forward)", "pipeline (forward)"]
    assert names[4:] == ["ZeRO-0, whole step of this layer", "ZeRO-3, whole step of this layer"]
    assert "compute-bound" in rows[0][1]
    assert "communication-bound" in ui.parallelism_roofline_rows("H200-SXM", "network", 256, 8192, 28672, 64, 16)[0][1]


def test_by_hand_exercise_checks_can_fail():
    """The by-hand exercises' checks: nccl-tests' all_gather conventions (S = output; busbw = algbw x 7/8) and
    the ring/recursive-doubling crossover (proportional to alpha x B)."""
    from widgets.ui import collectives as ui

    s, t = 512 * MiB, 1.6e-3
    alg = s / t / 1e9
    bus = alg * 7 / 8
    t64 = 63 / 64 * s / (bus * 1e9) * 1e3
    assert ui.check_benchmark_line(alg, bus, 64, t64)
    assert not ui.check_benchmark_line(alg, alg, 64, t64)  # busbw = algbw: the factor forgotten
    assert not ui.check_benchmark_line(alg, bus, 512, t64)  # the shard is S / n, not S
    x = cm.ring_tree_crossover_bytes("all_reduce", 64, 450e9, cm.NCCL_NVLINK_STEP_LATENCY_S)
    y = cm.ring_tree_crossover_bytes("all_reduce", 64, 50e9, cm.NCCL_NET_STEP_LATENCY_S)
    assert ui.check_tree_crossover(x, y) and not ui.check_tree_crossover(y, x) and not ui.check_tree_crossover(x, x / 9)


def test_the_chapter_has_six_checked_exercises_and_cites_its_new_sources():
    """Issue 11's 'done when': at least 6 exercises with checks; the depth pass's sections and sources are in the
    chapter (a cheap parse of the committed notebook, no execution)."""
    import re

    nb = json.loads((ROOT / "chapters/collectives.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    labels = re.findall(r":label: (coll-ex-[\w-]+)", text)
    checks = set(re.findall(r"ui\.(check_\w+)\(", text))
    assert len(labels) >= 7 and len(checks) >= 6, (labels, checks)
    for heading in ("## NCCL's protocols and how it picks one", "## Communication against computation: a roofline per parallelism",
                    "### ZeRO and FSDP: the bytes of each stage", "## Topology: fat trees, rails and the all-to-all of experts"):
        assert heading in text
    for key in ("collectives_nccl_topo", "collectives_zhao2025insights", "collectives_alfares2008", "scaling_book"):
        assert f"{{cite}}`{key}`" in text
