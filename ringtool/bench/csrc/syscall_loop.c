/* The producer of `ringtool bench trace`: real syscalls at full speed on one CPU.
 *
 * usage: syscall_loop MODE CPU SECONDS [RATE]
 *   MODE open      openat("/dev/null") + close in a loop (2 syscalls an iteration)
 *   MODE openexec  the same, plus a fork + exec of /bin/true every 64 iterations
 *                  (a busy open/exec workload: the idle-cost phase)
 *   CPU            the CPU to pin to (sched_setaffinity), -1: leave as is
 *   SECONDS        how long to run (CLOCK_MONOTONIC, checked every 256 iterations)
 *   RATE           iterations a second, paced (sleeping until each one's time,
 *                  clock_nanosleep TIMER_ABSTIME); 0 or left out: full speed
 *
 * Prints one line on stdout at the end: "ITERATIONS ELAPSED_NS CPU_NS EXECS":
 * wall time, and this thread's own CPU time (CLOCK_THREAD_CPUTIME_ID: user + system,
 * BPF programs on its syscalls included, time other processes ran on the CPU not).
 * Exit 2 on bad arguments, 1 when a syscall fails (with the errno on stderr).
 * Built by ringtool/bench/trace_proc.py with the system compiler (cc -O2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int spawn_true(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int status;
    return waitpid(pid, &status, 0) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s open|openexec CPU SECONDS [RATE]\n", argv[0]);
        return 2;
    }
    int with_exec = strcmp(argv[1], "openexec") == 0;
    if (!with_exec && strcmp(argv[1], "open") != 0) {
        fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[1]);
        return 2;
    }
    int cpu = atoi(argv[2]);
    double seconds = atof(argv[3]);
    if (seconds <= 0) {
        fprintf(stderr, "%s: SECONDS must be > 0\n", argv[0]);
        return 2;
    }
    double rate = argc == 5 ? atof(argv[4]) : 0;
    if (rate < 0) {
        fprintf(stderr, "%s: RATE must be >= 0\n", argv[0]);
        return 2;
    }
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set)) {
            fprintf(stderr, "%s: sched_setaffinity(%d): %s\n", argv[0], cpu, strerror(errno));
            return 1;
        }
    }
    long long start = clock_ns(CLOCK_MONOTONIC);
    long long cpu_start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    long long end = start + (long long)(seconds * 1e9);
    long long n = 0, execs = 0, t = start;
    for (;;) {
        for (int i = 0; i < 256; i++) {
            if (rate > 0) { /* paced: wait for this iteration's time */
                long long due = start + (long long)(n * 1e9 / rate);
                long long at = due < end ? due : end;
                struct timespec ts = {at / 1000000000LL, at % 1000000000LL};
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                    ;
                if (due >= end)
                    break;
            }
            int fd = openat(AT_FDCWD, "/dev/null", O_RDONLY);
            if (fd < 0 || close(fd)) {
                fprintf(stderr, "%s: open/close /dev/null: %s\n", argv[0], strerror(errno));
                return 1;
            }
            n++;
            if (with_exec && (n & 63) == 0) {
                if (spawn_true()) {
                    fprintf(stderr, "%s: fork/exec /bin/true: %s\n", argv[0], strerror(errno));
                    return 1;
                }
                execs++;
            }
        }
        t = clock_ns(CLOCK_MONOTONIC);
        if (t >= end)
            break;
    }
    long long cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    printf("%lld %lld %lld %lld\n", n, t - start, cpu_ns, execs);
    return 0;
}
