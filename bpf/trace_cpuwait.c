/* ringtool trace source `cpuwait`: run-queue latency (CPU wait) per process.
 *
 * How long a runnable thread waits for a CPU: from the moment it is put on a run
 * queue to the moment it runs. Measured as runqlat, of the libbpf-tools of the BCC
 * project, measures it: a thread's enqueue time is taken when it is woken
 * (sched:sched_wakeup, sched:sched_wakeup_new: a new task's first wakeup) and when
 * it leaves a CPU still runnable (sched:sched_switch with the outgoing task's
 * __state == TASK_RUNNING: it yielded or was preempted, and stays queued); at
 * sched_switch the incoming task's wait is now minus its enqueue time, and the entry
 * is deleted.
 *
 * One difference from runqlat, where the kernel differs from its rule: a task
 * preempted on its way to sleep (its __state set, schedule() not yet called: in a
 * futex or pipe wait) also stays queued (kernel/sched/core.c, __schedule: only a
 * switch that is no preemption dequeues a task whose state is set), and waits from
 * the switch: counted here from it (sched_switch's `preempt` argument; the wakeup
 * that comes while it is queued does not restart it), where runqlat starts it at
 * that wakeup, if one comes, or misses it. Such a wait's event says so (`blocking`,
 * aux = 1). With this rule the waits add up to the scheduler's own account of them
 * (run_delay, /proc/PID/task/TID/schedstat).
 *
 * Raw tracepoints (BPF_PROG_TYPE_RAW_TRACEPOINT): the kernel calls the program with
 * the tracepoints' arguments, task_struct pointers (sched_wakeup(p), sched_switch(
 * preempt, prev, next, ...)), and builds no perf record. Their arguments are the same
 * on every supported kernel (what changes between kernels is the classic records'
 * fields: sched_switch's prev_state became a plain copy of the state, its width
 * changed); the task's members are read by address at the offsets of the running
 * kernel's BTF, given as -D constants (the cpuwait entry's needs in
 * ringtool/event/registry.py): task_struct.pid, tgid, __state (an unsigned int from
 * 5.14 on, `long state` before), group_leader and comm.
 *
 * Kept in the kernel, read by ringtool each interval (never an event per switch):
 *   proc_wait  LRU_HASH tgid -> struct cpuwait_hist: the process's waits in log2
 *              slots of microseconds (bpf_log2l(wait_us): slot s >= 1 holds
 *              [2^(s-1), 2^s) us, slot 0 waits under 1 us; runqlat's slots), their
 *              sum in ns, and its group leader's comm (taken when the
 *              entry is made). TRACE_CPUWAIT_PROCS entries: when full, the process
 *              that waited least recently is forgotten (the busiest are kept).
 *   all_wait   PERCPU_ARRAY[1] of struct cpuwait_hist: every wait of the machine
 *              (ringtool adds the CPUs'), filters applied.
 *   start      HASH tid -> enqueue ns (runqlat's `start`); an enqueue that finds
 *              it full is counted in `lost` (that wait is not measured).
 * plus one struct trace_event (type TRACE_CPUWAIT) per wait of --slow-ms or more (the
 * config map's TRACE_CFG_SLOW_NS)
 * (`--slow-ms`), its header the waiting task's (pid, tid, comm; uid, gid and cgroup
 * v2 id read from it by address), reserved in this CPU's ring of the per-CPU group; a
 * full ring counts in `drops` (and the group's counter).
 *
 * Filters: -p, -t, -c and -u select the waiting task (its tgid, tid, comm, real
 * uid) when it is enqueued, as runqlat's -p; ringtool's own threads are left out.
 * --cgroup is refused with this source (ringtool/cli/trace.py).
 * cflags: RingBufGroup.cflags(), TRACE_CONFIG_FD, which filters are on
 * (TRACE_FILTER_PID/TID/COMM/UID=1; their values and --slow-ms in the config map,
 * bpf/trace_event.h trace_cfg), the offsets above.
 */
#include "percpu_ringbuf.h"
#include "trace_event.h"

#if !defined(TRACE_CPUWAIT_PID_OFF) || !defined(TRACE_CPUWAIT_TGID_OFF) || \
    !defined(TRACE_CPUWAIT_STATE_OFF) || !defined(TRACE_CPUWAIT_LEADER_OFF) || \
    !defined(TRACE_CPUWAIT_COMM_OFF)
#error "trace_cpuwait.c: the kernel's BTF (/sys/kernel/btf/vmlinux) shows no task_struct.pid, tgid, __state, group_leader or comm"
#endif

#ifndef TRACE_CPUWAIT_SLOTS
#define TRACE_CPUWAIT_SLOTS 32
#endif
#ifndef TRACE_CPUWAIT_PROCS
#define TRACE_CPUWAIT_PROCS 4096
#endif
#ifndef TRACE_CPUWAIT_THREADS
#define TRACE_CPUWAIT_THREADS 65536
#endif
#define CPUWAIT_TASK_RUNNING 0

