/* The libbpf baseline of `ringtool bench ringbuf`'s drain: libbpf's own RINGBUF
 * consumer (ring_buffer__new + ring_buffer__consume, Debian's libbpf-dev) on a map
 * whose fd this process inherited.
 *
 * usage: libbpf_drain MAP_FD
 * For each line read on stdin it drains the ring once with ring_buffer__consume and
 * prints "RECORDS NS SUM": records consumed, the nanoseconds the consume call took
 * (CLOCK_MONOTONIC around it), and the sum of each record's first u64 (the callback
 * reads it, as ringtool's consumers read their records). Exit 1 when libbpf refuses
 * the map, 2 on bad arguments.
 * Built by ringtool/bench/libbpf_drain.py: cc -O2 libbpf_drain.c -lbpf.
 */
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct acc {
    unsigned long long records;
    unsigned long long sum;
};

static int on_record(void *ctx, void *data, size_t size)
{
    struct acc *a = ctx;
    unsigned long long first = 0;
    if (size >= sizeof(first))
        memcpy(&first, data, sizeof(first));
    a->sum += first;
    a->records++;
    return 0;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MAP_FD\n", argv[0]);
        return 2;
    }
    struct acc a = {0, 0};
    struct ring_buffer *rb = ring_buffer__new(atoi(argv[1]), on_record, &a, NULL);
    if (!rb) {
        fprintf(stderr, "%s: ring_buffer__new failed\n", argv[0]);
        return 1;
    }
    char line[64];
    while (fgets(line, sizeof(line), stdin)) {
        a.records = 0;
        a.sum = 0;
        long long t0 = now_ns();
        int err = ring_buffer__consume(rb);
        long long t1 = now_ns();
        if (err < 0) {
            fprintf(stderr, "%s: ring_buffer__consume: %d\n", argv[0], err);
            ring_buffer__free(rb);
            return 1;
        }
        printf("%llu %lld %llu\n", a.records, t1 - t0, a.sum);
        fflush(stdout);
    }
    ring_buffer__free(rb);
    return 0;
}
