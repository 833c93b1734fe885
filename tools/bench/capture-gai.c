/* tools/bench/capture-gai.c — getaddrinfo latency for tools/bench/capture.sh,
 * run inside a box: NAME resolved COUNT times (after 10 unmeasured warm-up
 * calls), AF_UNSPEC and SOCK_STREAM like an ordinary client, so glibc asks
 * the box's stub for A and AAAA. One call starts every INTERVAL_US
 * microseconds (0: back to back): the stub answers at most 1000 queries a
 * second (run/capture_service.hpp) and drops the rest, so a benchmark of it
 * must stay under that. Prints
 *   "gai NAME n COUNT interval_us I median_us X p99_us Y first ADDRESS"
 * (X and Y with two decimals). Built static when libc.a is there, so it
 * runs in any rootfs. Exit 1 if a lookup fails (the failing call's error). */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* One lookup; its first address written to `first` when given. */
static int lookup(const char* name, char* first, size_t len) {
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int e = getaddrinfo(name, "443", &hints, &res);
    if (e != 0) {
        fprintf(stderr, "capture-gai: getaddrinfo(%s): %s\n", name, gai_strerror(e));
        return 1;
    }
    if (first) {
        const void* a = res->ai_family == AF_INET ? (const void*)&((struct sockaddr_in*)res->ai_addr)->sin_addr
                                                  : (const void*)&((struct sockaddr_in6*)res->ai_addr)->sin6_addr;
        inet_ntop(res->ai_family, a, first, (socklen_t)len);
    }
    freeaddrinfo(res);
    return 0;
}

/* Sleeps until `at` (CLOCK_MONOTONIC), then moves it on by `step_us`. */
static void pace(struct timespec* at, long step_us) {
    if (step_us <= 0) return;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, at, NULL);
    at->tv_nsec += step_us * 1000;
    at->tv_sec += at->tv_nsec / 1000000000;
    at->tv_nsec %= 1000000000;
}

int main(int argc, char** argv) {
    if (argc != 4 || atoi(argv[2]) < 1 || atol(argv[3]) < 0) {
        fprintf(stderr, "usage: capture-gai NAME COUNT INTERVAL_US (COUNT >= 1, INTERVAL_US >= 0)\n");
        return 2;
    }
    const char* name = argv[1];
    int n = atoi(argv[2]);
    long interval = atol(argv[3]);
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    char first[INET6_ADDRSTRLEN] = "";
    for (int i = 0; i < 10; ++i) {
        pace(&at, interval);
        if (lookup(name, first, sizeof first)) return 1;
    }
    double* t = malloc(sizeof(double) * (size_t)n);
    if (!t) return 1;
    for (int i = 0; i < n; ++i) {
        pace(&at, interval);
        double t0 = now_us();
        if (lookup(name, NULL, 0)) return 1;
        t[i] = now_us() - t0;
    }
    qsort(t, (size_t)n, sizeof(double), cmp);
    printf("gai %s n %d interval_us %ld median_us %.2f p99_us %.2f first %s\n", name, n, interval, t[n / 2],
           t[(long)n * 99 / 100], first);
    free(t);
    return 0;
}
