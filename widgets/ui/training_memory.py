"""Calculators for the training-memory chapter: the memory budget, the fixes ladder, training time
and cost. Each has a live form (``*_calculator``, ipywidgets) and a static form (``*_figure``,
plotly frames precomputed by the same model, :mod:`widgets.models.training_memory`). The tables of
the chapter's measurements and the exercise checks live here too.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ..hardware import get_gpu, gpu_names
from ..models import llms, transformer
from ..models import training_memory as tm
from ..units import GiB, fmt_bytes, fmt_time
from ._core import answer_close as _close
from ._core import answer_number as _number
from ._core import grid_figure, html_table, live_form, plural, series_color, set_layout, style_figure, table_html
from ._core import verdict as _verdict

BUCKETS = (("weights", "#0072B2"), ("gradients", "#56B4E9"), ("optimizer state", "#E69F00"), ("activations", "#CC79A7"),
           ("the rest (allowance)", "#999999"))
CUSTOM = "custom"


def _bucket_values(b: tm.TrainingBudget) -> tuple:
    return (b.weights_bytes, b.gradients_bytes, b.optimizer_bytes, b.activation_bytes, b.reserve_bytes)


def _bucket_traces(b: tm.TrainingBudget) -> list:
    """The five buckets as one stacked bar, and the GPU's memory as a dashed line (a trace, so each
    frame of a static calculator carries its own GPU's capacity)."""
    cap = b.capacity_bytes / GiB
    bars = [
        go.Bar(x=[v / GiB], y=[0], orientation="h", name=name, marker_color=color, width=0.6,
               hovertemplate=f"{name}: %{{x:.3g}} GiB<extra></extra>")
        for (name, color), v in zip(BUCKETS, _bucket_values(b))
    ]
    line = go.Scatter(x=[cap, cap], y=[-0.45, 0.45], mode="lines", name=f"{b.gpu} memory", showlegend=False,
                      line=dict(color="#888888", width=3, dash="dash"), hovertemplate=f"{b.gpu}: {cap:.0f} GiB<extra></extra>")
    return bars + [line]


def _capacity_layout() -> dict:
    return dict(barmode="stack", xaxis=dict(title="memory per GPU [GiB]", rangemode="tozero"),
                yaxis=dict(showticklabels=False, range=[-0.6, 0.6], fixedrange=True))


def budget_readout(b: tm.TrainingBudget) -> str:
    """One line: fits or by how much not, and the largest micro-batch that fits."""
    verdict = "fits" if b.fits else f"does NOT fit ({fmt_bytes(-b.free_bytes)} short)"
    most = b.max_micro_batch
    tail = f"largest micro-batch {most}" if most else "no micro-batch fits"
    note = " (dense approximation)" if b.approximation else ""
    return f"{fmt_bytes(b.used_bytes)}{note}: {verdict}; {tail}"


def resolve_model(model: str, layers=32, hidden_size=4096, heads=32, kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=32000):
    """A preset by name, or (``model == "custom"``) a dense model built from the other fields."""
    if model == CUSTOM:
        return transformer.custom_model(layers, hidden_size, heads, kv_heads, head_dim, intermediate_size, vocab_size)
    return llms.get_model(model)


# --------------------------------------------------------------------------------------------
# 1. The memory budget
# --------------------------------------------------------------------------------------------
# (model, GPUs, ZeRO stage, recompute) the static budget offers, on one H200
BUDGET_CHOICES = (("Llama-3-8B", 1, 0, "none"), ("Llama-3-8B", 1, 0, "full"), ("Llama-3-8B", 8, 1, "none"),
                  ("Llama-3-8B", 8, 3, "selective"), ("Llama-3-8B", 8, 3, "full"), ("Llama-3-70B", 8, 3, "full"),
                  ("Llama-3-70B", 64, 3, "full"))
BUDGET_BATCHES = (1, 2, 4, 8, 16, 32)


def _budget_label(c) -> str:
    return f"{c[0]}, {plural(c[1], 'GPU')}, ZeRO-{c[2]}, recompute {c[3]}"


