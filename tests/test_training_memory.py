"""Training memory: the models against published figures, hand-derived edge cases, and the experiment's
parts (the AdamW update against torch's, the saved-bytes counter against the activation model) on the CPU."""

from __future__ import annotations

import math

import pytest

from widgets.models import training_memory as tm


# --- ZeRO: Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
# Models", SC20, arXiv:1910.02054, Figure 1: Psi = 7.5B, N_d = 64, K = 12: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB.
@pytest.mark.parametrize("stage, gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.88)])
def test_zero_figure_1(stage, gb):
    assert tm.zero_state_bytes_per_gpu(7.5e9, 64, stage) / 1e9 == pytest.approx(gb, abs=0.05 if stage < 3 else 0.005)


def test_sixteen_bytes_per_parameter_of_mixed_adam():
    # ZeRO paper, Section 3.1: "2Psi + 2Psi + K Psi = 16 Psi bytes" with K = 12 for mixed-precision Adam.
    s = tm.state_bytes(1.0)
    assert (s.weights, s.gradients, s.optimizer) == (2.0, 2.0, 12.0)
    assert tm.training_state_bytes(1.5e9) == 24e9  # the paper's GPT-2 example: 1.5B parameters -> 24 GB


def test_state_variants_by_hand():
    assert tm.training_state_bytes(1.0, "adamw", "fp32") == 16.0  # 4 + 4 + 8
    assert tm.state_bytes(1.0, "adamw", "autocast").weights == 4.0  # torch AMP keeps fp32 weights
    assert tm.training_state_bytes(1.0, "adamw_8bit") == 2 + 2 + 4 + 2  # master fp32, two 8-bit moments
    assert tm.training_state_bytes(1.0, "sgd", "fp32") == 8.0
    assert tm.training_state_bytes(1.0, "sgd_momentum") == 2 + 2 + 4 + 4


def test_zero_edges():
    p = 1e9
    assert all(tm.zero_state_bytes_per_gpu(p, 1, k) == tm.training_state_bytes(p) for k in range(4))  # one GPU: no sharding
    assert tm.zero_state_bytes_per_gpu(p, 8, 3) == pytest.approx(tm.training_state_bytes(p) / 8)
    assert [tm.zero_comm_bytes_per_gpu(p, k) / p for k in range(4)] == [4.0, 4.0, 4.0, 6.0]  # 2 Psi, 2 Psi, 2 Psi, 3 Psi at 2 B
    with pytest.raises(ValueError, match="stage"):
        tm.zero_state_bytes_per_gpu(p, 8, 4)


# --- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
# arXiv:2205.05198, Table 2 (activation memory per layer) and Section 4.1 (the 34 sbh + 5 a s^2 b count).
def test_korthikanti_table_2():
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    sbh = s * b * h
    assert tm.activation_bytes_per_layer(s, b, h, a) == sbh * (34 + 5 * a * s / h)
    assert tm.activation_bytes_per_layer(s, b, h, a, t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert tm.activation_bytes_per_layer(s, b, h, a, t, True) == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    assert tm.activation_bytes_per_layer(s, b, h, a, t, False, "selective") == pytest.approx(sbh * (10 + 24 / t))
    assert tm.activation_bytes_per_layer(s, b, h, a, t, True, "selective") == pytest.approx(sbh * 34 / t)
    assert tm.activation_bytes_per_layer(s, b, h, a, t, True, "full") == 2 * sbh


def test_korthikanti_gpt3_attention_dominates():
    # Section 4.1: for GPT-3 (a = 96, s = 2048, h = 12288), 5as/h = 80 > 34: the attention core is 70%
    # of a layer's activations, which selective recomputation removes.
    full = tm.activation_bytes_per_layer(2048, 1, 12288, 96)
    sel = tm.activation_bytes_per_layer(2048, 1, 12288, 96, recompute="selective")
    assert 1 - sel / full == pytest.approx(80 / 114)


def test_activations_scale_linearly_in_batch_and_quadratically_in_sequence_core():
    a1 = tm.activation_bytes_per_layer(1024, 1, 1024, 16)
    assert tm.activation_bytes_per_layer(1024, 3, 1024, 16) == 3 * a1
    def core(s):
        return tm.activation_bytes_per_layer(s, 1, 1024, 16) - tm.activation_bytes_per_layer(s, 1, 1024, 16, recompute="selective")

    assert core(2048) == 4 * core(1024)


def test_outside_layers():
    # Korthikanti et al. Section 4.3: embedding dropout s b h, output layer and fp32 cross-entropy 4 s b h (1 + v / h).
    assert tm.outside_layers_activation_bytes(2, 3, 4, 40) == 2 * 3 * 4 + 4 * 2 * 3 * 4 * (1 + 40 / 4)


# --- Compute: Brown et al. 2020 ("Language Models are Few-Shot Learners"), Appendix D / Table D.1:
# GPT-3 175B trained on 300B tokens took 3.14e23 FLOP; Kaplan et al. 2020: C = 6 N D.
def test_gpt3_training_compute():
    assert tm.training_flop(175e9, 300e9) == pytest.approx(3.14e23, rel=0.01)


def test_mfu_palm_appendix_b():
    # Chowdhery et al. 2022 (PaLM), Appendix B: PaLM 540B trains at 238.3K tokens/s on 6144 TPU v4
    # (275 TFLOP/s bf16 each), with 6N + 12LHQT FLOP per token (L=118, H=48, Q=256, T=2048): MFU 46.2%.
    att = tm.attention_flop_per_token(118, 48, 256, 2048)
    assert tm.mfu(238.3e3, 540.35e9, 6144 * 275e12, att) == pytest.approx(0.462, abs=0.005)


def test_mfu_and_training_time_invert():
    t = tm.training_time_s(1e9, 1e12, 8, 1e15, 0.5)
    tokens_per_s = 1e12 / t
    assert tm.mfu(tokens_per_s, 1e9, 8 * 1e15) == pytest.approx(0.5)


def test_recompute_fraction():
    assert tm.recompute_flop_fraction(1e9, 0.0, "full") == pytest.approx(1 / 3)
    assert tm.recompute_flop_fraction(1e9, 0.0, "selective") == 0.0
    assert tm.recompute_flop_fraction(1e9, 6e9, "selective") == pytest.approx(2e9 / 12e9)
    assert tm.recompute_flop_fraction(1e9, 0.0, "none") == 0.0


def test_max_micro_batch_edges():
    assert tm.max_micro_batch(100, 100, 1) == 0
    assert tm.max_micro_batch(100, 10, 30) == 3
    assert tm.max_micro_batch(100, 10, 30, limit=2) == 2


def test_lora_and_offload():
    assert tm.lora_state_bytes(8e9, 0.0) == 16e9
    assert tm.lora_state_bytes(8e9, 0.01, 0.5) == pytest.approx(4e9 + 16 * 8e7)
    assert tm.offload_time_s(1e9, 25e9, 4) == pytest.approx(0.16)


@pytest.mark.parametrize("call", [
    lambda: tm.training_state_bytes(-1), lambda: tm.training_state_bytes(1e9, "lion"),
    lambda: tm.training_state_bytes(1e9, precision="fp8"), lambda: tm.zero_state_bytes_per_gpu(1e9, 0, 1),
    lambda: tm.activation_bytes_per_layer(0, 1, 1, 1), lambda: tm.activation_bytes_per_layer(1, 1, 1, 1, recompute="some"),
    lambda: tm.mfu(0, 1e9, 1e15), lambda: tm.training_time_s(1e9, 1e9, 1, 1e15, 1.5),
])
def test_bad_input_names_the_parameter(call):
    with pytest.raises(ValueError):
        call()


# --- The experiment's parts, on the CPU
torch = pytest.importorskip("torch")


def test_mixed_adamw_matches_torch_adamw():
    from widgets.experiments.training_memory import MixedAdamW

    torch.manual_seed(0)
    w = torch.randn(64, 32)
    a, b = torch.nn.Parameter(w.clone()), torch.nn.Parameter(w.clone())
    mine = MixedAdamW([a], lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    ref = torch.optim.AdamW([b], lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    for _ in range(4):
        g = torch.randn(64, 32)
        a.grad, b.grad = g.clone(), g.clone()
        mine.step()
        ref.step()
    assert torch.allclose(a, b, atol=1e-6, rtol=1e-5)
    # 12 bytes of fp32 state per parameter: master, m, v
    assert sum(t.numel() * t.element_size() for t in mine.master + mine.m + mine.v) == 12 * a.numel()


def test_saved_bytes_follow_the_model_on_the_cpu():
    """The hooks count what autograd keeps; on a CPU dropout keeps its mask in bf16 (2 bytes; bool,
    1 byte, on CUDA) and LayerNorm its statistics in bf16: at most 10% above the model."""
    from widgets.experiments import training_memory as ex

    shape = dict(ex.CPU_SHAPE)
    gpt, opt, _, _ = ex.build(shape)
    for mode in ex.MODES:
        gpt.set_recompute(mode)
        idx, tgt = ex._batch(shape, 2)
        c = ex.SavedBytes(gpt.parameters())
        ex.train_step(gpt, opt, idx, tgt, c)
        ratio = c.nbytes / ex.predicted_activation_bytes(shape, 2, mode)
        assert 1.0 <= ratio < 1.10, (mode, ratio)


def test_tried_bytes_reads_the_message():
    from widgets.experiments.training_memory import tried_bytes

    msg = "CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.2 GiB is free."
    assert tried_bytes(msg) == int(1.95 * 2**30)
    assert tried_bytes("something else") is None


def test_shape_follows_free_memory():
    from widgets import doctor

    assert doctor.training_shape(140 * 2**30)["layers"] == doctor.TRAINING_SHAPE["layers"]
    small = doctor.training_shape(15 * 2**30)
    assert 1 <= small["layers"] < doctor.TRAINING_SHAPE["layers"]
    assert doctor.training_shape(0.5 * 2**30) is None
    full = doctor.training_shape(None)
    params = tm.gpt_params(full["layers"], full["hidden"], full["vocab"], full["seq"])
    assert params >= 1e9  # the issue asks for at least 1B parameters on the H200


def test_accuracy_rows_of_a_cpu_run_are_labelled():
    from widgets.experiments import training_memory as ex

    r = ex.TrainingMemoryResults(step=ex.measure_step(batches=(1,), modes=("none", "full"), repeat=1))
    rec = {"results": r.to_record(), "provenance": {}}
    rows = ex.accuracy_rows(rec)
    assert rows and all(row.label == "prediction" for row in rows)
    assert all(math.isfinite(row.ratio) for row in rows)
    back = ex.TrainingMemoryResults.from_record(rec["results"], strict=True)
    assert back.step.points[0].saved_bytes == r.step.points[0].saved_bytes


def test_fragmentation_is_gpu_only_and_its_subprocess_reports_why(monkeypatch):
    from widgets.experiments import harness
    from widgets.experiments import training_memory as ex

    r = harness.attempt(ex.measure_fragmentation)
    assert isinstance(r, harness.Failed) and "GPU" in r.error
    if not harness.on_gpu():  # the subprocess itself says why it cannot run, and that becomes the error
        with pytest.raises(RuntimeError, match="no CUDA device"):
            ex._allocator_run(True, (1, 2))


def test_accuracy_rows_of_a_gpu_shaped_record_are_finite_and_positive():
    """A record as the H200 writes it (allocator counts, an OOM search, fragmentation), built from a CPU
    run's shape: every row the accuracy page would show has a finite, positive ratio."""
    from dataclasses import replace

    from widgets.experiments import training_memory as ex

    step = ex.measure_step(batches=(1, 4), modes=("none", "full"), repeat=1)
    pts = tuple(replace(p, activations_bytes=p.saved_bytes, gradients_bytes=step.gradients_tensor_bytes, peak_bytes=2 * p.saved_bytes)
                for p in step.points)
    step = replace(step, points=pts, weights_bytes=step.weights_tensor_bytes, optimizer_bytes=step.optimizer_tensor_bytes,
                   peak_flop_per_s=989.4e12, gpu="H200-SXM")
    run = ex.AllocatorRun(False, 0, 2**30, 2**30, 2**28)
    for ok, cap in ((10, 2**34), (0, 2**34), (3, 1)):  # a normal search; batch 1 failing; a capacity the model says holds nothing
        oom = ex.OomResult(largest_ok_batch=ok, failed_batch=ok + 1, message="CUDA out of memory. Tried to allocate 2.00 GiB.",
                           tried_bytes=2**31, held_bytes=2**33, state_bytes=step.weights_tensor_bytes, capacity_bytes=cap, trials=(8, 16))
        res = ex.TrainingMemoryResults(step=step, oom=oom, fragmentation=ex.FragmentationResult(run, run, (1, 2)))
        rec = {"results": res.to_record(), "provenance": {"gpu": "NVIDIA H200"}}
        rows = ex.accuracy_rows(rec)
        assert len(rows) >= 5
        assert all(math.isfinite(r.ratio) and r.ratio > 0 for r in rows)
        assert ex.TrainingMemoryResults.from_record(rec["results"], strict=True).fragmentation.default.reserved_bytes == 2**30


def test_gpu_code_paths_run_on_a_simulated_device(monkeypatch):
    """The GPU branches (allocator counts, CUDA events, the out-of-memory search and its bisection) run here with
    torch.cuda's counters stubbed and an OutOfMemoryError raised past a micro-batch, so that the H200 batch
    meets no typo first. Nothing is measured: the counters are fakes."""
    from widgets import doctor
    from widgets.experiments import harness
    from widgets.experiments import training_memory as ex

    counter = {"n": 0}

    def fake_allocated(*_a):
        counter["n"] += 4096
        return counter["n"]

    class FakeEvent:
        def __init__(self, *a, **k):
            self.t = 0.0

        def record(self):
            import time

            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return (other.t - self.t) * 1e3

    cpu = torch.device("cpu")
    monkeypatch.setattr(harness, "on_gpu", lambda: True)
    monkeypatch.setattr(harness, "device", lambda: cpu)
    monkeypatch.setattr(harness, "device_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(harness, "capabilities", lambda: doctor.simulate("H200-SXM").capabilities)
    for name, fn in (("memory_allocated", fake_allocated), ("max_memory_allocated", fake_allocated),
                     ("memory_reserved", lambda *a: 2 * counter["n"]), ("reset_peak_memory_stats", lambda *a: None),
                     ("synchronize", lambda *a: None), ("empty_cache", lambda *a: None),
                     ("mem_get_info", lambda *a: (100 * 2**30, 141 * 2**30)), ("Event", FakeEvent)):
        monkeypatch.setattr(torch.cuda, name, fn, raising=False)
    step = ex.measure_step(dict(ex.CPU_SHAPE), batches=(1,), modes=("none", "selective", "full"), repeat=1)
    assert step.gpu == "H200-SXM" and step.peak_flop_per_s == 989.4e12 and step.dtype == "bf16"
    assert all(p.activations_bytes is not None and p.step_s > 0 for p in step.points)

    oom_error = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
    real_batch = ex._batch

    def failing_batch(shape, b, seed=0):
        if b >= 11:
            raise oom_error("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB")
        return real_batch(shape, min(b, 2), seed)  # tiny batches: this is about the search, not the memory

    monkeypatch.setattr(ex, "_batch", failing_batch)
    oom = ex.measure_oom(dict(ex.CPU_SHAPE))
    assert (oom.largest_ok_batch, oom.failed_batch) == (10, 11)
    assert oom.trials == (8, 16, 12, 10, 11) and oom.tried_bytes == 2 * 2**30 and oom.held_bytes is not None


def test_the_issues_module_name_is_an_alias_of_the_topic_module():
    from widgets.models import training

    for name in ("training_state_bytes", "zero_state_bytes_per_gpu", "activation_bytes_per_layer", "training_flop", "mfu"):
        assert getattr(training, name) is getattr(tm, name)


def test_gpt_params_counts_the_experiments_model():
    from widgets.experiments import training_memory as ex

    for shape in (ex.CPU_SHAPE, dict(ex.CPU_SHAPE, layers=3, seq=48)):
        gpt = ex.GPT(**shape)
        assert sum(p.numel() for p in gpt.parameters()) == tm.gpt_params(shape["layers"], shape["hidden"], shape["vocab"], shape["seq"])
