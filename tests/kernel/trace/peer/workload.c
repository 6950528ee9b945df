/* The peer check's workload (tests/kernel/test_trace_peer_bpftrace.py): every call of
 * the open family, successful and failed, and exec attempts with odd argv, successful
 * and failed, as raw syscalls (glibc's open() is openat(2)). It writes its own ground
 * truth, one line per call, to argv[1]:
 *   open <pid> <uid> <call> <flags> <mode> <ret> <hex path>
 *   exec <pid> <uid> <call> <ret> <hex filename> <hex arg>...
 * Usage: workload TRUTH NAME DIR PROG: sets its comm to NAME (PROG: /bin/true under
 * that name, so an exec keeps it), prints "ready", waits for a line on stdin, works in
 * DIR, and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static FILE *truth;

static void hex(const char *s)
{
    fputc(' ', truth);
    if (!*s)
        fputc('-', truth);  /* the empty string */
    for (; *s; s++)
        fprintf(truth, "%02x", (unsigned char)*s);
}

static long result(long r)
{
    return r < 0 ? -errno : r;
}

/* One open-family call already made: its line. */
static long rec_open(const char *call, const char *path, long flags, long mode, long ret)
{
    fprintf(truth, "open %d %d %s %ld %ld %ld", getpid(), getuid(), call, flags, mode, ret);
    hex(path);
    fputc('\n', truth);
    fflush(truth);
    if (ret >= 0)
        close(ret);
    return ret;
}

static void rec_exec(pid_t pid, const char *call, long ret, const char *file, char *const argv[])
{
    fprintf(truth, "exec %d %d %s %ld", pid, getuid(), call, ret);
    hex(file);
    for (int i = 0; argv[i]; i++)
        hex(argv[i]);
    fputc('\n', truth);
    fflush(truth);
}

static char *const env[] = {"RTC_PEER=1", NULL};

/* Read every byte of `s` and of the strings of `argv` (NULL: none). A tracer reads user
 * memory without faulting, and after fork a child's read-only data pages are not
 * mapped until touched: an untouched string reads as nothing (in any tracer that
 * reads it before the kernel did). So the child touches what it passes first. */
static void prefault(const char *s, char *const argv[])
{
    static volatile unsigned char sink;
    for (; *s; s++)
        sink += *s;
    for (int i = 0; argv && argv[i]; i++)
        prefault(argv[i], NULL);
}

/* An exec attempt in this process that must fail. */
static void failed_exec(int at, const char *file, char *const argv[])
{
    long r = at ? syscall(SYS_execveat, AT_FDCWD, file, argv, env, 0)
                : syscall(SYS_execve, file, argv, env);
    rec_exec(getpid(), at ? "execveat" : "execve", result(r), file, argv);
}