def budget_figure(choices=BUDGET_CHOICES, gpu: str = "H200-SXM", seq: int = 4096, batches=BUDGET_BATCHES) -> go.Figure:
    """Static memory budget on one ``gpu``: the dropdown picks (model, GPUs, ZeRO stage,
    recomputation), the slider the micro-batch; mixed-precision AdamW at ``seq`` tokens."""
    choices = [tuple(c) for c in choices]
    batches = list(batches)
    budgets = {(c, b): tm.memory_budget(c[0], gpu, b, seq, stage=c[2], gpus=c[1], recompute=c[3]) for c in choices for b in batches}
    def frame(c, b):
        x = budgets[c, b]
        return _bucket_traces(x), f"{c[0]}: micro-batch {b} x {seq} tokens", budget_readout(x)

    return grid_figure(
        slider=("micro-batch", batches, str),
        choices=("model, GPUs, ZeRO, recompute", choices, _budget_label),
        frame=frame, layout=_capacity_layout(), active=(1, 0), height=420,
    )


def _custom_controls(w):
    return {
        "layers": w.BoundedIntText(value=32, min=1, max=512, description="layers"),
        "hidden_size": w.BoundedIntText(value=4096, min=64, max=65536, step=64, description="hidden"),
        "heads": w.BoundedIntText(value=32, min=1, max=512, description="heads"),
        "kv_heads": w.BoundedIntText(value=8, min=1, max=512, description="KV heads"),
        "head_dim": w.BoundedIntText(value=128, min=8, max=1024, description="head dim"),
        "intermediate_size": w.BoundedIntText(value=14336, min=64, max=262144, description="FFN"),
        "vocab_size": w.BoundedIntText(value=32000, min=1, max=1_000_000, description="vocab"),
    }


def budget_calculator():
    """Live memory budget: a preset or custom model, optimizer, precision, ZeRO stage and GPUs,
    micro-batch, sequence, recomputation, GPU -> bytes per bucket, fits or not, the largest
    micro-batch that fits."""
    import ipywidgets as w

    controls = {
        "model": w.Dropdown(options=list(llms.PRESETS) + [CUSTOM], value="Llama-3-8B", description="model"),
        "gpu": w.Dropdown(options=list(gpu_names()), value="H200-SXM", description="GPU"),
        "optimizer": w.Dropdown(options=tm.OPTIMIZERS, value="adamw", description="optimizer"),
        "precision": w.Dropdown(options=tm.PRECISIONS, value="mixed", description="precision"),
        "stage": w.Dropdown(options=[0, 1, 2, 3], value=1, description="ZeRO stage"),  # 0: the GPU count changes nothing
        "gpus": w.BoundedIntText(value=8, min=1, max=100_000, description="GPUs (DP)"),
        "micro_batch": w.BoundedIntText(value=1, min=1, max=4096, description="micro-batch"),
        "seq": w.BoundedIntText(value=4096, min=1, max=1_000_000, description="sequence"),
        "recompute": w.Dropdown(options=tm.RECOMPUTE, value="none", description="recompute"),
        "attention": w.Dropdown(options=tm.ATTENTION, value="flash", description="attention"),
        **_custom_controls(w),
    }

    def compute(model, gpu, optimizer, precision, stage, gpus, micro_batch, seq, recompute, attention, **custom):
        return tm.memory_budget(resolve_model(model, **custom), gpu, micro_batch, seq, optimizer, precision, stage, gpus, recompute,
                                attention=attention)

    def show(b):
        rows = [(name, fmt_bytes(v)) for (name, _c), v in zip(BUCKETS, _bucket_values(b))]
        rows += [("total", fmt_bytes(b.used_bytes)), (f"{b.gpu} memory", fmt_bytes(b.capacity_bytes)),
                 ("fits?", "yes" if b.fits else f"no: {fmt_bytes(-b.free_bytes)} short"),
                 ("largest micro-batch that fits", str(b.max_micro_batch))]
        if b.approximation:
            rows.append(("note", b.approximation))
        fig = go.Figure(_bucket_traces(b))
        set_layout(fig, **_capacity_layout())
        return table_html(rows), style_figure(fig, title=f"{b.model}, micro-batch {b.micro_batch} x {b.seq}", readout=budget_readout(b), height=360)

    box = live_form(compute, controls, show, title="Training memory budget")
    if hasattr(box, "controls") and "model" in box.controls:
        def sync(_change=None):
            custom = controls["model"].value == CUSTOM
            for k in ("layers", "hidden_size", "heads", "kv_heads", "head_dim", "intermediate_size", "vocab_size"):
                controls[k].layout.display = None if custom else "none"

        controls["model"].observe(sync, names="value")
        sync()
    return box


