"""The compare flow: pair two runs' items, score them, and decide with the bootstrap.

    RunTable(A), RunTable(B) -> Instrument.diff(treatments) -> pair by item_id
      -> per-item scores (majority label / retrieval metric) -> paired clustered
      bootstrap -> GateVerdict -> report (text | markdown | json)

Nothing here imports the run flow; both read the same Parquet schema and Instrument.
"""
