"""Helpers shared by the test suites, one job per module; test modules import from here,
never from each other (fixtures shared by several modules live in the nearest conftest.py).

* paths: ROOT, PY, RINGTOOL.
* procs: child processes, their pipes read with deadlines (LineReader, Lines), run_ringtool.
* servers, stream_check: real nats-server / prometheus on 127.0.0.1; a stream read back.
* kmes: a real ``ringtool bridge`` (Bridge, bridge, start_bridge), kmes-read, KMES reading.
* rawproto: the KMES attach protocol spoken by hand (consumers and fake bridges).
* producers: the BPF test programs (RingProducer, PerfProducer, GroupProducer).
* trace: ``ringtool trace`` runs (Trace), in-process sessions, workload processes (Worker).
* export: ``trace --export`` runs and their accounting.
* tmux: a real terminal for the TUI.
* stats, records: hand-filled TraceStats; random event records with hostile bytes.
* hotplug: CPU 1 offline and back (test VM only).
* cgroups: the cgroup2 mount, a fresh cgroup directory removed afterwards.
* builders: hand-built RINGBUF and perf rings (the kernel's side played in Python).
"""