# --------------------------------------------------------------------------------------------
# 2. The fixes ladder
# --------------------------------------------------------------------------------------------
LADDER_CHOICES = (("Llama-3-8B", "H100-SXM", 8, 4096), ("Llama-3-8B", "RTX-4090", 8, 2048), ("Llama-3-70B", "H200-SXM", 64, 4096),
                  ("Mistral-7B", "A100-SXM-80GB", 8, 8192))


def _rung_readout(r: tm.Rung) -> str:
    cost = []
    if r.extra_flop_fraction:
        cost.append(f"+{r.extra_flop_fraction:.0%} FLOP")
    if r.extra_comm_bytes:
        cost.append(f"+{fmt_bytes(r.extra_comm_bytes)} sent per GPU per step")
    damage = f" (damage: {r.damage})" if r.damage else ""
    # ZeRO-2's per-micro-batch reduce-scatters depend on the accumulation steps, which the ladder does not know:
    # its damage says so, and its cost does not claim "no bytes" (reader check r10)
    none = "none in FLOP" if r.fix == "ZeRO-2" else "none in FLOP or bytes"
    return f"{budget_readout(r.budget)}; cost: {', '.join(cost) if cost else none}{damage}"


def ladder_figure(choices=LADDER_CHOICES) -> go.Figure:
    """Static fixes ladder: the dropdown picks (model, GPU, data-parallel GPUs, sequence), the
    slider how many fixes are applied (in the order of ``FIXES``), micro-batch 1."""
    choices = [tuple(c) for c in choices]
    ladders = {c: tm.fixes_ladder(c[0], c[1], 1, c[3], c[2]) for c in choices}
    steps = list(range(len(tm.FIXES)))

    def frame(c, i):
        r = ladders[c][i]
        head = "baseline: no fix" if i == 0 else f"fix {i} of {len(steps) - 1}: {r.fix}"
        return _bucket_traces(r.budget), head, _rung_readout(r)

    # the slider counts the fixes (its ticks: 0 to 6, all labelled on a phone); the title names the
    # last one (the names under the ticks were thinned to 4 of 7 and the last cut, review R-15)
    fig = grid_figure(
        slider=("fixes applied", steps, str),
        choices=("model, GPU, GPUs, sequence", choices, lambda c: f"{c[0]} on {c[2]} x {c[1]}, {c[3]} tokens"),
        frame=frame, layout=_capacity_layout(), height=420,
    )
    return fig


def ladder_table(model="Llama-3-8B", gpu="H100-SXM", micro_batch=1, seq=4096, gpus=8) -> str:
    """The ladder as a table: per fix, memory per GPU, fits, extra FLOP, extra bytes sent, what it damages."""
    rows = []
    ladder = tm.fixes_ladder(model, gpu, micro_batch, seq, gpus)
    for r in ladder:
        rows.append([r.fix, fmt_bytes(r.budget.used_bytes), "yes" if r.budget.fits else "no",
                     f"{r.extra_flop_fraction:.0%}", fmt_bytes(r.extra_comm_bytes) if r.extra_comm_bytes else "0", r.damage or "-"])
    out = html_table(["fix (cumulative)", "memory per GPU", "fits?", "extra FLOP", "extra bytes sent per GPU", "damage"], rows)
    note = ladder[0].budget.approximation
    return out + (f"<p>{note}.</p>" if note else "")


