/* BCC's opensnoop (tools/opensnoop.py, "Trace open() syscalls", Brendan Gregg) reduced
 * to openat and moved from its kprobes to the syscall tracepoints, for
 * `ringtool bench peers` (BPF C, loaded with BCC; not built by cc): the entry remembers the path pointer per thread in a hash,
 * the exit reads the path and sends one record per call through a perf buffer, which
 * ringtool/bench/peer_opensnoop.py prints as opensnoop does.
 */
#include <uapi/linux/ptrace.h>
#include <linux/sched.h>

#define NAME_MAX 255

struct val_t {
    u64 id;
    const char *fname;
};

struct data_t {
    u64 id;
    u64 ts;
    u32 uid;
    int ret;
    char comm[TASK_COMM_LEN];
    char fname[NAME_MAX];
};

BPF_HASH(infotmp, u64, struct val_t);
BPF_PERF_OUTPUT(events);

TRACEPOINT_PROBE(syscalls, sys_enter_openat)
{
    struct val_t val = {};
    u64 id = bpf_get_current_pid_tgid();
    val.id = id;
    val.fname = args->filename;
    infotmp.update(&id, &val);
    return 0;
}

TRACEPOINT_PROBE(syscalls, sys_exit_openat)
{
    u64 id = bpf_get_current_pid_tgid();
    struct val_t *valp = infotmp.lookup(&id);
    if (valp == 0)
        return 0;  /* missed entry */
    struct data_t data = {};
    bpf_get_current_comm(&data.comm, sizeof(data.comm));
    bpf_probe_read_user_str(&data.fname, sizeof(data.fname), (void *)valp->fname);
    data.id = valp->id;
    data.ts = bpf_ktime_get_ns() / 1000;
    data.uid = bpf_get_current_uid_gid();
    data.ret = args->ret;
    events.perf_submit(args, &data, sizeof(data));
    infotmp.delete(&id);
    return 0;
}
