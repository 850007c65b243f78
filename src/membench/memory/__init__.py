"""Memory: stores and policies. Importing the package registers the recency readers
(membench.memory.recency) beside the policies of membench.memory.policies."""

from membench.memory import recency as _recency  # noqa: F401  (registers them)
