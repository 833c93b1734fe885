/* tools/bench/startup-timer.c — wall time of whole runs, for startup.sh.
 *
 * usage: startup-timer RUNS WARMUP NAME ARGV-FILE [NAME ARGV-FILE ...]
 * Each ARGV-FILE holds one command line, NUL-separated. Round r runs every
 * configuration once, starting at configuration r % n, so order effects and
 * machine noise spread over all of them. A run is timed from just before
 * posix_spawn to the return of waitpid: start, exit and (for corral) its own
 * verified teardown, which happens before corral exits. stdout/stderr of the
 * commands go to /dev/null. Prints per configuration: name, runs, median, p10,
 * p90, min, max in milliseconds. Exits 1 if any run exits non-zero.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct config {
    const char *name;
    char **argv;
    double *ms;
};

static char **read_argv(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    char *copy = malloc(n + 1);
    memcpy(copy, buf, n);
    copy[n] = 0;
    char **argv = calloc(n + 2, sizeof *argv);
    size_t k = 0;
    for (size_t i = 0; i < n; i += strlen(copy + i) + 1) argv[k++] = copy + i;
    argv[k] = NULL;
    return argv;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int run_once(char **argv, double *ms) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    double t0 = now_ms();
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    if (rc != 0) { fprintf(stderr, "posix_spawn %s: %s\n", argv[0], strerror(rc)); exit(2); }
    int status;
    while (waitpid(pid, &status, 0) < 0) {}
    *ms = now_ms() - t0;
    posix_spawn_file_actions_destroy(&fa);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double p) {
    double idx = p * (n - 1);
    int lo = (int)idx;
    int hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (idx - lo);
}

int main(int argc, char **argv) {
    if (argc < 5 || (argc - 3) % 2) {
        fprintf(stderr, "usage: %s RUNS WARMUP NAME ARGV-FILE [NAME ARGV-FILE ...]\n", argv[0]);
        return 2;
    }
    int runs = atoi(argv[1]), warmup = atoi(argv[2]), n = (argc - 3) / 2, failed = 0;
    struct config *c = calloc(n, sizeof *c);
    for (int i = 0; i < n; ++i) {
        c[i].name = argv[3 + 2 * i];
        c[i].argv = read_argv(argv[4 + 2 * i]);
        c[i].ms = calloc(runs, sizeof(double));
    }
    for (int r = -warmup; r < runs; ++r) {
        for (int j = 0; j < n; ++j) {
            int i = ((r < 0 ? -r : r) + j) % n;
            double ms;
            int rc = run_once(c[i].argv, &ms);
            if (rc != 0) {
                fprintf(stderr, "%s: run exited %d\n", c[i].name, rc);
                failed = 1;
            }
            if (r >= 0) c[i].ms[r] = ms;
        }
    }
    for (int i = 0; i < n; ++i) {
        qsort(c[i].ms, runs, sizeof(double), cmp);
        printf("%s %d %.3f %.3f %.3f %.3f %.3f\n", c[i].name, runs, pct(c[i].ms, runs, 0.5),
               pct(c[i].ms, runs, 0.1), pct(c[i].ms, runs, 0.9), c[i].ms[0], c[i].ms[runs - 1]);
    }
    return failed;
}
