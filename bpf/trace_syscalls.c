/* ringtool trace source `syscalls`: raw_syscalls sys_enter/sys_exit.
 *
 * Attached as raw tracepoints (BPF_PROG_TYPE_RAW_TRACEPOINT, ctx->args[] are the
 * tracepoint's arguments: regs and the syscall number / return value): the kernel
 * calls the program directly, without the perf record a classic tracepoint program
 * is handed (include/trace/perf.h builds it for every event: about half of what an
 * empty program costs each syscall here).
 *
 * Per thread, `started` keeps the entry time and number of the syscall in progress,
 * updated in place: in the array `started_tid` indexed by tid where the task's fields
 * are read through its BTF (SYS_BY_TID below), for the tids it has slots for. Where
 * the kernel has per-task storage for tracing programs (beyond the array's tids, or
 * without it) (TRACE_HAVE_TASK_STORAGE, ringtool/programs/kernel_features.py) it is a
 * BPF_MAP_TYPE_TASK_STORAGE found from the current task (no hash of the tid, no
 * delete: the kernel frees it with the task); elsewhere a plain hash keyed by tid
 * (entries reused, not deleted on the hot path; deleted when the thread exits; an LRU
 * one costs ~0.1 µs more per syscall). Aggregated in the kernel, read by ringtool per
 * interval:
 *   sys_lat   ARRAY (mmapable) index nr * TRACE_LAT_FAST_BUCKETS + bucket -> count,
 *             for nr < TRACE_LAT_NRS and bucket < TRACE_LAT_FAST_BUCKETS (latencies
 *             below about a minute): the array lookup is inlined by the verifier (no
 *             hash of the key on every syscall), and ringtool reads the counts from
 *             its mapping without a syscall. bucket = lat_bucket(latency ns):
 *             log-linear, each power of two split into 2^TRACE_LAT_SUB_BITS linear
 *             sub-buckets (HdrHistogram's layout; the math and its error bound:
 *             ringtool/trace/reading/latency_buckets.py)
 *   sys_hist  HASH  key (nr << TRACE_LAT_KEY_BITS | bucket) -> count: the rest (longer
 *             latencies, numbers beyond TRACE_LAT_NRS); ringtool adds both
 *   proc_hist LRU_HASH key (tgid << 32 | nr << TRACE_LAT_KEY_BITS | bucket) -> count,
 *             every process's from the start of the trace (the dashboard's
 *             drill-down, also into a process that already exited): bounded by
 *             TRACE_PROC_HIST_MAX keys, the least recently counted forgotten first
 *             (kernel/bpf/bpf_lru_list.c), so the busiest processes' buckets stay.
 *             Only with TRACE_PROC_HIST=1 (the dashboard): one more hash lookup per
 *             syscall (35-60 ns more of sys_exit's run time, docs/trace.md); read by
 *             user space only while a drill-down is open.
 * plus one struct trace_event (bpf/trace_event.h, type TRACE_SYSCALL) per syscall
 * slower than TRACE_SLOW_NS, reserved in this CPU's ring of the per-CPU group.
 * The -p/-c filters run at sys_enter, before `started` is touched: sys_exit finds an
 * entry only for accepted threads, so a rejected syscall reserves nothing.
 * Failed reservations are counted per CPU (group counter + this source's `drops`);
 * a latency a full sys_hist has no bucket for, in `hist_lost` (ringtool says so).
 * cflags: RingBufGroup.cflags(), TRACE_SLOW_NS, TRACE_* filters and sizes.
 */
#include "percpu_ringbuf.h"
#include "trace_event.h"
#include "trace_lat.h"

#ifndef TRACE_HAVE_TASK_STORAGE
#error "trace_syscalls.c: compile with ringtool's kernel feature cflags (programs/kernel_features.py)"
#endif

/* The slow-call threshold: the config map's (trace_event.h), else 100 ms. */
#ifdef TRACE_CONFIG_FD
#define TRACE_SLOW_NS trace_cfg(TRACE_CFG_SLOW_NS)
#elif !defined(TRACE_SLOW_NS)
#define TRACE_SLOW_NS 100000000ULL
#endif

#ifndef TRACE_LAT_NRS
#define TRACE_LAT_NRS 512
#endif
#ifndef TRACE_PROC_HIST
#define TRACE_PROC_HIST 0
#endif
#ifndef TRACE_PROC_HIST_MAX
#if TRACE_PROC_HIST
#define TRACE_PROC_HIST_MAX 65536
#else
#define TRACE_PROC_HIST_MAX 1  /* not counted: no memory for it */
#endif
#endif
#ifndef TRACE_LAT_FAST_BUCKETS
#define TRACE_LAT_FAST_BUCKETS 1024
#endif

