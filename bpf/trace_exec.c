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
 * exec carries the uid/gid (`value`), the filename and the arguments (like bcc's
 * execsnoop): argv is read
 * from user memory at execve/execveat entry, where its pointer is an argument, into
 * this thread's `exec_args` entry (at most TRACE_MAXARG arguments, TRACE_DATA_LEN
 * bytes), and sched_process_exec appends it to the filename in `data`, with the count
 * and the TRACE_ARGS_* flags in `aux2` (see trace_event.h). Only the self and -p
 * filters run at entry (pid is the one thing exec keeps for sure; comm, tid, even the
 * uid may change); the event's filters run at sched_process_exec as for every event.
 * Every exec attempt is one event, with `ret` its result and `call` TRACE_CALL_EXECVE or
 * _EXECVEAT: a successful one at sched_process_exec (ret 0; that tracepoint fires
 * before the syscall returns, and consumes the entry, so its exit finds none), a
 * failed one (ENOENT from a shell's PATH search, EACCES, ...) at sys_exit_execve/at,
 * which finds the entry still there; its filters run on the task as it is (a failed
 * exec changes nothing of it). The filename is the one the process passed (as
 * execsnoop shows it), read at entry with argv; only an exec whose entry was not
 * seen has the kernel's (sched_process_exec's, /dev/fd/N/... for execveat relative
 * to a directory fd). Reading argv costs exec only: the tracepoints are execve's own,
 * not raw_syscalls.
 *
 * TRACE_FILTER_FAILED (-x, like execsnoop's): only failed exec attempts are events
 * (no successful exec, no fork, no exit); the maps are kept as without it.
 *
 * No task_struct reads: the kernel headers BCC compiles against may not match the
 * running kernel, so field offsets can't be trusted. Instead
 *   ppid       is remembered at fork (parent_of: child pid -> parent tgid); user
 *              space writes the parents of the processes already running before
 *              the programs attach (ringtool/trace/reading/parents.py);
 *   exit code  is remembered at exit_group(2)/exit(2) entry (exit_codes: tgid ->
 *              code); an exit without that syscall (a fatal signal) has aux = 0
 *              ("unknown"), otherwise aux = 1 and value = code << 8 (wait status).
 * sched_process_fork's child_comm is `char child_comm[16]` on 6.1 and
 * `__data_loc char[] child_comm` on newer kernels (6.18): ringtool reads the running
 * kernel's tracefs format at load time (ringtool/programs/tracepoints.py) and passes
 * TRACE_FORK_CHILD_COMM_DATA_LOC (1: __data_loc, 0: char[N]). BCC builds `args` from
 * the same format file, so only the selected path's member exists.
 * cflags: RingBufGroup.cflags(), TRACE_* filters and sizes (see trace_event.h),
 * tracepoint layouts (tracepoints.layout_defines).
 */
#include "percpu_ringbuf.h"
#include "trace_event.h"

#ifndef TRACE_FORK_CHILD_COMM_DATA_LOC
#error "trace_exec.c: compile with ringtool's tracepoint layout cflags (programs/tracepoints.py)"
#endif

/* -x: failed exec attempts are the only events (no fork, exit or successful exec) */
#ifdef TRACE_FILTER_FAILED
#define ONLY_FAILED 1
#else
#define ONLY_FAILED 0
#endif

BPF_PERCPU_ARRAY(drops, u64, 1);
BPF_TABLE("lru_hash", u32, u32, parent_of, 65536);
BPF_TABLE("lru_hash", u32, u32, exit_codes, 16384);

/* argv of an execve in flight (tid -> exec_argv), and the place where the event's
 * data is put together. Both buffers are twice TRACE_DATA_LEN so that a copy of at
 * most TRACE_DATA_LEN bytes at an offset of at most TRACE_DATA_LEN stays inside them
 * in the verifier's eyes; only the first TRACE_DATA_LEN bytes are ever used. */
struct exec_argv {
    u32 flen;                        /* bytes of the filename in out, with its NUL */
    u32 call;                        /* TRACE_CALL_EXECVE or TRACE_CALL_EXECVEAT */
    u32 argc;                        /* arguments read | TRACE_ARGS_TRUNCATED */
    u32 len;                         /* bytes of argv used (<= TRACE_DATA_LEN) */
    u16 ends[TRACE_MAXARG];          /* end (after the NUL) of each argument in argv */
    char argv[2 * TRACE_DATA_LEN];   /* argv[0] NUL argv[1] NUL ... */
    char out[2 * TRACE_DATA_LEN];    /* filename NUL argv..., copied into the event; the
                                        filename is read at entry */
};
BPF_TABLE("lru_hash", u32, struct exec_argv, exec_args, 1024);
BPF_PERCPU_ARRAY(exec_init, struct exec_argv, 1);  /* the source of an insert only */

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
    trace_fill_ids(e);
    e->call = 0;
    e->mode = 0;
    u32 *ppid = parent_of.lookup(&pid);
    e->value = 0;
    e->ppid = ppid ? *ppid : 0;
    e->ret = 0;
    e->aux = 0;
    e->aux2 = 0;
    e->data_len = 0;  /* exit: no string; exec: TRACE_DATA_LEN_UNKNOWN, fork: its comm's */
    e->pad = 0;
    return e;
}

