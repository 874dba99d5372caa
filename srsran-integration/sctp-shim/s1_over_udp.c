/*
 * S1-MME over UDP datagrams, for kernels built without SCTP.
 *
 * Why: srsENB and srsEPC speak S1AP to each other over the kernel's SCTP
 * sockets (lksctp). Some kernels leave SCTP out (CONFIG_IP_SCTP unset, as on
 * the Firecracker kernel continuum is developed on), and then the eNB cannot
 * reach the MME at all. Loaded with LD_PRELOAD into both programs, this
 * library turns their SCTP sockets into UDP sockets on the same addresses
 * and carries each SCTP message as one datagram: the S1AP messages
 * themselves are srsRAN's own, unchanged. Only the control plane's transport
 * differs (one datagram per message on the namespace's loopback, where
 * nothing is lost or reordered), never the user plane a run measures
 * (PHY, MAC, RLC, PDCP, GTP-U). continuum uses it only where
 * socket(AF_INET, SOCK_SEQPACKET, IPPROTO_SCTP) fails, and the run's
 * manifest says so.
 *
 * What srsRAN 4G (release 23.11) calls, and what each becomes:
 *   socket(.., SOCK_SEQPACKET|SOCK_STREAM, IPPROTO_SCTP)  a UDP socket
 *   setsockopt/getsockopt at IPPROTO_SCTP (events, RTO, INIT)  accepted, zeros
 *   listen                                                 accepted (datagrams need none)
 *   bind, connect                                          the UDP socket's own
 *   sctp_sendmsg, sctp_send                                one datagram: a header, then the message
 *   sctp_recvmsg                                           one datagram; the peer becomes an association
 * No notifications are delivered: srsRAN only reacts to them (shutdown,
 * lost peer), it never waits for one.
 *
 * Build: cc -shared -fPIC -O2 -o s1_over_udp.so s1_over_udp.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/sctp.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FD 65536
#define MAX_ASSOC 64
#define MAGIC 0x53315550u /* "S1UP" */

struct header {
  uint32_t magic;
  uint32_t ppid; /* as the sender gave it (network order by S1AP's habit) */
  uint16_t stream;
  uint16_t pad;
};

static volatile unsigned char is_shimmed[MAX_FD];
static struct sockaddr_storage assoc_addr[MAX_ASSOC];
static socklen_t assoc_len[MAX_ASSOC];
static int n_assoc;
static pthread_mutex_t assoc_lock = PTHREAD_MUTEX_INITIALIZER;

