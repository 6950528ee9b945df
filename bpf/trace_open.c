/* ringtool trace source `open`: the open family's enter/exit -> RINGBUF.
 *
 * Where TRACE_OPEN_AT_EXIT (trace_event.h: the task's BTF on x86-64 or arm64), the
 * exit programs alone, the arguments read from the saved registers (see below);
 * elsewhere as follows.
 *
 * open(2), openat(2), openat2(2), creat(2) and open_by_handle_at(2): each call's
 * sys_enter_* applies the filters (trace_skip_current) and remembers, for an accepted
 * thread, which call it is (TRACE_CALL_*), the path pointer, flags and mode; the
 * matching sys_exit_* reserves a struct trace_event (bpf/trace_event.h) in this CPU's
 * ring only for a remembered call, fills path, flags, mode, call, uid/gid and result
 * and submits it. `inflight` is per-task storage where the kernel has it for tracing
 * programs (TRACE_HAVE_TASK_STORAGE, ringtool/programs/kernel_features.py: found
 * from the task, no hash, no delete; a zero `call` means nothing remembered), else a
 * hash keyed by tid (the entry deleted at exit). A rejected call touches neither the
 * map nor the ring (no reserve + discard: a discard wakes the reader). A failed reservation, or a call that could
 * not be remembered because `inflight` is full, is counted per CPU (group counter +
 * this source's `drops`).
 *
 * What each call gives (the arguments of its syscall tracepoint):
 *   open, openat  filename, flags, mode;
 *   openat2       filename and `struct open_how` (flags, mode), read at entry;
 *   creat         pathname, mode; flags are what the kernel opens it with
 *                 (O_CREAT|O_WRONLY|O_TRUNC, fs/open.c), from the kernel's headers;
 *   open_by_handle_at  flags only: no path (data is ""), mode 0.
 * openat is always traced; the others only where the running kernel has their
 * tracepoints (open and creat do not exist on arm64, openat2 came in 5.6): ringtool
 * reads tracefs and passes TRACE_HAVE_OPEN, _CREAT, _OPENAT2, _OPEN_BY_HANDLE_AT
 * (ringtool/programs/tp_presence.py).
 *
 * TRACE_FILTER_FAILED (-x, like opensnoop's): only calls that failed (ret < 0) are
 * events. Whether a call fails is known at exit only, so entry remembers every
 * accepted call as before, and exit drops a successful one without reserving. A call
 * that could not be remembered is then counted as a drop at exit, once its result
 * says it was a matching event (the filters are the task's and do not change during
 * an open, so exit can ask them again): a successful call is never a drop.
 * cflags: RingBufGroup.cflags(), TRACE_* filters and sizes (see trace_event.h),
 * TRACE_HAVE_* (tp_presence.py).
 */
#include <linux/fcntl.h>
/* struct pt_regs alone: <linux/ptrace.h> pulls in pid_namespace.h and fs.h, whose
 * static_asserts and ns_common fields BCC's clang rejects with Linux 7.2's headers. */
#include <asm/ptrace.h>
#include "percpu_ringbuf.h"
#include "trace_event.h"

#ifndef TRACE_HAVE_TASK_STORAGE
#error "trace_open.c: compile with ringtool's kernel feature cflags (programs/kernel_features.py)"
#endif

#ifndef TRACE_HAVE_OPEN
#error "trace_open.c: compile with ringtool's tracepoint presence cflags (programs/tp_presence.py)"
#endif

/* An open event's fields after its header and ids: the call `call` that returned
 * `ret`, with `flags`, `mode` and its path read from `filename` (a user pointer, 0:
 * none) with the path's length (trace_event.h's data_len). */
static __always_inline void open_fill(struct trace_event *e, long ret, u32 call,
                                      u64 filename, u64 flags, u32 mode)
{
    e->value = flags;
    e->ppid = 0;
    e->ret = ret;
    e->aux = 0;
    e->aux2 = 0;
    e->call = call;
    e->mode = mode;
    e->pad = 0;
    long n = 0;  /* the path's bytes and its NUL (an error: the helper zeroed data) */
    if (filename)
        n = bpf_probe_read_user_str(e->data, sizeof(e->data), (void *)filename);
    trace_set_data_len(e, n);
}

