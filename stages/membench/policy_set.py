"""Every registered policy: the pure core's plus those that need I/O of their own.

Stages and `bench` build policies from here so that a policy registered outside the
core (the memory-tool profile writes real files) runs everywhere."""

from __future__ import annotations

import membench.memory_tool.policy  # noqa: F401  (registers memory_tool_profile)
from membench.core.policies import build_policies, dense_corpora, retrieval_corpora

__all__ = ["build_policies", "dense_corpora", "retrieval_corpora"]
