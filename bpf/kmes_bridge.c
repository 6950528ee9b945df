/* ringtool bridge: process exec/exit events for the KMES bridge.
 *
 * Every record starts with `u32 cpu, u32 event_type` (ringtool/kmes/events.py
 * BRIDGE_PREFIX): the bridge strips the prefix and writes the rest into the KMES
 * buffer of that CPU.
 *   sched:sched_process_exec -> kmes_events (BPF_MAP_TYPE_RINGBUF, origin_class 1)
 *   sched:sched_process_exit -> kmes_perf   (PERF_EVENT_ARRAY, origin_class 2)
 *   kmes_bench_emit (SCHED_CLS, with -DKMES_BENCH=1): one 64-byte-payload record into
 *   kmes_events per BPF_PROG_TEST_RUN repetition (`ringtool bench kmes`).
 * cflags: -DRINGTOOL_RING_PAGES=N, -DKMES_WANT_EXEC=0/1, -DKMES_WANT_EXIT=0/1,
 * -DKMES_BENCH=0/1.
 * Strings go into struct fields, never bare local char[] (BCC 0.26 + clang 14 crash).
 * Only helpers and tracepoint fields are read (tracefs formats, parsed at load time):
 * no task_struct offsets, which kernel headers of another version would get wrong.
 */
#include "ringtool_ringbuf.h"

#ifndef KMES_WANT_EXEC
#define KMES_WANT_EXEC 1
#endif
#ifndef KMES_WANT_EXIT
#define KMES_WANT_EXIT 1
#endif

#ifndef KMES_BENCH
#define KMES_BENCH 0
#endif

#define KMES_EVENT_EXEC 1
#define KMES_EVENT_EXIT 2
#define KMES_EVENT_BENCH 4

struct exec_event {
    u32 cpu;
    u32 type;
    u32 pid;
    u32 tgid;
    u32 old_pid;
    u32 uid;
    char comm[16];
    char filename[128];
};

struct exit_event {
    u32 cpu;
    u32 type;
    u32 pid;
    u32 tgid;
    s32 prio;
    u32 uid;
    char comm[16];
};

RINGTOOL_RINGBUF(kmes_events, RINGTOOL_RING_PAGES);
BPF_PERF_OUTPUT(kmes_perf);
BPF_PERCPU_ARRAY(exit_scratch, struct exit_event, 1);

#if KMES_WANT_EXEC
TRACEPOINT_PROBE(sched, sched_process_exec)
{
    struct exec_event *e = kmes_events.ringbuf_reserve(sizeof(struct exec_event));
    if (!e) {
        kmes_events_drops.increment(0);
        return 0;
    }
    u64 id = bpf_get_current_pid_tgid();
    e->cpu = bpf_get_smp_processor_id();
    e->type = KMES_EVENT_EXEC;
    e->pid = (u32)id;
    e->tgid = id >> 32;
    e->old_pid = args->old_pid;
    e->uid = (u32)bpf_get_current_uid_gid();
    __builtin_memset(&e->comm, 0, sizeof(e->comm));  /* 6.1's helper does not pad */
    bpf_get_current_comm(&e->comm, sizeof(e->comm));
    unsigned short off = args->data_loc_filename & 0xFFFF;
    bpf_probe_read_kernel_str(&e->filename, sizeof(e->filename), (void *)args + off);
    kmes_events.ringbuf_submit(e, 0);
    return 0;
}
#endif

#if KMES_WANT_EXIT
TRACEPOINT_PROBE(sched, sched_process_exit)
{
    int zero = 0;
    struct exit_event *e = exit_scratch.lookup(&zero);
    if (!e)
        return 0;
    u64 id = bpf_get_current_pid_tgid();
    if ((u32)id != (u32)(id >> 32))
        return 0;  /* threads: report the process (thread group leader) only */
    e->cpu = bpf_get_smp_processor_id();
    e->type = KMES_EVENT_EXIT;
    e->pid = (u32)id;
    e->tgid = id >> 32;
    e->prio = args->prio;
    e->uid = (u32)bpf_get_current_uid_gid();
    __builtin_memset(&e->comm, 0, sizeof(e->comm));  /* 6.1's helper does not pad */
    bpf_get_current_comm(&e->comm, sizeof(e->comm));
    kmes_perf.perf_submit(args, e, sizeof(struct exit_event));
    return 0;
}
#endif

#if KMES_BENCH
struct bench_event {
    u32 cpu;
    u32 type;
    u64 seq;
    u64 ktime;
    u8 fill[48];
};

BPF_ARRAY(bench_seq, u64, 1);

int kmes_bench_emit(struct __sk_buff *skb)
{
    int zero = 0;
    u64 *seq = bench_seq.lookup(&zero);
    struct bench_event *e = kmes_events.ringbuf_reserve(sizeof(struct bench_event));
    if (!e) {
        kmes_events_drops.increment(0);
        return 0;
    }
    e->cpu = bpf_get_smp_processor_id();
    e->type = KMES_EVENT_BENCH;
    e->seq = seq ? __sync_fetch_and_add(seq, 1) + 1 : 0;
    e->ktime = bpf_ktime_get_ns();
    __builtin_memset(e->fill, 0x42, sizeof(e->fill));
    kmes_events.ringbuf_submit(e, 0);
    return 0;
}
#endif
