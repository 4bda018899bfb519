"""kraft-replay's Python API: a notebook's questions of a replayed lake, each a lazy Spark DataFrame (or an object of
them) over the lake's tables. The rooms below hold the rest: ``core``, ``fold``, ``reference``, ``audit``, ``store``,
``query`` (docs/architecture.md).

    from replay import run_replay, state_at, history, diff, image_at, change_log, incidents

``state_answer`` is ``state_at`` as `kraft-replay state` asks it: without a JVM where a local lake allows.

Names load on first use, so importing one room (the JVM-free ``replay.query.light_state``) loads no pyspark.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replay.query.changes import change_log
    from replay.query.controller_states import transitions
    from replay.query.image import acl_history, config_history, image_at, image_diff, part_history, user_history
    from replay.query.incidents import incidents, what_if_at
    from replay.query.state import clusters, diff, history, state_at
    from replay.query.state_answer import state_answer
    from replay.query.topic_configs import topic_configs_at
    from replay.query.views import register_views
    from replay.store.runs import run_replay

# each public name and the module that defines it
_PUBLIC = {
    "run_replay": "replay.store.runs",
    "clusters": "replay.query.state",
    "state_at": "replay.query.state",
    "state_answer": "replay.query.state_answer",
    "history": "replay.query.state",
    "diff": "replay.query.state",
    "image_at": "replay.query.image",
    "image_diff": "replay.query.image",
    "part_history": "replay.query.image",
    "config_history": "replay.query.image",
    "acl_history": "replay.query.image",
    "user_history": "replay.query.image",
    "change_log": "replay.query.changes",
    "incidents": "replay.query.incidents",
    "what_if_at": "replay.query.incidents",
    "transitions": "replay.query.controller_states",
    "topic_configs_at": "replay.query.topic_configs",
    "register_views": "replay.query.views",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'replay' has no attribute {name!r}")
    return getattr(import_module(_PUBLIC[name]), name)


__all__ = [
    "acl_history",
    "change_log",
    "clusters",
    "config_history",
    "diff",
    "history",
    "image_at",
    "image_diff",
    "incidents",
    "part_history",
    "register_views",
    "run_replay",
    "state_answer",
    "state_at",
    "topic_configs_at",
    "transitions",
    "user_history",
    "what_if_at",
]
