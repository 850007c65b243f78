"""An optional model, reached over HTTP: its requests, their keys and the response cache that
lets a run without the model replay every answer (docs/model.md)."""