/* One histogram: ringtool/trace/reading/cpuwait_maps.py reads it. */
struct cpuwait_hist {
    u64 slots[TRACE_CPUWAIT_SLOTS];  /* log2 slots of the wait in us */
    u64 total_ns;                    /* the waits' sum (their number: the slots') */
    char comm[TRACE_COMM_LEN];       /* proc_wait: the group leader's, at creation */
};

/* When a waiting thread was put on a run queue; `blocking`: it was preempted while
 * on its way to sleep (see the top). */
struct cpuwait_start {
    u64 ts;
    u64 blocking;
};

BPF_HASH(start, u32, struct cpuwait_start, TRACE_CPUWAIT_THREADS);
BPF_TABLE("lru_hash", u32, struct cpuwait_hist, proc_wait, TRACE_CPUWAIT_PROCS);
BPF_PERCPU_ARRAY(all_wait, struct cpuwait_hist, 1);
BPF_PERCPU_ARRAY(drops, u64, 1);
BPF_PERCPU_ARRAY(lost, u64, 1);

static __always_inline u32 task_u32(u64 task, int off)
{
    u32 v = 0;
    bpf_probe_read_kernel(&v, sizeof(v), (const char *)task + off);
    return v;
}

/* Remember when thread `tid` of process `tgid` was put on a run queue. */
static __always_inline int enqueue(u32 tgid, u32 tid, u64 blocking)
{
    if (!tid)  /* the idle task */
        return 0;
    if (trace_skip_pid(tgid))  /* ringtool itself, -p */
        return 0;
#ifdef TRACE_FILTER_TID
    if (tid != trace_cfg(TRACE_CFG_TID))
        return 0;
#endif
    if (!blocking) {
        struct cpuwait_start *queued = start.lookup(&tid);
        if (queued && queued->blocking)
            return 0;  /* woken while still queued since its preemption: waits since then */
    }
    struct cpuwait_start s = {};
    s.ts = bpf_ktime_get_ns();
    s.blocking = blocking;
    if (start.update(&tid, &s))
        lost.increment(0);
    return 0;
}

/* 1 when -c or -u leave the task at `task` out (compiled in only when given). */
static __always_inline int skip_task(u64 task)
{
#ifdef TRACE_FILTER_COMM
    u64 words[2] = {};
    bpf_probe_read_kernel(words, sizeof(words), (const char *)task + TRACE_CPUWAIT_COMM_OFF);
    int ended = 0;
    words[0] = trace_upto_nul(words[0], &ended);
    words[1] = ended ? 0 : trace_upto_nul(words[1], &ended);
    if (words[0] != trace_cfg(TRACE_CFG_COMM_LO) || words[1] != trace_cfg(TRACE_CFG_COMM_HI))
        return 1;
#endif
#ifdef TRACE_FILTER_UID
    const char *cred = 0;
    u32 uid = 0;
    bpf_probe_read_kernel(&cred, sizeof(cred), (const char *)task + TRACE_CPUWAIT_CRED_OFF);
    bpf_probe_read_kernel(&uid, sizeof(uid), cred + TRACE_CPUWAIT_UID_OFF);
    if (uid != trace_cfg(TRACE_CFG_UID))
        return 1;
#endif
    return 0;
}

static __always_inline int enqueue_task(u64 task, u64 blocking)
{
    if (skip_task(task))
        return 0;
    return enqueue(task_u32(task, TRACE_CPUWAIT_TGID_OFF), task_u32(task, TRACE_CPUWAIT_PID_OFF),
                   blocking);
}

RAW_TRACEPOINT_PROBE(sched_wakeup)  /* args: (struct task_struct *p) */
{
    return enqueue_task(ctx->args[0], 0);
}

RAW_TRACEPOINT_PROBE(sched_wakeup_new)  /* args: (struct task_struct *p) */
{
    return enqueue_task(ctx->args[0], 0);
}

static __always_inline void add(struct cpuwait_hist *h, u64 slot, u64 wait_ns, int atomic)
{
    if (atomic) {
        __sync_fetch_and_add(&h->slots[slot], 1);
        __sync_fetch_and_add(&h->total_ns, wait_ns);
    } else {
        h->slots[slot] += 1;
        h->total_ns += wait_ns;
    }
}

