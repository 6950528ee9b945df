/* ringtool trace: the ONE event layout every trace source emits.
 *
 * This header is the single definition: ringtool/event/layout.py parses the
 * `#define TRACE_*` constants and the `struct trace_*` declarations below to build
 * the numpy dtypes that decode the records, and passes their sizes back as
 * -DTRACE_EVENT_SIZE / -DTRACE_NET_SIZE so the _Static_asserts at the end fail the
 * compile if C and Python ever disagree. Keep it parseable: one field per line,
 * types u8/u16/u32/u64/s8/s16/s32/s64/char or `struct trace_*`, optional [N] arrays,
 * natural alignment, no bit fields, C block comments only.
 *
 * Records go to the per-CPU RINGBUF group of bpf/percpu_ringbuf.h (exec, exit, fork,
 * open, slow syscalls, tcp, disk) or, for net, to a PERF_EVENT_ARRAY with the packet bytes
 * appended by the kernel (BPF_F_CTXLEN_MASK).
 *
 * Which filters are on arrives as -D constants (ringtool/trace/reading/filters.py):
 * TRACE_FILTER_PID (-p), TRACE_FILTER_TID (-t), TRACE_FILTER_UID (-u: the real uid),
 * TRACE_FILTER_CGROUP (--cgroup: a task matches when its cgroup is the directory's or
 * below it), TRACE_FILTER_COMM (-c), TRACE_FILTER_FAILED (-x: open and exec report
 * failed calls only; see trace_open.c and trace_exec.c); a filter not given compiles
 * out. Their values, and ringtool's own pid (never traced), are read at run time from
 * the config map (trace_cfg below), so a compiled program does not depend on them
 * (the program cache, docs/trace.md).
 */
#ifndef RINGTOOL_TRACE_EVENT_H
#define RINGTOOL_TRACE_EVENT_H

#define TRACE_COMM_LEN 16
#define TRACE_DATA_LEN 256
#define TRACE_DATA_LEN_UNKNOWN 0xffffffff  /* struct trace_event's data_len: not stored */
#define TRACE_ADDR_LEN 16

/* exec: `data` holds the filename, then argv[0], argv[1], ... each NUL-terminated;
 * at most TRACE_MAXARG arguments, all within TRACE_DATA_LEN bytes. `aux2` is the
 * number of arguments stored, with these flags: */
#define TRACE_MAXARG 20
#define TRACE_ARGS_TRUNCATED 0x80000000  /* more arguments, or the last one cut */
#define TRACE_ARGS_MISSING 0x40000000    /* argv not read (exec began before tracing) */
#define TRACE_ARGC_MASK 0xffff

/* The event types (struct trace_hdr's `type`), all of them and nothing else, up to the
 * blank line: ringtool/event/registry.py has one entry for each (a test checks it). */
#define TRACE_EXEC 1
#define TRACE_EXIT 2
#define TRACE_FORK 3
#define TRACE_OPEN 4
#define TRACE_SYSCALL 5
#define TRACE_NET 6
#define TRACE_MARK 7  /* `ringtool mark TEXT`: data = the text (bpf/trace_mark.bpf.c) */
#define TRACE_TCP 8   /* a TCP connection's life, at its close: a struct trace_tcp */
#define TRACE_DISK 10 /* a block I/O request, at its completion: a struct trace_disk */
#define TRACE_CPUWAIT 11 /* a long wait for a CPU (bpf/trace_cpuwait.c): value = ns */

/* open, exec: the syscall an event came from (`call`); ringtool/event/layout.py names
 * them (TRACE_CALL_OPENAT -> "openat"). Numbers of ringtool's own, the same on every
 * architecture (syscall numbers are not). */
#define TRACE_CALL_OPEN 1
#define TRACE_CALL_OPENAT 2
#define TRACE_CALL_OPENAT2 3
#define TRACE_CALL_CREAT 4
#define TRACE_CALL_OPEN_BY_HANDLE_AT 5
#define TRACE_CALL_EXECVE 6
#define TRACE_CALL_EXECVEAT 7

/* Common header of every record. */
struct trace_hdr {
    u64 ts;                      /* bpf_ktime_get_ns(): CLOCK_MONOTONIC ns */
    u32 type;                    /* TRACE_EXEC ... TRACE_NET */
    u32 cpu;                     /* bpf_get_smp_processor_id() */
    u32 pid;                     /* tgid of the current task */
    u32 tid;                     /* thread id */
    char comm[TRACE_COMM_LEN];   /* bpf_get_current_comm() */
    u64 cgroup;                  /* cgroup v2 id (bpf_get_current_cgroup_id); net: owner's */
};

