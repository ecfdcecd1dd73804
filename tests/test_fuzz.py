"""Fuzz every public function of ``widgets.models.*``, ``widgets.units`` and ``widgets.hardware``.

Each parameter in turn gets a bad value (0, -1, NaN, +-inf, 1e308, 5e-324, 2**62, a string, None, a numpy array, a
list, True, and an unknown name for a string parameter); every other parameter keeps a valid value (the
signature default, or the table ``VALID`` below). A call must either

- raise ``ValueError`` whose message names the parameter it was given (word match), or
- return a result that is finite all the way down (dataclasses, tuples, lists, dicts, arrays);

and for the values that can never be valid (NaN, +-inf, None where None is not an option, a
string for a number, a list for a scalar, a bool for a number, a non-bool for a bool, a non-string
or an unknown name for an enum, -1 for a size or count) it MUST raise that ``ValueError``.
Every call runs under a 2-s alarm and a memory cap, so hangs and runaway allocations fail.

Test ids are ``<module>.<function>`` (one test per function runs every bad value of every parameter and
lists each that misbehaved): ``pytest tests/test_fuzz.py -k serving``.
``python tests/test_fuzz.py [-k WORD]`` prints the failure totals by kind (for the reliability
issue's before/after count).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import numbers
import re
import resource
import signal
import sys
from collections.abc import Mapping

import numpy as np
import pytest

MODULES = (
    "widgets.models.memory_hierarchy",
    "widgets.models.simt",
    "widgets.models.tensor_cores",
    "widgets.models.collectives",
    "widgets.models.transformer",
    "widgets.models.llms",
    "widgets.models.serving",
    "widgets.models.training_memory",
    "widgets.models.attention",
    "widgets.models.kernels",
    "widgets.units",
    "widgets.hardware",
)

# Result records: built by a model from checked inputs, never by a reader. Fuzzing their
# constructors would only measure that a dataclass stores what it is given.
RESULT_CLASSES = {
    "Coalescing", "RooflinePoint", "FusionEstimate", "TransposeCost", "BytesInFlight",
    "ArchLimits", "Occupancy", "Divergence", "LatencyHiding",
    "PeakCheck", "GemmEstimate", "DotError", "Accumulator", "AccumulationError",
    "PipelineStages", "TileHierarchy", "EpilogueEstimate", "GroupedGemmEstimate",
    "RingTransfer", "DataParallelStep", "HierarchicalAllReduce", "CrossNodeAllReduce", "LayerRoofline", "NcclChoice",
    "CapacityPlan", "DecodeStep", "Latency", "MemoryBudget",
    "FrontierPoint", "KVWaste", "MoEDeployment", "PrefixCache", "SplitKV",
    "StateBytes", "TrainingBudget", "Rung",
    "FlashBlocks", "OnlineSoftmaxStep",
    "Tiling", "RungCost", "LadderPrediction", "TileSummary",
}

_H200 = dict(peak_flop_per_s=989.4e12, bytes_per_s=4.8e12)
_LLAMA8 = dict(layers=32, hidden_size=4096, heads=32, kv_heads=8, head_dim=128, intermediate_size=14336)

# Valid values for parameters without a default (and a few overrides). Key: "module.function".
VALID: dict[str, dict] = {
    # memory_hierarchy
    "memory_hierarchy.arithmetic_intensity": dict(flop=1e9, bytes_moved=1e6),
    "memory_hierarchy.ridge_intensity": dict(_H200),
    "memory_hierarchy.attainable_flop_per_s": dict(intensity=10.0, **_H200),
    "memory_hierarchy.roofline_time_s": dict(flop=1e12, bytes_moved=1e9, **_H200),
    "memory_hierarchy.hierarchical_attainable_flop_per_s": dict(
        peak_flop_per_s=100.0, levels={"L2": (2.0, 40.0), "HBM": (4.0, 10.0)}),
    "memory_hierarchy.warp_addresses": dict(stride_elems=1),
    "memory_hierarchy.warp_load_sectors": dict(stride_elems=1),
    "memory_hierarchy.warp_load_lines": dict(stride_elems=1),
    "memory_hierarchy.coalescing": dict(stride_elems=1),
    "memory_hierarchy.strided_read_bytes": dict(n_elems=1024, stride_elems=2),
    "memory_hierarchy.strided_read_time_s": dict(n_elems=1024, stride_elems=2, bytes_per_s=4.8e12),
    "memory_hierarchy.shared_wavefronts": dict(byte_addresses=list(range(0, 128, 4))),
    "memory_hierarchy.bank_conflict_wavefronts": dict(stride_elems=1),
    "memory_hierarchy.bank_loads": dict(stride_elems=1),
    "memory_hierarchy.sector_usage": dict(stride_elems=1),
    "memory_hierarchy.smem_bytes_per_s": dict(sms=132, clock_hz=1.98e9),
    "memory_hierarchy.pcie_encoded_bytes_per_s": dict(raw_bytes_per_s=64e9, pcie_gen=5),
    "memory_hierarchy.tiled_matmul_hbm_bytes": dict(m=1024, n=1024, k=1024, tile=128),
    "memory_hierarchy.working_set_bytes_per_s": dict(
        ws_bytes=1e6, cache_bytes=50 * 2**20, cache_bytes_per_s=10e12, mem_bytes_per_s=4.8e12),
    "memory_hierarchy.tma_swizzle_offset": dict(byte_offset=128 + 5),
    "memory_hierarchy.tiled_matmul_global_bytes": dict(m=1024, n=1024, k=1024, tile=32),
    "memory_hierarchy.matmul_compulsory_bytes": dict(m=1024, n=1024, k=1024),
    "memory_hierarchy.roofline_point": dict(gpu="H200-SXM", dtype="bf16", intensity=100.0),
    "memory_hierarchy.elementwise_chain_bytes": dict(n_elems=2**20, n_ops=4),
    "memory_hierarchy.fusion_estimate": dict(n_elems=2**20, n_ops=4, bytes_per_s=4.8e12),
    "memory_hierarchy.transpose_cost": dict(
        n=1024, kind="naive", hbm_bytes_per_s=4.8e12, l2_bytes_per_s=9e12, sms=132, clock_hz=1.98e9
    ),
    "memory_hierarchy.transpose_tile_wavefronts": dict(kind="tiled"),
    "memory_hierarchy.littles_law_bytes_in_flight": dict(bytes_per_s=4.8e12, latency_s=600e-9),
    "memory_hierarchy.bytes_in_flight": dict(bytes_per_s=4.8e12, latency_s=600e-9, sms=132),
    "memory_hierarchy.l2_persisting_hit_fraction": dict(working_set_bytes=4e7, window_bytes=4e7, carveout_bytes=3e7),
    "memory_hierarchy.spill_traffic_bytes": dict(threads=1024, spill_store_bytes=8, spill_load_bytes=8),
    # simt
    "simt.occupancy": dict(threads_per_block=256, regs_per_thread=32),
    "simt.occupancy_sweep": dict(parameter="regs_per_thread", values=[32, 64, 128]),
    "simt.max_regs_per_thread_for": dict(threads_per_block=256, blocks_per_sm=8),
    "simt.smem_per_block_for": dict(blocks_per_sm=4),
    "simt.warp_divergence": dict(lanes_per_path=[16, 16], cost_per_path=[100, 100]),
    "simt.lanes_round_robin": dict(n_paths=4),
    "simt.fp32_issue_time_s": dict(flop=66.9e12, sms=132, clock_hz=1.98e9),
    "simt.issue_slots_per_iteration": dict(per_iteration_s=1e-9 * 16896 / (4 * 132), clock_hz=1e9, sms=132, warps=16896),
    "simt.issue_time_s": dict(instructions_per_iteration=10, iterations=1, sms=132, warps=16896, clock_hz=1e9),
    "simt.divergent_kernel_time_s": dict(paths_taken=32, path_s=2e-4, fixed_s=1e-4),
    "simt.random_branch_time": dict(p_taken=0.5, cost_taken=10.0, cost_not_taken=5.0),
    "simt.littles_law_in_flight": dict(latency_s=500e-9, throughput_per_s=4.8e12),
    "simt.latency_hiding": dict(latency_s=500e-9, bytes_per_s=4.8e12, sms=132),
    "simt.littles_law_bytes_per_s": dict(
        warps_per_sm=32, sms=132, bytes_per_warp_in_flight=128.0, latency_s=500e-9, peak_bytes_per_s=4.8e12),
    "simt.launch_bound_time_s": dict(n_kernels=100, kernel_s=1e-6, launch_overhead_s=5e-6),
    "simt.amdahl_speedup": dict(parallel_fraction=0.9, workers=8),
    "simt.amdahl_ceiling": dict(parallel_fraction=0.9),
    "simt.parallel_fraction_from_times": dict(serial_s=5e-3, parallel_s=95e-3),
    "simt.parallel_fraction_needed": dict(speedup=4.0, workers=8),
    "simt.reduction_time_s": dict(bytes_read=1 << 30, read_bytes_per_s=4e12, same_address_atomics=1 << 20, atomics_per_s=2e9),
    "simt.reduction_atomics": dict(n_elems=1 << 24, per="warp", threads_per_block=256, grid_blocks=528),
    "simt.pipeline_time_s": dict(stage_s=[4e-3, 4e-3, 4e-3], chunks=8, per_chunk_overhead_s=1e-5),
    "simt.waves": dict(grid_blocks=133, blocks_per_sm=1, sms=132),
    "simt.pipeline_schedule": dict(stage_s=[4e-3, 1e-3, 4e-3], chunks=8),
    "simt.atomic_throughput_per_s": dict(addresses=32, same_address_per_s=5e8, max_per_s=1e11),
    # tensor_cores
    "tensor_cores.matmul_flop": dict(m=128, n=128, k=128),
    "tensor_cores.peak_flop_per_s": dict(sms=132, clock_hz=1.98e9, flop_per_clock_per_sm=4096),
    "tensor_cores.implied_clock_hz": dict(peak_flop_per_s=989.4e12, sms=132, flop_per_clock_per_sm=4096),
    "tensor_cores.sparse_flop_per_s": dict(dense_flop_per_s=989.4e12),
    "tensor_cores.peak_check": dict(gpu="H200-SXM", dtype="bf16"),
    "tensor_cores.gemm_bytes": dict(m=1024, n=1024, k=1024),
    "tensor_cores.gemm_intensity": dict(m=1024, n=1024, k=1024),
    "tensor_cores.tile_efficiency": dict(m=1000, n=1000, tile_m=128, tile_n=256),
    "tensor_cores.gemm_waves": dict(m=1000, n=1000, tile_m=128, tile_n=256, sms=132),
    "tensor_cores.is_aligned": dict(dim=1024, elem_bytes=2),
    "tensor_cores.gemm_estimate": dict(m=4096, n=4096, k=4096, sms=132, **_H200),
    "tensor_cores.predicted_flop_per_s": dict(m=4096, n=4096, k=4096, sms=132, **_H200),
    "tensor_cores.gemm_estimate_for": dict(m=4096, n=4096, k=4096),
    "tensor_cores.number_format": dict(dtype="bf16"),
    "tensor_cores.unit_roundoff": dict(dtype="bf16"),
    "tensor_cores.input_rounding_error": dict(dtype="bf16"),
    "tensor_cores.dot_error": dict(k=1024, dtype="bf16"),
    "tensor_cores.typical_dot_error": dict(k=1024, dtype="bf16"),
    "tensor_cores.instruction_clocks": dict(m=64, n=256, k=16, flop_per_clock_per_sm=4096),
    "tensor_cores.accumulator": dict(dtype="fp8"),
    "tensor_cores.tensor_core_dot_error": dict(k=4096, dtype="fp8"),
    "tensor_cores.accumulation_error": dict(k=4096, significand_bits=24),
    "tensor_cores.tensor_core_accumulation_error": dict(k=65536, dtype="fp8"),
    "tensor_cores.fit_significand_bits": dict(k=4096, typical_error=1e-4),
    "tensor_cores.fit_promotion_interval": dict(typical_error=1.5e-4, significand_bits=14),
    "tensor_cores.tile_intensity_flop_per_byte": dict(bm=128, bn=256, bk=64),
    "tensor_cores.smem_ridge_flop_per_byte": dict(flop_per_clock_per_sm=4096),
    "tensor_cores.wave_intensity_flop_per_byte": dict(bm=128, bn=256),
    "tensor_cores.smem_read_tile": dict(bm=128, bn=256),
    "tensor_cores.pipeline_stages": dict(bm=128, bn=256, bk=64, bytes_per_elem=2, flop_per_s_per_sm=7.5e12, latency_s=6e-7, mma_in_flight=1),
    "tensor_cores.tile_hierarchy": dict(gpu="H200-SXM", dtype="bf16"),
    "tensor_cores.epilogue_fusion_estimate": dict(m=4096, n=4096, k=1024, sms=132, **_H200),
    "tensor_cores.bf16_bit_patterns": dict(values=[1.0, 2.0, 3.0]),
    "tensor_cores.bit_toggle_fraction": dict(values=[0, 1, 3]),
    "tensor_cores.operand_toggle_fraction": dict(kind="randn", n=256),
    "tensor_cores.block_scaled_quantize": dict(values=[1.0] * 32, fmt="mxfp4"),
    "tensor_cores.quantization_error": dict(fmt="nvfp4", n=256),
    "tensor_cores.sparse_2_4_bytes": dict(rows=64, cols=64),
    "tensor_cores.sparse_2_4_speedup": dict(m=4096, n=4096, k=4096, sms=132, **_H200),
    "tensor_cores.grouped_gemm_estimate": dict(groups=8, m=256, n=1536, k=2048, sms=132, **_H200),
    # collectives
    "collectives.collective_semantics": dict(op="all_reduce", n=4),
    "collectives.busbw_factor": dict(op="all_reduce", n=8),
    "collectives.algbw_bytes_per_s": dict(size_bytes=1e9, time_s=1e-2),
    "collectives.busbw_bytes_per_s": dict(op="all_reduce", n=8, size_bytes=1e9, time_s=1e-2),
    "collectives.time_from_busbw_s": dict(op="all_reduce", n=8, size_bytes=1e9, busbw=300e9),
    "collectives.nccl_tests_size_bytes": dict(op="all_gather", n=8, rank_buffer_bytes=1e9),
    "collectives.ring_steps": dict(op="all_reduce", n=8),
    "collectives.tree_steps": dict(op="all_reduce", n=8),
    "collectives.collective_time_s": dict(op="all_reduce", size_bytes=1e9, n=8, link_bytes_per_s=450e9),
    "collectives.ring_allreduce_time_s": dict(size_bytes=1e9, n=8, link_bytes_per_s=450e9),
    "collectives.ring_tree_crossover_bytes": dict(op="all_reduce", n=8, link_bytes_per_s=450e9, latency_s=5e-6),
    "collectives.layer_roofline": dict(parallelism="data", tokens=4096, d_model=8192, d_ff=28672, peak_flop_per_s=989.4e12,
                                       link_bytes_per_s=450e9, ranks=8, bytes_per_elem=2.0, layers_per_stage=1),
    "collectives.critical_tokens_per_gpu": dict(peak_flop_per_s=989.4e12, link_bytes_per_s=450e9, ranks=8, bytes_per_elem=2.0),
    "collectives.tensor_parallel_max_ranks": dict(d_ff=28672, peak_flop_per_s=989.4e12, link_bytes_per_s=450e9, bytes_per_elem=2.0),
    "collectives.roofline_link_bytes_per_s": dict(gpu="H200-SXM", scope="network", gpus_per_node=8),
    "collectives.zero_step_comm_s": dict(params=7e9, gpus=8, stage=3, busbw_bytes_per_s=450e9, bytes_per_elem=2.0),
    "collectives.nccl_model_time_s": dict(op="all_reduce", size_bytes=2**20, n=8, link_bytes_per_s=370.8e9, algorithm="ring",
                                          protocol="LL", ll_max_bytes_per_s=141e9),
    "collectives.nccl_model_choice": dict(op="all_reduce", size_bytes=2**20, n=8, link_bytes_per_s=370.8e9, ll_max_bytes_per_s=141e9),
    "collectives.nccl_model_switch_bytes": dict(op="all_reduce", n=8, link_bytes_per_s=370.8e9, ll_max_bytes_per_s=141e9),
    "collectives.nccl_ring_allreduce_time_s": dict(size_bytes=25 * 2**20, n=16, link_bytes_per_s=400e9, protocol="LL128", nodes=2,
                                                   ll_max_bytes_per_s=39e9, channels=16),
    "collectives.nccl_ring_allreduce_choice": dict(size_bytes=25 * 2**20, n=16, link_bytes_per_s=400e9, nodes=2, ll_max_bytes_per_s=39e9,
                                                   channels=16),
    "collectives.fat_tree_max_endpoints": dict(switch_ports=64, levels=2),
    "collectives.oversubscribed_bytes_per_s": dict(nic_bytes_per_s=50e9, down_ports=32, up_ports=16),
    "collectives.moe_all_to_all_time_s": dict(tokens=32, d_model=7168, experts_per_token=9, link_bytes_per_s=50e9,
                                              dispatch_bytes_per_elem=1.0, combine_bytes_per_elem=2.0, remote_fraction=1.0),
    "collectives.fit_alpha_beta": dict(sizes_bytes=[1e3, 1e6, 1e9], times_s=[20e-6 + s / 300e9 for s in (1e3, 1e6, 1e9)]),
    "collectives.ring_allreduce_schedule": dict(n=4),
    "collectives.ring_allreduce_contributions": dict(n=4, step=1),
    "collectives.simulate_ring_allreduce": dict(chunks_per_rank=[[1, 2], [10, 20]]),
    "collectives.dp_step": dict(grad_bytes=1e9, bucket_bytes=25 * 2**20, backward_s=0.1, n=8, link_bytes_per_s=450e9),
    "collectives.dp_timeline": dict(grad_bytes=1e9, bucket_bytes=25 * 2**20, backward_s=0.1, n=8, link_bytes_per_s=450e9),
    "collectives.best_bucket_bytes": dict(grad_bytes=1e9, backward_s=0.1, n=8, link_bytes_per_s=100e9, latency_s=20e-6),
    "collectives.optimal_chain_chunks": dict(size_bytes=2**30, n=8, link_bytes_per_s=100e9, latency_s=1e-6),
    "collectives.pipelined_chain_time_s": dict(size_bytes=1e9, n=8, link_bytes_per_s=100e9),
    "collectives.rabenseifner_allreduce_time_s": dict(size_bytes=1e9, n=8, link_bytes_per_s=100e9),
    "collectives.in_network_allreduce_time_s": dict(size_bytes=2**30, n=8, link_bytes_per_s=450e9),
    "collectives.tree_inter_node_bytes_factor": dict(nodes=16),
    "collectives.bandwidth_ladder": dict(gpu="H200-SXM"),
    "collectives.cross_node_allreduce": dict(
        size_bytes=2**30, gpus_per_node=8, nodes=4, intra_bytes_per_s=450e9, nic_bytes_per_s=50e9),
    "collectives.hierarchical_allreduce": dict(
        size_bytes=1e9, gpus_per_node=8, nodes=2, intra_bytes_per_s=450e9, inter_bytes_per_s=50e9),
    # transformer, llms, serving
    "transformer.ModelConfig": dict(name="Llama-3-8B", vocab_size=128256, params=8.03e9, active_params=8.03e9, **_LLAMA8),
    "transformer.activation_bytes": dict(tokens=2048, hidden_size=4096, intermediate_size=14336, vocab_size=128256),
    "serving.allreduce_time_s": dict(message_bytes=1e6, gpus=8, link_bytes_per_s=450e9),
    "transformer.cached_tokens": dict(context_tokens=4096),
    "transformer.causal_attention_flop": dict(layers=32, heads=32, qk_dim=128, v_dim=128, tokens=1024),
    "serving.cost_per_million_tokens": dict(gpu_hour_price=3.0, gpus=1, tokens_per_s=1000.0),
    "serving.compute_dtype_for": dict(gpu="T4"),  # the fallback path: bf16 weights computed in fp16
    "transformer.custom_model": dict(_LLAMA8),
    "serving.decode_ridge_batch": dict(
        param_bytes=16e9, flop_per_seq=16e9, kv_bytes_per_seq=1e7, peak_flop_per_s=989.4e12, hbm_bytes_per_s=4.8e12),
    "serving.decode_step": dict(model="Llama-3-8B"),
    "transformer.decode_step_flop": dict(params=8e9, batch=1),
    "serving.decode_step_time_s": dict(param_bytes=16e9, kv_bytes=1e9, hbm_bytes_per_s=4.8e12),
    "serving.decode_tokens_per_s": dict(batch=8, tpot_s=0.02),
    "transformer.dense_transformer_params": dict(vocab_size=128256, **_LLAMA8),
    "serving.e2e_latency_s": dict(ttft_s=0.1, tpot_s=0.02, output_tokens=256),
    "transformer.experts_touched_fraction": dict(batch=8, experts_per_token=8, n_experts=256),
    "llms.get_model": dict(name="Llama-3-8B"),
    "transformer.kv_bytes_by_attention": dict(layers=32, heads=32, head_dim=128, kv_heads=8),
    "transformer.kv_cache_bytes": dict(bytes_per_token=131072.0, context_tokens=4096),
    "transformer.kv_cache_bytes_per_token": dict(layers=32, kv_heads=8, head_dim=128),
    "serving.latency": dict(model="Llama-3-8B"),
    "serving.littles_law_concurrency": dict(arrival_rate_per_s=10.0, latency_s=2.0),
    "serving.memory_budget": dict(model="Llama-3-8B"),
    "transformer.mla_kv_cache_bytes_per_token": dict(layers=61, kv_lora_rank=512, rope_head_dim=64),
    "serving.plan_capacity": dict(model="Llama-3-8B"),
    "transformer.prefill_flop": dict(params=8e9, tokens=1024),
    "serving.prefill_time_s": dict(model="Llama-3-8B"),
    "serving.tpot_s": dict(e2e_s=5.0, ttft_s=0.1, output_tokens=256),
    "transformer.weight_bytes": dict(params=8e9),
    "serving.paged_kv_blocks": dict(context_tokens=1000),
    "serving.paged_kv_cache_bytes": dict(bytes_per_token=131072.0, context_tokens=[1000, 24]),
    "serving.steady_batch": dict(model="Llama-3-8B"),
    "serving.speculative_expected_tokens": dict(acceptance_rate=0.8, draft_tokens=4),
    "serving.speculative_speedup": dict(acceptance_rate=0.8, draft_tokens=4, draft_cost_ratio=0.05),
    "serving.speculative_best_draft_tokens": dict(acceptance_rate=0.8, draft_cost_ratio=0.05),
    "serving.speculative_verify_time_s": dict(model="Llama-3-8B"),
    "serving.model_bandwidth_utilization": dict(bytes_per_step=14e9, step_s=0.014, hbm_bytes_per_s=2e12),
    "serving.model_flops_utilization": dict(flop_per_step=16e9, step_s=0.003, peak_flop_per_s=989.4e12),
    "serving.percentile": dict(values=[1.0, 2.0, 3.0], q=90),
    "serving.slo_attainment": dict(ttft_s=[0.1, 0.3], tpot_s=[0.02, 0.02], ttft_slo_s=0.25, tpot_slo_s=0.05),
    "serving.goodput_rate_per_s": dict(rates_per_s=[1.0, 2.0, 4.0], attainments=[1.0, 0.95, 0.5]),
    "serving.decode_frontier": dict(model="Llama-3-8B", batches=[1, 8]),
    "serving.kv_cache_waste": dict(max_tokens=2048, mean_tokens=512),
    "serving.prefix_cache_savings": dict(model="Llama-3-8B"),
    "serving.input_output_cost_ratio": dict(model="Llama-3-8B"),
    "serving.split_kv_attention": dict(batch=1, kv_heads=8, context_tokens=65536, kv_bytes_per_token_per_head=40960.0, sms=132,
                                       hbm_bytes_per_s=4.8e12),
    "serving.moe_decode_per_gpu": dict(model="DeepSeek-V3"),
    "kernels.tiling": dict(rung="warptile"),
    "kernels.rung_cost": dict(rung="vectorized"),
    "kernels.ladder_prediction": dict(rung="blocktile_2d", m=4096, n=4096, k=4096, sms=132, clock_hz=1.98e9, hbm_bytes_per_s=4.8e12),
    "kernels.fp32_lanes_per_sm": dict(peak_flop_per_s=67e12, sms=132, clock_hz=1.98e9),
    "kernels.tile_summary": dict(rung="vectorized"),
    "kernels.sizes_from_config": dict(rung="vectorized", config=(128, 128, 8, 8, 8)),
    "kernels.why_not_on": dict(gpu="H200-SXM"),
    "kernels.predict_on": dict(gpu="H200-SXM", rung="smem", m=1024, n=1024, k=1024),
    "kernels.flop_per_s": dict(m=4096, n=4096, k=4096, seconds=3e-3),
    "kernels.t_quantile": dict(confidence=0.95, dof=9),
    "kernels.mean_ci_half_width": dict(std_s=1e-6, repeats=30),
    "kernels.repeats_needed": dict(std_s=1e-6, mean_s=5e-5, relative_half_width=0.01),
    "kernels.median_ci_ranks": dict(repeats=20),
    "kernels.host_timing_error": dict(kernel_s=5e-6, overhead_s=1e-5),
    "kernels.spread_of_means_band": dict(groups=20),
    "training_memory.state_bytes": dict(params=1e9),
    "training_memory.training_state_bytes": dict(params=1e9),
    "training_memory.zero_state_bytes_per_gpu": dict(params=1e9, gpus=8, stage=1),
    "training_memory.zero_comm_bytes_per_gpu": dict(params=1e9, stage=3),
    "training_memory.activation_bytes_per_layer": dict(seq=2048, micro_batch=1, hidden=4096, heads=32),
    "training_memory.outside_layers_activation_bytes": dict(seq=2048, micro_batch=1, hidden=4096, vocab=32000),
    "training_memory.activation_bytes": dict(seq=2048, micro_batch=1, hidden=4096, heads=32, layers=32, vocab=32000),
    "training_memory.training_flop": dict(params=1e9, tokens=1e12),
    "training_memory.gpt_params": dict(layers=20, hidden=2048, vocab=32000, seq=2048),
    "training_memory.attention_flop_per_token": dict(layers=32, heads=32, head_dim=128, seq=4096),
    "training_memory.recompute_flop_fraction": dict(params=1e9),
    "training_memory.mfu": dict(tokens_per_s=1e4, params=1e9, peak_flop_per_s=989.4e12),
    "training_memory.training_time_s": dict(params=1e9, tokens=1e12, gpus=8, peak_flop_per_s=989.4e12, mfu_fraction=0.4),
    "training_memory.max_micro_batch": dict(capacity_bytes=80e9, fixed_bytes=30e9, bytes_per_sample=9e9),
    "training_memory.offload_time_s": dict(params=1e9, host_bytes_per_s=50e9),
    "training_memory.lora_state_bytes": dict(params=8e9, trainable_fraction=0.01),
    "training_memory.memory_budget": dict(model="Llama-3-8B"),
    "training_memory.fixes_ladder": dict(model="Llama-3-8B"),
    "attention.attention_flop": dict(batch=1, heads=16, seq_q=4096, seq_kv=4096, head_dim=128),
    "attention.attention_matrix_bytes": dict(batch=1, heads=16, seq_q=4096, seq_kv=4096),
    "attention.standard_attention_hbm_bytes": dict(batch=1, heads=16, seq=4096, head_dim=128),
    "attention.flash_blocks": dict(head_dim=128, sram_bytes=228 * 1024),
    "attention.flash_attention_hbm_bytes": dict(batch=1, heads=16, seq=4096, head_dim=128, sram_bytes=228 * 1024),
    "attention.flash_attention_min_hbm_bytes": dict(batch=1, heads=16, seq=4096, head_dim=128),
    "attention.attention_time_s": dict(flop=1e12, hbm_bytes=1e9, peak_flop_per_s=989.4e12, hbm_bytes_per_s=4.8e12),
    "attention.math_path_peak_bytes": dict(batch=1, heads=16, seq=4096, head_dim=128),
    "attention.flash_path_peak_bytes": dict(batch=1, heads=16, seq=4096, head_dim=128),
    "attention.flash_split_kv_splits": dict(batch=1, heads=16, seq_q=512, seq_k=512, head_dim=128, sms=132),
    "attention.largest_math_seq": dict(batch=1, heads=16, head_dim=128, capacity_bytes=80e9),
    "attention.largest_seq_scores_only": dict(batch=1, heads=16, head_dim=128, capacity_bytes=80e9),
    "attention.online_softmax_steps": dict(x=[1.0, 3.0, 2.0, 5.0], block=2),
    "attention.online_softmax": dict(x=[1.0, 3.0, 2.0, 5.0], block=2),
    "attention.softmax": dict(x=[1.0, 3.0, 2.0]),
    "attention.softmax_hbm_bytes": dict(rows=1024, cols=4096),
    # units
    "units.fmt_rate": dict(value=4.8e12),
    "units.fmt_bytes_per_s": dict(value=4.8e12),
    "units.fmt_flop_per_s": dict(value=989e12),
    "units.fmt_flop": dict(value=2.0 * 8192**3),
    "units.fmt_bytes": dict(value=50 * 2**20),
    "units.fmt_time": dict(seconds=3.2e-6),
    "units.fmt_intensity": dict(flop_per_byte=206.2),
    # hardware
    "hardware.get_gpu": dict(name="H200-SXM"),
    "hardware.catalog_name_for": dict(device_name="NVIDIA H200"),
}


def _gpu_kwargs() -> dict:
    from widgets.hardware import get_gpu

    g = get_gpu("H200-SXM")
    kw = {f.name: getattr(g, f.name) for f in dataclasses.fields(g)}
    kw["peak_flop_per_s"] = dict(kw["peak_flop_per_s"])
    kw["sources"] = dict(kw["sources"])
    return kw


VALID["hardware.GPU"] = _gpu_kwargs()


def _arch_kwargs() -> dict:
    from widgets.hardware import get_arch

    a = get_arch("sm_90")
    kw = {f.name: getattr(a, f.name) for f in dataclasses.fields(a)}
    kw["sources"] = dict(kw["sources"])
    return kw


VALID["hardware.Arch"] = _arch_kwargs()
VALID["hardware.get_arch"] = dict(arch="sm_90")
VALID["hardware.NetworkLink"] = dict(name="InfiniBand NDR", bytes_per_s=50e9, source="400 Gb/s per port / 8 bits")

# Strings where any text is valid (a label, not a choice from a list).
FREE_TEXT = {"name@transformer.ModelConfig", "name@transformer.custom_model", "name@hardware.GPU", "vendor", "arch@hardware.GPU",
             "memory_type", "notes", "unit", "device_name", "param", "arch@hardware.Arch", "family@hardware.Arch",
             "name@hardware.NetworkLink", "source@hardware.NetworkLink"}
# Parameters that hold a sequence or mapping (a list is the right type).
CONTAINER = {"levels", "byte_addresses", "values", "lanes_per_path", "cost_per_path", "sizes_bytes", "times_s",
             "chunks_per_rank", "candidates", "peak_flop_per_s@hardware.GPU", "sources", "stage_s@simt.pipeline_time_s",
             "stage_s@simt.pipeline_schedule", "compute_capability@hardware.Arch", "smem_carveouts_bytes@hardware.Arch",
             "ttft_s@serving.slo_attainment", "tpot_s@serving.slo_attainment", "rates_per_s", "attainments",
             "batches@serving.decode_frontier", "x@attention.online_softmax_steps", "x@attention.online_softmax",
             "x@attention.softmax"}
# Parameters that take a scalar or an array (elementwise models).
ARRAY_OK = {"intensity@memory_hierarchy.attainable_flop_per_s", "ws_bytes", "warps_per_sm@simt.littles_law_bytes_per_s",
            "m@tensor_cores.predicted_flop_per_s", "n@tensor_cores.predicted_flop_per_s",
            "k@tensor_cores.predicted_flop_per_s", "k@tensor_cores.typical_dot_error",
            "context_tokens@serving.paged_kv_cache_bytes", "context_tokens@serving.paged_kv_blocks"}
# Parameters where a negative number is meaningful (a formatter may show a difference).
NEGATIVE_OK = {"offset_elems", "column", "value@units.fmt_rate", "value@units.fmt_bytes_per_s",
               "value@units.fmt_flop_per_s", "value@units.fmt_flop", "value@units.fmt_bytes", "seconds@units.fmt_time",
               "flop_per_byte@units.fmt_intensity"}
# Enum-like string parameters that also take an object (a GPU record, a ModelConfig).
ENUM_OR_OBJECT = {"gpu", "model"}

# Calls that may import torch the first time (seconds on a loaded machine): a longer alarm.
TIMEOUT_S = {"hardware.describe_local_gpu": 60.0}

UNKNOWN_NAME = "no-such-name"
BAD_VALUES = {
    "zero": 0,
    "neg1": -1,
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "1e308": 1e308,
    "5e-324": 5e-324,  # the smallest float: finite, so the answer must be finite too (or a ValueError)
    "2**62": 2**62,
    "str": "x1",
    "None": None,
    "list": [1, 2],
    "array": np.array([1.0, 2.0]),  # a numpy array where a scalar belongs ("truth value ... ambiguous")
    "True": True,
    "unknown": UNKNOWN_NAME,
}


def _short(module: str) -> str:
    return module.rsplit(".", 1)[-1]


def _matches(param: str, qual: str, table: set) -> bool:
    return param in table or f"{param}@{qual}" in table


def public_callables(module_name: str):
    mod = importlib.import_module(module_name)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, o in vars(mod).items()
                 if not n.startswith("_") and callable(o) and getattr(o, "__module__", None) == module_name]
    out = []
    for n in names:
        obj = getattr(mod, n)
        if not callable(obj) or n in RESULT_CLASSES:
            continue
        out.append((n, obj))
    return out


def _param_kind(qual: str, p: inspect.Parameter, valid_value) -> str:
    name = p.name
    ann = str(p.annotation)
    if _matches(name, qual, CONTAINER):
        return "container"
    if _matches(name, qual, FREE_TEXT):
        return "text"
    if ann == "bool" or isinstance(valid_value, bool):
        return "bool"
    if ann.startswith("str") or "Optional[str]" in ann or "str |" in ann or isinstance(valid_value, str) \
            or name in ENUM_OR_OBJECT:
        return "enum"
    return "number"


def _optional(p: inspect.Parameter) -> bool:
    ann = str(p.annotation)
    return p.default is None or "Optional" in ann or "None" in ann


MISSING: list[str] = []  # functions with a required parameter that VALID does not cover yet


def cases():
    out = []
    for module_name in MODULES:
        short = _short(module_name)
        for fname, obj in public_callables(module_name):
            qual = f"{short}.{fname}"
            try:
                sig = inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            valid = {}
            missing = []
            for p in sig.parameters.values():
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    continue
                if p.name in VALID.get(qual, {}):
                    valid[p.name] = VALID[qual][p.name]
                elif p.default is not p.empty:
                    valid[p.name] = p.default
                else:
                    missing.append(p.name)
            if missing:
                MISSING.append(f"{qual} ({', '.join(missing)})")
                continue
            for p in sig.parameters.values():
                if p.name not in valid:
                    continue
                kind = _param_kind(qual, p, valid[p.name])
                for label in BAD_VALUES:
                    if label == "unknown" and kind not in ("enum", "text"):
                        continue
                    out.append(pytest.param(module_name, fname, p.name, label, kind, _optional(p), valid,
                                            id=f"{qual}.{p.name}.{label}"))
    return out


def must_fail(qual: str, param: str, label: str, kind: str, optional: bool) -> bool:
    """True when ``label`` can never be a valid value of ``param``."""
    bad = BAD_VALUES[label]
    if label == "None":
        return not optional
    if kind == "bool":
        return label != "True"
    if kind == "text":
        return not isinstance(bad, str)
    if kind == "enum":
        return True  # a non-string, or a name not on the list
    if kind == "container":
        return label in ("nan", "inf", "-inf", "str", "True")
    # a number
    if label in ("nan", "inf", "-inf", "str", "True"):
        return True
    if label in ("list", "array"):
        return not _matches(param, qual, ARRAY_OK)
    if label == "neg1":
        return not _matches(param, qual, NEGATIVE_OK)
    return False


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _vm_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _finite(obj, depth=0) -> bool:
    if depth > 20:
        return True
    if obj is None or isinstance(obj, (str, bool)):
        return True
    if isinstance(obj, numbers.Number):
        return bool(np.isfinite(obj)) if not isinstance(obj, numbers.Integral) else True
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind not in "fc" or bool(np.all(np.isfinite(obj)))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return all(_finite(getattr(obj, f.name), depth + 1) for f in dataclasses.fields(obj))
    if isinstance(obj, Mapping):
        return all(_finite(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(_finite(v, depth + 1) for v in obj)
    return True


def run_case(module_name, fname, param, label, kind, optional, valid):
    """Return (category, detail): category '' when the call behaved."""
    obj = getattr(importlib.import_module(module_name), fname)
    kwargs = dict(valid)
    kwargs[param] = BAD_VALUES[label]
    qual = f"{_short(module_name)}.{fname}"
    fail_expected = must_fail(qual, param, label, kind, optional)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _vm_bytes() + 2 * 2**30
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    old = signal.signal(signal.SIGALRM, _alarm)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S.get(qual, 2.0))
    try:
        result = obj(**kwargs)
    except _Timeout:
        return "other exception", f"took longer than {TIMEOUT_S.get(qual, 2.0):g} s (hang)"
    except ValueError as exc:
        msg = str(exc)
        if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])", msg):
            return "wrong parameter named", f"ValueError does not name {param!r}: {msg}"
        return "", ""
    except MemoryError:
        return "other exception", "MemoryError (over a 2 GiB allocation)"
    except Exception as exc:  # noqa: BLE001 - the point is to catch every other type
        return "other exception", f"{type(exc).__name__}: {exc}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    if fail_expected:
        return "silent acceptance", f"accepted {param}={BAD_VALUES[label]!r}, returned {result!r}"[:300]
    if not _finite(result):
        return "nan/inf result", f"{param}={BAD_VALUES[label]!r} gave a NaN/inf in {result!r}"[:300]
    return "", ""


CASES = cases()


def _by_function():
    """The cases grouped by function: one test per public function runs all of its bad values
    (about 25 per function; 10,000 single-call tests cost more in pytest's bookkeeping than in the calls)."""
    groups: dict[tuple[str, str], list] = {}
    for c in CASES:
        groups.setdefault((c.values[0], c.values[1]), []).append(c.values)
    return [pytest.param(m, f, tuple(v), id=f"{_short(m)}.{f}") for (m, f), v in groups.items()]


@pytest.mark.parametrize("module_name,fname,cases_of_function", _by_function())
def test_fuzz(module_name, fname, cases_of_function):
    failures = []
    for values in cases_of_function:
        category, detail = run_case(*values)
        if category:
            param, label = values[2], values[3]
            failures.append(f"{category}: {_short(module_name)}.{fname}({param}={BAD_VALUES[label]!r}): {detail}")
    assert not failures, f"{len(failures)} of {len(cases_of_function)} bad calls misbehaved:\n" + "\n".join(failures)


def test_valid_values_are_valid():
    """Every function runs with its valid values (otherwise each fuzz case tests nothing)."""
    seen = set()
    for c in CASES:
        module_name, fname, *_, valid = c.values
        if (module_name, fname) in seen:
            continue
        seen.add((module_name, fname))
        getattr(importlib.import_module(module_name), fname)(**valid)


def test_every_public_function_is_fuzzed():
    assert not MISSING, "add valid values to VALID in tests/test_fuzz.py for: " + "; ".join(MISSING)
    fuzzed = {(c.values[0], c.values[1]) for c in CASES}
    for module_name in MODULES:
        for fname, obj in public_callables(module_name):
            if inspect.signature(obj).parameters and not any(m.startswith(f"{_short(module_name)}.{fname} ") for m in MISSING):
                assert (module_name, fname) in fuzzed, f"{module_name}.{fname} has no fuzz cases"


def _main(argv):
    import collections

    word = argv[argv.index("-k") + 1] if "-k" in argv else ""
    counts = collections.Counter()
    total = 0
    for c in CASES:
        if word and word not in c.id:
            continue
        total += 1
        category, detail = run_case(*c.values)
        if category:
            counts[category] += 1
            if "-v" in argv:
                print(f"{c.id}: {category}: {detail}")
    print(f"{total} calls: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f"; clean {total - sum(counts.values())}")
    sys.stdout.flush()
    import os

    os._exit(0)  # skip interpreter teardown (a call interrupted by the alarm can leave C state behind)


if __name__ == "__main__":
    _main(sys.argv)


# --- property tests (hypothesis): finite in, finite out or ValueError; monotonic where physics says so
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_NUMERIC_PARAMS: dict = {}
for _c in CASES:
    _m, _f, _p, _label, _kind, _opt, _valid = _c.values
    if _kind == "number" and isinstance(_valid[_p], (int, float)) and not isinstance(_valid[_p], bool):
        _NUMERIC_PARAMS.setdefault((_m, _f), {})[_p] = _valid[_p]


def _near_or_wild(valid):
    """A value near the valid one (scaled by 10**-6..10**6, same type), or any finite number."""
    scale = st.floats(min_value=-6, max_value=6).map(lambda u: 10.0**u)
    if isinstance(valid, int):
        near = scale.map(lambda f: max(-(2**62), min(2**62, int(round(valid * f)))))
        wild = st.integers(min_value=-(2**63), max_value=2**63)
    else:
        near = scale.map(lambda f: valid * f)
        wild = st.floats(allow_nan=False, allow_infinity=False)
    return st.one_of(near, near, wild, st.just(0 * valid))


@pytest.mark.slow
@pytest.mark.parametrize("module_name,fname", sorted(_NUMERIC_PARAMS), ids=lambda v: _short(v) if "." in v else v)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_property_finite_in_finite_out_or_value_error(module_name, fname, data):
    """Every numeric parameter at once drawn finite: a finite result or a ValueError, nothing else."""
    qual = f"{_short(module_name)}.{fname}"
    valid = next(c.values[6] for c in CASES if c.values[0] == module_name and c.values[1] == fname)
    kwargs = dict(valid)
    for p, v in _NUMERIC_PARAMS[(module_name, fname)].items():
        kwargs[p] = data.draw(_near_or_wild(v), label=p)
    obj = getattr(importlib.import_module(module_name), fname)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S.get(qual, 2.0))
    try:
        result = obj(**kwargs)
    except ValueError:
        return
    except _Timeout:
        pytest.fail(f"{qual}({kwargs}) took longer than 2 s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert _finite(result), f"{qual}({kwargs}) returned a NaN/inf: {result!r}"[:500]


_sizes = st.one_of(st.just(0.0), st.floats(min_value=1, max_value=1e15))


@given(a=_sizes, b=_sizes, flop=st.one_of(st.just(0.0), st.floats(min_value=1, max_value=1e18)))
def test_more_bytes_never_take_less_time_roofline(a, b, flop):
    from widgets.models.memory_hierarchy import roofline_time_s

    lo, hi = sorted((a, b))
    assert roofline_time_s(flop, lo, 989.4e12, 4.8e12) <= roofline_time_s(flop, hi, 989.4e12, 4.8e12)


@given(a=_sizes, b=_sizes, n=st.integers(min_value=2, max_value=1024),
       op=st.sampled_from(("all_reduce", "all_gather", "reduce_scatter", "broadcast")),
       algorithm=st.sampled_from(("ring", "tree")), latency_s=st.floats(min_value=0, max_value=1e-3))
def test_more_bytes_never_take_less_time_collectives(a, b, n, op, algorithm, latency_s):
    from widgets.models.collectives import collective_time_s

    lo, hi = sorted((a, b))
    try:
        t_lo = collective_time_s(op, lo, n, 450e9, latency_s, algorithm)
    except ValueError:
        return  # e.g. an algorithm the op does not have
    assert t_lo <= collective_time_s(op, hi, n, 450e9, latency_s, algorithm)


@given(n=st.integers(min_value=2, max_value=2**16), op=st.sampled_from(("all_reduce", "all_gather", "reduce_scatter")))
def test_more_ranks_never_raise_the_busbw_factor_above_its_limit(n, op):
    from widgets.models.collectives import busbw_factor

    limit = 2.0 if op == "all_reduce" else 1.0  # 2(n-1)/n and (n-1)/n (nccl-tests PERFORMANCE.md)
    f, g = busbw_factor(op, n), busbw_factor(op, n + 1)
    assert 0 < f <= g < limit


@given(k1=st.integers(min_value=1, max_value=2**16), k2=st.integers(min_value=1, max_value=2**16))
def test_a_longer_gemm_never_takes_less_time(k1, k2):
    from widgets.models.tensor_cores import gemm_estimate

    lo, hi = sorted((k1, k2))
    t = [gemm_estimate(4096, 4096, k, 989.4e12, 4.8e12, 132).time_s for k in (lo, hi)]
    assert t[0] <= t[1]


@given(f=st.floats(min_value=0, max_value=1), w=st.floats(min_value=1, max_value=1e9))
def test_amdahl_speedup_stays_under_both_limits(f, w):
    from widgets.models.simt import amdahl_ceiling, amdahl_speedup

    s = amdahl_speedup(f, w)
    assert 1 - 1e-12 <= s <= w * (1 + 1e-12)
    if f < 1:
        assert s <= amdahl_ceiling(f) * (1 + 1e-12)


@given(c1=st.integers(min_value=1, max_value=32768), c2=st.integers(min_value=1, max_value=32768),
       b=st.integers(min_value=1, max_value=64))
@settings(max_examples=30, deadline=None)
def test_a_longer_context_never_makes_a_decode_step_faster(c1, c2, b):
    from widgets.models.serving import decode_step

    lo, hi = sorted((c1, c2))
    assert decode_step("Llama-3-8B", "H200-SXM", b, lo).time_s <= decode_step("Llama-3-8B", "H200-SXM", b, hi).time_s


# --- the validation layer itself -------------------------------------------------------------------
class _Weird(float):
    """A float subclass whose conversion fails, to prove no raw conversion message leaks."""

    def __float__(self):
        raise OverflowError("raw conversion message")


@pytest.mark.parametrize("check", ["number", "positive", "non_negative", "fraction", "integer"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "3", None, [1], True, np.bool_(True), 1j, _Weird(1.0)],
                         ids=repr)
def test_check_rejects_with_the_callers_name_and_the_value(check, bad):
    from widgets import _check

    with pytest.raises(ValueError) as err:
        getattr(_check, check)("my_param", bad)
    msg = str(err.value)
    assert msg.startswith("my_param must be "), msg
    assert "got " in msg and "raw conversion" not in msg and "cannot convert" not in msg


def test_check_integer_is_exact_and_bounded():
    from widgets import _check

    assert _check.integer("n", np.int64(2**62), maximum=2**62) == 2**62 and type(_check.integer("n", np.int32(7))) is int
    assert _check.integer("n", 4.0) == 4
    for bad in (1e308, 2.0**60, 2.5, 2**53 + 1, -(2**70)):
        with pytest.raises(ValueError, match=r"^n must be an integer"):
            _check.integer("n", bad)
    with pytest.raises(ValueError, match=r"^ranks must be an integer in \[2, 1024\], got 4096$"):
        _check.integer("ranks", 4096, minimum=2, maximum=1024)
    assert _check.MAX_INT == 2**53


def test_check_flags_enums_text_lists_and_arrays():
    from widgets import _check

    assert _check.flag("tied", np.bool_(False)) is False
    for bad in (1, 0, "yes", None):
        with pytest.raises(ValueError, match="^tied must be True or False"):
            _check.flag("tied", bad)
    assert _check.choice("dtype", "BF16", ("fp32", "bf16")) == "bf16"
    with pytest.raises(ValueError, match=r"^dtype must be one of 'fp32', 'bf16'; got 3"):
        _check.choice("dtype", 3, ("fp32", "bf16"))
    with pytest.raises(ValueError, match="^label must be a string"):
        _check.text("label", 3)
    assert _check.numbers_list("sizes", (1, 2.5, np.float64(3))) == [1.0, 2.5, 3.0]
    for bad, where in (("1,,2", "sizes must be a list"), ([1, math.nan], r"sizes\[1\] must be a finite"),
                       ([], "sizes must hold 1"), ({"a": 1}, "sizes must be a list"), (np.ones((2, 2)), "1-D")):
        with pytest.raises(ValueError, match=where):
            _check.numbers_list("sizes", bad)
    assert _check.array("x", [1, 2]).tolist() == [1.0, 2.0]
    for bad in ([1, math.inf], "12", [True, False], [[1], [1, 2]], None):
        with pytest.raises(ValueError, match="^x must be"):
            _check.array("x", bad)
    assert _check.optional(_check.positive, "w", None) is None
    with pytest.raises(ValueError, match="^w must be > 0"):
        _check.optional(_check.positive, "w", 0)


# --- calculators: every invalid state shows a sentence naming a real field, never inf/nan ----------
UI_TOPICS = ("memory_hierarchy", "simt", "tensor_cores", "kernels", "collectives", "training_memory", "serving", "attention")
UI_BAD = {
    "IntText": {"zero": 0, "neg1": -1, "2**31": 2**31, "2**62": 2**62},
    "FloatText": {"zero": 0.0, "neg1": -1.0, "nan": math.nan, "inf": math.inf, "-inf": -math.inf, "1e308": 1e308,
                  "1e-308": 1e-308},
    "Text": {"empty": "", "double-comma": "1,,2", "word": "x", "nan": "1, nan", "inf": "inf, 1", "neg": "-4, 4",
             "huge": "1e308, 1"},
}
# States no calculator may accept: a number that is not finite, a list that is not a list of numbers.
UI_MUST_FAIL = {"FloatText": ("nan", "inf", "-inf"), "Text": ("empty", "double-comma", "word", "nan", "inf", "neg")}
_FORMATTER_PARAMS = ("value", "seconds", "flop_per_byte", "digits", "unit")


def _calculators():
    out = []
    for topic in UI_TOPICS:
        try:
            mod = importlib.import_module(f"widgets.ui.{topic}")
        except Exception:  # noqa: BLE001 - reported by the topic's own tests
            continue
        for name, fn in vars(mod).items():
            if name.endswith("_calculator") and callable(fn) and getattr(fn, "__module__", "") == mod.__name__:
                out.append((topic, name))
    return out


def _ui_calculators():
    import os

    if os.environ.get("GPUBOOK_BUILD") == "1":
        return []
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return []
    return [pytest.param(topic, name, id=f"ui.{topic}.{name}") for topic, name in _calculators()]


def _bad_values(control) -> dict:
    """label -> a value that a reader can give this control and that a model may refuse."""
    kind = type(control).__name__
    if hasattr(control, "min") and hasattr(control, "max"):  # sliders, bounded boxes: the ends
        return {"min": control.min, "max": control.max}
    if hasattr(control, "options") and not isinstance(control.options, (str, bytes)):
        return {f"option{i}": opt[1] if isinstance(opt, tuple) and len(opt) == 2 else opt
                for i, opt in enumerate(control.options)}
    return dict(UI_BAD.get(kind, {}))


def _text_of(items) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", i) for i in items if isinstance(i, str))


def _invalid_state_problem(box, name: str, key: str, label: str, value) -> str | None:
    """Set one control of ``box`` to ``value``: what is wrong with what the form shows then, or None.
    (The control is put back by the caller.)"""
    import html as _html
    import warnings

    control = box.controls[key]
    kind = type(control).__name__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            control.value = value
        except Exception as exc:  # noqa: BLE001 - only the model's ValueError may stop a refresh
            import traitlets

            if isinstance(exc, traitlets.TraitError):
                return None  # the control itself refuses the value: the reader cannot give it
            return f"{name}: setting {key}={value!r} raised {type(exc).__name__}: {exc}"
    text = _html.unescape(_text_of(box.shown))
    if label in UI_MUST_FAIL.get(kind, ()) and "Invalid input:" not in text:
        return f"{name} accepted {key}={value!r} and shows: {text[:300]}"
    if re.search(r"(?<![A-Za-z])(inf|nan|infinity)(?![A-Za-z])", text, re.I) and "Invalid input" not in text:
        return f"{name} with {key}={value!r} shows inf/nan: {text[:400]}"
    if "Invalid input:" in text:
        sentence = text.split("Invalid input:", 1)[1].strip()
        first = sentence.split(" must ", 1)[0].strip() if " must " in sentence else ""
        if first in _FORMATTER_PARAMS:
            return (f"{name} with {key}={value!r}: the form says {sentence[:200]!r}, naming a formatter's parameter, "
                    "not a field of the form or a model's parameter")
    else:
        numbers_entered = [c.value for c in box.controls.values() if isinstance(c.value, (int, float))]
        if all(v >= 0 for v in numbers_entered if not isinstance(v, bool)):
            neg = re.search(r"(?<![\w.+\-^])-\d", text)  # not 1e-5, 2^-24, 1-2
            if neg:
                context = text[max(0, neg.start() - 80) : neg.start() + 40]
                return f"{name} with {key}={value!r} shows a negative number no one entered: ...{context}..."
    return None


@pytest.mark.slow
@pytest.mark.parametrize("topic,name", _ui_calculators())
def test_calculator_invalid_states(topic, name):
    """Each control of the form, one at a time, at each value in UI_BAD for its kind (a slider or a
    bounded field: its two ends; a choice: every option), the other controls as the form opened:
    the form shows numbers, or a sentence naming a real field, never inf/nan or a negative number
    no one entered; put back, the form shows again what it showed when it opened. (One form per
    calculator, not one per value: building the form was most of the 920 cases' time, issue 13.)"""
    box = getattr(importlib.import_module(f"widgets.ui.{topic}"), name)()
    opened = _text_of(box.shown)
    failures, cases = [], 0
    for key, control in box.controls.items():
        start = control.value
        for label, value in _bad_values(control).items():
            cases += 1
            problem = _invalid_state_problem(box, name, key, label, value)
            if problem:
                failures.append(problem)
            control.value = start
            if _text_of(box.shown) != opened:
                failures.append(f"{name}: after {key}={value!r}, put back to {start!r}, the form shows something else")
    assert cases, f"{name}: no control to try"
    assert not failures, "\n".join(failures)


# --- the examples of the reliability issue (#12), each exact or a ValueError naming its parameter --
def _exact_or_named(fn, expected, param):
    try:
        got = fn()
    except ValueError as exc:
        assert re.search(rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])", str(exc)), str(exc)
        return
    assert got == expected


def test_issue_examples_no_numpy_wraparound():
    from widgets.models import memory_hierarchy as mh

    # exact answers: a stride of 2**k elements puts every lane in its own 32-B sector / bank 0
    _exact_or_named(lambda: mh.warp_load_sectors(2**62, 4), 32, "stride_elems")
    _exact_or_named(lambda: mh.bank_conflict_wavefronts(2**62), 32, "stride_elems")
    _exact_or_named(lambda: mh.strided_read_bytes(2, 2**60, 16), 64, "stride_elems")
    assert mh.warp_load_sectors(2**40, 4) == 32 and mh.strided_read_bytes(2, 2**40, 16) == 64


def test_issue_examples_bounded_work_and_no_cancellation():
    import time

    from widgets.models import collectives as c

    sizes = [1e12, 1e12 + 1024]
    lat, bw = c.fit_alpha_beta(sizes, [20e-6 + s / 300e9 for s in sizes])
    assert math.isfinite(lat) and math.isfinite(bw) and abs(bw / 300e9 - 1) < 1e-3
    for call, param in ((lambda: c.dp_step(1e9, 10, 0.1, 8, 450e9), "bucket_bytes"),
                        (lambda: c.collective_semantics("all_reduce", 2**62), "n")):
        t0 = time.perf_counter()
        try:
            call()
        except ValueError as exc:
            assert param in str(exc)
        assert time.perf_counter() - t0 < 1.0


def test_issue_examples_serving_inputs_are_checked():
    from widgets.models import llms, transformer
    from widgets.models import serving as s

    with pytest.raises(ValueError, match="allreduce_latency_s"):
        s.decode_step("Llama-3-8B", tp=1, allreduce_latency_s=math.nan)
    kw = {f.name: getattr(llms.DEEPSEEK_V3, f.name) for f in dataclasses.fields(llms.DEEPSEEK_V3)}
    for field, bad in (("moe_layers", -5), ("kv_lora_rank", -1), ("tied_embeddings", 1), ("experts_per_token", None)):
        if field in kw:
            with pytest.raises(ValueError, match=field):
                transformer.ModelConfig(**{**kw, field: bad})
