"""The matrix of :mod:`diff_replays`: its cases (``hdrm`` argument lists) and env rollout settings.

Cases cover the job and core selection policies and pairs, random ones with seeds, every
backfilling mode, the contention models and memory-bandwidth draws, walltime kills on and off,
event and commit decisions, the RLScheduler conventions, tenants and SLA orders, block preemption,
the inference scenario, job dependencies, ``hdrm dag replay`` and ``hdrm dag periodic``, openb and
Gavel GPU replays, ``--engine batsim`` (real Batsim) on small inputs, odd or malformed inputs (the
same one-line error is expected of both trees), a serial ``hdrm sweep`` of 288 runs in one process, and some runs again with the timeline off; the
inputs are :mod:`diff_inputs`'.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.diff_inputs import ROOT, prepare  # noqa: F401  (re-exported for diff_replays)

JOB_POLICIES = ("f1", "fcfs", "first", "ljf", "low_mem", "low_mem_bw", "random", "shortest", "sjf",
                "sjf_pred", "smallest", "unicep", "unicep_pred", "wfp3", "wfp3_pred")
PAIR_JOBS = ("random", "first", "shortest", "smallest", "low_mem", "low_mem_bw")
CORES = ("high_cores", "high_gflops", "high_mem", "high_mem_bw", "low_power", "random")
SLA = ("fcfs", "edf", "least_laxity", "fair_share", "sla_class")
GPU_POLICIES = ("fifo-fgd", "drf-best_fit", "sjf-first_fit", "tetris-gpu_packing",
                "las-dot_product", "fifo-random", "fcfs-load_balance", "sjf-gpu_clustering")

def matrix(folder: Path, batsim: str) -> tuple[dict[str, list[str]], set[str], set[str]]:
    """The cases: name -> ``hdrm`` arguments; the names run on Batsim; those run without timeline."""
    f, p, gpu = str(folder), str(folder / "platforms"), str(folder / "gpu")
    cases: dict[str, list[str]] = {}

    def rep(name: str, *args: str, nb: int = 0) -> None:
        cases[name] = ["replay", *args] + (["--nb-jobs", str(nb)] if nb else [])

    def swf(stem: str) -> str:
        return f"{f}/{stem}.swf"

    traces = sorted(x.stem for x in folder.glob("*-cln.swf")) + (["lublin_256"] if (folder / "lublin_256.swf").exists() else [])
    for t in traces:
        rep(f"A_{t}_homo", "--homogeneous-procs", "0", "--workload", swf(t), "--policy", "fcfs", "--backfill", "easy", "--no-strict")
        for plat in ("hetero", "large", "tiny_hetero", "hetero4096", "example_platform"):
            rep(f"A_{t}_{plat}", "--platform", f"{p}/{plat}.json", "--workload", swf(t), "--policy", "sjf",
                "--backfill", "easy", "--no-strict", nb=1500)
        rep(f"A_{t}_rls", "--homogeneous-procs", "0", "--workload", swf(t), "--conventions", "rlscheduler",
            "--policy", "sjf", "--contention", "none", "--no-strict", nb=1024)
    for plat in ("tiny4", "hetero"):
        rep(f"A_synth_{plat}", "--platform", f"{p}/{plat}.json", "--workload", f"{f}/synth_384.swf", "--policy", "wfp3",
            "--backfill", "conservative", nb=700)
    rep("A_synth64_homo", "--homogeneous-procs", "64", "--workload", f"{f}/synth_64.swf", "--policy", "f1", "--backfill", "easy")
    sdsc, kth, lublin = swf("SDSC-SP2-1998-4.2-cln"), swf("KTH-SP2-1996-2.1-cln"), swf("lublin_256")
    for job in JOB_POLICIES:
        for bf in ("none", "easy", "easy_first", "conservative"):
            rep(f"B_{job}_{bf}", "--platform", f"{p}/hetero.json", "--workload", sdsc, "--policy", job,
                "--backfill", bf, "--seed", "3", nb=800)
        rep(f"B_{job}_homo", "--homogeneous-procs", "256", "--workload", lublin, "--policy", job, "--backfill", "easy",
            "--seed", "5", nb=1000)
    for job in PAIR_JOBS:
        for core in CORES:
            rep(f"C_{job}-{core}_tinyh", "--platform", f"{p}/tiny_hetero.json", "--workload", f"{f}/sdsc_sp2_100_hetero.json",
                "--policy", f"{job}-{core}", "--backfill", "easy", "--seed", "1")
            rep(f"C_{job}-{core}_hetero", "--platform", f"{p}/hetero.json", "--workload", f"{f}/synth_384.swf",
                "--policy", f"{job}-{core}", "--backfill", "conservative", "--seed", "2", nb=300)
    for model in ("hdeeprm", "none", "smooth"):
        for plat in ("tiny4", "tiny_hetero", "hetero", "hetero4096"):
            rep(f"D_{model}_{plat}", "--platform", f"{p}/{plat}.json", "--workload", kth, "--policy", "shortest-high_mem_bw",
                "--contention", model, "--backfill", "easy", nb=1200)
        for bw in ("none", "constant:5", "uniform:1:12", "choice:[2,9]"):
            rep(f"D_{model}_bw_{bw.split(':')[0]}", "--platform", f"{p}/hetero.json", "--workload", swf("SDSC-Par-1996-3.1-cln"),
                "--policy", "fcfs", "--contention", model, "--bandwidth", bw, "--seed", "4", "--no-strict", nb=1000)
    for kill in ("--walltime-kill", "--no-walltime-kill"):
        for decision in ("event", "commit"):
            for plat in (["--homogeneous-procs", "128"], ["--platform", f"{p}/hetero.json"]):
                name = f"E_{kill[2:4]}_{decision}_{plat[0][2:6]}"
                rep(name, *plat, "--workload", sdsc, "--policy", "sjf", "--decision", decision, kill, "--start-index", "700", nb=1024)
                rep(f"{name}_rls", *plat, "--workload", lublin, "--conventions", "rlscheduler", "--policy", "f1",
                    "--backfill", "easy", "--decision", decision, kill, nb=1024)
    inference = ["--platform", f"{p}/inference_platform.json", "--workload", f"{f}/inf/workload.json",
                 "--tenants", f"{f}/inf/tenants.json"]
    for pol in SLA:
        if pol != "sla_class":
            for tenants in ("user", "group"):
                rep(f"F_{pol}_{tenants}", "--homogeneous-procs", "128", "--workload", sdsc, "--policy", pol,
                    "--backfill", "easy", "--tenants", tenants, nb=1000)
            rep(f"F_{pol}_latency", "--platform", f"{p}/hetero.json", "--workload", kth, "--policy", pol, "--tenants", "user",
                "--sla", "latency:3600", nb=1000)
        rep(f"F_inf_{pol}", *inference, "--policy", pol)
        for mode in ("request", "block:0.002"):
            rep(f"F_inf_{pol}_{mode[:5]}", *inference, "--policy", pol, "--preemption", mode, "--preemption-overhead", "0.0005")
    rep("F_block_sdsc", "--homogeneous-procs", "128", "--workload", sdsc, "--policy", "edf", "--tenants", "user",
        "--preemption", "block:600", nb=1000)
    for dep in ("--dependencies", "--no-dependencies"):
        for plat in ("hetero", "tiny_hetero"):
            rep(f"G_{dep[2:4]}_{plat}", "--platform", f"{p}/{plat}.json", "--workload", f"{f}/kth_deps.swf", "--policy", "sjf",
                "--backfill", "easy", dep)
    for pol in ("fcfs", "sjf", "ljf", "shortest-low_power"):
        for plat in ("tiny_hetero", "hetero", "tiny4"):
            cases[f"G_dag_{pol}_{plat}"] = ["dag", "replay", f"{f}/wf.json", "--platform", f"{p}/{plat}.json", "--policy", pol]
    for pol in ("dag_edf", "dag_llf", "cpop_edf", "fcfs"):
        cases[f"G_periodic_{pol}"] = ["dag", "periodic", f"{f}/taskset.json", "--platform", f"{p}/tiny_hetero.json", "--policy", pol]
    if Path(gpu).is_dir():
        for pods in ("default", "cpu050", "gpushare40", "gpuspec10", "multigpu20"):
            for pol in GPU_POLICIES:
                for bf in ("none", "greedy")[: 2 if pods in ("default", "multigpu20") else 1]:
                    rep(f"H_{pods}_{pol}_{bf}", "--platform", f"{gpu}/openb_node_list_gpu_node.csv",
                        "--workload", f"{gpu}/openb_pod_list_{pods}.csv", "--policy", pol, "--backfill", bf, "--seed", "1", nb=1500)
        rep("H_all_nodes", "--platform", f"{gpu}/openb_node_list_all_node.csv", "--workload", f"{gpu}/openb_pod_list_cpu050.csv",
            "--policy", "fifo-fgd", nb=1500)
        for pol in ("las-price_aware", "fifo-best_fit", "sjf-fgd"):
            rep(f"H_gavel_{pol}", "--platform", f"{p}/gavel.json", "--workload", f"{gpu}/gavel/msr_seed0.trace",
                "--throughputs", f"{gpu}/gavel/simulation_throughputs.json", "--policy", pol, nb=600)
    rep("H_small_openb", "--platform", f"{f}/openb_nodes_41.csv", "--workload", f"{f}/openb_pods_400.csv", "--policy", "drf-fgd")
    for case in sorted((folder / "golden").iterdir()):
        for pol, bf in (("fcfs", "easy"), ("sjf", "none"), ("fcfs", "conservative")):
            rep(f"I_{case.name}_{pol}_{bf}", "--platform", f"{case}/platform.xml", "--workload", f"{case}/workload.json",
                "--policy", pol, "--backfill", bf)
    for pol in ("fcfs", "smallest-high_cores", "wfp3"):
        rep(f"I_json_{pol}", "--platform", f"{p}/hetero.json", "--workload", f"{f}/sdsc_hetero.json", "--policy", pol, "--backfill", "easy")
    cases["K_sweep"] = ["sweep", f"{f}/sweep.json"]  # 288 runs in one process, serial
    _fresh_cases(rep, folder)
    _one_core_cases(rep, f, p, swf, inference)
    _bad_cases(rep, folder, p)
    on_batsim = _batsim_cases(rep, folder, p, batsim) if batsim else set()
    no_timeline = {f"{k}_notl" for k in ("A_SDSC-SP2-1998-4.2-cln_hetero", "A_lublin_256_homo", "B_sjf_easy", "C_shortest-low_power_tinyh",
                                         "D_smooth_tiny4", "F_inf_edf", "F_inf_edf_block", "G_de_hetero", "H_default_fifo-fgd_none",
                                         "H_gavel_las-price_aware", "E_no_commit_homo_rls", "L_onecore_same_rls", "L_homo64_block")
                   if k in cases}
    cases.update({k: cases[k[:-len("_notl")]] for k in no_timeline})
    return cases, on_batsim, no_timeline


def _one_core_cases(rep, f: str, p: str, swf, inference: list[str]) -> None:
    """One-core nodes (JSON platforms and --homogeneous-procs): the one-core and lazy fast paths' gates."""
    for plat in ("onecore_hetero", "onecore_same", "twocore"):
        for t, pol, bf in (("SDSC-SP2-1998-4.2-cln", "sjf", "easy"), ("lublin_256", "fcfs", "none"),
                           ("NASA-iPSC-1993-3.1-cln", "f1", "conservative"), ("KTH-SP2-1996-2.1-cln", "smallest-low_power", "easy_first"),
                           ("CTC-SP2-1996-3.1-cln", "random-random", "easy")):
            rep(f"L_{plat}_{t[:6]}_{pol}_{bf}", "--platform", f"{p}/{plat}.json", "--workload", swf(t), "--policy", pol,
                "--backfill", bf, "--seed", "9", nb=1500)
        rep(f"L_{plat}_rls", "--platform", f"{p}/{plat}.json", "--workload", swf("SDSC-SP2-1998-4.2-cln"), "--conventions", "rlscheduler",
            "--policy", "sjf", "--contention", "none", "--start-index", "1200", nb=1024)
        rep(f"L_{plat}_inf_edf", "--platform", f"{p}/{plat}.json", *inference[2:], "--policy", "edf", nb=2000)
        rep(f"L_{plat}_deps", "--platform", f"{p}/{plat}.json", "--workload", f"{f}/kth_deps.swf", "--policy", "ljf", "--no-walltime-kill")
        for model in ("none", "smooth"):
            rep(f"L_{plat}_{model}", "--platform", f"{p}/{plat}.json", "--workload", swf("SDSC-Par-1996-3.1-cln"), "--policy", "wfp3",
                "--contention", model, "--no-strict", nb=1500)
    for n, t in ((16, "lublin_256"), (128, "SDSC-SP2-1998-4.2-cln"), (1000, "CTC-SP2-1996-3.1-cln"), (0, "LLNL-Atlas-2006-2.1-cln")):
        for pol in ("random-random", "smallest-low_power", "shortest-random", "low_mem-high_cores"):  # scattered hosts
            for bf in ("easy", "conservative"):
                for kill in ("--walltime-kill", "--no-walltime-kill"):
                    rep(f"N_{n}_{pol}_{bf}_{kill[2:4]}", "--homogeneous-procs", str(n), "--workload", swf(t), "--policy", pol,
                        "--backfill", bf, kill, "--seed", "11", "--no-strict", nb=700)
        rep(f"N_{n}_deps", "--homogeneous-procs", str(n), "--workload", f"{f}/kth_deps.swf", "--policy", "random-random", "--seed", "2")
        rep(f"N_{n}_rls_random", "--homogeneous-procs", str(n), "--workload", swf(t), "--conventions", "rlscheduler",
            "--policy", "random-random", "--seed", "5", "--no-strict", nb=1024)
    for n in (16, 64, 1024):
        rep(f"L_homo{n}_sjf", "--homogeneous-procs", str(n), "--workload", swf("lublin_256"), "--policy", "sjf", "--backfill", "easy",
            "--contention", "none", nb=1500)
        rep(f"L_homo{n}_block", "--homogeneous-procs", str(n), *inference[2:], "--policy", "least_laxity", "--preemption", "block:0.001",
            nb=2000)


