"""The reference fold: Kafka's ``MetadataDelta.replay`` record by record in plain Python, the judge the Spark fold is
compared with and the fold of snapshot checks. Imports ``replay.core``."""
