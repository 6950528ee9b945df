/* ringtool tests: a BPF consumer of a BPF_MAP_TYPE_USER_RINGBUF (Linux 6.1).
 *
 * BCC 0.26 has the bpf_user_ringbuf_drain() helper but no table type for the map, so
 * ringtool creates the map (ringtool.kernel.bpf.map_create) and this program names it
 * by fd, as bpf/percpu_ringbuf.h does: -DURB_FD=<fd>.
 *
 * drain (a raw tracepoint program, run with BPF_PROG_TEST_RUN, never attached) drains
 * every submitted sample: each sample starts with a u32 length (the whole sample's,
 * at most URB_COPY_MAX bytes), and is copied whole into `out` (a RINGBUF) as a
 * struct urb_copy, so the test compares bytes. The drain's return value (the number of
 * samples, or a negative errno such as -EINVAL for a malformed record) is stored in
 * `result[0]` and the number of drain calls in `result[1]`.
 */
#define URB_COPY_MAX 256

struct urb_copy {
    u32 len;          /* the sample's length as it said */
    s32 err;          /* bpf_dynptr_read's result (0: copied) */
    u8 data[URB_COPY_MAX];
};

BPF_RINGBUF_OUTPUT(out, 64);
BPF_ARRAY(result, s64, 2);

static long urb_copy_one(struct bpf_dynptr *dynptr, void *ctx)
{
    struct urb_copy c = {};
    u32 len = 0;
    if (bpf_dynptr_read(&len, sizeof(len), dynptr, 0, 0))
        return 0;
    c.len = len;
    if (len > URB_COPY_MAX)
        len = URB_COPY_MAX;
    len &= 0x1ff;
    if (len > URB_COPY_MAX)
        return 0;
    c.err = bpf_dynptr_read(c.data, len, dynptr, 0, 0);
    out.ringbuf_output(&c, sizeof(c), 0);
    return 0;
}

RAW_TRACEPOINT_PROBE(sys_enter)
{
    int k0 = 0, k1 = 1;
    long n = bpf_user_ringbuf_drain((void *)bpf_pseudo_fd(1, URB_FD), urb_copy_one, NULL, 0);
    s64 *r = result.lookup(&k0);
    if (r)
        *r = n;
    r = result.lookup(&k1);
    if (r)
        *r += 1;
    return 0;
}
