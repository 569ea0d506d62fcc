"""Names moved out of over-long modules stay importable, as the same objects, from their old homes.

Each split moved a concept into a module of its own and re-exported its public names; user code,
agent files and notebooks import them from where they were. The registries still hold the moved
classes under their names.
"""

from __future__ import annotations

import importlib

import pytest

MOVED = [
    ("hdrm.options", "hdrm.option_names", ["check_names", "SELECTION_PATH"]),
    ("hdrm.sim.machine", "hdrm.sim.job_end",
     ["JobEnd", "start_kwargs", "COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED",
      "COMPLETED_KILLED"]),
    ("hdrm.batsim.adapter", "hdrm.batsim.actions", ["Pick", "Action", "DecideHook", "DecisionStopped"]),
    ("hdrm.batsim.adapter", "hdrm.batsim.adapter_options",
     ["PSTATE_OF_STATE", "CONTINUOUS_MODELS", "OPTION_KEYS"]),
    ("hdrm.batsim.process", "hdrm.batsim.accelerators", ["refuse_accelerators"]),
    ("hdrm.env.observations", "hdrm.env.job_window",
     ["JobWindowObservation", "JobWindowReservationObservation", "JobWindowPredictedObservation",
      "JOB_FEATURES", "RESERVATION_JOB_FEATURES", "PREDICTED_JOB_FEATURES"]),
    ("hdrm.env.scheduling_env", "hdrm.env.decision_loop", ["VOID"]),
    ("hdrm.launcher", "hdrm.launch.summary", ["TABLE_ROWS"]),
    ("hdrm.agents.networks", "hdrm.agents.job_row_networks",
     ["KernelNetwork", "AttentionNetwork", "WINDOW_REAL_COLUMN", "WINDOW_CLUSTER_COLUMNS"]),
    ("hdrm.agents.networks", "hdrm.agents.network_base", ["PolicyValueNetwork", "mlp"]),
    ("benchmarks.train", "benchmarks.train_settings",
     ["TrainSettings", "TrainResult", "LEARNER_DEFAULTS", "MODE_DEFAULTS", "check_settings",
      "check_workers", "agent_config", "parse_args"]),
    ("benchmarks.train", "benchmarks.train_validation", ["Validator", "make_env"]),
    ("hdrm.workload.swf", "hdrm.workload.swf_file", ["read_swf_text", "decode_text"]),
    ("hdrm.platform.simgrid", "hdrm.platform.simgrid_export",
     ["platform_to_xml", "write_simgrid_xml", "core_host_name", "MASTER_HOST", "DOCTYPE",
      "CONTROL_LINK", "CONTROL_BANDWIDTH", "IDLE_SPEED"]),
    ("hdrm.batsim.hosts", "hdrm.batsim.platform_hosts",
     ["load_hosts", "check_energy", "check_master", "sleep_states"]),
    ("hdrm.batsim.engine", "hdrm.batsim.session",
     ["BatsimSession", "DEFAULT_TIMEOUT_S", "EARLY_EXIT_GRACE_S"]),
    ("hdrm.distributed.apex", "hdrm.distributed.apex_settings",
     ["ApexSettings", "parse_apex", "APEX_PATH"]),
    ("benchmarks.compare", "benchmarks.compare_models",
     ["MODEL_COMMANDS", "Model", "discover_models", "learner_column", "models_for", "train_missing",
      "training_rows"]),
]


@pytest.mark.parametrize("old, new, names", MOVED, ids=[f"{o}<-{n}" for o, n, _ in MOVED])
def test_moved_names_are_the_same_objects_in_their_old_module(old, new, names):
    if old.startswith(("hdrm.batsim.adapter", "hdrm.batsim.process", "hdrm.batsim.engine")):
        pytest.importorskip("batsim.batsim", reason="PyBatsim (installed apart, README.rst) is absent")
    before, after = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        assert getattr(before, name) is getattr(after, name), f"{old}.{name}"


def test_registries_hold_the_moved_classes():
    from hdrm.agents import job_row_networks
    from hdrm.agents.networks import NETWORKS
    from hdrm.env import job_window
    from hdrm.env.observations import OBSERVATIONS, job_window_kinds

    assert OBSERVATIONS.get("job_window") is job_window.JobWindowObservation
    assert OBSERVATIONS.get("job_window_reservation") is job_window.JobWindowReservationObservation
    assert OBSERVATIONS.get("job_window_predicted") is job_window.JobWindowPredictedObservation
    assert set(job_window_kinds()) == {"job_window", "job_window_reservation",
                                       "job_window_predicted", "job_window_queue",
                                       "gpu_job_window",
                                       "job_window_sla"}
    assert NETWORKS.get("kernel") is job_row_networks.KernelNetwork
    assert NETWORKS.get("attention") is job_row_networks.AttentionNetwork


def test_the_environment_and_the_simulator_keep_their_methods():
    from hdrm.batsim.simulator import BatsimSimulation
    from hdrm.env.scheduling_env import SchedulingEnv

    for name in ("_step_pair", "_step_pick", "_advance", "_has_choice", "action_masks"):
        assert callable(getattr(SchedulingEnv, name))
    for name in ("_execute", "_reject", "_call_me_later", "_kill", "_set_state", "_query"):
        assert callable(getattr(BatsimSimulation, name))


def test_the_simulator_orders_the_events_of_an_instant_from_their_own_module():
    from hdrm.batsim.event_order import EventOrder
    from hdrm.batsim.simulator import BatsimSimulation

    for name in ("_collect", "_collect_submissions", "_note_sleepers", "_place_notify",
                 "_next_time", "_new_wake", "_push"):
        assert getattr(BatsimSimulation, name) is EventOrder.__dict__[name], name
        assert name not in BatsimSimulation.__dict__, name


def test_the_machine_keeps_its_queries_from_their_own_module():
    from hdrm.sim.machine import Machine
    from hdrm.sim.machine_queries import MachineQueries

    for name in ("nb_hosts", "running", "power_w", "energy_j", "host_energy_j", "is_running",
                 "expected_end_s", "fraction_left", "progress", "running_job", "next_time"):
        assert getattr(Machine, name) is MachineQueries.__dict__[name], name
        assert name not in Machine.__dict__, name
