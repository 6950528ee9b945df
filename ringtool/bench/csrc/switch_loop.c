/* ringtool bench trace's context-switch producer (ringtool/bench/trace_switch.py).
 *
 * Usage: switch_loop CPU SECONDS. Two processes pinned to CPU hand one byte back and
 * forth over two pipes for SECONDS: each round trip is two writes, two reads, two
 * wakeups and two context switches. Prints "ROUNDS ELAPSED_NS CPU_NS": the parent's
 * CLOCK_MONOTONIC over the loop, and the CPU time of both processes (the parent's
 * CLOCK_PROCESS_CPUTIME_ID over the loop, the child's from wait's rusage: the BPF
 * programs of their switches and syscalls included, other processes' time not).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s CPU SECONDS\n", argv[0]);
        return 2;
    }
    int cpu = atoi(argv[1]);
    double seconds = atof(argv[2]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        fprintf(stderr, "%s: sched_setaffinity(%d): %s\n", argv[0], cpu, strerror(errno));
        return 1;
    }
    int to_child[2], to_parent[2];
    if (pipe(to_child) != 0 || pipe(to_parent) != 0) {
        fprintf(stderr, "%s: pipe: %s\n", argv[0], strerror(errno));
        return 1;
    }
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "%s: fork: %s\n", argv[0], strerror(errno));
        return 1;
    }
    char c = 0;
    if (child == 0) {  /* echo until the parent closes its end */
        close(to_child[1]);
        close(to_parent[0]);
        while (read(to_child[0], &c, 1) == 1)
            if (write(to_parent[1], &c, 1) != 1)
                _exit(1);
        _exit(0);
    }
    close(to_child[0]);
    close(to_parent[1]);
    long long cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    long long start = now_ns(), end = start + (long long)(seconds * 1e9), t = start;
    long long rounds = 0;
    while (t < end) {
        for (int i = 0; i < 256; i++) {
            if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1) {
                fprintf(stderr, "%s: pipe round trip: %s\n", argv[0], strerror(errno));
                return 1;
            }
        }
        rounds += 256;
        t = now_ns();
    }
    long long cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    close(to_child[1]);
    int status = 0;
    struct rusage ru;
    if (wait4(child, &status, 0, &ru) < 0) {
        fprintf(stderr, "%s: wait4: %s\n", argv[0], strerror(errno));
        return 1;
    }
    cpu_ns += (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
    printf("%lld %lld %lld\n", rounds, t - start, cpu_ns);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