#ifndef TRACE_TID_SLOTS
#define TRACE_TID_SLOTS 0
#endif

/* The per-tid array (SYS_BY_TID): where the task's fields are read through its BTF
 * (its tid and start time) and ringtool gave the slots (TRACE_TID_SLOTS: the kernel's
 * pid_max, bounded; ringtool/trace/reading/cflags.py). */
#if TRACE_TID_SLOTS > 0 && TRACE_HAVE_TASK_STORAGE && defined(TRACE_TASK_PID_OFF) && \
    defined(TRACE_TASK_TGID_OFF) && defined(TRACE_TASK_START_TIME_OFF)
#define SYS_BY_TID 1
#else
#define SYS_BY_TID 0
#endif

/* A thread's syscall in progress. `task` and `start` (SYS_BY_TID): whose it is, the
 * task's address and start time, which no other task has together: a slot keyed by
 * tid outlives its thread (a thread that ends in exit(2) never reaches sys_exit; a
 * thread that execs in a multithreaded process takes the leader's tid, de_thread in
 * fs/exec.c), and a later thread with that tid must not take it for its own. */
struct sys_start {
    u64 ts;
    u64 nr;
    u64 task;
    u64 start;
};

#if SYS_BY_TID
/* Indexed by tid, for tids below TRACE_TID_SLOTS: the verifier inlines an array
 * lookup (a few instructions), where bpf_task_storage_get is a helper call that takes
 * the storage's lock (kernel/bpf/bpf_task_storage.c): two of those a syscall were a
 * sixth of what the default sources cost (docs/benchmarks.md). */
BPF_ARRAY(started_tid, struct sys_start, TRACE_TID_SLOTS);
#endif
#if TRACE_HAVE_TASK_STORAGE
/* per-task storage (kernel 5.13+ for tracing programs): found from the task itself, no
 * hash of the tid, freed with the task (kernel/bpf/bpf_task_storage.c); with
 * SYS_BY_TID, for the tids beyond the array only */
BPF_TASK_STORAGE(started, struct sys_start);
#else
BPF_HASH(started, u32, struct sys_start, 16384);
#endif

#if SYS_BY_TID
/* The current task's (`task`, tid `tid`) slot, or NULL; `create`: make its task
 * storage where its tid has no slot in the array. */
