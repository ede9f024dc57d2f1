/*
 * Writers that race the reader, for the race tests in test/reader/. Compiled with cc at test time.
 * Every mode stops by itself after SECONDS (and alarm() kills it a little later regardless), so
 * a test that dies cannot leave it running.
 *
 *   exchange SECONDS A B [A B ...]   renameat2(RENAME_EXCHANGE) each pair, flat out
 *   pwrite   SECONDS FILE SLOTS...   same-length rewrite of every slot, one pwrite per version
 *   write    SECONDS FILE SLOTS...   the same through lseek and write(2)
 *   truncate SECONDS FILE SLOTS...   ftruncate(0), then the whole file again with the next version
 *   rename   SECONDS FILE SLOTS...   the next version into FILE.tmp, renamed over FILE
 *   mmap     SECONDS FILE SLOTS...   the next version stored through a shared mapping
 *   rewrite  SECONDS FILE VERSIONS CHUNK SHIFT GAP_US SLOTS...
 *                                    the whole file again per version, versions cycling
 *                                    through VERSIONS digits (2: two same-length versions, A B A
 *                                    B ...), as pwrites of CHUNK bytes (0: one pwrite of the whole
 *                                    file) starting with one of SHIFT bytes (0: aligned to CHUNK),
 *                                    a random 0..GAP_US microseconds between versions
 *   remap    SECONDS FILE VERSIONS GAP_US SLOTS...
 *                                    the next version stored through a shared mapping, versions
 *                                    cycling through VERSIONS digits, 0..GAP_US between them
 *   step     SECONDS FILE             stdin commands on a shared mapping: "w OFFSET CHAR" stores
 *                                    one byte, "s" msyncs; each answers "ok\n" on stdout
 *
 * A slot is the byte offset of 6 digits. Version k writes the digit k mod 10 six times to every
 * slot, in file order (first slot first), so at any instant the slot bytes read, in file order,
 * d+1 ... d+1 d ... d (mod 10): one step down at most, at any byte, even mid-slot. A read that
 * shows anything else mixed versions that the file never held at once.
 * Prints the number of versions (or exchanges) written on exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what) {
  perror(what);
  exit(2);
}

static void put_counter(char *at, long k) {
  memset(at, '0' + (int)(k % 10), 6);
}

/* Sleeps a random 0..max_us microseconds (nothing when max_us is 0). */
static void gap(long max_us) {
  if (max_us <= 0) return;
  long us = random() % (max_us + 1);
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static char *read_whole(const char *file, size_t *len) {
  int fd = open(file, O_RDONLY);
  if (fd < 0) die("open");
  struct stat st;
  if (fstat(fd, &st) < 0) die("fstat");
  char *buf = malloc(st.st_size + 1);
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, st.st_size - got);
    if (r <= 0) die("read");
    got += r;
  }
  close(fd);
  *len = got;
  return buf;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: racer MODE SECONDS ARGS...\n");
    return 2;
  }
  const char *mode = argv[1];
  double seconds = atof(argv[2]);
  alarm((unsigned)seconds + 10);
  double end = now() + seconds;
  long n = 0;

  if (strcmp(mode, "exchange") == 0) {
    int pairs = (argc - 3) / 2;
    while (now() < end) {
      for (int i = 0; i < pairs; i++) {
        if (syscall(SYS_renameat2, AT_FDCWD, argv[3 + 2 * i], AT_FDCWD, argv[4 + 2 * i],
                    RENAME_EXCHANGE) < 0)
          die("renameat2");
        n++;
      }
    }
    /* An even number of exchanges per pair: every name is back where it started. */
    if (n / (pairs ? pairs : 1) % 2 == 1)
      for (int i = 0; i < pairs; i++)
        syscall(SYS_renameat2, AT_FDCWD, argv[3 + 2 * i], AT_FDCWD, argv[4 + 2 * i],
                RENAME_EXCHANGE);
    printf("%ld\n", n);
    return 0;
  }

  if (strcmp(mode, "rewrite") == 0 || strcmp(mode, "remap") == 0) {
    int rewrite = strcmp(mode, "rewrite") == 0;
    int fixed = rewrite ? 4 : 2;
    if (argc < 4 + fixed) {
      fprintf(stderr, "usage: racer %s SECONDS FILE ...\n", mode);
      return 2;
    }
    const char *file = argv[3];
    long versions = atol(argv[4]);
    long chunk = rewrite ? atol(argv[5]) : 0;
    long shift = rewrite ? atol(argv[6]) : 0;
    long gap_us = atol(argv[rewrite ? 7 : 5]);
    if (versions < 2 || versions > 10 || chunk < 0 || shift < 0) {
      fprintf(stderr, "bad %s arguments\n", mode);
      return 2;
    }
    srandom((unsigned)getpid());
    size_t len;
    char *content = read_whole(file, &len);
    int nslots = argc - 4 - fixed;
    long *slots = calloc(nslots > 0 ? nslots : 1, sizeof(long));
    for (int i = 0; i < nslots; i++) slots[i] = atol(argv[4 + fixed + i]);
    int fd = open(file, rewrite ? O_WRONLY : O_RDWR);
    if (fd < 0) die("open");
    volatile char *map = NULL;
    if (!rewrite) {
      map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) die("mmap");
    }
    for (long k = 1; now() < end; k++, n++) {
      char digit = '0' + (char)(k % versions);
      if (!rewrite) {
        for (int i = 0; i < nslots; i++)
          for (int j = 0; j < 6; j++) map[slots[i] + j] = digit;
      } else {
        for (int i = 0; i < nslots; i++) memset(content + slots[i], digit, 6);
        /* The whole file, in file order: the first write SHIFT bytes, then CHUNK at a time. */
        size_t at = 0;
        while (at < len) {
          size_t step = chunk == 0 ? len : (at == 0 && shift > 0 ? (size_t)shift : (size_t)chunk);
          if (step > len - at) step = len - at;
          if (pwrite(fd, content + at, step, at) != (ssize_t)step) die("pwrite");
          at += step;
        }
      }
      gap(gap_us);
    }
    if (map) munmap((void *)map, len);
    printf("%ld\n", n);
    return 0;
  }

  const char *file = argv[3];
  size_t len;
  char *content = read_whole(file, &len);
  int nslots = argc - 4;
  long *slots = calloc(nslots > 0 ? nslots : 1, sizeof(long));
  for (int i = 0; i < nslots; i++) slots[i] = atol(argv[4 + i]);
  long first = nslots ? slots[0] : 0;
  long last = nslots ? slots[nslots - 1] + 6 : 0;
  long k = 1;

  if (strcmp(mode, "pwrite") == 0) {
    int fd = open(file, O_WRONLY);
    if (fd < 0) die("open");
    while (now() < end) {
      for (int i = 0; i < nslots; i++) put_counter(content + slots[i], k);
      if (pwrite(fd, content + first, last - first, first) != last - first) die("pwrite");
      k++;
      n++;
    }
  } else if (strcmp(mode, "write") == 0) {
    int fd = open(file, O_WRONLY);
    if (fd < 0) die("open");
    while (now() < end) {
      for (int i = 0; i < nslots; i++) put_counter(content + slots[i], k);
      if (lseek(fd, first, SEEK_SET) < 0) die("lseek");
      if (write(fd, content + first, last - first) != last - first) die("write");
      k++;
      n++;
    }
  } else if (strcmp(mode, "truncate") == 0) {
    int fd = open(file, O_WRONLY);
    if (fd < 0) die("open");
    while (now() < end) {
      for (int i = 0; i < nslots; i++) put_counter(content + slots[i], k);
      if (ftruncate(fd, 0) < 0) die("ftruncate");
      if (pwrite(fd, content, len, 0) != (ssize_t)len) die("pwrite");
      k++;
      n++;
    }
  } else if (strcmp(mode, "rename") == 0) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    while (now() < end) {
      for (int i = 0; i < nslots; i++) put_counter(content + slots[i], k);
      int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) die("open tmp");
      if (write(fd, content, len) != (ssize_t)len) die("write");
      close(fd);
      if (rename(tmp, file) < 0) die("rename");
      k++;
      n++;
    }
  } else if (strcmp(mode, "mmap") == 0) {
    int fd = open(file, O_RDWR);
    if (fd < 0) die("open");
    volatile char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) die("mmap");
    while (now() < end) {
      char digit = '0' + (char)(k % 10);
      /* Byte by byte, in file order: the compiler may not reorder volatile stores. */
      for (int i = 0; i < nslots; i++)
        for (int j = 0; j < 6; j++) map[slots[i] + j] = digit;
      k++;
      n++;
    }
    munmap((void *)map, len);
  } else if (strcmp(mode, "step") == 0) {
    int fd = open(file, O_RDWR);
    if (fd < 0) die("open");
    char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) die("mmap");
    setvbuf(stdout, NULL, _IONBF, 0);
    char line[256];
    while (now() < end && fgets(line, sizeof line, stdin)) {
      long off;
      char c;
      if (sscanf(line, "w %ld %c", &off, &c) == 2 && off >= 0 && (size_t)off < len) {
        map[off] = c;
      } else if (line[0] == 's') {
        if (msync(map, len, MS_SYNC) < 0) die("msync");
      } else {
        fprintf(stderr, "bad command: %s", line);
        return 2;
      }
      n++;
      fputs("ok\n", stdout);
    }
    munmap(map, len);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  printf("%ld\n", n);
  return 0;
}
