"""The pipeline's stage commands, one module per DVC stage (installed as membench.stages)."""