def ladder_calculator():
    """Live fixes ladder: model, GPU, micro-batch, sequence and data-parallel GPUs -> the ladder."""
    import ipywidgets as w

    controls = {
        "model": w.Dropdown(options=list(llms.PRESETS), value="Llama-3-8B", description="model"),
        "gpu": w.Dropdown(options=list(gpu_names()), value="H100-SXM", description="GPU"),
        "micro_batch": w.BoundedIntText(value=1, min=1, max=4096, description="micro-batch"),
        "seq": w.BoundedIntText(value=4096, min=1, max=1_000_000, description="sequence"),
        "gpus": w.BoundedIntText(value=8, min=1, max=100_000, description="GPUs (DP)"),
    }

    def compute(model, gpu, micro_batch, seq, gpus):
        tm.fixes_ladder(model, gpu, micro_batch, seq, gpus)  # validates; the table recomputes
        return ladder_table(model, gpu, micro_batch, seq, gpus)

    return live_form(compute, controls, lambda t: t, title="The fixes ladder")


# --------------------------------------------------------------------------------------------
# 3. Training time and cost (6 N D)
def _train_dtype(g) -> str:
    """The 16-bit format a GPU trains in: bf16 where the catalog has its peak, else fp16 (a T4)."""
    return "bf16" if "bf16" in g.peak_flop_per_s else "fp16"


# --------------------------------------------------------------------------------------------
# (name, parameters, tokens): GPT-3 (Brown et al. 2020), Llama 3 8B and 70B (15T tokens, Llama 3 paper)
RUNS = (("GPT-3 175B, 300B tokens", 175e9, 300e9), ("Llama-3-8B, 15T tokens", 8.03e9, 15e12), ("Llama-3-70B, 15T tokens", 70.6e9, 15e12))
TIME_GPUS = (64, 256, 1024, 4096, 16384)
MFUS = (0.2, 0.3, 0.4, 0.5, 0.6)


def time_figure(runs=RUNS, gpu: str = "H100-SXM", gpu_counts=TIME_GPUS, mfus=MFUS, dtype: str = "bf16",
                gpu_hour_price: float = 2.0) -> go.Figure:
    """Static training time: the dropdown picks a run (parameters, tokens), the slider the MFU;
    bars give the days on each number of ``gpu`` GPUs, the readout GPU-hours and their cost at
    ``gpu_hour_price`` USD per GPU-hour (an assumed rental price, not a quote)."""
    peak = get_gpu(gpu).peak(dtype)
    labels = [f"{n:,}" for n in gpu_counts]

    def frame(run, u):
        days = [tm.training_time_s(run[1], run[2], n, peak, u) / 86400 for n in gpu_counts]
        hours = tm.training_time_s(run[1], run[2], 1, peak, u) / 3600
        bar = go.Bar(x=labels, y=days, marker_color=series_color(0), name="days", showlegend=False,
                     hovertemplate="%{x} GPUs: %{y:.3g} days<extra></extra>")
        readout = (f"{tm.training_flop(run[1], run[2]):.3g} FLOP; {hours:,.0f} GPU-hours at MFU {u:.0%}, "
                   f"{hours * gpu_hour_price:,.0f} USD at {gpu_hour_price:g} USD/GPU-h")
        return [bar], run[0], readout

    return grid_figure(
        slider=("MFU", list(mfus), lambda u: f"{u:.0%}"),
        choices=("run", list(runs), lambda r: r[0]),
        frame=frame, layout=dict(xaxis=dict(title=f"{gpu} GPUs", type="category"), yaxis=dict(title="days", type="log")),
        active=(0, 2), height=420,
    )