/* The waiting task's record: a slow wait, its header the task's. */
static __always_inline void slow_event(void *ctx, u64 task, u32 tgid, u32 tid, u64 wait_ns,
                                       u64 blocking)
{
    struct trace_event *e = rt_pcpu_reserve(sizeof(*e));
    if (!e) {
        drops.increment(0);
        return;
    }
    const char *t = (const char *)task;
    e->h.ts = bpf_ktime_get_ns();
    e->h.type = TRACE_CPUWAIT;
    e->h.cpu = bpf_get_smp_processor_id();
    e->h.pid = tgid;
    e->h.tid = tid;
    __builtin_memset(e->h.comm, 0, sizeof(e->h.comm));
    bpf_probe_read_kernel_str(e->h.comm, sizeof(e->h.comm), t + TRACE_CPUWAIT_COMM_OFF);
    e->h.cgroup = 0;
#if defined(TRACE_CPUWAIT_CGROUPS_OFF) && defined(TRACE_CPUWAIT_DFL_CGRP_OFF) && \
    defined(TRACE_CPUWAIT_CGROUP_KN_OFF) && defined(TRACE_CPUWAIT_KN_ID_OFF)
    {  /* task->cgroups->dfl_cgrp->kn->id: bpf_get_current_cgroup_id's, of this task */
        const char *p = 0;
        bpf_probe_read_kernel(&p, sizeof(p), t + TRACE_CPUWAIT_CGROUPS_OFF);
        if (p)
            bpf_probe_read_kernel(&p, sizeof(p), p + TRACE_CPUWAIT_DFL_CGRP_OFF);
        if (p)
            bpf_probe_read_kernel(&p, sizeof(p), p + TRACE_CPUWAIT_CGROUP_KN_OFF);
        if (p)
            bpf_probe_read_kernel(&e->h.cgroup, sizeof(e->h.cgroup), p + TRACE_CPUWAIT_KN_ID_OFF);
    }
#endif
    e->uid = 0;
    e->gid = 0;
#if defined(TRACE_CPUWAIT_CRED_OFF) && defined(TRACE_CPUWAIT_UID_OFF) && \
    defined(TRACE_CPUWAIT_GID_OFF)
    const char *cred = 0;
    bpf_probe_read_kernel(&cred, sizeof(cred), t + TRACE_CPUWAIT_CRED_OFF);
    bpf_probe_read_kernel(&e->uid, sizeof(e->uid), cred + TRACE_CPUWAIT_UID_OFF);
    bpf_probe_read_kernel(&e->gid, sizeof(e->gid), cred + TRACE_CPUWAIT_GID_OFF);
#endif
    e->value = wait_ns;
    e->ppid = 0;
    e->ret = 0;
    e->aux = blocking;
    e->aux2 = 0;
    e->call = 0;
    e->mode = 0;
    e->data_len = 0;
    e->pad = 0;
    e->data[0] = 0;
    RT_PCPU_SUBMIT(ctx, e, sizeof(*e));  /* raw tracepoint: its ctx */
}

RAW_TRACEPOINT_PROBE(sched_switch)  /* args: (bool preempt, prev, next, ...) */
{
    u64 prev = ctx->args[1];
    u64 next = ctx->args[2];
    u32 state = task_u32(prev, TRACE_CPUWAIT_STATE_OFF);
    if ((state == CPUWAIT_TASK_RUNNING || (ctx->args[0] & 0xff)) && !skip_task(prev)) {
        /* still queued (running, or preempted): waits from now; prev is the current
         * task here, whose ids one helper call gives */
        u64 id = bpf_get_current_pid_tgid();
        enqueue(id >> 32, (u32)id, state != CPUWAIT_TASK_RUNNING);
    }
    u32 tid = task_u32(next, TRACE_CPUWAIT_PID_OFF);
    struct cpuwait_start *sp = start.lookup(&tid);
    if (!sp)
        return 0;
    u64 now = bpf_ktime_get_ns();
    u64 then = sp->ts;
    u64 blocking = sp->blocking;
    start.delete(&tid);
    if (now < then)
        return 0;
    u64 wait_ns = now - then;
    u64 slot = bpf_log2l(wait_ns / 1000);
    if (slot >= TRACE_CPUWAIT_SLOTS)
        slot = TRACE_CPUWAIT_SLOTS - 1;
    u32 zero = 0;
    struct cpuwait_hist *all = all_wait.lookup(&zero);
    if (all)
        add(all, slot, wait_ns, 0);  /* this CPU's: no other writer */
    u32 tgid = task_u32(next, TRACE_CPUWAIT_TGID_OFF);
    struct cpuwait_hist *h = proc_wait.lookup(&tgid);
    if (!h) {
        struct cpuwait_hist fresh = {};
        u64 leader = 0;
        bpf_probe_read_kernel(&leader, sizeof(leader), (const char *)next + TRACE_CPUWAIT_LEADER_OFF);
        if (leader)
            bpf_probe_read_kernel_str(fresh.comm, sizeof(fresh.comm),
                                      (const char *)leader + TRACE_CPUWAIT_COMM_OFF);
        proc_wait.insert(&tgid, &fresh);  /* another CPU may have been first */
        h = proc_wait.lookup(&tgid);
    }
    if (h)
        add(h, slot, wait_ns, 1);
    else
        lost.increment(0);
    if (wait_ns >= trace_cfg(TRACE_CFG_SLOW_NS))
        slow_event(ctx, next, tgid, tid, wait_ns, blocking);
    return 0;
}