/* exec / exit / fork / open / slow syscall (the RINGBUF sources). */
struct trace_event {
    struct trace_hdr h;
    u64 value;                   /* exit: code << 8; open: flags; syscall: latency ns;
                                    cpuwait: the wait in ns;
                                    exec: real uid | gid << 32 (bpf_get_current_uid_gid) */
    u32 ppid;                    /* exec, fork, exit: parent tgid (0: unknown) */
    s32 ret;                     /* open: fd or -errno; exec: 0 or -errno;
                                    syscall: return value */
    u32 aux;                     /* fork: child pid; syscall: number; exit: 1 = code known;
                                    exec: the tid before exec (a thread's exec) */
    u32 aux2;                    /* exec: argument count and TRACE_ARGS_* flags */
    u32 uid;                     /* every event: the task's real uid ... */
    u32 gid;                     /* ... and real gid (bpf_get_current_uid_gid) */
    u32 call;                    /* open, exec: TRACE_CALL_* (0: another type) */
    u32 mode;                    /* open: the mode argument (0 where the call has none) */
    u32 data_len;                /* data's strings' bytes before the NUL that ends them
                                    (the _str helpers' length less its NUL: open's path,
                                    fork's child comm; 0: no string), so a reader need
                                    not look for it; TRACE_DATA_LEN_UNKNOWN: not stored
                                    (exec, mark: a reader finds the end) */
    u32 pad;                     /* 0: data stays 8-byte aligned */
    char data[TRACE_DATA_LEN];   /* exec: filename + argv; open: path; fork: child comm;
                                    mark: the text */
};

/* tcp (bpf/trace_tcp.c): one TCP connection, emitted when it reaches TCP_CLOSE. A
 * RINGBUF record like the others, so of the same size as struct trace_event (the
 * group's readers take every record as one of those and view a tcp record as this;
 * `pad` fills it up); the header's task fields are the connection's owner (see
 * trace_tcp.c), ts and cpu those of the close. */
#define TRACE_TCP_PAD 228
struct trace_tcp {
    struct trace_hdr h;
    u64 duration_ns;             /* from the first state (SYN_SENT / SYN_RECV) to CLOSE */
    u64 tx_bytes;                /* tcp_sock.bytes_acked: sequence space acknowledged
                                    (the payload, and the SYN and FIN: bpf/trace_tcp.c) */
    u64 rx_bytes;                /* tcp_sock.bytes_received (likewise) */
    u32 uid;                     /* the owner's real uid and gid */
    u32 gid;
    u8 saddr[TRACE_ADDR_LEN];    /* local address; IPv4 as ::ffff:a.b.c.d */
    u8 daddr[TRACE_ADDR_LEN];    /* remote address */
    u16 sport;                   /* local port, host byte order */
    u16 dport;                   /* remote port */
    u16 states;                  /* 1 << every TCP state it was in (TCP_ESTABLISHED = 1 ...) */
    u8 family;                   /* 4 or 6 (the socket's: AF_INET or AF_INET6) */
    u8 active;                   /* 1: opened by connect(), 0: by a listener (accept) */
    s32 error;                   /* sk_err at the close (an errno, 0: none) */
    u8 pad[TRACE_TCP_PAD];
};

/* tcp (bpf/trace_tcp.c): a connection it follows, the value of its `conns` hash (keyed
 * by the struct sock's address) from its first state to its close; no ring record.
 * The dashboard reads the open ones (ringtool/trace/reading/tcp_conns.py). The
 * addresses and ports are the tracepoint's at the connection's latest state change
 * (a connect()'s local port is 0 until it is bound, after SYN_SENT). */
struct trace_tcp_conn {
    u64 start_ns;                /* bpf_ktime_get_ns() of its first state */
    u64 cgroup;                  /* the owner's (when `owned`) */
    char comm[TRACE_COMM_LEN];
    u32 pid;
    u32 tid;
    u32 uid;
    u32 gid;
    u8 saddr[TRACE_ADDR_LEN];    /* local address; IPv4 as ::ffff:a.b.c.d */
    u8 daddr[TRACE_ADDR_LEN];    /* remote address */
    u16 sport;                   /* local port, host byte order */
    u16 dport;                   /* remote port */
    u16 states;                  /* 1 << each state */
    u8 active;
    u8 owned;                    /* the owner's fields are set */
    u8 known;                    /* ESTABLISHED was reached: the 4-tuple is final */
    u8 published;                /* the owners table has it (-DTRACE_TCP_OWNERS_FD only:
                                    bpf/tcp_owners.h) */
    u8 state;                    /* the newest state */
    u8 pad[5];
    u64 tx_bytes;                /* through its send and receive calls (the kernel's */
    u64 rx_bytes;                /* sock_send_length/sock_recv_length, 6.3 on; else 0) */
};

