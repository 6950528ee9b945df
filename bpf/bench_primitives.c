/* `ringtool bench primitives`: what each building block of a trace program costs on
 * this machine.
 *
 * Every function below is one program for syscalls:sys_enter_openat that does one
 * thing (prim_empty nothing); ringtool/bench/primitives.py attaches them one at a
 * time while a producer opens /dev/null in a loop and reads each one's run time from
 * the kernel's BPF statistics (run_time_ns / run_cnt). The difference to prim_empty is
 * what the block adds to every event. The blocks are the ones bpf/trace_open.c and
 * bpf/trace_syscalls.c are made of: a helper call, the current task's BTF pointer, the
 * clock, per-task storage, a hash keyed by tid, an inlined array update, reading the
 * path from user memory, a ring buffer reservation and submit, the comm helper.
 *
 * ctx: the record of the syscall's enter tracepoint (struct syscall_trace_enter in
 * kernel/trace/trace.h: the common header, the number, then one unsigned long per
 * argument); its `filename` field's offset, read from tracefs, comes as
 * -DPRIM_FILENAME_OFF (ringtool/bench/primitives.py). PRIM_HAVE_TASK_STORAGE (1 or 0:
 * kernel BTF and per-task storage for tracing programs,
 * ringtool/programs/kernel_features.py) says whether prim_task_btf and
 * prim_task_storage exist. prim_ringbuf counts the reservations that failed in
 * `reserve_failed` (per CPU), so runs = records read + failed, exactly.
 */
#include "trace_event.h"

#if !defined(PRIM_FILENAME_OFF) || !defined(PRIM_HAVE_TASK_STORAGE)
#error "bench_primitives.c: compile with -DPRIM_FILENAME_OFF and -DPRIM_HAVE_TASK_STORAGE"
#endif

struct path_buf {
    char d[TRACE_DATA_LEN];
};

#if PRIM_HAVE_TASK_STORAGE
BPF_TASK_STORAGE(task_vals, u64);
#endif
BPF_HASH(tid_vals, u32, u64, 10240);
BPF_ARRAY(counter, u64, 1);
BPF_PERCPU_ARRAY(path, struct path_buf, 1);
BPF_RINGBUF_OUTPUT(records, 1024);  /* 4 MiB, drained by the bench */
BPF_PERCPU_ARRAY(reserve_failed, u64, 1);

/* A use of `v` the compiler cannot drop: the result decides the return value. */
#define PRIM_KEEP(v) return (v) == 0x5eed ? 1 : 0

int prim_empty(void *ctx)
{
    return 0;
}

int prim_helper(void *ctx)
{
    PRIM_KEEP(bpf_get_current_pid_tgid());
}

int prim_ktime(void *ctx)
{
    PRIM_KEEP(bpf_ktime_get_ns());
}

#if PRIM_HAVE_TASK_STORAGE
int prim_task_btf(void *ctx)
{
    PRIM_KEEP((u64)bpf_get_current_task_btf());
}

int prim_task_storage(void *ctx)
{
    u64 *v = task_vals.task_storage_get(bpf_get_current_task_btf(), 0,
                                        BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (v)
        *v += 1;
    return 0;
}
#endif

int prim_hash_tid(void *ctx)
{
    u32 tid = (u32)bpf_get_current_pid_tgid();
    u64 *v = tid_vals.lookup(&tid);
    if (v) {
        *v += 1;
    } else {
        u64 one = 1;
        tid_vals.update(&tid, &one);
    }
    return 0;
}

int prim_array(void *ctx)
{
    u32 zero = 0;
    u64 *v = counter.lookup(&zero);
    if (v)
        __sync_fetch_and_add(v, 1);
    return 0;
}

int prim_user_str(void *ctx)
{
    u32 zero = 0;
    struct path_buf *b = path.lookup(&zero);
    if (!b)
        return 0;
    const char *filename = *(const char **)((char *)ctx + PRIM_FILENAME_OFF);
    PRIM_KEEP(bpf_probe_read_user_str(b->d, sizeof(b->d), filename));
}

int prim_ringbuf(void *ctx)
{
    struct trace_event *e = records.ringbuf_reserve(sizeof(struct trace_event));
    if (!e) {
        reserve_failed.increment(0);
        return 0;
    }
    e->h.type = 0;
    records.ringbuf_submit(e, BPF_RB_NO_WAKEUP);
    return 0;
}

int prim_comm_helper(void *ctx)
{
    u64 words[2] = {};
    bpf_get_current_comm(words, sizeof(words));
    PRIM_KEEP(words[0]);
}