def time_calculator():
    """Live training time and cost: parameters, tokens, GPUs, GPU, MFU, price -> days, GPU-hours, cost."""
    import ipywidgets as w

    controls = {
        "params": w.FloatText(value=8.03e9, description="parameters"),
        "tokens": w.FloatText(value=15e12, description="tokens"),
        "gpus": w.BoundedIntText(value=1024, min=1, max=1_000_000, description="GPUs"),
        "gpu": w.Dropdown(options=list(gpu_names()), value="H100-SXM", description="GPU"),
        "mfu_fraction": w.BoundedFloatText(value=0.4, min=0.01, max=1.0, step=0.05, description="MFU"),
        "price": w.BoundedFloatText(value=2.0, min=0.0, max=1000.0, description="USD/GPU-h"),
    }

    def compute(params, tokens, gpus, gpu, mfu_fraction, price):
        g = get_gpu(gpu)
        s = tm.training_time_s(params, tokens, gpus, g.peak(_train_dtype(g)), mfu_fraction)
        return tm.training_flop(params, tokens), s, s * gpus / 3600, price

    def show(r):
        flop, s, gpu_h, price = r
        return table_html([("training compute (6 N D)", f"{flop:.3g} FLOP"), ("wall time", f"{fmt_time(s)} = {s / 86400:,.3g} days"),
                           ("GPU-hours", f"{gpu_h:,.0f}"), ("cost", f"{gpu_h * price:,.0f} USD")])

    return live_form(compute, controls, show, title="Training time and cost")


# --------------------------------------------------------------------------------------------
# Exercise checks
# --------------------------------------------------------------------------------------------
def _whole(answer) -> int | None:
    """The reader's answer as an int if it is a whole number (``3`` or ``3.0``), else None."""
    a = _number(answer)
    return int(a) if a is not None and a.is_integer() else None


# The FAIL lines point to the method and the section, never to the number (reviews of round 3:
# a hint that states the formula with the exercise's values filled in is the answer).
def check_state_gb(answer) -> bool:
    """Exercise: mixed-precision AdamW state of Llama-3-8B, in GB (decimal)."""
    params = llms.get_model("Llama-3-8B").params
    expected = tm.training_state_bytes(params) / 1e9
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number of GB, got {answer!r}")
    if _close(a, expected):
        return _verdict(True, f"16 bytes x {params:.3g} parameters = {expected:.1f} GB")
    if _close(a, expected * 1e9 / GiB):
        return _verdict(False, f"{a:g} is in GiB: the exercise asks for decimal GB (10^9 bytes)")
    return _verdict(False, f"{a:g} GB is not right: add up what one parameter costs in weights, gradients and optimizer state "
                           "(section 'Sixteen bytes per parameter'), times the parameters, in decimal GB")


def check_zero_stage(answer) -> bool:
    """Exercise: the lowest ZeRO stage at which Llama-3-70B's state fits in 80 GiB on 64 GPUs."""
    p = llms.get_model("Llama-3-70B").params
    expected = next(k for k in range(4) if tm.zero_state_bytes_per_gpu(p, 64, k) <= 80 * GiB)
    k = _whole(answer)
    if k not in (0, 1, 2, 3):
        return _verdict(False, f"the answer must be a ZeRO stage, 0, 1, 2 or 3, got {answer!r}")
    if k == expected:
        return _verdict(True, f"stage {expected}: {fmt_bytes(tm.zero_state_bytes_per_gpu(p, 64, expected))} per GPU")
    per_gpu = tm.zero_state_bytes_per_gpu(p, 64, k)
    if per_gpu > 80 * GiB:
        return _verdict(False, f"at stage {k} each GPU still holds {fmt_bytes(per_gpu)} of state, over 80 GiB: "
                               "see which buckets each stage shards (section 'Sharding the state: ZeRO and FSDP')")
    return _verdict(False, f"stage {k} fits, but is it the lowest? Work out the per-GPU state of the stages below it")


