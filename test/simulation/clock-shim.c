/*
 * Preloaded into redis-server by the differential test (clocked-redis.ts): the wall clock
 * (gettimeofday, clock_gettime(CLOCK_REALTIME*), time) reads the microseconds stored in the
 * file named by DISTLOCK_CLOCK_FILE (8 bytes, little-endian), which the test sets before
 * each command, so that the real server and the simulated node read the same clock. Every
 * other clock (the monotonic one that drives Redis's event loop) goes to the kernel.
 * libfaketime cannot do this here: it deadlocks with the jemalloc linked into Debian's Redis.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile const int64_t *now_us;

static int64_t read_clock(void) {
  if (now_us == NULL) {
    const char *path = getenv("DISTLOCK_CLOCK_FILE");
    int fd = path ? open(path, O_RDONLY) : -1;
    if (fd < 0) abort();
    void *mapped = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (mapped == MAP_FAILED) abort();
    now_us = mapped;
  }
  return *now_us;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE) {
    return syscall(SYS_clock_gettime, id, ts);
  }
  int64_t us = read_clock();
  ts->tv_sec = us / 1000000;
  ts->tv_nsec = (us % 1000000) * 1000;
  return 0;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  int64_t us = read_clock();
  tv->tv_sec = us / 1000000;
  tv->tv_usec = us % 1000000;
  return 0;
}

time_t time(time_t *out) {
  time_t seconds = (time_t)(read_clock() / 1000000);
  if (out) *out = seconds;
  return seconds;
}