def _fresh_cases(rep, folder: Path) -> None:
    """Batsim JSON on SimGrid XML, each run in a process of its own (``P_``): numpy stays unloaded
    there, so the numpy-free paths (machine times by segments...) run, not the arrays' ones."""
    golden = folder / "golden"
    for stem in ("CTC-SP2-1996-3.1-cln", "LLNL-Atlas-2006-2.1-cln", "lublin_256", "KTH-SP2-1996-2.1-cln"):
        xml1024, workload = f"{golden}/sdsc1024_1k/platform.xml", f"{folder}/{stem}.json"
        for pol, bf in (("fcfs", "easy"), ("sjf", "conservative"), ("f1", "none"), ("smallest-low_power", "easy_first")):
            rep(f"P_1024_{stem}_{pol}_{bf}", "--platform", xml1024, "--workload", workload, "--policy", pol, "--backfill", bf)
        rep(f"P_256_{stem}", "--platform", f"{golden}/cluster256_1k/platform.xml", "--workload", workload, "--policy", "wfp3",
            "--backfill", "easy")
        rep(f"P_1024_{stem}_commit", "--platform", xml1024, "--workload", workload, "--policy", "sjf", "--decision", "commit",
            "--no-walltime-kill")
    for case in sorted(golden.iterdir()):
        for pol, bf in (("fcfs", "easy"), ("sjf", "none")):
            rep(f"P_{case.name}_{pol}_{bf}", "--platform", f"{case}/platform.xml", "--workload", f"{case}/workload.json",
                "--policy", pol, "--backfill", bf)


