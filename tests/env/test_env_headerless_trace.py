"""The environment on an SWF trace whose header states no machine size (METACENTRUM, RICC and the
CEA-Curie parts of the archive come without a header): the error names the options to set."""

from __future__ import annotations

import pytest

from hdrm.env import SchedulingEnv
from hdrm.errors import ConfigError
from hdrm.options import options_from_dict

#: Three jobs (id, submit, run time, processors) and no header.
JOBS = [(1, 0, 100, 4), (2, 10, 50, 2), (3, 20, 30, 8)]


def _trace(tmp_path):
    path = tmp_path / "headerless.swf"
    path.write_text("".join(f"{i} {s} 0 {r} {p} -1 -1 {p} 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                            for i, s, r, p in JOBS))
    return path


def test_no_machine_size_names_the_options_keys(tmp_path):
    # the message named EnvConfig's fields only ("give platform_file or homogeneous_procs"),
    # which an options.json does not have: its keys are platform_file_path and nb_resources
    options = options_from_dict({"workload_file_path": str(_trace(tmp_path))}, "o.json")
    with pytest.raises(ConfigError, match=r"headerless\.swf: the workload states no MaxProcs "
                       r"\(nor MaxNodes\); .*options\.json: platform_file_path or nb_resources"):
        SchedulingEnv(options)


def test_nb_resources_gives_the_machine_size(tmp_path):
    options = options_from_dict({"workload_file_path": str(_trace(tmp_path)),
                                 "nb_resources": 8}, "o.json")
    env = SchedulingEnv(options)
    assert env.platform.nb_cores == 8 and len(env.trace) == 3
