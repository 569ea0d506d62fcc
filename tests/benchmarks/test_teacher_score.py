"""benchmarks/teacher_score.py: a model's imitation teacher played alone in the model's own
environment (window, EASY-picks limit, reservation order read from the model file)."""

from __future__ import annotations

import pytest

from benchmarks import protocol, teacher_score
from hdrm.errors import ConfigError
from hdrm.platform.model import Platform
from hdrm.workload.select import sequence

from .test_compare import NB_JOBS, ROOT, traces  # noqa: F401 (fixture)

MODELS = ROOT / "models"
#: trained within EASY's picks in SJF-pred's reservation order with SJF-pred as teacher: the
#: teacher alone is then SJF-pred with EASY, start for start
SAME_ORDER = MODELS / "ppo-kernel_sdsc_none_event_easypicks_seed0.pt"
#: the same limit in FCFS's reservation order with WFP3-pred's order for the rest
FCFS_ORDER = MODELS / "ppo-kernel_sdsc_none_event_easypicks_fcfs_fitting_seed0.pt"
STARTS = (0, 100)


def _with_easy(traces, policy):  # noqa: F811
    workload = protocol.load_trace("sdsc", str(traces))
    platform = Platform.homogeneous(workload.nb_res)
    return [protocol.run_policy(platform, sequence(workload, s, NB_JOBS), policy,
                                protocol.sim_config("easy", "event")).bsld for s in STARTS]


def test_a_teacher_in_its_own_reservation_order_is_the_heuristic_with_easy(traces):  # noqa: F811
    teacher, scores = teacher_score.teacher_scores(str(SAME_ORDER), str(traces), STARTS, NB_JOBS)
    assert teacher == "sjf_pred"
    assert scores == pytest.approx(_with_easy(traces, "sjf_pred"), rel=1e-12)


def test_the_reservation_order_is_read_from_the_model(traces):  # noqa: F811
    # WFP3-pred's order behind FCFS's reservation is neither WFP3-pred with EASY nor FCFS with
    # EASY on these windows: the model's reservation order was applied
    teacher, scores = teacher_score.teacher_scores(str(FCFS_ORDER), str(traces), STARTS, NB_JOBS)
    assert teacher == "wfp3_pred"
    assert scores != pytest.approx(_with_easy(traces, "wfp3_pred"), rel=1e-9)
    assert scores != pytest.approx(_with_easy(traces, "fcfs"), rel=1e-9)


def test_a_model_without_a_teacher_is_refused_in_one_line(capsys, traces):  # noqa: F811
    model = MODELS / "ppo_hetero_bsld_seed0.pt"
    with pytest.raises(ConfigError, match="no imitation teacher recorded"):
        teacher_score.teacher_scores(str(model), str(traces), STARTS, NB_JOBS)
    assert teacher_score.main([str(model), "--traces", str(traces), "--starts", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ppo_hetero_bsld_seed0.pt" in err


#: trained on SDSC-SP2 and Lublin-1 at once (train.py --trace sdsc,lublin) with the recipe of
#: the one-trace F1-order setting below: the same teacher in the same environment on SDSC-SP2
MIXED = MODELS / "ppo-kernel_sdsc_lublin_none_event_easypicks_f1_seed0.pt"
F1_ORDER = MODELS / "ppo-kernel_sdsc_none_event_easypicks_f1_seed0.pt"


def test_a_model_of_two_traces_scores_its_teacher_on_the_trace_named(capsys, traces):  # noqa: F811
    with pytest.raises(ConfigError, match="sdsc, lublin: name one with --trace"):
        teacher_score.teacher_scores(str(MIXED), str(traces), STARTS, NB_JOBS)
    teacher, mixed = teacher_score.teacher_scores(str(MIXED), str(traces), STARTS, NB_JOBS,
                                                  trace="sdsc")
    _, single = teacher_score.teacher_scores(str(F1_ORDER), str(traces), STARTS, NB_JOBS)
    assert teacher == "sjf" and mixed == pytest.approx(single, rel=1e-12)
    _, lublin = teacher_score.teacher_scores(str(MIXED), str(traces), STARTS, NB_JOBS,
                                             trace="lublin")
    assert lublin != pytest.approx(mixed, rel=1e-6)
    with pytest.raises(ConfigError, match="--trace 'ctc'.*give one of them"):
        teacher_score.teacher_scores(str(MIXED), str(traces), STARTS, NB_JOBS, trace="ctc")
    assert teacher_score.main([str(MIXED), "--traces", str(traces), "--starts", "0"]) == 0
    out = capsys.readouterr().out
    assert out.count("trace sdsc") == 1 and out.count("trace lublin") == 1
