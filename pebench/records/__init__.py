"""What a case produces, in the form it is stored: the typed result record and its curve rows
(:mod:`~pebench.records.record`) and the attention snapshot's format (:mod:`~pebench.records.attention`).

The package sits low (above the core, below the engine and the store) and imports neither: the engine builds
records, the store writes and reads them, the report decodes snapshots, all through this one definition. Nothing is
imported here, so importing the record does not load numpy's snapshot code and the reverse.
"""
