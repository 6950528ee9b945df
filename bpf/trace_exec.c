/* ringtool trace source `exec`: exec, exit and fork (sched tracepoints) -> RINGBUF.
 *
 * Records are struct trace_event (bpf/trace_event.h), reserved in this CPU's ring of
 * the per-CPU group (bpf/percpu_ringbuf.h) and submitted, only after the -p/-c
 * filters accepted the task (trace_skip_current): a rejected event touches no ring.
 * A failed reservation is
 * counted twice: in the group's per-CPU drop counter (by the header) and in this
 * source's own per-CPU `drops` array (here, where BCC rewrites map methods).
 * exit: thread-group leaders only (a process exit, not every thread).
 *
 * No task_struct reads: the kernel headers BCC compiles against may not match the
 * running kernel, so field offsets can't be trusted. Instead
 *   ppid       is remembered at fork (parent_of: child pid -> parent tgid), so it is
 *              known for processes forked while tracing (0 otherwise);
 *   exit code  is remembered at exit_group(2)/exit(2) entry (exit_codes: tgid ->
 *              code); an exit without that syscall (a fatal signal) has aux = 0
 *              ("unknown"), otherwise aux = 1 and value = code << 8 (wait status).
 * sched_process_fork's child_comm is `char child_comm[16]` on 6.1 and
 * `__data_loc char[] child_comm` on newer kernels (6.18): ringtool reads the running
 * kernel's tracefs format at load time (ringtool/sources/tracepoints.py) and passes
 * TRACE_FORK_CHILD_COMM_DATA_LOC (1: __data_loc, 0: char[N]). BCC builds `args` from
 * the same format file, so only the selected path's member exists.
 * cflags: RingBufGroup.cflags(), TRACE_* filters and sizes (see trace_event.h),
 * tracepoint layouts (tracepoints.layout_defines).
 */
#include "percpu_ringbuf.h"
#include "trace_event.h"

#ifndef TRACE_FORK_CHILD_COMM_DATA_LOC
#error "trace_exec.c: compile with ringtool's tracepoint layout cflags (sources/tracepoints.py)"
#endif

BPF_PERCPU_ARRAY(drops, u64, 1);
BPF_TABLE("lru_hash", u32, u32, parent_of, 65536);
BPF_TABLE("lru_hash", u32, u32, exit_codes, 16384);

static __always_inline void remember_exit(int code)
{
    u32 pid = bpf_get_current_pid_tgid() >> 32;
    u32 c = code & 0xff;
    exit_codes.update(&pid, &c);
}

TRACEPOINT_PROBE(syscalls, sys_enter_exit_group)
{
    remember_exit(args->error_code);
    return 0;
}

TRACEPOINT_PROBE(syscalls, sys_enter_exit)
{
    u64 id = bpf_get_current_pid_tgid();
    if ((id >> 32) == (u32)id)  /* the leader's own exit(2) */
        remember_exit(args->error_code);
    return 0;
}

/* Reserve and fill the common part of one event of `kind` from process `pid`, which
 * the caller's filter accepted; NULL (the drop counted) when the ring is full. */
static __always_inline struct trace_event *begin_event(u32 pid, u32 kind)
{
    struct trace_event *e = rt_pcpu_reserve(sizeof(*e));
    if (!e) {
        drops.increment(0);
        return 0;
    }
    trace_fill_hdr(&e->h, kind);
    u32 *ppid = parent_of.lookup(&pid);
    e->value = 0;
    e->ppid = ppid ? *ppid : 0;
    e->ret = 0;
    e->aux = 0;
    e->aux2 = 0;
    return e;
}

/* Submit a filled event. */
static __always_inline int finish_event(struct trace_event *e)
{
    rt_pcpu_submit(e, sizeof(*e));
    return 0;
}

TRACEPOINT_PROBE(sched, sched_process_exec)
{
    u32 pid = bpf_get_current_pid_tgid() >> 32;
    if (trace_skip_current(pid))  /* the new comm: exec has set it by now */
        return 0;
    struct trace_event *e = begin_event(pid, TRACE_EXEC);
    if (!e)
        return 0;
    e->aux = args->old_pid;
    TP_DATA_LOC_READ_STR(e->data, filename, sizeof(e->data));
    return finish_event(e);
}

TRACEPOINT_PROBE(sched, sched_process_exit)
{
    u64 id = bpf_get_current_pid_tgid();
    u32 pid = id >> 32;
    if (pid != (u32)id)
        return 0;
    if (trace_skip_current(pid)) {
        exit_codes.delete(&pid);
        parent_of.delete(&pid);
        return 0;
    }
    struct trace_event *e = begin_event(pid, TRACE_EXIT);
    if (!e)
        return 0;
    u32 *code = exit_codes.lookup(&pid);
    e->value = code ? (u64)*code << 8 : 0;
    e->aux = code ? 1 : 0;
    e->data[0] = 0;
    exit_codes.delete(&pid);
    parent_of.delete(&pid);
    return finish_event(e);
}

TRACEPOINT_PROBE(sched, sched_process_fork)
{
    u32 pid = bpf_get_current_pid_tgid() >> 32;
    u32 child = args->child_pid;
    parent_of.update(&child, &pid);  /* before filtering: exec/exit need it */
    if (trace_skip_current(pid))  /* the parent's pid and comm */
        return 0;
    struct trace_event *e = begin_event(pid, TRACE_FORK);
    if (!e)
        return 0;
    e->aux = args->child_pid;
#if TRACE_FORK_CHILD_COMM_DATA_LOC
    TP_DATA_LOC_READ_STR(e->data, child_comm, sizeof(e->data));
#else
    bpf_probe_read_kernel_str(e->data, sizeof(args->child_comm), args->child_comm);
#endif
    return finish_event(e);
}