/* disk (bpf/trace_disk.c): one block I/O request, emitted at its completion. A RINGBUF
 * record of struct trace_event's size (`pad`), like trace_tcp; the header's task
 * fields are the task that issued the request (see trace_disk.c), ts and cpu those
 * of the completion. */
#define TRACE_RWBS_LEN 16
#define TRACE_DISK_PAD 244
struct trace_disk {
    struct trace_hdr h;
    u64 sector;                  /* the first 512-byte sector */
    u64 queue_ns;                /* block_rq_insert -> block_rq_issue (0: not inserted) */
    u64 service_ns;              /* block_rq_issue -> block_rq_complete */
    u32 uid;                     /* the issuer's real uid and gid */
    u32 gid;
    u32 dev;                     /* the kernel's dev_t: major << 20 | minor */
    u32 bytes;                   /* the request's size at its issue */
    s32 error;                   /* the completion's: 0, or a -errno */
    char rwbs[TRACE_RWBS_LEN];   /* the operation and flags as blktrace's letters ("WS") */
    u8 pad[TRACE_DISK_PAD];
};

/* net (TC, PERF_EVENT_ARRAY): followed by `captured` packet bytes from the MAC header.
 * The header's task fields are 0 / "" but for a packet of a TCP connection the tcp
 * source follows: its owner's (bpf/trace_net.c). */
struct trace_net {
    struct trace_hdr h;
    u8 saddr[TRACE_ADDR_LEN];    /* IPv4 in the first 4 bytes, or IPv6 */
    u8 daddr[TRACE_ADDR_LEN];
    u16 sport;                   /* host byte order; 0 when not TCP/UDP */
    u16 dport;
    u8 proto;                    /* IPPROTO_* (0: not IP) */
    u8 family;                   /* 4, 6 or 0 */
    u8 dir;                      /* 0 ingress, 1 egress */
    u8 pad;
    u32 ifindex;
    u32 len;                     /* skb->len: the whole packet */
    u32 captured;                /* packet bytes appended after this struct */
    u32 owner_uid;               /* the owner's real uid (with its pid in the header: a
                                    packet of a followed TCP connection, trace_net.c) */
};

#ifdef TRACE_EVENT_SIZE
_Static_assert(sizeof(struct trace_event) == TRACE_EVENT_SIZE,
               "struct trace_event differs from ringtool/event/layout.py");
#endif
_Static_assert(sizeof(struct trace_tcp) == sizeof(struct trace_event),
               "struct trace_tcp: a RINGBUF record is a struct trace_event's size (TRACE_TCP_PAD)");
_Static_assert(sizeof(struct trace_disk) == sizeof(struct trace_event),
               "struct trace_disk: a RINGBUF record is a struct trace_event's size (TRACE_DISK_PAD)");
#ifdef TRACE_NET_SIZE
_Static_assert(sizeof(struct trace_net) == TRACE_NET_SIZE,
               "struct trace_net differs from ringtool/event/layout.py");
#endif

/* The run-time values: u64 slots of the one element (key 0) of the ARRAY whose fd is
 * -DTRACE_CONFIG_FD (ringtool/trace/reading/cflags.py config_values writes it before
 * the programs attach). The verifier inlines an array lookup: a few instructions. */
#define TRACE_CFG_SELF_PID 0     /* ringtool's tgid, never traced (0: none) */
#define TRACE_CFG_PID 1          /* -p: the tgid */
#define TRACE_CFG_TID 2          /* -t */
#define TRACE_CFG_UID 3          /* -u: the real uid */
#define TRACE_CFG_CGROUP_ID 4    /* --cgroup: the cgroup v2 id of the directory */
#define TRACE_CFG_CGROUP_LEVEL 5 /* --cgroup: its depth below the root */
#define TRACE_CFG_COMM_LO 6      /* -c: the 16-byte comm as two little-endian u64s */
#define TRACE_CFG_COMM_HI 7
#define TRACE_CFG_SLOW_NS 8      /* syscalls: the slow-call threshold */
#define TRACE_CFG_SLOTS 9

