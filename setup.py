"""Packaging for hdrm: learning and evaluating workload-management policies on heterogeneous clusters."""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent

setup(
    name="hdrm",
    version="0.1.0",
    description=(
        "Batsim-compatible decision system for learning and evaluating job-scheduling "
        "policies on heterogeneous clusters with deep reinforcement learning"
    ),
    long_description=(HERE / "README.rst").read_text(encoding="utf-8"),
    long_description_content_type="text/x-rst",
    license="BSD-3-Clause",
    python_requires=">=3.10",
    packages=find_packages(include=["hdrm", "hdrm.*"]),
    include_package_data=True,
    package_data={"hdrm": ["platform/data/*.json", "data/*"]},
    install_requires=[
        "numpy>=1.24",
        "lxml>=4.9",
        "defusedxml>=0.7",
        "gymnasium>=0.29",
        "procset>=1.0",
        "pyzmq>=24",
        "sortedcontainers>=2.4",
        "docopt>=0.6",
        "tqdm>=4.60",
        "matplotlib>=3.7",
        # the multi-agent environment (hdrm.env.gpu_multiagent) is a PettingZoo ParallelEnv;
        # pure Python (numpy, gymnasium), pinned in constraints.txt.
        "pettingzoo>=1.24",
    ],
    extras_require={
        # torch is pinned in constraints.txt to the CPU build; see README.rst.
        "learn": ["torch>=2.0"],
        "tensorboard": ["tensorboard>=2.10"],
        "test": [
            "pytest>=7",
            "hypothesis>=6",
            "evalys>=4.0",
            "stable-baselines3>=2.3",
            "sb3-contrib>=2.3",
            # WfCommons recipes generate real workflow instances for the DAG reader's tests
            # (wfcommons needs Python >= 3.11; on 3.10 that test skips).
            "wfcommons>=1.6; python_version >= '3.11'",
        ],
        "docs": ["sphinx>=7"],
        # Ray scale-out (hdrm sweep on Ray, hdrm/distributed/); pinned in constraints.txt.
        "distributed": ["ray>=2.40"],
        # RLlib (examples/rllib): its own extra, as it pins gymnasium==1.2.2 and adds 185 MB
        # (docs/distributed.rst); its new packages are pinned in constraints.txt.
        "rllib": ["ray[rllib]>=2.40"],
    },
    entry_points={
        "console_scripts": [
            "hdrm=hdrm.cli.main:main",
            "hdeeprm-launch=hdrm.launcher:main",
        ],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering",
        "Topic :: System :: Distributed Computing",
    ],
)
