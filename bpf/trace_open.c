/* ringtool trace source `open`: openat(2) enter/exit -> RINGBUF.
 *
 * sys_enter_openat applies the -p/-c filters (trace_skip_current) and remembers the
 * path pointer and flags of an accepted thread's call; sys_exit_openat reserves a
 * struct trace_event (bpf/trace_event.h) in this CPU's ring only for a remembered
 * call, fills path, flags and result and submits it. A rejected call touches
 * neither the map nor the ring (no reserve + discard: a discard wakes the reader).
 * A failed reservation, or a call that could not be remembered because `inflight`
 * is full, is counted per CPU (group counter + this source's `drops`).
 *
 * TRACE_FILTER_FAILED (-x, like opensnoop's): only calls that failed (ret < 0) are
 * events. Whether a call fails is known at exit only, so entry remembers every
 * accepted call as before, and exit drops a successful one without reserving. A call
 * that could not be remembered is then counted as a drop at exit, once its result
 * says it was a matching event (the filters are the task's and do not change during
 * an openat, so exit can ask them again): a successful call is never a drop.
 * cflags: RingBufGroup.cflags(), TRACE_* filters and sizes (see trace_event.h).
 */
#include "percpu_ringbuf.h"
#include "trace_event.h"

struct open_args {
    u64 filename;   /* user pointer */
    u64 flags;
};

BPF_HASH(inflight, u32, struct open_args, 10240);
BPF_PERCPU_ARRAY(drops, u64, 1);

/* A matching event that could not be remembered: group counter + this source's. */
static __always_inline void count_drop(void)
{
    rt_pcpu_count_drop();
    drops.increment(0);
}

TRACEPOINT_PROBE(syscalls, sys_enter_openat)
{
    u64 id = bpf_get_current_pid_tgid();
    if (trace_skip_current(id >> 32))
        return 0;
    u32 tid = (u32)id;
    struct open_args a = {};
    a.filename = (u64)args->filename;
    a.flags = args->flags;
    if (inflight.update(&tid, &a)) {  /* map full: this call's event is lost */
#ifndef TRACE_FILTER_FAILED
        count_drop();
#endif  /* with -x: counted at exit if the call fails */
    }
    return 0;
}

TRACEPOINT_PROBE(syscalls, sys_exit_openat)
{
    u64 id = bpf_get_current_pid_tgid();
    u32 tid = (u32)id;
    struct open_args *a = inflight.lookup(&tid);
#ifdef TRACE_FILTER_FAILED
    if (args->ret >= 0) {  /* succeeded: not an event under -x */
        if (a)
            inflight.delete(&tid);
        return 0;
    }
    if (!a) {  /* failed, not remembered: a drop if the filters accept the task */
        if (!trace_skip_current(id >> 32))
            count_drop();
        return 0;
    }
#else
    if (!a)
        return 0;
#endif
    struct trace_event *e = rt_pcpu_reserve(sizeof(*e));
    if (!e) {
        drops.increment(0);
        inflight.delete(&tid);
        return 0;
    }
    trace_fill_hdr(&e->h, TRACE_OPEN);
    e->value = a->flags;
    e->ppid = 0;
    e->ret = args->ret;
    e->aux = 0;
    e->aux2 = 0;
    bpf_probe_read_user_str(e->data, sizeof(e->data), (void *)a->filename);
    inflight.delete(&tid);
    rt_pcpu_submit(e, sizeof(*e));
    return 0;
}