#ifdef TRACE_CONFIG_FD
/* Slot `i` of the config map (0 if the lookup failed, which an ARRAY's key 0 never
 * does). */
static __always_inline u64 trace_cfg(u32 i)
{
    u32 zero = 0;
    u64 *cfg = bpf_map_lookup_elem((void *)bpf_pseudo_fd(1, TRACE_CONFIG_FD), &zero);
    return cfg ? cfg[i] : 0;
}
#else
#if defined(TRACE_FILTER_PID) || defined(TRACE_FILTER_TID) || defined(TRACE_FILTER_UID) || \
    defined(TRACE_FILTER_CGROUP) || defined(TRACE_FILTER_COMM)
#error "trace_event.h: a filter's value is read from the config map: define TRACE_CONFIG_FD"
#endif
/* No config map (a benchmark's program): ringtool's pid is not skipped. */
#define trace_cfg(i) 0ULL
#endif

/* Loads at byte offset `off` of a kernel object reached through the task's BTF pointer
 * (the -D offsets of ringtool/programs/kernel_features.py). The verifier types each
 * load from the kernel's BTF: a pointer member gives a BTF pointer to its struct, read
 * again the same way; no NULL check is needed (such loads are PROBE_MEM: a fault
 * reads 0). */
#define TRACE_BTF_PTR(p, off) (*(void *const *)((const char *)(p) + (off)))
#define TRACE_BTF_U32(p, off) (*(const u32 *)((const char *)(p) + (off)))
#define TRACE_BTF_U64(p, off) (*(const u64 *)((const char *)(p) + (off)))

/* `w` up to its first NUL byte, the bytes from there on zeroed; *ended set when it has
 * one. The lowest byte the zero-byte test ((w - 0x01..) & ~w & 0x80..) flags is the
 * first NUL (a borrow only flags bytes above a real zero): below it, the mask. */
