"""Full and incremental replay runs and what they write: the history tables, the derived tables, their layout,
checkpoints, snapshots and coverage. Imports ``replay.core``, ``replay.fold``, ``replay.reference``,
``replay.audit``."""
