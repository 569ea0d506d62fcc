"""The periodic DAG environment: the same run as `hdrm dag periodic`, masks by device type,
rewards by hand (dag/periodic_gpu_case.py), Gymnasium's checker."""

import csv

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hdrm.env  # noqa: F401 - registers the environments
from hdrm.cli.main import main
from hdrm.dag.periodic_devices import RULES
from hdrm.dag.periodic_rules import DEFER_RULES
from hdrm.env.dag_env import MISS_PENALTY, RESPONSE_WEIGHT, DagEnv
from hdrm.env.scheduling_env import SchedulingEnv
from hdrm.errors import ConfigError

from dag.periodic_gpu_case import CPU_SCHEDULE, GPU_SCHEDULE, write_case


def _play(env, choose):
    obs, info = env.reset()
    total, steps = 0.0, 0
    done = env.sim.done
    while not done:
        obs, reward, done, _, info = env.step(choose(env, info))
        total += reward
        steps += 1
    return total, steps, info


def _schedule(result):
    return {o.job.id: (o.start_s, o.finish_s) for o in result.outcomes}


@pytest.mark.parametrize("gpus", [0, 1])
@pytest.mark.parametrize("rule", RULES)
def test_a_constant_rule_reproduces_hdrm_dag_periodic(tmp_path, gpus, rule):
    """A generated set at utilisation 3 on 4 cores (and 1 GPU): every job's start and end as
    `hdrm dag periodic --policy RULE` writes them."""
    _, platform = write_case(tmp_path, gpus, cores=4)
    taskset = tmp_path / "set.json"
    assert main(["dag", "taskset", "--graphs", "3", "--utilisation", "3.0", "--seed", "5",
                 "-o", str(taskset)]) == 0
    out = tmp_path / "out"
    assert main(["dag", "periodic", str(taskset), "--platform", str(platform), "--policy", rule,
                 "-o", str(out)]) == 0
    env = SchedulingEnv(workload_file=str(taskset), platform_file=str(platform))
    assert isinstance(env, DagEnv) and env.action_names == list(RULES + DEFER_RULES)
    _, steps, info = _play(env, lambda e, i: RULES.index(rule))
    rows = list(csv.DictReader(open(out / "out_jobs.csv")))
    assert steps > 10 and len(rows) == len(env.result().outcomes)
    expected = {r["job_id"]: (float(r["starting_time"]), float(r["finish_time"])) for r in rows}
    got = _schedule(env.result())
    assert all(got[k] == pytest.approx(v, abs=1e-6) for k, v in expected.items())
    met = [r["deadline_met"] for r in csv.DictReader(open(out / "out_instances.csv"))]
    assert info["missed"] == met.count("0") and info["instances"] == len(met)


@pytest.mark.parametrize("gpus, schedule, response, missed",
                         [(1, GPU_SCHEDULE, 6.0, 0), (0, CPU_SCHEDULE, 9.0, 1)])
def test_task_and_processor_picks_by_hand(tmp_path, gpus, schedule, response, missed):
    """job_pick: with the GPU, at t=2 the window is [c, b] (heft_edf: c's rank 4 > b's 2) and
    both may only go to the GPU entry; without it, to either core. Picking the first valid action
    gives the hand schedule; the return is the instance's reward."""
    taskset, platform = write_case(tmp_path, gpus)
    env = DagEnv(workload_file=str(taskset), platform_file=str(platform), mode="job_pick",
                 window=2)
    names = env.procs.names
    assert names == (["c0-n0/cpu", "c0-n0/gpu"] if gpus else ["c0-n0/c0", "c0-n0/c1"])
    masks = {}

    def first_valid(e, info):
        ready = tuple(j.extra["task"] for j in e._ready_window())
        masks[(e.sim.now, ready)] = info["action_mask"].reshape(2, len(names)).tolist()
        return int(np.flatnonzero(info["action_mask"])[0])

    total, _, info = _play(env, first_valid)
    assert {k.split("/")[-1]: v for k, v in _schedule(env.result()).items()} == schedule
    if gpus:
        assert masks[(0.0, ("a",))] == [[True, False], [False, False]]
        assert masks[(2.0, ("c", "b"))] == [[False, True], [False, True]]
    else:
        # on cores b's rank (7) beats c's (5); b takes core 0, then c may only take core 1
        assert masks[(2.0, ("b", "c"))] == [[True, True], [True, True]]
        assert masks[(2.0, ("c",))] == [[False, True], [False, False]]
    assert total == pytest.approx(-(MISS_PENALTY * missed + RESPONSE_WEIGHT * response / 8.0))
    assert (info["missed"], info["instances"], info["objective"]) == (missed, 1, missed)


