"""The outputs that write records out (JSON lines, columns, `--csv`/`--fields`,
`--quiet`) and the file and KMES sinks (`--pcap`, `--kmes`).

Layer: trace | diagnostics (docs/ARCHITECTURE.md).
"""
