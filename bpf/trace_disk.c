/* ringtool trace source `disk`: block I/O requests -> RINGBUF, and a latency
 * histogram per device.
 *
 * Programs on the block tracepoints (include/trace/events/block.h; their fields are
 * read by name, so rwbs's length, 8 bytes on 6.1 and 10 later, and the ioprio added
 * in 6.10 do not matter): block_rq_insert (a request enters the I/O scheduler or the
 * software queue), block_rq_issue (the driver is handed it), block_rq_complete (it is
 * done), and, where the kernel has it (6.5 on; TRACE_HAVE_BLOCK_IO_START from the
 * disk entry's needs in ringtool/event/registry.py), block_io_start (the request is
 * made, in the context of the task that submitted its first bio). Like biosnoop and
 * biolatency, from the libbpf-tools of the BCC project, which this follows in what
 * it records; these key their requests by the struct request's address (BTF-typed
 * tracepoints), a classic tracepoint shows no address, so `reqs` keys them by
 * (device, first sector), as BCC's tracepoint-based biolatency does.
 *
 * The issuer (the header's pid, tid, comm, cgroup and the uid/gid) is the current
 * task where the request is first seen: at block_io_start where the kernel has it
 * (the submitter, as biosnoop attributes), else at block_rq_insert or, for a request
 * issued without being inserted, at block_rq_issue. A request that a plug or the
 * scheduler hands on later is inserted or issued from a kernel thread (kworker,
 * kblockd, a loop device's worker), which is then its issuer on kernels without
 * block_io_start.
 *
 * The filters (-p, -t, -u, --cgroup, -c; ringtool itself) are asked once, of the
 * issuer, when it is taken: a rejected request is remembered as such (`skip`), and
 * neither counted nor reserved for at its completion. -x (TRACE_FILTER_FAILED): only
 * requests completed with an error are events (the histogram counts them all).
 *
 * At block_rq_complete: service_ns = complete - issue, queue_ns = issue - insert (0
 * when the request was not inserted: biosnoop -Q's), the latency counted in
 * `disk_hist` (key dev << TRACE_LAT_KEY_BITS | lat_bucket(service_ns): the buckets of
 * bpf/trace_lat.h) and a struct trace_disk (bpf/trace_event.h, type TRACE_DISK)
 * reserved in this CPU's ring of the per-CPU group, filled and submitted, and the
 * entry deleted. A request whose issue was not seen (in flight when the trace began)
 * is no event. `reqs` is an LRU hash: an entry whose completion never comes (a
 * request merged into another at its front, whose first sector changed) is pushed
 * out by newer ones. A latency a full `disk_hist` has no bucket for is counted in
 * `hist_lost`; a record that finds its ring full, per CPU (group counter + `drops`).
 * cflags: RingBufGroup.cflags(), TRACE_* filters and sizes (see trace_event.h),
 * TRACE_HAVE_BLOCK_IO_START.
 */
#include "percpu_ringbuf.h"
#include "trace_event.h"
#include "trace_lat.h"

#ifndef TRACE_HAVE_BLOCK_IO_START
#error "trace_disk.c: compile with the disk source's needs (TRACE_HAVE_BLOCK_IO_START)"
#endif

#ifndef TRACE_DISK_MAX_REQS
#define TRACE_DISK_MAX_REQS 16384
#endif

struct disk_key {
    u64 sector;
    u32 dev;
    u32 pad;
};

/* One request in flight. */
struct disk_req {
    u64 insert_ns;  /* 0: not inserted */
    u64 issue_ns;   /* 0: not issued yet */
    u64 cgroup;     /* the issuer's */
    u64 comm[2];
    u32 pid;
    u32 tid;
    u32 uid;
    u32 gid;
    u32 bytes;      /* at its issue */
    u32 skip;       /* the filters rejected its issuer */
};

BPF_TABLE("lru_hash", struct disk_key, struct disk_req, reqs, TRACE_DISK_MAX_REQS);
BPF_HASH(disk_hist, u64, u64, 16384);  /* ~60 buckets a device in use */
BPF_PERCPU_ARRAY(hist_lost, u64, 1);   /* latencies a full disk_hist could not count */
BPF_PERCPU_ARRAY(drops, u64, 1);