@pytest.mark.parametrize("engine_pick", [True, False])
def test_masks_follow_device_types_on_a_generated_set(tmp_path, monkeypatch, engine_pick):
    """Random valid picks on 2 cores and 2 GPUs: a task with a GPU demand only ever on a GPU
    entry; with the engine's ``place_on`` or, where it lacks one, the env's pinned placement."""
    from hdrm.sim.gpu_engine import GpuSimulation

    if not engine_pick:
        monkeypatch.delattr(GpuSimulation, "place_on", raising=False)
    _, platform = write_case(tmp_path, gpus=2, cores=2)
    taskset = tmp_path / "set.json"
    main(["dag", "taskset", "--graphs", "2", "--utilisation", "2.5", "--seed", "3", "-o",
          str(taskset)])
    env = DagEnv(workload_file=str(taskset), platform_file=str(platform), mode="job_pick",
                 window=4)
    gpu_proc = env.procs.is_gpu
    rng = np.random.default_rng(0)
    checked = 0

    def random_valid(e, info):
        nonlocal checked
        mask = info["action_mask"].reshape(4, len(gpu_proc))
        for slot, job in enumerate(e._ready_window()):
            assert not mask[slot][gpu_proc != (job.accel is not None)].any()
            checked += int(mask[slot].any())
        return int(rng.choice(np.flatnonzero(info["action_mask"])))

    _play(env, random_valid)
    ran = env.result().outcomes
    assert checked > 50 and all(o.state == "COMPLETED_SUCCESSFULLY" for o in ran)
    placed = env.sim.core.placements
    assert all(bool(placed[o.job.idx].gpus) == (o.job.accel is not None) for o in ran)


@pytest.mark.parametrize("mode", ["policy_pair", "job_pick"])
def test_gymnasium_checker_and_registration(tmp_path, mode):
    taskset, platform = write_case(tmp_path, gpus=1)
    env = gymnasium.make("hdrm/PeriodicDag-v0", workload_file=str(taskset),
                         platform_file=str(platform), mode=mode, window=3)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=1)
    assert obs.shape == env.observation_space.shape == (4 + 3 * 10 + 2 * 3,)


def test_bad_settings_are_one_line_errors(tmp_path):
    taskset, platform = write_case(tmp_path, gpus=1)
    with pytest.raises(ConfigError, match=r"^objective: the periodic DAG environment's reward "
                                          r"is fixed .*got 'makespan', leave it out$"):
        DagEnv(workload_file=str(taskset), platform_file=str(platform), objective="makespan")
    with pytest.raises(ConfigError, match=r"^actions.selection: 'fifo' is not a periodic rule"):
        DagEnv(workload_file=str(taskset), platform_file=str(platform), selection=("fifo",))
    env = DagEnv(workload_file=str(taskset), platform_file=str(platform),
                 selection=("dag_edf-first_fit", "LLF_defer"))
    assert env.action_names == ["dag_edf-first_fit", "llf_defer"]
    assert [p.name for p in env.pairs] == ["dag_edf-first_fit", "dag_llf_defer-best_fit"]
    with pytest.raises(ConfigError, match=r"^actions.selection: unknown placement 'fist_fit'"):
        DagEnv(workload_file=str(taskset), platform_file=str(platform), selection=("llf-fist_fit",))
    bad = tmp_path / "list.json"
    bad.write_text('{"tasksets": []}')
    with pytest.raises(ConfigError, match=r"list.json: tasksets: expected a non-empty list"):
        DagEnv(workload_file=str(bad), platform_file=str(platform))


