"""Every file membench reads or writes: Parquet schemas, scenario and corpus files, vocabulary."""