/* A new entry for the request at `k`, its issuer the current task. */
static __always_inline void begin(struct disk_req *r)
{
    void *task = TRACE_CURRENT_TASK();
    u64 id = TRACE_PID_TGID_OF(task);
    if (trace_skip_current_of(id >> 32, task)) {
        r->skip = 1;
        return;
    }
    u64 ids = bpf_get_current_uid_gid();
    r->pid = id >> 32;
    r->tid = (u32)id;
    r->uid = (u32)ids;
    r->gid = ids >> 32;
    trace_task_comm_of(task, r->comm);
    r->cgroup = trace_task_cgroup(task);
}

#if TRACE_HAVE_BLOCK_IO_START
TRACEPOINT_PROBE(block, block_io_start)
{
    struct disk_key k = {args->sector, args->dev, 0};
    struct disk_req r = {};
    begin(&r);
    reqs.update(&k, &r);  /* a new request: a stale entry at its sector is replaced */
    return 0;
}
#endif

TRACEPOINT_PROBE(block, block_rq_insert)
{
    u64 now = bpf_ktime_get_ns();
    struct disk_key k = {args->sector, args->dev, 0};
    struct disk_req *r = reqs.lookup(&k);
    if (r && !r->issue_ns) {  /* else none, or a stale one (it was issued) */
        r->insert_ns = now;
        return 0;
    }
    struct disk_req fresh = {};
    begin(&fresh);
    fresh.insert_ns = now;
    reqs.update(&k, &fresh);
    return 0;
}

TRACEPOINT_PROBE(block, block_rq_issue)
{
    u64 now = bpf_ktime_get_ns();
    struct disk_key k = {args->sector, args->dev, 0};
    struct disk_req *r = reqs.lookup(&k);
    if (r && !r->issue_ns) {
        r->issue_ns = now;
        r->bytes = args->bytes;
        return 0;
    }
    if (r && r->insert_ns > r->issue_ns) {  /* requeued, inserted again: issued anew */
        r->issue_ns = now;
        r->bytes = args->bytes;
        return 0;
    }
    struct disk_req fresh = {};
    begin(&fresh);
    fresh.issue_ns = now;
    fresh.bytes = args->bytes;
    reqs.update(&k, &fresh);
    return 0;
}

/* Count latency `ns` of device `dev` in disk_hist. */
static __always_inline void count_latency(u32 dev, u64 ns)
{
    u64 key = ((u64)dev << TRACE_LAT_KEY_BITS) | lat_bucket(ns);
    u64 *n = disk_hist.lookup(&key);
    if (n) {
        __sync_fetch_and_add(n, 1);
        return;
    }
    u64 one = 1;
    if (disk_hist.insert(&key, &one)) {  /* another CPU was first, or the map is full */
        n = disk_hist.lookup(&key);
        if (n)
            __sync_fetch_and_add(n, 1);
        else
            hist_lost.increment(0);
    }
}

TRACEPOINT_PROBE(block, block_rq_complete)
{
    u64 now = bpf_ktime_get_ns();
    struct disk_key k = {args->sector, args->dev, 0};
    struct disk_req *r = reqs.lookup(&k);
    if (!r)
        return 0;
    if (r->skip || !r->issue_ns)
        goto out;
    u64 service = now - r->issue_ns;
    count_latency(args->dev, service);
#ifdef TRACE_FILTER_FAILED
    if (!args->error)
        goto out;
#endif
    void *ring;
    struct trace_disk *e = rt_pcpu_reserve_in(&ring, sizeof(*e));
    if (!e) {
        drops.increment(0);
        goto out;
    }
    e->h.ts = now;
    e->h.type = TRACE_DISK;
    e->h.cpu = bpf_get_smp_processor_id();
    e->h.pid = r->pid;
    e->h.tid = r->tid;
    u64 *words = (u64 *)e->h.comm;
    words[0] = r->comm[0];
    words[1] = r->comm[1];
    e->h.cgroup = r->cgroup;
    e->uid = r->uid;
    e->gid = r->gid;
    e->sector = args->sector;
    e->service_ns = service;
    e->queue_ns = r->insert_ns && r->insert_ns <= r->issue_ns ? r->issue_ns - r->insert_ns : 0;
    e->dev = args->dev;
    e->bytes = r->bytes;
    e->error = args->error;
    u64 *rwbs = (u64 *)e->rwbs;
    rwbs[0] = 0;
    rwbs[1] = 0;
    bpf_probe_read_kernel(e->rwbs, sizeof(args->rwbs) < TRACE_RWBS_LEN - 1
                                       ? sizeof(args->rwbs) : TRACE_RWBS_LEN - 1, args->rwbs);
    RT_PCPU_SUBMIT_TO(args, ring, e, sizeof(*e));
out:
    reqs.delete(&k);
    return 0;
}