#if TRACE_OPEN_AT_EXIT
/* At the exit alone (TRACE_OPEN_AT_EXIT, trace_event.h): no entry program, no
 * per-thread state. The call's arguments are read where the syscall left them: the
 * task's saved user registers (bpf_task_pt_regs; the kernel reads a syscall's
 * arguments from them and writes none of them back but the return value: x86-64's
 * di, si, dx, r10; arm64's x1..x3, whose x0 the return value overwrites, orig_x0 its
 * first argument). What an event holds is what the entry read: the same registers
 * the syscall tracepoints copy their arguments from (include/trace/events/syscalls.h,
 * syscall_get_arguments), the path read from user memory at the exit as before. The
 * filters run at the exit: a task's pid, comm, uid and cgroup are the entry's (an
 * open does not change them; only a move to another cgroup by another process in
 * the middle of an open would tell them apart). An open that was entered before the
 * trace began is an event too (its entry's program was not there to remember it).
 * Each exit costs the entry program's run and its tracepoint, one task storage lookup
 * (a helper call) less per open (docs/benchmarks.md). */
BPF_PERCPU_ARRAY(drops, u64, 1);

#if defined(__x86_64__)
#define OPEN_ARG1(r) TRACE_BTF_U64(r, offsetof(struct pt_regs, di))
#define OPEN_ARG2(r) TRACE_BTF_U64(r, offsetof(struct pt_regs, si))
#define OPEN_ARG3(r) TRACE_BTF_U64(r, offsetof(struct pt_regs, dx))
#define OPEN_ARG4(r) TRACE_BTF_U64(r, offsetof(struct pt_regs, r10))
#else  /* arm64 */
#define OPEN_ARG1(r) TRACE_BTF_U64(r, offsetof(struct pt_regs, orig_x0))
#define OPEN_ARG2(r) TRACE_BTF_U64(r, offsetof(struct pt_regs, regs[1]))
#define OPEN_ARG3(r) TRACE_BTF_U64(r, offsetof(struct pt_regs, regs[2]))
#define OPEN_ARG4(r) TRACE_BTF_U64(r, offsetof(struct pt_regs, regs[3]))
#endif

/* The event of an open-family call `call` of the current task (`task`) that returned
 * `ret`, with its `filename` (a user pointer, 0: none), `flags` and `mode`. */
static __always_inline int open_event(void *ctx, long ret, const void *task, u32 call,
                                      u64 filename, u64 flags, u32 mode)
{
    u64 id = TRACE_PID_TGID_OF(task);
    if (trace_skip_current_of(id >> 32, task))
        return 0;
    void *ring;
    struct trace_event *e = rt_pcpu_reserve_in(&ring, sizeof(*e));
    if (!e) {
        drops.increment(0);
        return 0;
    }
    trace_fill_hdr_task(&e->h, TRACE_OPEN, id, 1, task);  /* accepted just now */
    trace_fill_ids_of(e, task);
    open_fill(e, ret, call, filename, flags, mode);
    RT_PCPU_SUBMIT_TO(ctx, ring, e, sizeof(*e));
    return 0;
}

/* -x: a call that succeeded is not an event (before anything else is read). */
#ifdef TRACE_FILTER_FAILED
#define OPEN_WANTED(ret) ((ret) < 0)
#else
#define OPEN_WANTED(ret) 1
#endif

/* The exit program of open-family syscall `name`: the event of call `call`, whose
 * `path`, `flags` and `mode` are expressions of its saved registers `r`. */