def _bad_cases(rep, folder: Path, p: str) -> None:
    """Odd inputs: the same outputs, or the same one-line error, expected of both trees."""
    small = folder / "golden" / "small_delays"
    for path in sorted((folder / "bad").iterdir()):
        if path.suffix == ".json":
            rep(f"M_{path.stem}", "--platform", f"{small}/platform.xml", "--workload", str(path), "--policy", "fcfs", "--backfill", "easy")
            rep(f"M_{path.stem}_tinyh", "--platform", f"{p}/tiny_hetero.json", "--workload", str(path), "--policy", "sjf")
        elif path.suffix == ".swf":
            rep(f"M_{path.stem}", "--platform", f"{p}/hetero.json", "--workload", str(path), "--policy", "fcfs")
            rep(f"M_{path.stem}_relaxed", "--homogeneous-procs", "100", "--workload", str(path), "--policy", "fcfs", "--no-strict")
        else:
            rep(f"M_xml_{path.stem}", "--platform", str(path), "--workload", f"{small}/workload.json", "--policy", "fcfs")


def _batsim_cases(rep, folder: Path, p: str, batsim: str) -> set[str]:
    """Small replays on the real Batsim (``--engine batsim``)."""
    names = set()
    engine = ["--engine", "batsim", "--batsim", batsim]
    for case in ("small_various", "small_delays", "cluster256_1k", "pstate_lockstep"):
        for pol, bf in (("fcfs", "easy"), ("sjf", "none")):
            names.add(f"J_{case}_{pol}_{bf}")
            rep(f"J_{case}_{pol}_{bf}", "--platform", f"{folder}/golden/{case}/platform.xml",
                "--workload", f"{folder}/golden/{case}/workload.json", "--policy", pol, "--backfill", bf, *engine)
    for pol in ("fcfs", "shortest-high_gflops", "edf"):
        names.add(f"J_tinyh_{pol}")
        rep(f"J_tinyh_{pol}", "--platform", f"{p}/tiny_hetero.json", "--workload", f"{folder}/sdsc_sp2_100_hetero.json", "--policy", pol,
            "--backfill", "easy", *engine, *(["--tenants", "user"] if pol == "edf" else []))
    names.add("J_homo16_lublin")
    rep("J_homo16_lublin", "--homogeneous-procs", "16", "--workload", f"{folder}/lublin_256_first500.swf", "--policy", "sjf",
        "--backfill", "easy", "--contention", "none", *engine, nb=150)
    return names


