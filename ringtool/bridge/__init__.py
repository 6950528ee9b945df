"""The KMES bridge service: the loop (`bridge/core.py`), the attach server
(`bridge/attach_server.py`), consumer tracking (`bridge/consumers.py`).

Layer: export | bridge (docs/ARCHITECTURE.md).
"""
