/* Empty programs on every tracepoint the default `ringtool trace` sources attach to
 * (trace_exec.c, trace_open.c, trace_syscalls.c): the baseline of
 * `ringtool bench trace`'s overhead phase. What a tracepoint with a BPF program costs
 * a syscall when the program does nothing; the traced run's extra over this is what
 * the sources' own work (filters, maps, ring reservations) adds. Each hook is attached
 * the way its source attaches it (trace_syscalls.c's are raw tracepoints), so the
 * baseline differs from the traced run by the programs' work only; the open source's
 * entry only where it has one (TRACE_OPEN_AT_EXIT 0: compiled with the open source's
 * task-field needs, ringtool/bench/trace.py).
 */
#include <uapi/linux/ptrace.h>
#include "trace_event.h"

#if !TRACE_OPEN_AT_EXIT
TRACEPOINT_PROBE(syscalls, sys_enter_openat) { return 0; }
#endif
TRACEPOINT_PROBE(syscalls, sys_exit_openat) { return 0; }
RAW_TRACEPOINT_PROBE(sys_enter) { return 0; }
RAW_TRACEPOINT_PROBE(sys_exit) { return 0; }
TRACEPOINT_PROBE(syscalls, sys_enter_exit_group) { return 0; }
TRACEPOINT_PROBE(syscalls, sys_enter_exit) { return 0; }
TRACEPOINT_PROBE(sched, sched_process_exec) { return 0; }
TRACEPOINT_PROBE(sched, sched_process_exit) { return 0; }
TRACEPOINT_PROBE(sched, sched_process_fork) { return 0; }
TRACEPOINT_PROBE(syscalls, sys_enter_execve) { return 0; }
TRACEPOINT_PROBE(syscalls, sys_exit_execve) { return 0; }
TRACEPOINT_PROBE(syscalls, sys_enter_execveat) { return 0; }
TRACEPOINT_PROBE(syscalls, sys_exit_execveat) { return 0; }
