// threadhold keeps a file with no name in a thread whose table of descriptors is its own, as a
// program taking over the sandbox could: threadhold PATH SIZE makes PATH of SIZE bytes (sparse)
// in that thread, unlinks it, says "holding", and runs until its standard input ends. The
// process's leader, whose table /proc/PID/fd shows, never has the file. (A Go program cannot
// do this: its runtime's own descriptors are gone from the thread that unshares.)
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *path;
static long long size;

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
	if (argc != 3) {
		fprintf(stderr, "usage: threadhold PATH SIZE\n");
		return 2;
	}
	path = argv[1];
	size = atoll(argv[2]);
	pthread_t t;
	if (pthread_create(&t, NULL, hold, NULL) != 0) {
		perror("pthread_create");
		return 1;
	}
	char b;
	while (read(0, &b, 1) > 0) {
	}
	return 0;
}
