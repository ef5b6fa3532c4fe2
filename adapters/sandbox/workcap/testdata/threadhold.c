// threadhold keeps a file with no name where /proc/PID of the process does not show it, as a
// program taking over the sandbox could. threadhold PATH SIZE makes PATH of SIZE bytes (sparse)
// in a thread whose table of descriptors is its own, unlinks it, says "holding", and runs until
// its standard input ends: the process's leader, whose table /proc/PID/fd shows, never has the
// file. threadhold PATH SIZE leaderexit maps the file instead, closes and unlinks it, and the
// leader exits: /proc/PID/maps of a process whose leader is gone is empty. (A Go program cannot
// do either: its runtime's own descriptors are gone from a thread that unshares them, and its
// main thread does not exit alone.)
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *path;
static long long size;

// leaderGone waits for the process's first thread to be a zombie: /proc/self is the thread
// group, whose status is its first thread's (in a PID namespace of its own with the host's
// /proc, getpid() would not name it there).
static void leaderGone(void) {
	char buf[4096];
	for (;;) {
		FILE *f = fopen("/proc/self/status", "r");
		if (!f) {
			perror("/proc/self/status");
			exit(1);
		}
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = 0;
		if (strstr(buf, "State:\tZ"))
			return;
		sched_yield();
	}
}

static void *mapped(void *arg) {
	(void)arg;
	int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size) != 0) {
		perror(path);
		exit(1);
	}
	if (mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED || close(fd) != 0 || unlink(path) != 0) {
		perror(path);
		exit(1);
	}
	leaderGone();
	puts("holding");
	fflush(stdout);
	char b;
	while (read(0, &b, 1) > 0) {
	}
	exit(0);
}

static void *hold(void *arg) {
	(void)arg;
	if (unshare(CLONE_FILES) != 0) {
		perror("unshare");
		exit(1);
	}
	int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size) != 0 || unlink(path) != 0) {
		perror(path);
		exit(1);
	}
	puts("holding");
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv) {
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: threadhold PATH SIZE [leaderexit]\n");
		return 2;
	}
	path = argv[1];
	size = atoll(argv[2]);
	pthread_t t;
	if (argc == 4) {
		if (pthread_create(&t, NULL, mapped, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
		pthread_exit(NULL);
	}
	if (pthread_create(&t, NULL, hold, NULL) != 0) {
		perror("pthread_create");
		return 1;
	}
	char b;
	while (read(0, &b, 1) > 0) {
	}
	return 0;
}
