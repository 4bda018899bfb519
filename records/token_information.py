"""One delegation token as Kafka holds it (``TokenInformation``, which ``DelegationTokenData`` wraps): the one
definition that the simulated controller (``simulator``) and the reference fold (``replay.reference.image_parts_delta``)
both keep their tokens in, here because ``records`` is the layer both may import."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DelegationToken:
    """``TokenInformation`` as a DelegationTokenRecord carries it; principals as ``KafkaPrincipal.toString`` prints
    them (``User:name``)."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


__all__ = ["DelegationToken"]