def check_activation_gib(answer) -> bool:
    """Exercise: one GPT-3 layer's activations at s = 2048, b = 1, no recomputation, in GiB."""
    s, b, h, a_heads = 2048, 1, 12288, 96
    expected = tm.activation_bytes_per_layer(s, b, h, a_heads) / GiB
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number of GiB, got {answer!r}")
    if _close(a, expected):
        return _verdict(True, f"s b h (34 + 5 a s / h) = {expected:.3g} GiB")
    if _close(a, expected * GiB / 1e9):
        return _verdict(False, f"{a:g} is in GB: the exercise asks for GiB (2^30 bytes)")
    if _close(a, 34 * s * b * h / GiB):
        return _verdict(False, f"{a:g} GiB leaves out the attention terms that grow with the sequence length")
    return _verdict(False, f"{a:g} GiB is not right: count the bytes one layer keeps per token of the sequence, including the terms "
                           "that grow with s (section 'Activations'), then multiply by the tokens")


def check_full_recompute_cost(answer) -> bool:
    """Exercise: extra FLOP of full recomputation, as a fraction, ignoring attention."""
    expected = tm.recompute_flop_fraction(1e9, 0.0, "full")
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a fraction (a number such as 0.5), got {answer!r}")
    if _close(a, expected):
        return _verdict(True, "one more forward pass: 2 N on top of 6 N = 1/3")
    if _close(a, 100 * expected):
        return _verdict(False, f"{a:g} looks like a percent: give a fraction")
    return _verdict(False, f"{a:g} is not right: which pass does full recomputation run a second time, and what share of a "
                           "training step's FLOP is that pass? (section 'Recomputation: memory for time')")


def check_gpt3_days(answer) -> bool:
    """Exercise: days to train GPT-3 (175B, 300B tokens) on 1024 A100s at 50% MFU."""
    expected = tm.training_time_s(175e9, 300e9, 1024, get_gpu("A100-SXM-80GB").peak("bf16"), 0.5) / 86400
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a number of days, got {answer!r}")
    if _close(a, expected, 0.05):
        return _verdict(True, f"6 N D / (1024 x 312 TFLOP/s x 0.5) = {expected:.1f} days")
    if _close(a, expected * 86400, 0.05) or _close(a, expected * 24, 0.05):
        return _verdict(False, f"{a:g} is in seconds or hours: give days")
    return _verdict(False, f"{a:g} days is not right: the training's FLOP (section 'The compute: 6 N D') over what the cluster "
                           "delivers per second at that MFU, in days")


def check_mfu(answer) -> bool:
    """Exercise: MFU of a 1.3B-parameter model at 50,000 tokens/s on one H100 (bf16 dense peak)."""
    expected = tm.mfu(5e4, 1.3e9, get_gpu("H100-SXM").peak("bf16"))
    a = _number(answer)
    if a is None:
        return _verdict(False, f"the answer must be a fraction (a number such as 0.5), got {answer!r}")
    if _close(a, expected):
        return _verdict(True, f"6 x 1.3e9 x 5e4 / 989.4e12 = {expected:.3f}")
    if _close(a, 100 * expected):
        return _verdict(False, f"{a:g} looks like a percent: give a fraction")
    return _verdict(False, f"{a:g} is not right: the model FLOP per second the run does (section 'The compute: 6 N D') over the "
                           "GPU's dense bf16 peak")


def check_max_batch(answer) -> bool:
    """Exercise: the largest micro-batch of Llama-3-8B at 4096 tokens with full recomputation and
    ZeRO-3 on 8 H200s, by the memory budget."""
    b = tm.memory_budget("Llama-3-8B", "H200-SXM", 1, 4096, stage=3, gpus=8, recompute="full")
    k = _whole(answer)
    if k is None or k < 1:
        return _verdict(False, f"the answer must be a whole number of sequences, 1 or more, got {answer!r}")
    if k == b.max_micro_batch:
        return _verdict(True, f"{b.max_micro_batch} sequences")
    side = "does not fit" if k > b.max_micro_batch else "fits, and so does a larger one"
    return _verdict(False, f"micro-batch {k} {side}: set the budget calculator (or memory_budget) to this case and read "
                           "'largest micro-batch that fits'")
