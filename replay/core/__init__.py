"""What every fold, audit and question reads: the log's events, the record shapes, intervals, broker timelines,
safe points and the lake's history coverage. Imports ``records`` and ``lakehouse`` only, nothing else of ``replay``."""
