/* ringtool tests: a BPF consumer of a BPF_MAP_TYPE_USER_RINGBUF (Linux 6.1).
 *
 * Built with clang and loaded by libbpf (bpftool), not BCC: the callback of
 * bpf_user_ringbuf_drain() is a BPF subprogram whose address is an ld_imm64 with
 * src_reg BPF_PSEUDO_FUNC, which BCC 0.26 never relocates (the verifier then sees
 * "R2 type=scalar expected=func"). See ringtool/programs/clang_loader.py.
 *
 * drain (a raw tracepoint program run with BPF_PROG_TEST_RUN, never attached) drains
 * every submitted sample. Each sample starts with a u32: the length of the whole
 * sample (at most URB_COPY_MAX); the sample is copied whole into `out` (a RINGBUF) as
 * a struct urb_copy so the test compares bytes. The drain's return value (the number
 * of samples, or a negative errno: -EINVAL for a malformed record) goes to
 * result[0], the number of drains to result[1].
 *
 * -D: URB_BYTES (the user ring's size).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define URB_COPY_MAX 256

struct urb_copy {
    __u32 len;        /* what the sample says its length is */
    __s32 err;        /* bpf_dynptr_read's result (0: copied) */
    __u8 data[URB_COPY_MAX];
};

struct {
    __uint(type, BPF_MAP_TYPE_USER_RINGBUF);
    __uint(max_entries, URB_BYTES);
} urb SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 20);
} out SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __s64);
} result SEC(".maps");

static long copy_one(struct bpf_dynptr *dynptr, void *ctx)
{
    struct urb_copy *c;
    __u32 len = 0;

    if (bpf_dynptr_read(&len, sizeof(len), dynptr, 0, 0))
        return 0;
    c = bpf_ringbuf_reserve(&out, sizeof(*c), 0);
    if (!c)
        return 1;  /* stop: the test's out ring is full */
    c->len = len;
    if (len > URB_COPY_MAX)
        len = URB_COPY_MAX;
    c->err = bpf_dynptr_read(c->data, len, dynptr, 0, 0);
    bpf_ringbuf_submit(c, 0);
    return 0;
}

SEC("raw_tp")
int drain(void *ctx)
{
    __u32 k0 = 0, k1 = 1;
    long n = bpf_user_ringbuf_drain(&urb, copy_one, NULL, 0);
    __s64 *r = bpf_map_lookup_elem(&result, &k0);

    if (r)
        *r = n;
    r = bpf_map_lookup_elem(&result, &k1);
    if (r)
        *r += 1;
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
