/* The producer of `ringtool bench trace`: real syscalls at full speed on one CPU.
 *
 * usage: syscall_loop MODE CPU SECONDS [RATE]
 *   MODE open      openat("/dev/null") + close in a loop (2 syscalls an iteration)
 *   MODE openexec  the same, plus a fork + exec of /bin/true every 64 iterations
 *                  (a busy open/exec workload: the idle-cost phase)
 *   MODE mix       openat of paths of many lengths in turn (system files, some that
 *                  do not exist: failed opens), plus a fork + exec of this program
 *                  (with arguments, so of the same comm) every 64 iterations: the
 *                  record-mix phase's "typical" trace
 *   MODE noop      exit 0 at once (what mix's children run)
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

/* mix: paths as a program's start-up and a file walk open them (the failures too) */
static const char *const MIX_PATHS[] = {
    "/etc/ld.so.cache",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/locale/locale-archive",
    "/proc/self/status",
    "/etc/nsswitch.conf",
    "/usr/share/zoneinfo/Etc/UTC",
    "/home/user/.config/ringtool-bench/settings.json",
    "/usr/lib/python3/dist-packages/__pycache__/six.cpython-311.pyc",
    "/sys/fs/cgroup/cpu.max",
    "/dev/null",
    "/etc/passwd",
    "/usr/share/locale/en_US.UTF-8/LC_MESSAGES/libc.mo",
    "/var/lib/dpkg/info/coreutils.list",
    "/tmp",
};
#define MIX_N (sizeof(MIX_PATHS) / sizeof(MIX_PATHS[0]))

static int spawn_self(const char *self)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl(self, self, "noop", "0", "0", "--from-the-mix-mode", (char *)NULL);
        _exit(127);
    }
    int status;
    return waitpid(pid, &status, 0) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "noop") == 0)
        return 0;
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s open|openexec|mix CPU SECONDS [RATE]\n", argv[0]);
        return 2;
    }
    int mix = strcmp(argv[1], "mix") == 0;
    int with_exec = mix || strcmp(argv[1], "openexec") == 0;
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
            const char *path = mix ? MIX_PATHS[n % MIX_N] : "/dev/null";
            int fd = openat(AT_FDCWD, path, O_RDONLY);
            if ((fd < 0 && !mix) || (fd >= 0 && close(fd))) {
                fprintf(stderr, "%s: open/close %s: %s\n", argv[0], path, strerror(errno));
                return 1;
            }
            n++;
            if (with_exec && (n & 63) == 0) {
                if (mix ? spawn_self(argv[0]) : spawn_true()) {
                    fprintf(stderr, "%s: fork/exec: %s\n", argv[0], strerror(errno));
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
