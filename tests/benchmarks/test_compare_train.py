"""compare.py trains the missing models only into a folder that exists, with absolute paths."""

from __future__ import annotations

from benchmarks import compare


def test_compare_trains_only_into_an_existing_models_folder_with_absolute_paths(
        tmp_path, monkeypatch, capsys):
    # a mistyped --models started hours of training into a new folder, and the trainings ran
    # from the repository's root, so relative --models and --traces paths moved there
    from benchmarks import compare_models

    assert compare.main(["--models", str(tmp_path / "modles")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --models {tmp_path / 'modles'}: no such folder; create it first to train every "
        "documented model into it (hours of training), or pass --evaluate-only to evaluate what "
        "is there")
    (tmp_path / "models").mkdir()
    monkeypatch.chdir(tmp_path)
    commands = []
    monkeypatch.setattr(compare_models.subprocess, "run",
                        lambda cmd, **kw: commands.append((cmd, kw)) or type("R", (), {
                            "returncode": 0})())
    compare_models.train_missing(compare_models.Path("models"), "traces")
    assert commands and all(kw["cwd"] == compare_models.protocol.ROOT for _, kw in commands)
    for cmd, _ in commands:
        assert cmd[cmd.index("--out") + 1].startswith(str(tmp_path / "models") + "/")
        assert cmd[cmd.index("--traces") + 1] == str(tmp_path / "traces")