/* Submit a filled event (`ctx`: the program's, for the perf flight-recorder mode). */
static __always_inline int finish_event(void *ctx, struct trace_event *e)
{
    RT_PCPU_SUBMIT(ctx, e, sizeof(*e));
    return 0;
}

/* `v`, unknown to clang: the masks applied to it afterwards stay in the program, where
 * the verifier needs them to bound an offset (clang drops a mask it can prove
 * redundant, or checks a copy of the value and uses the original). */
static __always_inline u32 opaque(u32 v)
{
    asm volatile("" : "+r"(v));
    return v;
}

/* Remember an exec attempt (`call`, the user's `filename`) and read the NULL-terminated
 * user array `argv` into this thread's exec_args entry. */
static __always_inline int stash_argv(u32 call, const char *filename, const char *const *argv)
{
    u64 id = bpf_get_current_pid_tgid();
    if (trace_skip_pid(id >> 32))
        return 0;
    u32 tid = (u32)id;
    u32 zero = 0;
    struct exec_argv *init = exec_init.lookup(&zero);
    if (!init || exec_args.update(&tid, init))  /* map full: the exec says MISSING */
        return 0;
    struct exec_argv *st = exec_args.lookup(&tid);
    if (!st)
        return 0;
    u32 len = 0, argc = 0, trunc = 0;
    int i;
    for (i = 0; i < TRACE_MAXARG; i++) {
        const char *p = 0;
        if (bpf_probe_read_user(&p, sizeof(p), &argv[i]) || !p)
            break;
        if (len >= TRACE_DATA_LEN) {
            trunc = TRACE_ARGS_TRUNCATED;
            break;
        }
        u32 off = opaque(len) & (TRACE_DATA_LEN - 1);
        long n = bpf_probe_read_user_str(&st->argv[off], TRACE_DATA_LEN - off, p);
        if (n < 0) {  /* not readable (paged out): say so rather than guess */
            trunc = TRACE_ARGS_TRUNCATED;
            break;
        }
        if (n == 0) {  /* an empty argument: before 6.5 strncpy_from_user_nofault()
                        * returned 0 for "", not 1 (found in the Debian 12 VM, 6.1) */
            st->argv[off] = 0;
            n = 1;
        }
        len = off + (u32)n;
        st->ends[i] = len;
        argc = i + 1;
        if (len == TRACE_DATA_LEN) {  /* filled: cut unless its NUL was the last byte */
            char c = 1;
            bpf_probe_read_user(&c, 1, p + n - 1);
            if (c)
                trunc = TRACE_ARGS_TRUNCATED;
        }
    }
    if (i == TRACE_MAXARG) {  /* more than TRACE_MAXARG arguments? */
        const char *p = 0;
        if (bpf_probe_read_user(&p, sizeof(p), &argv[TRACE_MAXARG]) || p)
            trunc = TRACE_ARGS_TRUNCATED;
    }
    long flen = bpf_probe_read_user_str(st->out, TRACE_DATA_LEN, filename);
    if (flen <= 0) {  /* unreadable, or "" before 6.5 (0, see above) */
        st->out[0] = 0;
        flen = 1;
    }
    st->flen = flen;
    st->call = call;
    st->argc = argc | trunc;
    st->len = len;
    return 0;
}

TRACEPOINT_PROBE(syscalls, sys_enter_execve)
{
    return stash_argv(TRACE_CALL_EXECVE, args->filename, args->argv);
}

TRACEPOINT_PROBE(syscalls, sys_enter_execveat)
{
    return stash_argv(TRACE_CALL_EXECVEAT, args->filename, args->argv);
}

/* The exec event's data (the filename and argv stashed at entry: `st`), aux2 and
 * call. */
