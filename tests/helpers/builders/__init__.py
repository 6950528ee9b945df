"""Hand-built ring bytes: the kernel's side of RINGBUF and perf rings played in Python."""