static __always_inline struct sys_start *sys_slot(void *task, u32 tid, int create)
{
    if (tid < TRACE_TID_SLOTS)
        return started_tid.lookup(&tid);
    return started.task_storage_get(task, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}
#endif
BPF_F_TABLE("array", u32, u64, sys_lat, TRACE_LAT_NRS * TRACE_LAT_FAST_BUCKETS,
            BPF_F_MMAPABLE);
BPF_HASH(sys_hist, u64, u64, 65536);  /* ~100 buckets a syscall in use */
BPF_PERCPU_ARRAY(hist_lost, u64, 1);  /* latencies a full sys_hist could not count */
BPF_PERCPU_ARRAY(drops, u64, 1);
BPF_TABLE("lru_hash", u64, u64, proc_hist, TRACE_PROC_HIST_MAX);

RAW_TRACEPOINT_PROBE(sys_enter)  /* args: (struct pt_regs *regs, long id) */
{
#if SYS_BY_TID
    void *task = TRACE_CURRENT_TASK();  /* once: the filters, the tid, the slot */
    if (trace_skip_current_of(TRACE_BTF_U32(task, TRACE_TASK_TGID_OFF), task))
        return 0;  /* sys_exit only sees threads started here */
    struct sys_start *cur = sys_slot(task, TRACE_BTF_U32(task, TRACE_TASK_PID_OFF), 1);
    if (cur) {  /* NULL: no memory for this task's storage; its exit finds none */
        cur->ts = bpf_ktime_get_ns();
        cur->nr = ctx->args[1];
        cur->task = (u64)task;
        cur->start = TRACE_BTF_U64(task, TRACE_TASK_START_TIME_OFF);
    }
#elif TRACE_HAVE_TASK_STORAGE
    void *task = TRACE_CURRENT_TASK();  /* once: for the filters and the storage */
    if (trace_skip_current_of(TRACE_PID_TGID_OF(task) >> 32, task))  /* sys_exit only sees threads started here */
        return 0;
    struct sys_start *cur = started.task_storage_get(task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (cur) {  /* NULL: no memory for this task's entry; its exit finds none */
        cur->ts = bpf_ktime_get_ns();
        cur->nr = ctx->args[1];
    }
#else
    u64 id = bpf_get_current_pid_tgid();
    if (trace_skip_current(id >> 32))
        return 0;
    u32 tid = (u32)id;
    struct sys_start *cur = started.lookup(&tid);
    if (cur) {  /* in place: no element churn on the hot path */
        cur->ts = bpf_ktime_get_ns();
        cur->nr = ctx->args[1];
    } else {
        struct sys_start s = {};
        s.ts = bpf_ktime_get_ns();
        s.nr = ctx->args[1];
        started.update(&tid, &s);
    }
#endif
    return 0;
}

#if !TRACE_HAVE_TASK_STORAGE  /* task storage is freed with its task */
TRACEPOINT_PROBE(sched, sched_process_exit)
{
    u32 tid = (u32)bpf_get_current_pid_tgid();
    started.delete(&tid);
    return 0;
}
#endif

RAW_TRACEPOINT_PROBE(sys_exit)  /* args: (struct pt_regs *regs, long ret) */
{
#if SYS_BY_TID
    void *task = TRACE_CURRENT_TASK();
    struct sys_start *s = sys_slot(task, TRACE_BTF_U32(task, TRACE_TASK_PID_OFF), 0);
    if (!s || !s->ts || s->task != (u64)task ||
        s->start != TRACE_BTF_U64(task, TRACE_TASK_START_TIME_OFF))
        return 0;  /* none, or another task's that had this tid */
#else
#if TRACE_HAVE_TASK_STORAGE
    struct sys_start *s = started.task_storage_get(bpf_get_current_task_btf(), 0, 0);
#else
    u32 tid = (u32)bpf_get_current_pid_tgid();
    struct sys_start *s = started.lookup(&tid);
#endif
    if (!s || !s->ts)
        return 0;
#endif
    u64 lat = bpf_ktime_get_ns() - s->ts;
    u64 nr = s->nr;
    s->ts = 0;  /* consumed; the entry stays for the thread's next syscall */
    u64 bucket = lat_bucket(lat);
    u64 key = (nr << TRACE_LAT_KEY_BITS) | bucket;
    u64 *n;
    if (nr < TRACE_LAT_NRS && bucket < TRACE_LAT_FAST_BUCKETS) {
        u32 idx = nr * TRACE_LAT_FAST_BUCKETS + bucket;
        n = sys_lat.lookup(&idx);
        if (n)
            __sync_fetch_and_add(n, 1);
    } else if ((n = sys_hist.lookup(&key))) {
        __sync_fetch_and_add(n, 1);
    } else {
        u64 one = 1;
        if (sys_hist.insert(&key, &one)) {  /* another CPU was first, or the map is full */
            n = sys_hist.lookup(&key);
            if (n)
                __sync_fetch_and_add(n, 1);
            else
                hist_lost.increment(0);
        }
    }
#if TRACE_PROC_HIST
    u64 pkey = (bpf_get_current_pid_tgid() & 0xffffffff00000000ULL) | (key & 0xffffffffULL);
    if ((n = proc_hist.lookup(&pkey))) {
        __sync_fetch_and_add(n, 1);
    } else {
        u64 one = 1;
        if (proc_hist.insert(&pkey, &one) && (n = proc_hist.lookup(&pkey)))
            __sync_fetch_and_add(n, 1);  /* another CPU inserted it first */
    }
#endif
    if (lat < TRACE_SLOW_NS)
        return 0;
    struct trace_event *e = rt_pcpu_reserve(sizeof(*e));
    if (!e) {
        drops.increment(0);
        return 0;
    }
    trace_fill_hdr(&e->h, TRACE_SYSCALL);
    trace_fill_ids(e);
    e->call = 0;
    e->mode = 0;
    e->value = lat;
    e->ppid = 0;
    e->ret = (long)ctx->args[1];
    e->aux = nr;
    e->aux2 = 0;
    e->data_len = 0;
    e->pad = 0;
    e->data[0] = 0;
    RT_PCPU_SUBMIT(ctx, e, sizeof(*e));  /* raw tracepoint: its ctx */
    return 0;
}