/* An exec attempt of `prog` in a child; recorded with 0 when it ran and exited 0. */
static void child_exec(int at, const char *prog, char *const argv[])
{
    fflush(truth);
    pid_t pid = fork();
    if (pid == 0) {
        prefault(prog, argv);
        prefault(env[0], NULL);
        if (at)
            syscall(SYS_execveat, AT_FDCWD, prog, argv, env, 0);
        else
            syscall(SYS_execve, prog, argv, env);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    rec_exec(pid, at ? "execveat" : "execve",
             WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1, prog, argv);
}

static void opens(const char *dir)
{
    char a[512], b[512], c[512], missing[512];
    snprintf(a, sizeof(a), "%s/a.txt", dir);
    snprintf(b, sizeof(b), "%s/b.txt", dir);
    snprintf(c, sizeof(c), "%s/c.txt", dir);
    snprintf(missing, sizeof(missing), "%s/no-such-dir/x", dir);
    long f;

    f = O_WRONLY | O_CREAT | O_TRUNC;
    rec_open("openat", a, f, 0640, result(syscall(SYS_openat, AT_FDCWD, a, f, 0640)));
    rec_open("openat", missing, O_RDONLY | O_DIRECTORY, 0,
             result(syscall(SYS_openat, AT_FDCWD, missing, O_RDONLY | O_DIRECTORY, 0)));
    rec_open("open", a, O_RDONLY, 0, result(syscall(SYS_open, a, O_RDONLY, 0)));
    f = O_RDWR | O_APPEND | O_CLOEXEC;
    rec_open("open", missing, f, 0, result(syscall(SYS_open, missing, f, 0)));
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW};
    rec_open("openat2", a, how.flags, 0,
             result(syscall(SYS_openat2, AT_FDCWD, a, &how, sizeof(how))));
    struct open_how excl = {.flags = O_RDWR | O_CREAT | O_EXCL, .mode = 0600};
    rec_open("openat2", a, excl.flags, 0600,
             result(syscall(SYS_openat2, AT_FDCWD, a, &excl, sizeof(excl))));
    f = O_CREAT | O_WRONLY | O_TRUNC;  /* what creat(2) opens with */
    rec_open("creat", b, f, 0600, result(syscall(SYS_creat, b, 0600)));
    rec_open("creat", missing, f, 0644, result(syscall(SYS_creat, missing, 0644)));

    /* open_by_handle_at: a handle of a.txt, opened through a directory fd */
    struct { struct file_handle h; unsigned char bytes[128]; } fh = {};
    fh.h.handle_bytes = sizeof(fh.bytes);
    int mount_id;
    long dfd = syscall(SYS_openat, AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
    fprintf(truth, "open %d %d openat %d 0 %ld", getpid(), getuid(), O_RDONLY | O_DIRECTORY,
            result(dfd));
    hex(dir);
    fputc('\n', truth);
    if (syscall(SYS_name_to_handle_at, AT_FDCWD, a, &fh.h, &mount_id, 0) == 0)
        rec_open("open_by_handle_at", "", O_RDONLY, 0,
                 result(syscall(SYS_open_by_handle_at, dfd, &fh.h, O_RDONLY)));
    memset(fh.bytes, 0xee, sizeof(fh.bytes));  /* a handle of nothing */
    rec_open("open_by_handle_at", "", O_RDWR, 0,
             result(syscall(SYS_open_by_handle_at, dfd, &fh.h, O_RDWR)));
    close(dfd);
    rec_open("openat", c, O_RDWR | O_CREAT | O_EXCL, 0600,
             result(syscall(SYS_openat, AT_FDCWD, c, O_RDWR | O_CREAT | O_EXCL, 0600)));
}

int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    truth = fopen(argv[1], "w");
    const char *name = argv[2], *dir = argv[3], *prog = argv[4];
    if (!truth || prctl(PR_SET_NAME, name, 0, 0, 0))
        return 2;
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof(line), stdin))
        return 2;

    opens(dir);

    char a[512];
    snprintf(a, sizeof(a), "%s/a.txt", dir);  /* mode 0640: not executable */
    char *none[] = {NULL};
    char *odd[] = {"", "a b", "\x1b[2J\x1b]0;x\x07", "\xff\xfe", "tab\there", "caf\xc3\xa9",
                   "", NULL};
    char *many[30];
    char nums[25][4];
    for (int i = 0; i < 25; i++) {
        snprintf(nums[i], sizeof(nums[i]), "%d", i);
        many[i] = nums[i];
    }
    many[25] = NULL;
    char *plain[] = {(char *)prog, "-x", "--long=1", NULL};
    failed_exec(0, "/nonexistent-rtc/sh", odd);           /* ENOENT */
    failed_exec(1, "/nonexistent-rtc/sh", plain);         /* ENOENT, execveat */
    failed_exec(0, a, none);                              /* EACCES, no argv at all */
    failed_exec(0, "relative-rtc/x", many);               /* ENOENT, 25 args */
    child_exec(0, prog, odd);
    child_exec(1, prog, plain);
    child_exec(0, prog, many);

    /* the same as another user: uid and gid 65534 */
    fflush(truth);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(65534) || setuid(65534))
            _exit(3);
        prefault("/dev/null", NULL);
        prefault(a, plain);
        prefault("/nonexistent-rtc/nobody", NULL);
        rec_open("openat", "/dev/null", O_RDONLY, 0,
                 result(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY, 0)));
        rec_open("openat", a, O_RDONLY, 0, result(syscall(SYS_openat, AT_FDCWD, a, O_RDONLY, 0)));
        failed_exec(0, "/nonexistent-rtc/nobody", plain);
        fflush(truth);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    fclose(truth);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 4;
}
