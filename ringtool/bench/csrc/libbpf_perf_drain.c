/* The libbpf baseline of `ringtool bench perfbuf`'s drain: libbpf's own perf buffer
 * consumer (perf_buffer__new_raw + perf_buffer__consume, Debian's libbpf-dev) on a
 * PERF_EVENT_ARRAY map whose fd this process inherited.
 *
 * usage: libbpf_perf_drain MAP_FD PAGE_CNT CPU
 * Opens one BPF_OUTPUT perf event on CPU (PERF_SAMPLE_RAW, wakeup_events 2^30: no
 * wakeups while the bench fills, as for ringtool's and BCC's rows), maps PAGE_CNT data
 * pages, stores the fd in the map at key CPU, then prints "ready". For each line read
 * on stdin it drains the buffer once with perf_buffer__consume and prints
 * "RECORDS NS SUM": samples consumed, the nanoseconds the consume call took
 * (CLOCK_MONOTONIC around it), and the sum of each sample's first u64 (the callback
 * reads it, as ringtool's consumers read their records). The callback does what
 * libbpf's perf_buffer__new sample path does (type check, raw size and data) and
 * counts PERF_RECORD_LOST. Exit 1 when libbpf refuses the map, 2 on bad arguments.
 * Built by ringtool/bench/perfbuf_libbpf.py: cc -O2 libbpf_perf_drain.c -lbpf.
 */
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct acc {
    unsigned long long records;
    unsigned long long lost;
    unsigned long long sum;
};

struct raw_sample {
    struct perf_event_header header;
    unsigned int size;
    char data[];
};

struct lost_record {
    struct perf_event_header header;
    unsigned long long id;
    unsigned long long lost;
};

static enum bpf_perf_event_ret on_event(void *ctx, int cpu, struct perf_event_header *e)
{
    struct acc *a = ctx;
    (void)cpu;
    if (e->type == PERF_RECORD_SAMPLE) {
        struct raw_sample *s = (struct raw_sample *)e;
        unsigned long long first = 0;
        if (s->size >= sizeof(first))
            memcpy(&first, s->data, sizeof(first));
        a->sum += first;
        a->records++;
    } else if (e->type == PERF_RECORD_LOST) {
        a->lost += ((struct lost_record *)e)->lost;
    }
    return LIBBPF_PERF_EVENT_CONT;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MAP_FD PAGE_CNT CPU\n", argv[0]);
        return 2;
    }
    int cpu = atoi(argv[3]);
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_BPF_OUTPUT;
    attr.sample_type = PERF_SAMPLE_RAW;
    attr.sample_period = 1;
    attr.wakeup_events = 1u << 30;
    struct perf_buffer_raw_opts opts;
    memset(&opts, 0, sizeof(opts));
    opts.sz = sizeof(opts);
    opts.cpu_cnt = 1;
    opts.cpus = &cpu;
    opts.map_keys = &cpu;
    struct acc a = {0, 0, 0};
    struct perf_buffer *pb = perf_buffer__new_raw(atoi(argv[1]), strtoul(argv[2], NULL, 10),
                                                  &attr, on_event, &a, &opts);
    if (!pb) {
        fprintf(stderr, "%s: perf_buffer__new_raw failed\n", argv[0]);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof(line), stdin)) {
        a.records = 0;
        a.sum = 0;
        long long t0 = now_ns();
        int err = perf_buffer__consume(pb);
        long long t1 = now_ns();
        if (err < 0) {
            fprintf(stderr, "%s: perf_buffer__consume: %d\n", argv[0], err);
            perf_buffer__free(pb);
            return 1;
        }
        printf("%llu %lld %llu\n", a.records, t1 - t0, a.sum);
        fflush(stdout);
    }
    perf_buffer__free(pb);
    return 0;
}
