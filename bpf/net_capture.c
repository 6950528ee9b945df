/* Payload capture for ringtool's PERF_EVENT_ARRAY consumer: the case perf buffers
 * serve and RINGBUF does not (the kernel appends packet bytes to the record).
 *
 * A TC (SCHED_CLS, direct-action) program: for every packet it outputs a small
 * struct capture_event into `captures` *and* asks bpf_perf_event_output to append
 * the first `captured` bytes of the packet from the context (the length goes in the
 * BPF_F_CTXLEN_MASK bits of the flags, bits 32..51), so the kernel copies the
 * payload straight into the perf record with no scratch buffer in the program.
 * The consumer receives: struct capture_event, then `captured` packet bytes (from
 * the MAC header), then kernel padding. ringtool/programs/netcapture.py decodes it.
 * cflags: -DNET_CAPTURE_MAX=N caps the bytes copied per packet (default 1514).
 */
#include <uapi/linux/bpf.h>
#include <uapi/linux/pkt_cls.h>

#ifndef NET_CAPTURE_MAX
#define NET_CAPTURE_MAX 1514
#endif

#define NET_CAPTURE_MAGIC 0x50414352 /* "RCAP" */

/* Mirrored by CAPTURE_EVENT in ringtool/programs/netcapture.py. */
struct capture_event {
    u32 magic;
    u32 ifindex;
    u32 pkt_len;   /* skb->len: the whole packet */
    u32 captured;  /* packet bytes appended after this struct */
    u64 ts_ns;     /* bpf_ktime_get_ns() */
};

BPF_PERF_OUTPUT(captures);

int capture(struct __sk_buff *skb)
{
    struct capture_event ev = {};
    u64 cap = skb->len;
    if (cap > NET_CAPTURE_MAX)
        cap = NET_CAPTURE_MAX;
    ev.magic = NET_CAPTURE_MAGIC;
    ev.ifindex = skb->ifindex;
    ev.pkt_len = skb->len;
    ev.captured = cap;
    ev.ts_ns = bpf_ktime_get_ns();
    /* BCC rewrites this into bpf_perf_event_output(skb, &captures,
     * BPF_F_CURRENT_CPU | (cap << 32), &ev, sizeof(ev)): `cap` in BPF_F_CTXLEN_MASK
     * tells the helper to append that many bytes of the skb (bpf_skb_event_output). */
    captures.perf_submit_skb(skb, cap, &ev, sizeof(ev));
    return TC_ACT_OK;
}