static __always_inline u64 trace_upto_nul(u64 w, int *ended)
{
    u64 z = (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;
    if (!z)
        return w;
    *ended = 1;
    return w & (((z & -z) >> 7) - 1);
}

/* The comm of `task`, the current task's TRACE_CURRENT_TASK(), into `words` (16 bytes,
 * NUL-padded).
 *
 * With TRACE_TASK_COMM_OFF (ringtool/programs/kernel_features.py: the offset of
 * task_struct.comm in the running kernel's BTF, given from 6.1 on where
 * bpf_get_current_task_btf exists) the two words are loaded straight from the task: the verifier checks the
 * loads against the kernel's BTF, and no bpf_get_current_comm call (its string copy
 * is one of the costliest steps of an event; bpf_get_current_task_btf is a fraction
 * of it). The bytes after the NUL are zeroed here: 6.1 sets a comm with strlcpy,
 * which leaves the tail of a longer earlier name behind it. A rename on another CPU
 * can race either way, as it races the helper's copy.
 *
 * Without it, zeroed first and then the helper: a reserved record holds stale bytes,
 * and 6.1's helper copies with strscpy (no padding: the VM's run found
 * "python\0a..."); later kernels pad. */
static __always_inline void trace_task_comm_of(const void *task, u64 words[2])
{
#ifdef TRACE_TASK_COMM_OFF
    const char *t = (const char *)task;
    int ended = 0;
    words[0] = trace_upto_nul(TRACE_BTF_U64(t, TRACE_TASK_COMM_OFF), &ended);
    words[1] = ended ? 0 : trace_upto_nul(TRACE_BTF_U64(t, TRACE_TASK_COMM_OFF + 8), &ended);
#else
    words[0] = 0;
    words[1] = 0;
    bpf_get_current_comm(words, 2 * sizeof(u64));
#endif
}

/* The current task's BTF pointer where the program may have it (TRACE_HAVE_TASK_BTF,
 * given with the field offsets, or task storage: both come with
 * bpf_get_current_task_btf), else 0. A program that needs it twice (the filter, then
 * its task storage and its header) calls this once: each helper call costs. */
#if (defined(TRACE_HAVE_TASK_BTF) && TRACE_HAVE_TASK_BTF) || \
    (defined(TRACE_HAVE_TASK_STORAGE) && TRACE_HAVE_TASK_STORAGE)
#define TRACE_CURRENT_TASK() ((void *)bpf_get_current_task_btf())
#else
#define TRACE_CURRENT_TASK() ((void *)0)
#endif

/* The open source takes an open's arguments from the task's saved registers at the
 * syscall's exit, and has no entry program (bpf/trace_open.c), where the sources read
 * the task through its BTF (TRACE_HAVE_TASK_BTF: 6.1 on, which has bpf_task_pt_regs)
 * on an architecture whose syscall registers it names (x86-64, arm64); else 0: entry
 * and exit, the call remembered in per-thread state between them. */
#if defined(TRACE_HAVE_TASK_BTF) && TRACE_HAVE_TASK_BTF && \
    (defined(__x86_64__) || defined(__aarch64__))
#define TRACE_OPEN_AT_EXIT 1
#else
#define TRACE_OPEN_AT_EXIT 0
#endif

/* bpf_get_current_pid_tgid() of the current task `task` (TRACE_CURRENT_TASK()): its
 * tgid << 32 | pid, the helper's value (task->tgid, task->pid: ids in the initial pid
 * namespace), read from the task at TRACE_TASK_TGID_OFF / TRACE_TASK_PID_OFF where
 * the offsets are known (two loads instead of a helper call), else the helper. */
#if defined(TRACE_TASK_PID_OFF) && defined(TRACE_TASK_TGID_OFF)
#define TRACE_PID_TGID_OF(task) \
    (((u64)TRACE_BTF_U32(task, TRACE_TASK_TGID_OFF) << 32) | TRACE_BTF_U32(task, TRACE_TASK_PID_OFF))
#else
#define TRACE_PID_TGID_OF(task) bpf_get_current_pid_tgid()
#endif

/* The cgroup v2 id of `task` (TRACE_CURRENT_TASK()), as bpf_get_current_cgroup_id:
 * task->cgroups->dfl_cgrp->kn->id where the offsets are known, else the helper. */
static __always_inline u64 trace_task_cgroup(const void *task)
{
#ifdef TRACE_TASK_CGROUPS_OFF
    const void *cset = TRACE_BTF_PTR(task, TRACE_TASK_CGROUPS_OFF);
    const void *cgrp = TRACE_BTF_PTR(cset, TRACE_CSS_SET_DFL_CGRP_OFF);
    const void *kn = TRACE_BTF_PTR(cgrp, TRACE_CGROUP_KN_OFF);
    return TRACE_BTF_U64(kn, TRACE_KERNFS_NODE_ID_OFF);
#else
    return bpf_get_current_cgroup_id();
#endif
}

/* Fill the common header for the current task, whose bpf_get_current_pid_tgid() the
 * caller has read already (`id`: one helper call less), every field: a reserved
 * record is not zeroed. `accepted`: the filters accepted the task in this same call
 * (at its syscall's entry), so under -c its comm is the filter's and is stored from
 * the config map instead of read again (a comm read is one of the costlier steps
 * of an event). A constant at every call site: the branch compiles away. `task`: the
 * current task's TRACE_CURRENT_TASK(), whose comm is read otherwise. */
static __always_inline void trace_fill_hdr_task(struct trace_hdr *h, u32 type, u64 id,
                                                int accepted, const void *task)
{
    h->ts = bpf_ktime_get_ns();
    h->type = type;
    h->cpu = bpf_get_smp_processor_id();
    h->pid = id >> 32;
    h->tid = (u32)id;
    u64 *words = (u64 *)h->comm;
#ifdef TRACE_FILTER_COMM
    if (accepted) {
        words[0] = trace_cfg(TRACE_CFG_COMM_LO);
        words[1] = trace_cfg(TRACE_CFG_COMM_HI);
    } else
#endif
        trace_task_comm_of(task, words);
#ifdef TRACE_HDR_NO_CGROUP  /* a program type without the helper (trace_bench.c) */
    h->cgroup = 0;
#else
    h->cgroup = trace_task_cgroup(task);
#endif
}

/* trace_fill_hdr_task for the current task, whose comm is read here. */
static __always_inline void trace_fill_hdr_id(struct trace_hdr *h, u32 type, u64 id)
{
    trace_fill_hdr_task(h, type, id, 0, TRACE_CURRENT_TASK());
}

/* Fill the common header for the current task (trace_fill_hdr_id). */
static __always_inline void trace_fill_hdr(struct trace_hdr *h, u32 type)
{
    trace_fill_hdr_id(h, type, bpf_get_current_pid_tgid());
}

/* The real uid and gid of `task` (TRACE_CURRENT_TASK()) into a RINGBUF record (every
 * source): task->cred->uid/gid where the offsets are known (the values
 * bpf_get_current_uid_gid returns: ids as the initial user namespace sees them, which
 * a kuid's value is), else the helper. */
static __always_inline void trace_fill_ids_of(struct trace_event *e, const void *task)
{
#ifdef TRACE_TASK_CRED_OFF
    const void *cred = TRACE_BTF_PTR(task, TRACE_TASK_CRED_OFF);
    e->uid = TRACE_BTF_U32(cred, TRACE_CRED_UID_OFF);
    e->gid = TRACE_BTF_U32(cred, TRACE_CRED_GID_OFF);
#else
    u64 ids = bpf_get_current_uid_gid();
    e->uid = (u32)ids;
    e->gid = ids >> 32;
#endif
}

/* trace_fill_ids_of the current task. */
static __always_inline void trace_fill_ids(struct trace_event *e)
{
    trace_fill_ids_of(e, TRACE_CURRENT_TASK());
}

/* After a _str helper returned `n` for the string it read into e->data: data empty
 * where it failed (n <= 0), and data_len the string's bytes before its NUL. */
static __always_inline void trace_set_data_len(struct trace_event *e, long n)
{
    if (n <= 0)
        e->data[0] = 0;
    e->data_len = n > 0 ? ((u32)n - 1) & (TRACE_DATA_LEN - 1) : 0;
}

/* The filters run BEFORE anything is reserved: a rejected event must
 * neither take ring space (it would push matching events out and be counted as
 * their drop) nor wake the consumer (the kernel wakes it on a discard too). So the
 * sources call trace_skip_current() first and reserve only for a matching task;
 * nothing is ever reserved and then discarded for filtering. */

/* 1 when ringtool itself or the -p filter excludes tgid `pid` (cheap: no comm). */
static __always_inline int trace_skip_pid(u32 pid)
{
    u64 self = trace_cfg(TRACE_CFG_SELF_PID);
    if (self && pid == self)
        return 1;
#ifdef TRACE_FILTER_PID
    if (pid != trace_cfg(TRACE_CFG_PID))
        return 1;
#endif
    return 0;
}

/* 1 when the -t, -u or --cgroup filter excludes the current task; each is compiled
 * in only when given (without them this is a constant 0 and calls no helper). */
static __always_inline int trace_skip_task(void)
{
#ifdef TRACE_FILTER_TID
    if ((u32)bpf_get_current_pid_tgid() != trace_cfg(TRACE_CFG_TID))
        return 1;
#endif
#ifdef TRACE_FILTER_UID
    if ((u32)bpf_get_current_uid_gid() != trace_cfg(TRACE_CFG_UID))
        return 1;
#endif
#ifdef TRACE_FILTER_CGROUP
    /* the task's cgroup, or its ancestor at the filter's depth: the cgroup itself
     * and everything below it match (a container's nested cgroups too) */
    if (bpf_get_current_ancestor_cgroup_id((int)trace_cfg(TRACE_CFG_CGROUP_LEVEL)) !=
        trace_cfg(TRACE_CFG_CGROUP_ID))
        return 1;
#endif
    return 0;
}

/* 1 when the -c filter excludes the comm of `task` (TRACE_CURRENT_TASK()). The comm
 * is read as two NUL-padded u64 words (trace_task_comm_of), compared with the config
 * map's; without -c this is a constant 0 and reads nothing. */
static __always_inline int trace_skip_comm_of(const void *task)
{
#ifdef TRACE_FILTER_COMM
    u64 words[2];
    trace_task_comm_of(task, words);
    if (words[0] != trace_cfg(TRACE_CFG_COMM_LO) || words[1] != trace_cfg(TRACE_CFG_COMM_HI))
        return 1;
#endif
    return 0;
}

/* 1 when any filter (self, -p, -t, -u, --cgroup, -c) rejects the current task, with
 * tgid `pid` and pointer `task` (TRACE_CURRENT_TASK()); the cheap ones first. */
static __always_inline int trace_skip_current_of(u32 pid, const void *task)
{
    return trace_skip_pid(pid) || trace_skip_task() || trace_skip_comm_of(task);
}

/* trace_skip_current_of the current task; its pointer is taken only for -c, after
 * the other filters accepted it. */
static __always_inline int trace_skip_current(u32 pid)
{
    return trace_skip_pid(pid) || trace_skip_task() || trace_skip_comm_of(TRACE_CURRENT_TASK());
}

#endif
