/* tests/bridge_e2e/capture_client.c — a proxy-unaware C client: getaddrinfo
 * and connect, then one plain HTTP request; prints the first bytes back. */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    int e = getaddrinfo(argv[1], argv[2], &hints, &res);
    if (e != 0) {
        printf("getaddrinfo: %s\n", gai_strerror(e));
        return 1;
    }
    int s = socket(res->ai_family, SOCK_STREAM, 0);
    if (s < 0 || connect(s, res->ai_addr, res->ai_addrlen) != 0) {
        perror("connect");
        return 1;
    }
    char req[512];
    snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", argv[1]);
    if (write(s, req, strlen(req)) < 0) return 1;
    char buf[1024];
    ssize_t n = read(s, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    printf("%s\n", buf);
    return 0;
}
