"""Questions of a replayed lake: the as-of rules, state, image parts, history, changes, incidents, and the JVM-free
path. Imports ``replay.core``, ``replay.audit`` and ``replay.store``'s readers, never a run."""