static __always_inline void fill_exec(struct trace_event *e, struct exec_argv *st)
{
    u32 off = ((opaque(st->flen) - 1) & (TRACE_DATA_LEN - 1)) + 1;  /* 1..LEN */
    u32 n = opaque(st->len);
    if (n)
        bpf_probe_read_kernel(&st->out[off], ((n - 1) & (TRACE_DATA_LEN - 1)) + 1, st->argv);
    bpf_probe_read_kernel(e->data, TRACE_DATA_LEN, st->out);
    e->data[TRACE_DATA_LEN - 1] = 0;  /* a cut argument ends here */
    u32 argc = st->argc & TRACE_ARGC_MASK;
    u32 trunc = st->argc & TRACE_ARGS_TRUNCATED;
    u32 stored = 0;
    for (int i = 0; i < TRACE_MAXARG; i++) {
        if (i >= argc)
            break;
        /* The index bound checked again on a value clang cannot see through: it folds
         * the two loop exits into one test, and 6.1's verifier then lost the bound of
         * i and refused ends[20] (found in the Debian 12 VM; newer verifiers cope). */
        u32 j = opaque((u32)i);
        if (j >= TRACE_MAXARG)
            break;
        u32 start = off + (j ? st->ends[j - 1] : 0);
        if (off + st->ends[j] <= TRACE_DATA_LEN) {
            stored++;
            continue;
        }
        trunc = TRACE_ARGS_TRUNCATED;  /* this one is cut, the rest left out */
        if (start < TRACE_DATA_LEN - 1)
            stored++;
        break;
    }
    e->aux2 = stored | trunc;
    e->call = st->call;
    e->data_len = TRACE_DATA_LEN_UNKNOWN;  /* several strings: the reader counts NULs */
}

/* The end of an exec attempt that failed before the point of no return (a successful
 * one's entry is gone: sched_process_exec consumed it): its event, with `ret`. */
static __always_inline int exec_failed(void *ctx, long ret)
{
    u64 id = bpf_get_current_pid_tgid();
    u32 tid = (u32)id, pid = id >> 32;
    struct exec_argv *st = exec_args.lookup(&tid);
    if (!st)
        return 0;
    /* ret >= 0: a stale entry (a thread's exec took over this leader's tid) */
    if (ret >= 0 || trace_skip_current(pid)) {
        exec_args.delete(&tid);
        return 0;
    }
    struct trace_event *e = begin_event(pid, TRACE_EXEC);
    if (!e) {
        exec_args.delete(&tid);
        return 0;
    }
    e->ret = ret;
    e->value = (u64)e->gid << 32 | e->uid;
    fill_exec(e, st);
    exec_args.delete(&tid);
    return finish_event(ctx, e);
}

TRACEPOINT_PROBE(syscalls, sys_exit_execve)
{
    return exec_failed(args, args->ret);
}

TRACEPOINT_PROBE(syscalls, sys_exit_execveat)
{
    return exec_failed(args, args->ret);
}

TRACEPOINT_PROBE(sched, sched_process_exec)
{
    u32 pid = bpf_get_current_pid_tgid() >> 32;
    u32 old_tid = args->old_pid;
    /* the new comm: exec has set it by now; -x: it succeeded, not an event */
    if (ONLY_FAILED || trace_skip_current(pid)) {
        exec_args.delete(&old_tid);
        return 0;
    }
    struct trace_event *e = begin_event(pid, TRACE_EXEC);
    if (!e) {
        exec_args.delete(&old_tid);
        return 0;
    }
    e->aux = old_tid;
    e->value = (u64)e->gid << 32 | e->uid;  /* uid | gid << 32, as execsnoop shows it */
    struct exec_argv *st = exec_args.lookup(&old_tid);  /* by the tid before exec */
    if (!st) {  /* the kernel's filename (for execveat: /dev/fd/N/... when relative) */
        const char *fname = (const char *)args + (args->data_loc_filename & 0xFFFF);
        bpf_probe_read_kernel_str(e->data, sizeof(e->data), fname);
        e->aux2 = TRACE_ARGS_MISSING;
        e->data_len = TRACE_DATA_LEN_UNKNOWN;
        return finish_event(args, e);
    }
    fill_exec(e, st);
    exec_args.delete(&old_tid);
    return finish_event(args, e);
}

TRACEPOINT_PROBE(sched, sched_process_exit)
{
    u64 id = bpf_get_current_pid_tgid();
    u32 pid = id >> 32;
    if (pid != (u32)id)
        return 0;
    if (ONLY_FAILED || trace_skip_current(pid)) {
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
    return finish_event(args, e);
}

TRACEPOINT_PROBE(sched, sched_process_fork)
{
    u32 pid = bpf_get_current_pid_tgid() >> 32;
    u32 child = args->child_pid;
    parent_of.update(&child, &pid);  /* before filtering: exec/exit need it */
    if (ONLY_FAILED || trace_skip_current(pid))  /* the parent's pid and comm */
        return 0;
    struct trace_event *e = begin_event(pid, TRACE_FORK);
    if (!e)
        return 0;
    e->aux = args->child_pid;
#if TRACE_FORK_CHILD_COMM_DATA_LOC
    const char *comm = (const char *)args + (args->data_loc_child_comm & 0xFFFF);
    long n = bpf_probe_read_kernel_str(e->data, sizeof(e->data), comm);
#else
    long n = bpf_probe_read_kernel_str(e->data, sizeof(args->child_comm), args->child_comm);
#endif
    trace_set_data_len(e, n);
    return finish_event(args, e);
}