def quick_cases(folder: Path) -> dict[str, list[str]]:
    """A small matrix on the repository's own inputs (a second each): the default suite pins its hashes.

    ``folder`` must hold ``inf/`` (``hdrm workload inference --requests 400``).
    """
    p, w, d = ROOT / "platforms", ROOT / "workloads", ROOT / "hdrm" / "data"
    sdsc, lublin = str(w / "SDSC-SP2-1998-4.2-cln_first500.swf"), str(w / "lublin_256_first500.swf")
    json_wl, kth = str(w / "sdsc_sp2_100_hetero.json"), str(w / "KTH-SP2-1996-2.1-cln_27200-27399.swf")
    inference = ["--platform", str(d / "inference_platform.json"), "--workload", f"{folder}/inf/workload.json",
                 "--tenants", f"{folder}/inf/tenants.json"]
    cases = {
        "pair_memory_smooth": ["--platform", f"{p}/tiny_hetero.json", "--workload", json_wl, "--policy", "shortest-low_power",
                               "--backfill", "easy", "--contention", "smooth"],
        "random_conservative": ["--platform", f"{p}/tiny_hetero.json", "--workload", json_wl, "--policy", "random-random",
                                "--backfill", "conservative", "--seed", "3"],
        "hetero_sjf_easy": ["--platform", f"{p}/hetero.json", "--workload", sdsc, "--policy", "sjf", "--backfill", "easy"],
        "hetero_wfp3_conservative": ["--platform", f"{p}/hetero.json", "--workload", sdsc, "--policy", "wfp3",
                                     "--backfill", "conservative", "--nb-jobs", "200"],
        "large_f1_easy_first": ["--platform", f"{p}/large.json", "--workload", kth, "--policy", "f1", "--backfill", "easy_first",
                                "--bandwidth", "uniform:1:12", "--seed", "4"],
        "tiny4_fcfs_none": ["--platform", f"{p}/tiny4.json", "--workload", kth, "--policy", "fcfs", "--contention", "none"],
        "homo_rls_commit": ["--homogeneous-procs", "64", "--workload", lublin, "--conventions", "rlscheduler", "--policy", "sjf",
                            "--contention", "none"],
        "homo_event_kills": ["--homogeneous-procs", "128", "--workload", sdsc, "--policy", "unicep", "--backfill", "easy",
                             "--walltime-kill", "--tenants", "user"],
        "inference_edf": [*inference, "--policy", "edf"],
        "inference_block": [*inference, "--policy", "least_laxity", "--preemption", "block:0.002"],
        "inference_fair_share": [*inference, "--policy", "fair_share"],
        "openb_drf_fgd": ["--platform", f"{w}/openb_nodes_41.csv", "--workload", f"{w}/openb_pods_400.csv", "--policy", "drf-fgd"],
    }
    return {name: ["replay", *argv] for name, argv in cases.items()}


