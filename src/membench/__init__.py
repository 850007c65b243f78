"""membench: what an AI agent's memory policy puts in front of the model."""
