"""The membench command line: one subcommand per DVC stage (the modules in the repository's
top-level stages/, installed as membench.stages), plus the commands that are not stages."""

from __future__ import annotations

import os

import typer

from membench.cleanup import interrupts
from membench.cleanup.private_temp import sweep_stale
from membench.commands.bench import bench
from membench.commands.corpus_snapshot import corpus_snapshot
from membench.commands.generate import generate
from membench.commands.importing import import_
from membench.commands.remeasure import remeasure
from membench.memory_tool.cli import memory_tool
from membench.stages.backends import backends
from membench.stages.corpus import corpus
from membench.stages.embed import embed
from membench.stages.embed_turns import embed_turns
from membench.stages.extract import extract
from membench.stages.extraction import extraction
from membench.stages.index import index
from membench.stages.multiseed import multiseed
from membench.stages.plots import plots
from membench.stages.policies import policies
from membench.stages.reader import reader
from membench.stages.report import report
from membench.stages.scenario import scenario
from membench.stages.systems import systems
from membench.stages.users import users

app = typer.Typer(
    help="membench: what an AI agent's memory policy puts in front of the model.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# Third-party telemetry off unless the user chose otherwise: a variable already set, to any
# value, is kept. DVC's analytics (for the `dvc` that `membench remeasure` runs; .dvc/config
# turns them off too), the Hugging Face hub's, mem0's (the systems stage), and DO_NOT_TRACK for any other tool that honours
# it. What each dependency sends and how this is tested: docs/reproducibility.md.
TELEMETRY_OFF = {"DVC_NO_ANALYTICS": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1",
                 "MEM0_TELEMETRY": "False"}


def turn_telemetry_off() -> None:
    """Set in the environment, so every process a command starts (dvc, workers) inherits it."""
    for name, value in TELEMETRY_OFF.items():
        os.environ.setdefault(name, value)


@app.callback()
def _on_start(context: typer.Context) -> None:
    """SIGTERM (a CI timeout, `kill`, a scheduler) and SIGINT (Ctrl-C) end a command through
    its finally blocks, once: no server, temporary store or partial output is left behind,
    and a second signal does not cut that cleanup short (membench.cleanup.interrupts). What
    an earlier run killed by SIGKILL left in the temp directory is removed first."""
    turn_telemetry_off()
    interrupts.install()
    context.call_on_close(interrupts.restore)  # a command run in-process (tests) ends here
    sweep_stale()


for command in (corpus, scenario, extract, index, embed, policies, multiseed, plots, report, bench,
                remeasure, generate, users, extraction, backends, systems, reader):
    app.command(command.__name__)(command)
app.command("corpus-snapshot")(corpus_snapshot)
app.command("embed_turns")(embed_turns)
app.command("memory-tool")(memory_tool)
app.command("import")(import_)

if __name__ == "__main__":
    app()