#define OPEN_CALL(name, call, path, flags, mode)                                    \
    TRACEPOINT_PROBE(syscalls, sys_exit_##name)                                     \
    {                                                                               \
        long ret = args->ret;                                                       \
        if (!OPEN_WANTED(ret))                                                      \
            return 0;                                                               \
        void *task = TRACE_CURRENT_TASK();                                          \
        const void *r = (const void *)bpf_task_pt_regs((struct task_struct *)task); \
        return open_event(args, ret, task, call, path, flags, mode);                \
    }

OPEN_CALL(openat, TRACE_CALL_OPENAT, OPEN_ARG2(r), OPEN_ARG3(r), (u32)OPEN_ARG4(r))

#if TRACE_HAVE_OPEN
OPEN_CALL(open, TRACE_CALL_OPEN, OPEN_ARG1(r), OPEN_ARG2(r), (u32)OPEN_ARG3(r))
#endif

#if TRACE_HAVE_CREAT
OPEN_CALL(creat, TRACE_CALL_CREAT, OPEN_ARG1(r), O_CREAT | O_WRONLY | O_TRUNC, (u32)OPEN_ARG2(r))
#endif

#if TRACE_HAVE_OPEN_BY_HANDLE_AT
OPEN_CALL(open_by_handle_at, TRACE_CALL_OPEN_BY_HANDLE_AT, 0, OPEN_ARG3(r), 0)
#endif

#if TRACE_HAVE_OPENAT2
TRACEPOINT_PROBE(syscalls, sys_exit_openat2)
{
    long ret = args->ret;
    if (!OPEN_WANTED(ret))
        return 0;
    void *task = TRACE_CURRENT_TASK();
    const void *r = (const void *)bpf_task_pt_regs((struct task_struct *)task);
    u64 how[2] = {};  /* struct open_how's first members: flags, mode
                         (uapi/linux/openat2.h), from user memory as the entry read them */
    bpf_probe_read_user(how, sizeof(how), (const void *)OPEN_ARG3(r));
    return open_event(args, ret, task, TRACE_CALL_OPENAT2, OPEN_ARG2(r), how[0], (u32)how[1]);
}
#endif

#else  /* !TRACE_OPEN_AT_EXIT: entry and exit, the call remembered in between */

struct open_args {
    u64 filename;   /* user pointer (0: the call has no path) */
    u64 flags;
    u32 call;       /* TRACE_CALL_* */
    u32 mode;
};

#if TRACE_HAVE_TASK_STORAGE
/* per-task storage (kernel 5.13+ for tracing programs): found from the task, freed
 * with it; a call is remembered while `call` != 0 (kernel/bpf/bpf_task_storage.c) */
BPF_TASK_STORAGE(inflight, struct open_args);
#else
BPF_HASH(inflight, u32, struct open_args, 10240);
#endif
BPF_PERCPU_ARRAY(drops, u64, 1);

/* The remembered call of the current thread `tid` (`task`), or NULL. */
static __always_inline struct open_args *recalled(u32 tid, void *task)
{
#if TRACE_HAVE_TASK_STORAGE
    struct open_args *a = inflight.task_storage_get(task, 0, 0);
    return a && a->call ? a : 0;
#else
    return inflight.lookup(&tid);
#endif
}

/* Forget the remembered call `a` of the current thread `tid`. */
static __always_inline void forget(u32 tid, struct open_args *a)
{
#if TRACE_HAVE_TASK_STORAGE
    a->call = 0;  /* the entry stays for the thread's next call */
#else
    inflight.delete(&tid);
#endif
}

/* A matching event that could not be remembered: group counter + this source's. */
static __always_inline void count_drop(void)
{
    rt_pcpu_count_drop();
    drops.increment(0);
}

/* This thread's tid when the filters accept the current task (`task`:
 * TRACE_CURRENT_TASK()), else 0 (tid 0, the idle task, makes no syscalls). */
static __always_inline u32 accepted_tid(const void *task)
{
    u64 id = TRACE_PID_TGID_OF(task);
    if (trace_skip_current_of(id >> 32, task))
        return 0;
    return (u32)id;
}

/* Store the call of thread `tid` (`task`) in `inflight`; nonzero when it could not be
 * (no memory for the task's entry, or the hash full). */
static __always_inline int store_call(u32 tid, void *task, u32 call, const void *filename,
                                      u64 flags, u32 mode)
{
#if TRACE_HAVE_TASK_STORAGE
    struct open_args *a = inflight.task_storage_get(task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!a)
        return -1;
    a->filename = (u64)filename;
    a->flags = flags;
    a->call = call;
    a->mode = mode;
    return 0;
#else
    struct open_args a = {};
    a.filename = (u64)filename;
    a.flags = flags;
    a.call = call;
    a.mode = mode;
    return inflight.update(&tid, &a);
#endif
}

/* Remember the accepted call of thread `tid` (`task`) until its exit. */
static __always_inline int remember(u32 tid, void *task, u32 call, const void *filename,
                                    u64 flags, u32 mode)
{
    if (store_call(tid, task, call, filename, flags, mode)) {  /* this call's event is lost */
#ifndef TRACE_FILTER_FAILED
        count_drop();
#endif  /* with -x: counted at exit if the call fails */
    }
    return 0;
}

/* At any open-family exit: the event of the remembered call, with result `ret`. */
static __always_inline int open_exit(void *ctx, long ret)
{
    void *task = TRACE_CURRENT_TASK();  /* once: the storage and the header's fields */
    u64 id = TRACE_PID_TGID_OF(task);
    u32 tid = (u32)id;
    struct open_args *a = recalled(tid, task);
#ifdef TRACE_FILTER_FAILED
    if (ret >= 0) {  /* succeeded: not an event under -x */
        if (a)
            forget(tid, a);
        return 0;
    }
    if (!a) {  /* failed, not remembered: a drop if the filters accept the task */
        if (!trace_skip_current_of(id >> 32, task))
            count_drop();
        return 0;
    }
#else
    if (!a)
        return 0;
#endif
    void *ring;
    struct trace_event *e = rt_pcpu_reserve_in(&ring, sizeof(*e));
    if (!e) {
        drops.increment(0);
        forget(tid, a);
        return 0;
    }
    trace_fill_hdr_task(&e->h, TRACE_OPEN, id, 1, task);  /* accepted at entry */
    trace_fill_ids_of(e, task);
    open_fill(e, ret, a->call, a->filename, a->flags, a->mode);
    forget(tid, a);
    RT_PCPU_SUBMIT_TO(ctx, ring, e, sizeof(*e));
    return 0;
}

/* The exit program of open-family syscall `name`: the event. */
#define OPEN_EXIT(name) \
    TRACEPOINT_PROBE(syscalls, sys_exit_##name) { return open_exit(args, args->ret); }

/* The entry and exit programs of open-family syscall `name`, whose entry remembers
 * `call` with `path`, `flags` and `mode` (expressions of its tracepoint's `args`). */
#define OPEN_CALL(name, call, path, flags, mode)                       \
    TRACEPOINT_PROBE(syscalls, sys_enter_##name)                       \
    {                                                                  \
        void *task = TRACE_CURRENT_TASK();                             \
        u32 tid = accepted_tid(task);                                  \
        return tid ? remember(tid, task, call, path, flags, mode) : 0; \
    }                                                                  \
    OPEN_EXIT(name)

OPEN_CALL(openat, TRACE_CALL_OPENAT, args->filename, args->flags, args->mode)

#if TRACE_HAVE_OPEN
OPEN_CALL(open, TRACE_CALL_OPEN, args->filename, args->flags, args->mode)
#endif

#if TRACE_HAVE_CREAT
OPEN_CALL(creat, TRACE_CALL_CREAT, args->pathname, O_CREAT | O_WRONLY | O_TRUNC, args->mode)
#endif

#if TRACE_HAVE_OPEN_BY_HANDLE_AT
OPEN_CALL(open_by_handle_at, TRACE_CALL_OPEN_BY_HANDLE_AT, 0, args->flags, 0)
#endif

#if TRACE_HAVE_OPENAT2
TRACEPOINT_PROBE(syscalls, sys_enter_openat2)
{
    void *task = TRACE_CURRENT_TASK();
    u32 tid = accepted_tid(task);
    if (!tid)
        return 0;
    u64 how[2] = {};  /* struct open_how's first members: flags, mode (uapi/linux/openat2.h) */
    bpf_probe_read_user(how, sizeof(how), (const void *)args->how);
    return remember(tid, task, TRACE_CALL_OPENAT2, args->filename, how[0], (u32)how[1]);
}

OPEN_EXIT(openat2)
#endif
#endif  /* TRACE_OPEN_AT_EXIT */
