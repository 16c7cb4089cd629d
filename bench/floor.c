/*
 * A reference client for the CPU a generator on the kernel's TCP cannot avoid: about the least a
 * program can do per request and still keep an open-loop schedule and time every answer.
 *
 * One thread, one epoll, one timerfd for the arrivals, N keep-alive connections. Poisson
 * arrivals from a fixed seed; at each arrival a fixed request is written on a free connection
 * (dropped and counted when none is free); an answer is complete when its headers and its
 * Content-Length bytes are in; its latency is timed from the intended send time. No parsing
 * beyond that, no allocation after start-up, no per-request bookkeeping beyond two arrays of
 * latencies. It is a measuring stick for bench/ab.sh, not a tool: it answers "how much of a
 * generator's CPU per request is the kernel's". (It is not a strict lower bound: a generator that
 * sends several due requests per wake-up, as loadgate's early window does, makes fewer timer
 * syscalls and wake-ups than this one-timer-per-arrival loop.) Answers must fit in 8 KiB and carry
 * Content-Length (nginx's static files do); anything else ends the run with an error.
 *
 * Usage: floor HOST PORT PATH RATE SECONDS CONNS   (writes one JSON object on stdout)
 * Loopback only: HOST must be 127.0.0.1. Bounded: stops
 * sending at SECONDS and waits at most 2 s more for answers.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 4096
#define BUF 8192

struct conn {
  int fd;
  int busy;
  uint64_t intended;
  size_t have;
  char buf[BUF];
};

static struct conn conns[MAX_CONNS];
static int free_list[MAX_CONNS];
static int free_top;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return ((rng >> 11) + 1) * (1.0 / 9007199254740993.0);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct_ms(uint64_t *v, size_t n, double q) {
  if (n == 0) return 0.0;
  size_t i = (size_t)ceil(q * (double)n);
  if (i > 0) i--;
  if (i >= n) i = n - 1;
  return (double)v[i] / 1e6;
}

/* Complete when "\r\n\r\n" is in and Content-Length bytes follow it (the header's name in any
 * case; without one, the body is taken to be empty). */
static int response_complete(struct conn *c) {
  c->buf[c->have] = 0;
  char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
  if (!end) return 0;
  size_t head = (size_t)(end - c->buf) + 4;
  size_t body = 0;
  for (char *line = c->buf; line && line < end; line = memmem(line, (size_t)(end - line), "\n", 1)) {
    if (*line == '\n') line++;
    if (strncasecmp(line, "content-length:", 15) == 0) {
      body = strtoul(line + 15, NULL, 10);
      break;
    }
  }
  return c->have >= head + body;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: floor HOST PORT PATH RATE SECONDS CONNS\n");
    return 2;
  }
  const char *host = argv[1];
  int port = atoi(argv[2]);
  double rate = atof(argv[4]);
  double seconds = atof(argv[5]);
  int nconns = atoi(argv[6]);
  if (strcmp(host, "127.0.0.1") != 0 || rate <= 0 || seconds <= 0 || nconns < 1 ||
      nconns > MAX_CONNS) {
    fprintf(stderr, "floor: loopback 127.0.0.1 only, rate > 0, seconds > 0, 1..%d conns\n",
            MAX_CONNS);
    return 2;
  }
  char req[512];
  int reqlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", argv[3], host,
                        port);
  size_t cap = (size_t)(rate * seconds * 1.5) + 1024;
  uint64_t *lat = malloc(cap * sizeof *lat), *lag = malloc(cap * sizeof *lag);
  if (!lat || !lag) return 1;

  signal(SIGPIPE, SIG_IGN);
  int ep = epoll_create1(0);
  if (ep < 0) {
    perror("floor: epoll_create1");
    return 1;
  }
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, host, &sa.sin_addr);
  for (int i = 0; i < nconns; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      perror("floor: socket");
      return 1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
      perror("floor: connect");
      return 1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
      perror("floor: epoll_ctl");
      return 1;
    }
    conns[i].fd = fd;
    free_list[free_top++] = i;
  }
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  struct epoll_event tev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
  if (tfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev) != 0) {
    perror("floor: timerfd");
    return 1;
  }

  uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
  uint64_t next = start + (uint64_t)(-log(uniform()) / rate * 1e9);
  size_t sent = 0, answered = 0, dropped = 0, in_flight = 0;
  int arrivals_done = 0;
  struct itimerspec its = {0};
  its.it_value.tv_sec = (time_t)(next / 1000000000ull);
  its.it_value.tv_nsec = (long)(next % 1000000000ull);
  timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);

  struct epoll_event evs[256];
  while (!arrivals_done || in_flight > 0) {
    uint64_t t = now_ns();
    if (arrivals_done && t > end + 2000000000ull) break;
    int n = epoll_wait(ep, evs, 256, arrivals_done ? 100 : -1);
    for (int k = 0; k < n; k++) {
      uint32_t id = evs[k].data.u32;
      if (id == UINT32_MAX) {
        uint64_t ticks;
        if (read(tfd, &ticks, sizeof ticks) < 0 && errno != EAGAIN) return 1;
        t = now_ns();
        while (!arrivals_done && next <= t) {
          if (next >= end) {
            arrivals_done = 1;
            break;
          }
          if (free_top == 0) {
            dropped++;
          } else {
            struct conn *c = &conns[free_list[--free_top]];
            c->busy = 1;
            c->intended = next;
            c->have = 0;
            uint64_t s = now_ns();
            if (send(c->fd, req, (size_t)reqlen, MSG_NOSIGNAL) != reqlen) {
              perror("floor: send");
              return 1;
            }
            if (sent < cap) lag[sent] = s - next;
            sent++;
            in_flight++;
          }
          next += (uint64_t)(-log(uniform()) / rate * 1e9);
        }
        if (!arrivals_done) {
          its.it_value.tv_sec = (time_t)(next / 1000000000ull);
          its.it_value.tv_nsec = (long)(next % 1000000000ull);
          timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
        }
      } else {
        struct conn *c = &conns[id];
        if (c->have >= BUF - 1) {
          fprintf(stderr, "floor: an answer larger than %d bytes\n", BUF - 1);
          return 1;
        }
        ssize_t r = read(c->fd, c->buf + c->have, BUF - 1 - c->have);
        if (r <= 0) {
          fprintf(stderr, "floor: connection %u closed or failed\n", id);
          return 1;
        }
        c->have += (size_t)r;
        if (c->busy && response_complete(c)) {
          uint64_t d = now_ns();
          if (answered < cap) lat[answered] = d - c->intended;
          answered++;
          in_flight--;
          c->busy = 0;
          free_list[free_top++] = (int)id;
        }
      }
    }
  }
  size_t nl = answered < cap ? answered : cap, ng = sent < cap ? sent : cap;
  qsort(lat, nl, sizeof *lat, cmp_u64);
  qsort(lag, ng, sizeof *lag, cmp_u64);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  printf("{\"requests\": %zu, \"answered\": %zu, \"dropped\": %zu, "
         "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f, \"lag_p99_ms\": %.3f, "
         "\"cpu_seconds\": %.6f}\n",
         sent, answered, dropped, pct_ms(lat, nl, 0.5), pct_ms(lat, nl, 0.99),
         pct_ms(lat, nl, 1.0), pct_ms(lag, ng, 0.99), cpu);
  return 0;
}