def rollout_settings(folder: Path) -> dict[str, dict[str, Any]]:
    """Env settings whose seeded rollouts :mod:`diff_replays` hashes (bench_env's cases and more)."""
    f, p, gpu = str(folder), str(folder / "platforms"), str(folder / "gpu")
    sdsc = dict(workload_file=f"{f}/SDSC-SP2-1998-4.2-cln.swf", nb_jobs=1024, start_index="random", seed=0)
    pick = dict(sdsc, platform_file=None, homogeneous_procs=128, conventions="rlscheduler", mode="job_pick",
                window=128, contention="none")
    settings = {
        "pick-sdsc": pick,
        "pick-reservation": dict(pick, observation="job_window_reservation", reservation="wfp3"),
        "pick-predicted": dict(pick, observation="job_window_predicted", reservation="wfp3_pred"),
        "pick-hetero4096": dict(sdsc, workload_file=f"{f}/sdsc_x32.swf", platform_file=f"{p}/hetero4096.json",
                                mode="job_pick", window=128),
        "pair-normal": dict(sdsc, platform_file=f"{p}/hetero.json", observation="normal"),
        "pair-small": dict(sdsc, platform_file=f"{p}/hetero.json", observation="small"),
        "pair-memory-easy-void": dict(workload_file=f"{f}/sdsc_sp2_100_hetero.json", platform_file=f"{p}/tiny_hetero.json",
                                      backfilling="easy", void=True, reward_timing="accrued", observation="small_waits"),
        "pick-event-low-power": dict(workload_file=f"{f}/KTH-SP2-1996-2.1-cln.swf", platform_file=f"{p}/hetero.json",
                                     nb_jobs=600, start_index="random", mode="job_pick", window=32, decision="event",
                                     core_selection="low_power", objective="energy_consumption", contention="smooth", void=True),
        "pick-laxity-tenants": dict(workload_file=f"{f}/synth_64.swf", platform_file=f"{p}/tiny4.json", nb_jobs=400,
                                    mode="job_pick", window=16, window_order="laxity", tenants="user",
                                    objective="avg_waiting_time"),
        "pair-selection-edp": dict(workload_file=f"{f}/CTC-SP2-1996-3.1-cln.swf", platform_file=f"{p}/large.json", nb_jobs=500,
                                   start_index="random", objective="edp", backfilling="conservative",
                                   selection=("shortest-high_gflops", "smallest-low_power", "first-high_mem_bw", "random-random")),
        "pair-inference": dict(workload_file=f"{f}/inf/workload.json", platform_file=f"{p}/inference_platform.json",
                               nb_jobs=1500, tenants=f"{f}/inf/tenants.json", objective="sla_satisfaction", observation="small"),
        "pick-dependencies": dict(workload_file=f"{f}/kth_deps.swf", platform_file=f"{p}/hetero.json", mode="job_pick", window=64),
        "pick-onecore": dict(sdsc, platform_file=f"{p}/onecore_hetero.json", mode="job_pick", window=64, nb_jobs=600),
    }
    if Path(gpu).is_dir():
        settings["pick-openb"] = dict(workload_file=f"{gpu}/openb_pod_list_default.csv", nb_jobs=400, mode="job_pick",
                                      platform_file=f"{gpu}/openb_node_list_gpu_node.csv", window=32,
                                      objective="avg_waiting_time")
    return settings

