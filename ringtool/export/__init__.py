"""Shipping events off the machine: NATS JetStream (`export/publisher.py`), the
Prometheus endpoint (`export/metrics.py`) and ``ringtool collect`` (`export/collector.py`).

Layer: export | bridge (docs/ARCHITECTURE.md).
"""
