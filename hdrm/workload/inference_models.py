"""DNN models of the multi-tenant inference scenario: SLA targets, work and memory traffic.

A request is a batch of ``b`` samples of one model, run on one accelerator core (a compute
partition of an accelerator; ``hdrm/data/inference_platform.json``). It becomes a one-core
``parallel_homogeneous`` job, so the existing machine model runs it and the existing contention
model slows it when the cores of one accelerator ask more memory bandwidth than it has:

* work ``ops_gflop = b * gflop_per_sample / utilisation``: the FLOP the batch needs, divided by
  the fraction of the core's peak that the model reaches (small-batch inference rarely reaches
  the tensor peak), so that on a core of ``g`` GFLOP/s it lasts ``ops_gflop / g`` seconds alone;
* bandwidth ``mem_bw_gbps = (weights_mb + b * traffic_mb_per_sample) / 1000 / t``: the bytes
  moved per batch (the weights read once, plus activations or embedding rows per sample) over
  the run time alone ``t`` on the reference core (78,000 GFLOP/s).

Facts (with their source) and assumptions:

``sla_ms``
    MLPerf Inference Server-scenario latency targets (mlcommons/inference, ``loadgen/mlperf.conf``,
    ``*.Server.target_latency``; the 99th-percentile latency bound): ResNet-50 15 ms, BERT
    130 ms, DLRM (v2) 60 ms, RNN-T 1,000 ms. hdrm applies the target to every request (a request
    meets its SLA when it ends within the target of its arrival).
``gflop_per_sample``
    ResNet-50 v1.5: 2 x 3.8 G (MLPerf's documented "3.8 billion FLOPs" counts multiply-
    accumulates; 2 FLOP each); BERT-Large at 384 tokens: 2 x 128 G (MLPerf: "~128 billion"),
    both from mlcommons/inference ``docs/index.md``. DLRM-v2 and RNN-T have no figure there:
    0.1 and 20 GFLOP are assumptions (DLRM's dense MLPs; RNN-T over one LibriSpeech utterance).
``utilisation``, ``weights_mb``, ``traffic_mb_per_sample``
    Assumptions: FP16 weights (25.6 M and 340 M parameters from MLPerf's page: 51.2 and 680 MB
    read once per batch), utilisations typical of small-batch serving. DLRM reads 1 MB of
    embedding rows per sample (multi-hot lookups) and 20 MB of dense weights; RNN-T's 120 M
    parameters (240 MB) are streamed about 60 times per batch (its recurrent steps do not keep
    them on chip): 14,400 MB. ResNet-50 and BERT are compute-bound (97 and 28 GB/s); DLRM and
    RNN-T memory-bound (601 and 706 GB/s, more than a quarter of an A100's 1,555 GB/s), so three
    of them on one accelerator oversubscribe it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

#: Speed of the reference accelerator core (an A100 partition), GFLOP/s.
REFERENCE_CORE_GFLOPS = 78_000.0


@dataclass(frozen=True)
class DnnModel:
    """One DNN model served by the inference scenario.

    Attributes:
        name: the model's name in tenant specs.
        sla_ms: the default latency target (ms).
        gflop_per_sample: work of one sample (GFLOP).
        utilisation: fraction of a core's peak the model reaches, in (0, 1].
        weights_mb: MB read once per batch (the weights).
        traffic_mb_per_sample: MB moved per sample (activations, embedding rows).
        default_batch: the batch size when a tenant gives none.
        source: where the SLA target comes from.
    """

    name: str
    sla_ms: float
    gflop_per_sample: float
    utilisation: float
    weights_mb: float
    traffic_mb_per_sample: float
    default_batch: int
    source: str = "MLPerf Inference loadgen/mlperf.conf, Server scenario"

    def ops_gflop(self, batch: int) -> float:
        """Work of a request of ``batch`` samples at the core's peak (GFLOP)."""
        return batch * self.gflop_per_sample / self.utilisation

    def run_time_s(self, batch: int, core_gflops: float = REFERENCE_CORE_GFLOPS) -> float:
        """Run time alone of a request of ``batch`` samples on a core of ``core_gflops``."""
        return self.ops_gflop(batch) / core_gflops

    def mem_bw_gbps(self, batch: int) -> float:
        """Bandwidth a request of ``batch`` samples asks while it runs (GB/s, reference core)."""
        traffic_gb = (self.weights_mb + batch * self.traffic_mb_per_sample) / 1000.0
        return traffic_gb / self.run_time_s(batch)


#: The models, by name.
MODELS: Mapping[str, DnnModel] = {
    m.name: m for m in (
        DnnModel("resnet50", 15.0, 7.6, 0.30, 51.2, 25.0, 8),
        DnnModel("bert", 130.0, 256.0, 0.40, 680.0, 60.0, 4),
        DnnModel("dlrm", 60.0, 0.035, 0.25, 20.0, 1.0, 256),
        DnnModel("rnnt", 1000.0, 20.0, 0.10, 14_400.0, 10.0, 8),
    )
}


def model_table(core_gflops: float = REFERENCE_CORE_GFLOPS) -> list[dict[str, float | str | int]]:
    """One row per model at its default batch: SLA, run time alone (ms) and bandwidth (GB/s)."""
    return [{"model": m.name, "batch": m.default_batch, "sla_ms": m.sla_ms,
             "ops_gflop": round(m.ops_gflop(m.default_batch), 3),
             "run_time_ms": round(1000 * m.run_time_s(m.default_batch, core_gflops), 3),
             "mem_bw_gbps": round(m.mem_bw_gbps(m.default_batch), 1)}
            for m in MODELS.values()]
