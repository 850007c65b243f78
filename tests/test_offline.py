"""No network at run time (issue 25): third-party telemetry off by default, and the test run's
cold pipeline run, made with networking blocked (tests/scratch_conditions.py), tried no
connection and left nothing in its TMPDIR; tests/test_pipeline_e2e.py checks its bytes."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from membench.cli import TELEMETRY_OFF, app


def _keep_environment(monkeypatch) -> None:
    """monkeypatch restores only what it saw: each variable recorded, then removed."""
    for name in TELEMETRY_OFF:
        monkeypatch.setenv(name, "recorded")
        monkeypatch.delenv(name)


def test_membench_turns_third_party_telemetry_off_by_default(monkeypatch):
    _keep_environment(monkeypatch)
    result = CliRunner().invoke(app, ["corpus", "--help"])
    assert result.exit_code == 0, result.output
    assert {name: os.environ.get(name) for name in TELEMETRY_OFF} == TELEMETRY_OFF
    assert TELEMETRY_OFF["DVC_NO_ANALYTICS"]


def test_a_users_own_telemetry_setting_is_kept(monkeypatch):
    _keep_environment(monkeypatch)
    chosen = {name: "" for name in TELEMETRY_OFF}  # set, even empty: the user's choice
    for name, value in chosen.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["corpus", "--help"])
    assert result.exit_code == 0, result.output
    assert {name: os.environ.get(name) for name in TELEMETRY_OFF} == chosen


def test_the_repository_turns_dvc_analytics_and_update_checks_off(repo_root):
    """For `dvc` run directly (not through membench), .dvc/config does it."""
    config = (repo_root / ".dvc/config").read_text()
    assert "analytics = false" in config and "check_update = false" in config


@pytest.mark.slow
def test_the_cold_run_tried_no_network(cold_run):
    """No process of the run (dvc, a stage, a worker, a server's client) tried to connect
    anywhere but a unix socket or loopback."""
    assert cold_run.network_attempts == "", "network attempts:\n" + cold_run.network_attempts


@pytest.mark.slow
def test_a_whole_run_leaves_nothing_in_the_temp_directory(cold_run):
    """The issue's "done when": a whole normal run leaves nothing of its own in TMPDIR."""
    assert cold_run.left_in_tmp == []
