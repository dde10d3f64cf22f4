"""The per-item Parquet table: its schema, a crash-safe writer and a reader."""
