"""What the controller decided and why: who may lead, the configs in force, the election audit, the controller's
state machines, health and what-if. Imports ``replay.core``."""
