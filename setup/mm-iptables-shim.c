/*
 * mm-iptables-shim: lets Mahimahi's setuid shells run iptables >= 1.8.8.
 *
 * Mahimahi's shells (mm-delay, mm-link, mm-loss) are setuid root and run
 * /usr/sbin/iptables with real uid = the calling user and effective uid = 0.
 * Since 1.8.8, iptables refuses that combination ("exited with failure status
 * 111"). This shim, executed in place of iptables, sets the real uid and gid
 * to the effective ones and execs the real iptables.
 *
 * It is not setuid and gains nothing on its own: run by a process whose
 * effective uid is not 0, the real iptables runs unchanged (and refuses as
 * before). The testbed exposes it only inside its own mount namespaces,
 * where /etc/alternatives is replaced by a per-run copy in which `iptables`
 * points here (testbed/emulate/enter.py); the system's files are untouched.
 *
 * REAL_IPTABLES is the resolved iptables binary, fixed at build time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef REAL_IPTABLES
#define REAL_IPTABLES "/usr/sbin/xtables-nft-multi"
#endif

int main(int argc, char *argv[])
{
    (void)argc;
    if (geteuid() == 0) {
        if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) {
            perror("mm-iptables-shim: setresuid");
            return 111;
        }
    }
    /* xtables-*-multi dispatch on argv[0]: keep the name "iptables". */
    argv[0] = "iptables";
    execv(REAL_IPTABLES, argv);
    fprintf(stderr, "mm-iptables-shim: exec %s: %s\n", REAL_IPTABLES, strerror(errno));
    return 111;
}
