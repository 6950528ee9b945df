/* `ringtool bench export`: a load generator that writes trace records.
 *
 * trace_bench_emit is a SCHED_CLS program run by BPF_PROG_TEST_RUN (N runs per call,
 * in the kernel, ~50 ns each): every run reserves one struct trace_event
 * (bpf/trace_event.h: the records `ringtool trace` exports) in this CPU's ring of the
 * per-CPU RINGBUF group and submits it: type TRACE_OPEN, ts = bpf_ktime_get_ns(), the
 * calling task's pid/comm, a fixed path. A failed reservation is counted by the group
 * (rt_pcpu_reserve). cflags: RingBufGroup.cflags() and the trace sizes.
 */
#include "percpu_ringbuf.h"
#define TRACE_HDR_NO_CGROUP  /* cgroup 0: no task cgroup helper for SCHED_CLS on 6.1 */
#include "trace_event.h"

int trace_bench_emit(struct __sk_buff *skb)
{
    struct trace_event *e = rt_pcpu_reserve(sizeof(*e));
    if (!e)
        return 0;
    trace_fill_hdr(&e->h, TRACE_OPEN);
    e->value = 0;
    e->ppid = 0;
    e->ret = 3;
    e->aux = 0;
    e->aux2 = 0;
    e->uid = 0;  /* no task helpers in SCHED_CLS */
    e->gid = 0;
    e->call = TRACE_CALL_OPENAT;
    e->mode = 0;
    e->data_len = 24;  /* the path below */
    e->pad = 0;
    __builtin_memset(e->data, 0, sizeof(e->data));
    __builtin_memcpy(e->data, "/var/lib/bench/events.db", 25);
    rt_pcpu_submit(e, sizeof(*e));
    return 0;
}