def test_observation_by_hand_at_the_first_choice_with_the_gpu(tmp_path):
    """job_pick, window 2, hand case with the GPU: after a's pick at 0 the next choice is at 2
    (a has ended; b and c are ready, both GPU tasks). Times are over the longest deadline, 8 s."""
    taskset, platform = write_case(tmp_path, gpus=1)
    env = DagEnv(workload_file=str(taskset), platform_file=str(platform), mode="job_pick",
                 window=2)
    obs, info = env.reset()
    assert env.sim.now == 0.0
    obs, *_ = env.step(int(np.flatnonzero(info["action_mask"])[0]))  # a on the CPU
    assert env.sim.now == 2.0
    head, rows, procs = obs[:4], obs[4:24].reshape(2, 10), obs[24:].reshape(2, 3)
    assert head.tolist() == pytest.approx([2 / 10, 2 / 2, 0.0, 1.0])
    # present, rank_u, rank_d, rank_oct, laxity 8 - 2 - rank_u, cost, cpu, gpu, on GPU, age
    assert rows[0].tolist() == pytest.approx(
        [1, 4 / 8, 2 / 8, 2 / 8, 2 / 8, 2 / 8, 3 / 8, 2 / 8, 1, 2 / 8])  # c
    assert rows[1].tolist() == pytest.approx(
        [1, 2 / 8, 2 / 8, 1 / 8, 4 / 8, 1 / 8, 6 / 8, 1 / 8, 1, 2 / 8])  # b
    assert procs.tolist() == [[0, 1, 0], [1, 1, 0]]  # the node's CPU and GPU, both free
    obs, *_ = env.step(int(np.flatnonzero(env.action_masks())[0]))  # c on the GPU, 2-4
    assert env.sim.now == 4.0 and obs[4:24].reshape(2, 10)[1].tolist() == [0] * 10  # b alone


def test_a_busy_core_shows_when_it_frees(tmp_path):
    """Cores only: at 2 the window is [b, c]; b takes core 0 (2-8), and at the same instant c's
    choice sees core 0 busy for 6 more seconds (6 / 8) and core 1 free."""
    taskset, platform = write_case(tmp_path, gpus=0)
    env = DagEnv(workload_file=str(taskset), platform_file=str(platform), mode="job_pick",
                 window=2)
    obs, info = env.reset()
    obs, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))  # a, core 0
    obs, *_ = env.step(int(np.flatnonzero(env.action_masks())[0]))  # b on core 0
    assert env.sim.now == 2.0
    assert obs[24:].tolist() == pytest.approx([0, 0, 6 / 8, 0, 1, 0])


def test_a_step_outside_the_space_or_after_the_end_is_refused(tmp_path):
    taskset, platform = write_case(tmp_path, gpus=1)
    env = DagEnv(workload_file=str(taskset), platform_file=str(platform))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=rf"^action {env.action_space.n} outside Discrete\("):
        env.step(env.action_space.n)
    _play(env, lambda e, info: int(np.flatnonzero(e.action_masks())[0]))
    with pytest.raises(RuntimeError, match="after the episode ended; call reset"):
        env.step(0)


def test_pick_limit_easy_is_refused_on_a_periodic_task_set(tmp_path):
    _, platform = write_case(tmp_path, 0, cores=4)
    taskset = tmp_path / "set.json"
    assert main(["dag", "taskset", "--graphs", "2", "--utilisation", "1.0", "--seed", "5",
                 "-o", str(taskset)]) == 0
    with pytest.raises(ConfigError, match="pick_limit: the periodic DAG environment.*use fits"):
        DagEnv(workload_file=str(taskset), platform_file=str(platform), mode="job_pick",
               pick_limit="easy")