#define REAL(ret, name, args) \
  static ret(*real_##name) args; \
  if (!real_##name) real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name)

static int shimmed(int fd) { return fd >= 0 && fd < MAX_FD && is_shimmed[fd]; }

/* The association id of a peer address (1-based, as SCTP's are non-zero). */
static sctp_assoc_t assoc_of(const struct sockaddr* a, socklen_t len)
{
  pthread_mutex_lock(&assoc_lock);
  for (int i = 0; i < n_assoc; i++) {
    if (assoc_len[i] == len && memcmp(&assoc_addr[i], a, len) == 0) {
      pthread_mutex_unlock(&assoc_lock);
      return i + 1;
    }
  }
  int id = 0;
  if (n_assoc < MAX_ASSOC && len <= sizeof(struct sockaddr_storage)) {
    memcpy(&assoc_addr[n_assoc], a, len);
    assoc_len[n_assoc] = len;
    id = ++n_assoc;
  }
  pthread_mutex_unlock(&assoc_lock);
  return id;
}

int socket(int domain, int type, int protocol)
{
  REAL(int, socket, (int, int, int));
  int kind = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (protocol != IPPROTO_SCTP || (kind != SOCK_SEQPACKET && kind != SOCK_STREAM)) {
    return real_socket(domain, type, protocol);
  }
  int fd = real_socket(domain, SOCK_DGRAM | (type & (SOCK_NONBLOCK | SOCK_CLOEXEC)), IPPROTO_UDP);
  if (fd >= 0 && fd < MAX_FD) {
    is_shimmed[fd] = 1;
  }
  return fd;
}

int close(int fd)
{
  REAL(int, close, (int));
  if (fd >= 0 && fd < MAX_FD) {
    is_shimmed[fd] = 0;
  }
  return real_close(fd);
}

int setsockopt(int fd, int level, int name, const void* value, socklen_t len)
{
  REAL(int, setsockopt, (int, int, int, const void*, socklen_t));
  if (shimmed(fd) && level == IPPROTO_SCTP) {
    return 0;
  }
  return real_setsockopt(fd, level, name, value, len);
}

int getsockopt(int fd, int level, int name, void* value, socklen_t* len)
{
  REAL(int, getsockopt, (int, int, int, void*, socklen_t*));
  if (shimmed(fd) && level == IPPROTO_SCTP) {
    if (value && len) {
      memset(value, 0, *len);
    }
    return 0;
  }
  return real_getsockopt(fd, level, name, value, len);
}

int listen(int fd, int backlog)
{
  REAL(int, listen, (int, int));
  if (shimmed(fd)) {
    return 0;
  }
  return real_listen(fd, backlog);
}

static int send_one(int s, const void* msg, size_t len, const struct sockaddr* to, socklen_t tolen, uint32_t ppid,
                    uint16_t stream, int flags)
{
  struct header h = {MAGIC, ppid, stream, 0};
  struct iovec  iov[2] = {{&h, sizeof h}, {(void*)msg, len}};
  struct msghdr m      = {0};
  m.msg_name           = (void*)to;
  m.msg_namelen        = to ? tolen : 0;
  m.msg_iov            = iov;
  m.msg_iovlen         = 2;
  ssize_t n            = sendmsg(s, &m, flags);
  return n < 0 ? -1 : (int)(n - (ssize_t)sizeof h);
}

int sctp_sendmsg(int s, const void* msg, size_t len, struct sockaddr* to, socklen_t tolen, uint32_t ppid,
                 uint32_t flags, uint16_t stream_no, uint32_t timetolive, uint32_t context)
{
  (void)flags, (void)timetolive, (void)context;
  if (!shimmed(s)) {
    errno = ENOTSUP;
    return -1;
  }
  return send_one(s, msg, len, to, tolen, ppid, stream_no, MSG_NOSIGNAL);
}

int sctp_send(int s, const void* msg, size_t len, const struct sctp_sndrcvinfo* sinfo, int flags)
{
  if (!shimmed(s)) {
    errno = ENOTSUP;
    return -1;
  }
  struct sockaddr_storage to;
  socklen_t               tolen = 0;
  int                     id    = sinfo ? (int)sinfo->sinfo_assoc_id : 0;
  pthread_mutex_lock(&assoc_lock);
  if (id >= 1 && id <= n_assoc) {
    memcpy(&to, &assoc_addr[id - 1], assoc_len[id - 1]);
    tolen = assoc_len[id - 1];
  }
  pthread_mutex_unlock(&assoc_lock);
  if (id && !tolen) {
    errno = EINVAL; /* an association this process never heard from */
    return -1;
  }
  return send_one(s, msg, len, tolen ? (struct sockaddr*)&to : NULL, tolen, sinfo ? sinfo->sinfo_ppid : 0,
                  sinfo ? sinfo->sinfo_stream : 0, flags | MSG_NOSIGNAL);
}

int sctp_recvmsg(int s, void* msg, size_t len, struct sockaddr* from, socklen_t* fromlen,
                 struct sctp_sndrcvinfo* sinfo, int* msg_flags)
{
  if (!shimmed(s)) {
    errno = ENOTSUP;
    return -1;
  }
  struct header           h;
  struct sockaddr_storage peer;
  struct iovec            iov[2] = {{&h, sizeof h}, {msg, len}};
  struct msghdr           m      = {0};
  m.msg_name                     = &peer;
  m.msg_namelen                  = sizeof peer;
  m.msg_iov                      = iov;
  m.msg_iovlen                   = 2;
  for (;;) {
    ssize_t n = recvmsg(s, &m, 0);
    if (n < 0) {
      return -1;
    }
    if ((size_t)n < sizeof h || h.magic != MAGIC) {
      continue; /* not one of ours: dropped, as SCTP would never have delivered it */
    }
    if (from && fromlen) {
      socklen_t copy = *fromlen < m.msg_namelen ? *fromlen : m.msg_namelen;
      memcpy(from, &peer, copy);
      *fromlen = m.msg_namelen;
    }
    if (sinfo) {
      memset(sinfo, 0, sizeof *sinfo);
      sinfo->sinfo_stream   = h.stream;
      sinfo->sinfo_ppid     = h.ppid;
      sinfo->sinfo_assoc_id = assoc_of((struct sockaddr*)&peer, m.msg_namelen);
    }
    if (msg_flags) {
      *msg_flags = MSG_EOR | ((m.msg_flags & MSG_TRUNC) ? MSG_TRUNC : 0);
    }
    return (int)(n - (ssize_t)sizeof h);
  }
}
