"""Kafka's ``*Delta.replay`` rules as set-based Spark steps: one module per image part, the full replay
(``engine``) and the increment (``incremental``). Imports ``replay.core``."""
