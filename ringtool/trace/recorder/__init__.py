"""`--flight-recorder` (`trace/recorder/flight.py`): rings that keep the newest
events, dumped on SIGUSR1 and at exit.

Layer: trace | diagnostics (docs/ARCHITECTURE.md).
"""
