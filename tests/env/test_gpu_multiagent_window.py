"""The ordering agent's window of the multi-agent GPU environment with ``fitting_first``: a task
behind ``window`` queued tasks that fit nowhere is shown (and started) at once, and the window
kept between looks is dropped as the engine moves on; checked by hand on a one-GPU node. And the
place agent's optional ``rank`` node column."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdrm.agents.mappo_rollout import acting_agent
from hdrm.env.gpu_multiagent import GpuMultiAgentEnv
from hdrm.env.gpu_multiagent_heuristics import heuristic_order_action, heuristic_place_action
from hdrm.sim.engine import Simulation, SimulationConfig

from gpu_builders import write_tiny  # noqa: E402

#: one node: 8 cores, 1 T4
NODES = "sn,cpu_milli,memory_mib,gpu,model\na,8000,16384,1,T4\n"
#: all at 0: t1, t2, t3 ask the GPU for 1,000 s each; t4 asks 1 core, no GPU, for 500 s
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "t1,2000,1024,1,1000,,LS,Succeeded,0,1000,0\n"
        "t2,2000,1024,1,1000,,LS,Succeeded,0,1000,0\n"
        "t3,2000,1024,1,1000,,LS,Succeeded,0,1000,0\n"
        "t4,1000,1024,0,0,,BE,Succeeded,0,500,0\n")


def starts(tmp_path: Path, fitting_first: bool) -> tuple[list[float], list[list[int]]]:
    """Start times of t1..t4 under fifo-first_fit (greedy) through the environment with a
    window of 2, and the order agent's masks seen."""
    env = GpuMultiAgentEnv(**write_tiny(tmp_path, NODES, PODS), window=2, placement="first_fit",
                           backfilling="greedy", fitting_first=fitting_first)
    obs, infos = env.reset(seed=0)
    masks = []
    while env.agents:
        active = acting_agent(infos)
        if active == "order":
            masks.append(obs["order"]["action_mask"].tolist())
            action = heuristic_order_action(env, "fifo")
        else:
            action = heuristic_place_action(env, "first_fit")
        obs, _, _, _, infos = env.step({a: action if a == active else 0 for a in env.agents})
    placements = env.core.result().gpu.placements
    return [placements[i].start_s for i in range(4)], masks


def test_fitting_first_window_shows_and_starts_a_task_behind_a_blocked_window(tmp_path):
    shown, masks = starts(tmp_path, True)
    # t=0: t1 and t4 fit (shown first; no event to wait for yet); after t1 starts: t4, then
    # t2 (blocked), and waiting for t1's end is valid
    assert masks[:2] == [[1, 1, 0], [1, 0, 1]]
    assert shown == [0.0, 1000.0, 2000.0, 0.0]  # t4 starts at once, as the engine starts it
    config = SimulationConfig(backfilling="greedy", decision="event", seed=0)
    from hdrm.sim.gpu_inputs import load_gpu_platform, load_gpu_workload

    folder = tmp_path
    engine = Simulation(load_gpu_platform(str(folder / "nodes.csv")),
                        load_gpu_workload(str(folder / "pods.csv")), config).run("fifo-first_fit")
    assert [engine.gpu.placements[i].start_s for i in range(4)] == shown


def test_submission_window_hides_the_task_that_fits(tmp_path):
    """Without ``fitting_first`` the window (t2, t3 once t1 runs) holds nothing that fits, so the
    engine moves on and t4 waits behind them: what the comparison's learners saw before."""
    shown, masks = starts(tmp_path, False)
    assert masks[0] == [1, 1, 0]  # t1 and t2
    assert shown[3] > 0.0
    assert shown[:3] == pytest.approx([0.0, 1000.0, 2000.0])


def test_node_rank_column_is_the_platform_position_and_leaves_the_task_columns(tmp_path):
    """``node_rank``: a last node column 0 .. 1 in platform order, the same at every placement;
    the task columns (``fits`` ...) are those of the environment without it."""
    from gpu_builders import TINY_NODES, TINY_PODS

    settings = dict(write_tiny(tmp_path, TINY_NODES, TINY_PODS), window=4)
    ranked, plain = GpuMultiAgentEnv(node_rank=True, **settings), GpuMultiAgentEnv(**settings)
    assert ranked.node_features == plain.node_features + ("rank",)
    assert ranked.observation_space("place")["nodes"].shape == (2, 13)
    obs_r, infos = ranked.reset(seed=0)
    obs_p, _ = plain.reset(seed=0)
    seen = 0
    while ranked.agents:
        active = acting_agent(infos)
        action = int(obs_r[active]["action_mask"].argmax())
        if active == "place":
            nodes = obs_r["place"]["nodes"]
            assert nodes[:, -1].tolist() == [0.0, 1.0]
            assert (nodes[:, :-1] == obs_p["place"]["nodes"]).all()
            seen += 1
        step = {a: action if a == active else 0 for a in ranked.agents}
        obs_r, _, _, _, infos = ranked.step(step)
        obs_p, _, _, _, _ = plain.step(step)
    assert seen == 3
