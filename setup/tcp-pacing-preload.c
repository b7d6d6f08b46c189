/*
 * tcp-pacing-preload: makes a server's TCP sockets pace, without the fq qdisc.
 *
 * Linux paces a TCP socket by itself (an hrtimer per socket, "internal
 * pacing") when its congestion control asks for it (BBR) or when the socket
 * has SO_MAX_PACING_RATE set to anything but ~0 ("no limit", which leaves
 * pacing off). It then sends at the rate TCP computes (sk_pacing_rate: 200 %
 * of cwnd/srtt in slow start, 120 % after), capped by the maximum. This
 * library, loaded into a server with LD_PRELOAD, sets SO_MAX_PACING_RATE to
 * UINT64_MAX - 1 bytes/s (no cap, but not "unset") on every TCP socket that
 * listen()s and on every socket accept() returns. Accepted sockets inherit
 * the setting from the listener anyway; setting it again costs nothing.
 *
 * nginx has no option for SO_MAX_PACING_RATE; the testbed starts nginx with
 * LD_PRELOAD pointing here for protocol settings with pacing on
 * (testbed/protocols/apply.py). Without fq this is the only way to pace an
 * unmodified server's TCP.
 *
 * Built by setup/setup.sh (step pacing) into .tools/lib/tcp-pacing-preload.so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif

static void pace(int fd)
{
    int type = 0, domain = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return;
    len = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
        (domain != AF_INET && domain != AF_INET6))
        return;
    /* 64 bits: the kernel reads an unsigned long when optlen allows it. */
    uint64_t rate = UINT64_MAX - 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate);
}

int listen(int fd, int backlog)
{
    static int (*real_listen)(int, int);
    if (!real_listen)
        real_listen = (int (*)(int, int))dlsym(RTLD_NEXT, "listen");
    pace(fd);
    return real_listen(fd, backlog);
}

int accept(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
    static int (*real_accept)(int, struct sockaddr *, socklen_t *);
    if (!real_accept)
        real_accept = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    int s = real_accept(fd, addr, addrlen);
    if (s >= 0)
        pace(s);
    return s;
}

int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);
    if (!real_accept4)
        real_accept4 = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT,
                                                                               "accept4");
    int s = real_accept4(fd, addr, addrlen, flags);
    if (s >= 0)
        pace(s);
    return s;
}
