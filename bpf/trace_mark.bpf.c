/* ringtool trace: `ringtool mark TEXT` markers into the trace's rings.
 *
 * `marks` is a BPF_MAP_TYPE_USER_RINGBUF (Linux 6.1) the marker writes into: each
 * sample is exactly TRACE_DATA_LEN bytes, the text NUL-padded. `drain` (a raw
 * tracepoint program that is never attached: `ringtool mark` runs it with
 * BPF_PROG_TEST_RUN right after writing, on its own CPU) drains `marks` and turns each
 * sample into a struct trace_event of type TRACE_MARK -- the header of the marking
 * task, ts = bpf_ktime_get_ns() at the drain -- in the ring of the CPU it runs on, found
 * through the group's outer map exactly as the trace sources find theirs
 * (bpf/percpu_ringbuf.h: a ring swapped at run time is the one used).
 *
 * Built with clang and loaded by libbpf (ringtool/programs/clang_loader.py), not BCC:
 * BCC 0.26 cannot load the drain's callback (a BPF_PSEUDO_FUNC relocation). The
 * group's three maps are the trace's own, passed to libbpf by their pins (so the
 * declarations below must match them: RT_PCPU_OUTER_ENTRIES and RT_PCPU_NCPU from
 * ringtool/trace/reading/marks.py); `marks` (MARK_RING_BYTES) and `mark_gate` are made by
 * ringtool/trace/reading/marks.py and passed the same way.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
    __uint(max_entries, RT_PCPU_OUTER_ENTRIES);
    __type(key, u32);
    __type(value, u32);
} rt_rings SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, RT_PCPU_NCPU);
    __type(key, u32);
    __type(value, u32);
} rt_cpumap SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, u64);
} rt_drops SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_USER_RINGBUF);
    __uint(max_entries, MARK_RING_BYTES);
} marks SEC(".maps");

/* The trace's gate: 0 while it takes markers; it sets 1 before its last read
 * (ringtool/trace/reading/marks.py MarkSource.close), and from then on `drain` refuses
 * (-MARK_ENDED, ESHUTDOWN from ringtool/trace/reading/marks.py): a marker drained later would
 * go into a ring nobody reads again. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, u32);
} mark_gate SEC(".maps");

/* percpu_ringbuf.h names maps by fd for BCC; here they are the declared maps */
#define RT_PCPU_MAP(m) ((void *)&(m))
#define RT_PCPU_RINGS_FD rt_rings
#define RT_PCPU_CPUMAP_FD rt_cpumap
#define RT_PCPU_DROPS_FD rt_drops
#include "percpu_ringbuf.h"
#include "trace_event.h"

/* what `drain` tells the marker: did the last sample it drained reach the trace? */
struct mark_drain {
    u32 last_lost;
};

static long mark_one(struct bpf_dynptr *sample, void *ctx)
{
    struct mark_drain *d = ctx;
    struct trace_event *e = rt_pcpu_reserve(sizeof(*e));

    d->last_lost = !e;
    if (!e)
        return 0;  /* drop counted; the marker is consumed */
    trace_fill_hdr(&e->h, TRACE_MARK);
    trace_fill_ids(e);
    e->value = 0;
    e->ppid = 0;
    e->ret = 0;
    e->aux = 0;
    e->aux2 = 0;
    e->call = 0;
    e->mode = 0;
    e->data_len = TRACE_DATA_LEN_UNKNOWN;  /* the text's end: the reader finds it */
    e->pad = 0;
    /* a sample of another size is refused here (-E2BIG): an empty text */
    if (bpf_dynptr_read(e->data, TRACE_DATA_LEN, sample, 0, 0))
        e->data[0] = 0;
    e->data[TRACE_DATA_LEN - 1] = 0;
    rt_pcpu_submit(e, sizeof(*e));
    return 0;
}

/* The return value (BPF_PROG_TEST_RUN's retval) is -MARK_ENDED when the trace closed
 * its gate (nothing drained), else bpf_user_ringbuf_drain's error (negative: -EBUSY,
 * -EINVAL on a corrupt ring, -E2BIG), else 1 when the last sample drained found the
 * trace's ring full (dropped, counted in rt_drops), else 0. */
SEC("raw_tp")
int drain(void *ctx)
{
    struct mark_drain d = {0};
    u32 zero = 0;
    u32 *ended = bpf_map_lookup_elem(&mark_gate, &zero);

    if (!ended || *ended)
        return -MARK_ENDED;
    long n = bpf_user_ringbuf_drain(&marks, mark_one, &d, 0);

    if (n < 0)
        return n;
    return d.last_lost;
}

char LICENSE[] SEC("license") = "GPL";
